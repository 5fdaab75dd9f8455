"""The paper-10m pre-registration: the registered files' digest, and the check of every
paper-10m record's start time against the registration commit."""

from __future__ import annotations

from datetime import datetime, timezone

import pandas as pd
import pytest

from residual_lib.core.text import in_words
from residual_lib.pages.scorecard import preregistration


def test_the_rules_that_judge_paper_10m_are_the_registered_ones_or_a_listed_amendment():
    assert preregistration.current_digest_is_accounted_for(), (
        f"a file of preregistration.FILES changed after the paper-10m pre-registration (digest now "
        f"{preregistration.digest()}): list the change in preregistration.AMENDMENTS")


def test_records_are_checked_against_the_registration_commit(monkeypatch):
    when = datetime(2026, 12, 5, 4, 0, tzinfo=timezone.utc)
    monkeypatch.setattr(preregistration, "registration_commit", lambda: ("a" * 40, when))
    frame = pd.DataFrame({"profile": ["paper-10m", "paper-10m", "cpu"],
                          "started_at": ["2026-12-05T05:00:00+00:00", "2026-12-05T06:00:00+00:00",
                                         "2026-12-01T00:00:00+00:00"]})
    s = preregistration.status(frame)
    assert (s["records"], s["started_after"], s["holds"], s["descend"]) == (2, 2, True, None)
    assert "precedes both `paper-10m` records: the first of them started 2026-12-05 05:00 UTC." in \
        preregistration.statement(frame)
    three = pd.concat([frame, frame.head(1)], ignore_index=True)
    assert "precedes all three `paper-10m` records: the first" in preregistration.statement(three)
    frame.loc[0, "started_at"] = "2026-12-05T03:00:00+00:00"  # a record that began before the rules were fixed
    s = preregistration.status(frame)
    assert (s["started_after"], s["holds"]) == (1, False)
    assert ("precedes only 1 of the 2 `paper-10m` records: 1 started before it, so the verdicts that read it "
            "may rest on rules written with it in view.") in preregistration.statement(frame)
    frame.loc[1, "started_at"] = None  # a record that does not say when it started counts as no evidence
    assert ("precedes none of the 2 `paper-10m` records: 1 started before it and 1 does not record when it "
            "started, so the verdicts that read them") in preregistration.statement(frame)
    empty = preregistration.statement(frame[frame.profile == "cpu"])
    assert "since none is among these results" in empty  # amended "after a record existed": not "none exists"


def test_code_that_held_the_registration_commit_is_evidence_no_clock_gives(monkeypatch):
    when = datetime(2026, 12, 5, 4, 0, tzinfo=timezone.utc)
    monkeypatch.setattr(preregistration, "registration_commit", lambda: ("a" * 40, when))
    frame = pd.DataFrame({"profile": ["paper-10m"] * 2, "git_sha": ["b" * 40, "c" * 40],
                          "started_at": ["2026-12-05T05:00:00+00:00", "2026-12-05T06:00:00+00:00"]})
    monkeypatch.setattr(preregistration, "descends", lambda commit, sha: {"b": True, "c": False}[sha[0]])
    assert preregistration.status(frame)["descend"] == 1
    assert ("05:00 UTC, and one of them was trained by code that already held that commit (the other by "
            "its clock).") in preregistration.statement(frame)
    three = pd.concat([frame, frame.tail(1)], ignore_index=True)
    assert "held that commit (the others by their clocks)." in preregistration.statement(three)
    monkeypatch.setattr(preregistration, "descends", lambda commit, sha: False)
    assert "05:00 UTC, by their clocks: neither was trained by code that held that commit yet." in \
        preregistration.statement(frame)
    assert "by their clocks: none was trained" in preregistration.statement(pd.concat([frame, frame.head(1)]))
    monkeypatch.setattr(preregistration, "descends", lambda commit, sha: True)
    assert "05:00 UTC, and each was trained by code that already held that commit." in \
        preregistration.statement(frame)
    frame["started_at"] = ["2026-12-05T03:00:00+00:00", None]  # a clock that says before, or nothing: the code wins
    s = preregistration.status(frame)
    assert (s["started_after"], s["holds"], s["unknown"]) == (2, True, 0)
    one = frame.head(1)  # one record: said as one
    assert ("precedes the one `paper-10m` record: it started 2026-12-05 03:00 UTC, and it was trained by code "
            "that already held that commit.") in preregistration.statement(one)
    monkeypatch.setattr(preregistration, "descends", lambda commit, sha: None)  # commits not in this history
    assert preregistration.status(one)["descend"] is None and not preregistration.status(one)["holds"]


def test_a_start_dated_after_the_fact_is_not_quoted_as_evidence(monkeypatch):
    # code older than FIRST_START_KEPT dated a resumed run's start as its end less its processes' time
    when = datetime(2026, 12, 5, 4, 0, tzinfo=timezone.utc)
    monkeypatch.setattr(preregistration, "registration_commit", lambda: ("a" * 40, when))
    old = {preregistration.FIRST_START_KEPT: False, "a" * 40: True}
    monkeypatch.setattr(preregistration, "descends", lambda commit, sha: old[commit] if sha[0] == "b" else True)
    frame = pd.DataFrame({"profile": ["paper-10m"] * 2, "git_sha": ["b" * 40, "c" * 40],
                          "resumed_from_step": [4900.0, float("nan")],
                          "started_at": ["2026-12-05T08:00:00+00:00", "2026-12-05T09:00:00+00:00"]})
    s = preregistration.status(frame)
    assert (s["late_dated"], s["first_start"].hour, s["holds"]) == (1, 9, True)
    text = preregistration.statement(frame)
    # no start is quoted where one record's is later than its true one: the first given need not be the first run's
    assert "precedes both `paper-10m` records, and each was trained" in text and "began" not in text
    assert ("One of them does not give its run's true start: resumed from checkpoints in several processes, it was dated by code "
            "that counted only the time its processes ran, so the start it records (2026-12-05 08:00 UTC) is later than the true one.") in text
    one = frame.head(1)
    text = preregistration.statement(one)
    assert "started 2026-12-05 08:00" not in text and ("precedes the one `paper-10m` record, which was trained by code that already "
                                    "held that commit. Its record does not give the run's true start") in text
    brief = preregistration.statement(one, brief=True)  # a chapter's opening points to the scorecard for it
    assert "true start" not in brief and brief.endswith(
        "lists what each changed and why, and why the start its record gives is later than the true one.")
    assert preregistration.statement(frame, brief=True).endswith(
        "and why the start one of the records gives is later than the true one.")
    assert preregistration._late_pointer({"late_dated": 2, "records": 4}) == (
        ", and why two of the records give starts later than the true ones")
    assert preregistration._late_pointer({"late_dated": 2, "records": 2}) == (
        ", and why the records give starts later than the true ones")
    monkeypatch.setattr(preregistration, "descends", lambda commit, sha: False)  # old code, before the rules too
    s = preregistration.status(one)
    assert (s["holds"], s["unknown"], s["first_start"]) == (False, 1, None)  # its clock is no evidence of after
    frame["resumed_from_step"] = [float("nan")] * 2  # not resumed: the clock stands
    assert preregistration.status(frame)["late_dated"] == 0 and preregistration.status(frame)["holds"]


def test_amendments_made_after_a_records_code_was_committed_are_said_to_be_so(monkeypatch):
    def words(n):  # a count at the start of a sentence
        return f"All {in_words(n)} amendments" if n == len(preregistration.AMENDMENTS) else \
            f"{in_words(n).capitalize()} of the amendments" if in_words(n).isalpha() else f"Of the amendments, {n}"

    when = datetime(2026, 12, 5, 4, 0, tzinfo=timezone.utc)
    monkeypatch.setattr(preregistration, "registration_commit", lambda: ("a" * 40, when))
    monkeypatch.setattr(preregistration, "descends", lambda commit, sha: True)
    frame = pd.DataFrame({"profile": ["paper-10m"], "git_sha": ["b" * 40], "started_at": ["2026-12-05T09:00:00+00:00"]})
    amendments = preregistration.AMENDMENTS
    monkeypatch.setattr(preregistration, "commit_time", lambda sha: amendments[2].when)  # code after the third
    brief = preregistration.statement(frame, brief=True)
    n, existed = len(amendments), sum(a.records_existed for a in amendments)
    lead = f"{in_words(existed)} of them after a `paper-10m` record existed" if existed else \
        "each before any `paper-10m` record existed"
    assert (f"{lead}. {words(n - 3)} came after the code that trained the record was committed "
            f"({amendments[2].date}) and before that run ended, so possibly while it was training. The [scorecard]"
            ) in brief  # no end recorded: all after
    # a record whose recorded start and end bracket some of them: those came while it certainly trained
    bracket = frame.assign(started_at=[amendments[4].date.replace(" UTC", "+00:00")],
                           finished_at=["2026-12-06T01:41:02+00:00"])
    end = datetime(2026, 12, 6, 1, 41, 2, tzinfo=timezone.utc)
    inside = sum(a.when <= end for a in amendments[5:])  # the fifth's own minute is no later than the start
    assert preregistration.status(bracket)["amended_while_training"] == inside
    # and an amendment after the record's end is not counted as possibly made while it trained
    after_code = sum(a.when <= end for a in amendments[3:])
    assert preregistration.status(bracket)["amended_after_code"] == after_code
    those = "all of those" if inside == after_code else f"{in_words(inside)} of those"
    said = (f". {words(after_code)} came after the code that trained the record was committed "
            f"({amendments[2].date}) and before that run ended, so possibly while it was training; {those} came "
            "between the start the record gives and its end, while the run was certainly under way")
    assert said + ". Each change" in preregistration.statement(bracket)
    assert said + ". The [scorecard](../book/scorecard.html) lists what each changed and why." in (
        preregistration.statement(bracket, brief=True))  # its start is its own: nothing to point to
    # the amendments inside a record's span are said even where its code's commit is not in this history
    monkeypatch.setattr(preregistration, "commit_time", lambda sha: None)
    assert (f". {words(inside)} came between the start the record gives and its end, while the run was "
            "certainly under way. The [scorecard]" in preregistration.statement(bracket, brief=True))
    monkeypatch.setattr(preregistration, "commit_time", lambda sha: amendments[-1].when)  # code after them all
    assert f"{lead}. The [scorecard]" in preregistration.statement(frame, brief=True)
    # listed in full, each amendment says whether a paper-10m record existed when it was made
    listed = preregistration.statement(frame).split("Each change, oldest first:")[1].strip().split("\n")
    assert [line.endswith("A `paper-10m` record existed then.") for line in listed] == \
        [a.records_existed for a in amendments]
    assert all(line.endswith(" record existed then.") for line in listed)


def test_each_amendment_is_dated_by_the_commit_that_made_it():
    import subprocess

    shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=preregistration._PACKAGE,
                             capture_output=True, text=True)
    if shallow.returncode or shallow.stdout.strip() != "false":
        pytest.skip("no full git history here (a shallow or exported checkout)")
    for amendment in preregistration.AMENDMENTS:
        out = subprocess.run(["git", "log", "--reverse", "--format=%cI", f"-S{amendment.digest}"],
                             cwd=preregistration._PACKAGE, capture_output=True, text=True)
        if out.returncode or not out.stdout.strip():
            pytest.skip("no git history to date the amendments by")
        made = datetime.fromisoformat(out.stdout.split()[0]).astimezone(timezone.utc)
        assert made.strftime("%Y-%m-%d %H:%M UTC") == amendment.date, amendment.change[:60]


def test_descent_is_read_from_the_history_and_unknown_commits_give_none():
    import subprocess

    shas = subprocess.run(["git", "log", "-2", "--format=%H"], cwd=preregistration._PACKAGE, capture_output=True,
                          text=True).stdout.split()
    if len(shas) < 2:
        pytest.skip("no git history here (a shallow or exported checkout)")
    head, parent = shas
    assert preregistration.descends(parent, head) is True and preregistration.descends(head, head) is True
    assert preregistration.descends(head, parent) is False
    assert preregistration.descends(head, "0" * 40) is None and preregistration.descends(head, None) is None
    assert preregistration.descends(head, float("nan")) is None  # a record without the field, through pandas


def test_the_amendment_clauses_read_at_one_and_at_all(monkeypatch):
    code = datetime(2026, 12, 5, 4, 0, tzinfo=timezone.utc)
    one = {"amended_after_code": 1, "amended_while_training": 1, "records": 1, "code_from": code}
    assert ", so possibly while it was training; it came between" in preregistration._while_training(one)
    assert "its end, while the run was certainly under way" in preregistration._while_training(one)
    start = datetime(2026, 12, 5, 8, 16)
    assert preregistration._late_dated({"late_dated": 2, "records": 3, "late_start": start}).startswith(
        " Two of them do not give their runs' true starts: resumed from checkpoints in several processes, they were")
    assert preregistration._late_dated({"late_dated": 2, "records": 2, "late_start": start}).startswith(
        " Neither gives its run's true start:")
    assert preregistration._late_dated({"late_dated": 13, "records": 14, "late_start": start}).startswith(
        " Of them, 13 do not give their runs' true starts")  # no sentence opens with a numeral
    assert preregistration._while_training(one).startswith(". One of the amendments came after the code that trained the record")
    many = {**one, "amended_after_code": 13, "amended_while_training": 10, "records": 2}
    assert preregistration._while_training(many).startswith(". Of the amendments, 13 came after the code")  # no numeral first
    assert "; ten of those came between" in preregistration._while_training(many)
    three = {**one, "amended_after_code": 3, "amended_while_training": 3, "records": 2}
    assert "; all of those came between the start a record gives" in preregistration._while_training(three)
    assert "trained the first record was committed" in preregistration._while_training(three)
    late = preregistration.AMENDMENTS[-1].__class__("0" * 64, "2026-12-06 12:00 UTC", "a change", "a reason", True)
    monkeypatch.setattr(preregistration, "AMENDMENTS", (late,))  # one amendment: "The amendment", not "All"
    assert preregistration._while_training(one).startswith(". The amendment came after the code that trained the record")
    monkeypatch.setattr(preregistration, "AMENDMENTS", (late, late))
    two = {**one, "amended_after_code": 2, "amended_while_training": 0, "records": 2}
    assert preregistration._while_training(two).startswith(". Both amendments came after the code that trained the first")
    monkeypatch.setattr(preregistration, "AMENDMENTS", (late,))
    assert "amended once since, after a `paper-10m` record existed" in preregistration.statement(pd.DataFrame(),
                                                                                                brief=True)
