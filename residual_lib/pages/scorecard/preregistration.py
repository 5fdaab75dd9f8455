"""Verdicts registered before their data: the rules, thresholds and code that judge ``paper-10m``,
registered (by their sha256) in a commit that precedes every ``paper-10m`` record.

Every other verdict of the scorecard was judged by rules written while the stand-in records
already existed. The ``paper-10m`` column is different: its rules were committed, with the
digest of :data:`FILES` (:func:`digest`), in a commit whose message says "pre-registration",
before the first ``paper-10m`` run started. :func:`status` finds that commit in the history and
checks every ``paper-10m`` record's start time (``provenance.started_at``: a resumed run's first
process's) against it, and counts the records trained by code that already held the commit
(``provenance.git_sha``), which no clock can give. Code older than :data:`FIRST_START_KEPT` dated
a resumed run's start as its end less the time its processes ran, later than the true start:
such a start is no evidence either way, and the statement says so instead of quoting it.

A change to any of :data:`FILES` after the registration changes the digest; the test suite
fails until the change is listed in :data:`AMENDMENTS` (what changed, why, and whether any
``paper-10m`` record existed then; :mod:`.amendments`), which the scorecard shows beside the registration.
"""

from __future__ import annotations

import hashlib
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from ...core.text import in_words
from .amendments import AMENDMENTS, Amendment  # noqa: F401 (Amendment: for callers)

PROFILE = "paper-10m"
_PACKAGE = Path(__file__).resolve().parents[2]
#: The code and data that decide a ``paper-10m`` verdict: the rules and their texts, the
#: thresholds, the claims and the paper's values, the numbers the rules compute, and which
#: records they read.
FILES = (
    "pages/scorecard/rule.py", "pages/scorecard/rules.py", "pages/scorecard/limits.py", "pages/scorecard/claims.py",
    "pages/scorecard/verdicts.py", "study/paper.py", "study/paper_claims.csv", "study/analysis.py", "study/escapes.py",
    "study/sections.py", "study/frames.py", "study/gains.py",
)
#: The digest registered in the pre-registration commit, over the files :data:`FILES` held then
#: (the first eleven: gains.py joined later, by an amendment), under the paths they had then:
#: ``scorecard/rule.py``, ``paper.py``, ... without the layer folders. The first seven amendments'
#: digests use those paths too; from the eighth (the move into folders) on, the paths of FILES.
REGISTERED_DIGEST = "7913eb25a25c072124b244f5ae7caefa518e02eeecd1e26aaf6447310990e461"
REGISTERED_FILES = 11
#: The commit from which a resumed run's checkpoints keep the time its first process began; code
#: before it wrote the end less the processes' running time, which leaves out the time between them.
FIRST_START_KEPT = "1c87c33c28e3b3403364fff9d5051f09171bc98a"


def digest(root: Path = _PACKAGE) -> str:
    """sha256 over :data:`FILES` (each file's path, then its bytes)."""
    h = hashlib.sha256()
    for name in FILES:
        h.update(name.encode() + b"\n" + (root / name).read_bytes() + b"\n")
    return h.hexdigest()


def current_digest_is_accounted_for() -> bool:
    """Whether today's files are the registered ones or the last amendment's."""
    expected = AMENDMENTS[-1].digest if AMENDMENTS else REGISTERED_DIGEST
    return digest() == expected


def registration_commit() -> tuple[str, datetime] | None:
    """The pre-registration commit (its message names the registered digest) and its commit
    time, from this checkout's history; None where the history is not available."""
    try:
        out = subprocess.run(["git", "log", "--fixed-strings", f"--grep={REGISTERED_DIGEST[:16]}", "--format=%H %cI"],
                             cwd=_PACKAGE, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = out.stdout.split("\n") if out.returncode == 0 else []
    lines = [line for line in lines if line.strip()]
    if not lines:
        return None
    sha, when = lines[-1].split()  # the oldest commit that names it
    return sha, datetime.fromisoformat(when)


def descends(commit: str, sha) -> bool | None:
    """Whether the code at ``sha`` already held ``commit`` (``commit`` is its ancestor, or it);
    None when ``sha`` is not a commit name or either is not in this checkout's history."""
    if not isinstance(sha, str) or not sha.strip():
        return None
    try:
        out = subprocess.run(["git", "merge-base", "--is-ancestor", commit, sha], cwd=_PACKAGE,
                             capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return {0: True, 1: False}.get(out.returncode)


def commit_time(sha) -> datetime | None:
    """When ``sha`` was committed, from this checkout's history; None where it is not there."""
    if not isinstance(sha, str) or not sha.strip():
        return None
    try:
        out = subprocess.run(["git", "show", "-s", "--format=%cI", sha], cwd=_PACKAGE, capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return datetime.fromisoformat(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


def provenance_field(own: pd.DataFrame, field: str) -> list:
    """One provenance field of each record of ``own``: its column of that name, or the field of
    the file at its ``path``; None where neither says."""
    if field in own:
        return [None if not isinstance(x, str) and pd.isna(x) else x for x in own[field]]
    if "path" not in own:
        return [None] * len(own)
    from ...storage.records import read_record

    return [(read_record(path).get("provenance") or {}).get(field) for path in own["path"]]


def status(records: pd.DataFrame) -> dict:
    """The registration against the ``paper-10m`` records of ``records``
    (:func:`residual_lib.study.frames.load_records` rows): ``commit`` and ``registered`` (None
    without the history), ``records``, ``descend`` (how many were trained by code that already
    held the commit, ``provenance.git_sha``: evidence no clock gives; None where no record's
    commit is in the history), ``started_after`` (how many began after the commit: by their
    code, or by their records' clocks), ``unknown`` (how many of the others record no start),
    ``first_start`` and ``holds`` (every record began after the commit), and ``late_dated`` (how many
    were resumed by code older than :data:`FIRST_START_KEPT`: their start times are left out)."""
    found = registration_commit()
    own = records[records.profile == PROFILE] if "profile" in records else records.head(0)
    starts = pd.to_datetime(own["started_at"] if "started_at" in own else pd.Series(None, index=own.index,
                                                                                   dtype=object), utc=True)
    codes = provenance_field(own, "git_sha")  # the commit of the code that trained each record
    late = pd.Series([step is not None and descends(FIRST_START_KEPT, code) is not True
                      for step, code in zip(provenance_field(own, "resumed_from_step"), codes)], index=own.index, dtype=bool)
    late_start = starts[late].min() if late.any() else None
    finished = pd.to_datetime(pd.Series(provenance_field(own, "finished_at"), index=own.index, dtype=object), utc=True)
    # an amendment between a record's start as recorded (later than or at the true one) and its end came while it trained
    during = sum(any(start < pd.Timestamp(a.when) < end for start, end in zip(starts, finished)
                     if pd.notna(start) and pd.notna(end)) for a in AMENDMENTS)
    starts = starts.where(~late)  # a start dated after the fact, later than the true one: no evidence
    known = [t for t in (commit_time(code) for code in dict.fromkeys(codes)) if t is not None] if len(own) else []
    code_from = min(known) if known else None  # no run of these records can have begun before its code existed
    # nor trained after the last of them ended (unbounded while one gives no end)
    last_end = finished.max() if len(own) and finished.notna().all() else None
    out = {"commit": None, "registered": None, "digest": REGISTERED_DIGEST, "records": len(own),
           "started_after": None, "unknown": None, "first_start": starts.min() if starts.notna().any() else None,
           "holds": None, "amendments": len(AMENDMENTS), "descend": None, "late_dated": int(late.sum()),
           "late_start": late_start, "code_from": code_from,
           "amended_after_code": sum(a.when > code_from and (last_end is None or pd.Timestamp(a.when) < last_end)
                                     for a in AMENDMENTS) if code_from else 0,
           "amended_while_training": during}
    if found is not None:
        sha, when = found
        held = pd.Series([descends(sha, code) for code in codes], index=own.index, dtype=object)
        # code that already held the commit cannot have run before it, whatever a clock says
        after = (held == True) | (starts > pd.Timestamp(when))  # noqa: E712 (None is neither)
        out.update(commit=sha, registered=when, started_after=int(after.sum()), holds=bool(after.all()),
                   unknown=int((~after & starts.isna()).sum()),
                   descend=int((held == True).sum()) if held.notna().any() else None)  # noqa: E712
    return out


def _descent(s: dict, which: bool = False) -> str:
    """The clause on the records' code, after their start (``which``: after the one record's
    name, with no start said): which held the registration commit."""
    n, k = s["records"], s["descend"]
    if k is None:
        return ""
    if n == 1:
        return (f", {'which' if which else 'and it'} was trained by code that already held that commit" if k else
                ", by its clock: its code did not hold that commit yet (a checkout of an older one)")
    if k == n:
        return ", and each was trained by code that already held that commit"
    if k == 0:
        return f", by their clocks: {'neither' if n == 2 else 'none'} was trained by code that held that commit yet"
    return (f", and {'one' if k == 1 else k} of them {'was' if k == 1 else 'were'} trained by code that already held that commit "
            f"({'the other by its clock' if n - k == 1 else 'the others by their clocks'})")


def _late_dated(s: dict) -> str:
    """A sentence on the records whose start is left out (:data:`FIRST_START_KEPT`), or none."""
    k, n = s["late_dated"], s["records"]
    if not k:
        return ""
    if n == 1:
        who = "Its record does not give the run's true start"
    elif k < n:
        who = (f"{_opening(k, 'them')} {'does' if k == 1 else 'do'} not give "
               + ("its run's true start" if k == 1 else "their runs' true starts"))
    else:
        who = f"{'Neither' if n == 2 else 'None of them'} gives its run's true start"
    recorded = s["late_start"].strftime("%Y-%m-%d %H:%M UTC")
    return (f" {who}: resumed from checkpoints in several processes, "
            f"{'it was' if k == 1 else 'they were'} dated by code that counted only the time "
            f"{'its' if k == 1 else 'their'} processes ran, so "
            + (f"the start it records ({recorded}) is later than the true one." if k == 1 else
               f"the starts they record (the first {recorded}) are later than the true ones."))


def _late_pointer(s: dict) -> str:
    """What the scorecard adds on the records whose start is left out (:func:`_late_dated`), for
    a chapter's brief statement, or nothing."""
    k, n = s["late_dated"], s["records"]
    if not k:
        return ""
    if n == 1:
        return ", and why the start its record gives is later than the true one"
    if k == 1:
        return ", and why the start one of the records gives is later than the true one"
    return f", and why {'the' if k == n else f'{in_words(k)} of the'} records give starts later than the true ones"


def _while_training(s: dict) -> str:
    """Sentences on the amendments made after the code of a ``paper-10m`` record was committed (a
    run may have been training), and on those between a record's start as recorded and its end
    (a run was under way), each opening with ". "; or nothing."""
    k, during, one = s["amended_after_code"], s.get("amended_while_training", 0), s["records"] == 1

    def how_many(n: int) -> str:  # a count of amendments at the start of a sentence
        if n == len(AMENDMENTS):
            return {1: "The amendment", 2: "Both amendments"}.get(n, f"All {in_words(n)} amendments")
        return _opening(n, "the amendments")

    text = ""
    if k:
        when = s["code_from"].astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        text = (f". {how_many(k)} came after the code that trained {'the record' if one else 'the first record'} was "
                f"committed ({when}) and before {'that run' if one else 'the last run'} ended, so possibly while "
                f"{'it' if one else 'a run'} was training")
    if during:
        which = (("; it" if k == 1 else "; all of those") if during == k else f"; {in_words(during)} of those") \
            if k else f". {how_many(during)}"
        text += (f"{which} came between the start {'the' if one else 'a'} record gives and its end, while "
                 "the run was certainly under way")
    return text


def _opening(n: int, of: str) -> str:
    """A count of ``of`` that opens a sentence: "Ten of them" in words, "Of them, 13" where the
    count would be a numeral (a sentence never opens with one)."""
    words = in_words(n)
    return f"{_capital(words)} of {of}" if words.isalpha() else f"Of {of}, {words}"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def statement(records: pd.DataFrame, brief: bool = False) -> str:
    """The scorecard's sentences on the registration; ``brief``: for a chapter's opening, the
    amendments counted, not listed, and why a record's start is not its true one left to the
    scorecard, which says both."""
    s = status(records)
    if s["commit"] is None:
        return (f"The rules that judge `{PROFILE}` were registered by their digest (sha256 {s['digest'][:16]}…), "
                "but this copy has no git history to find the registration's commit in.")
    when = s["registered"].astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (f"The rules, thresholds and code that judge `{PROFILE}` were registered before its data: commit "
            f"{s['commit'][:7]} ({when}, pre-registration, sha256 {s['digest'][:16]}… of "
            f"{REGISTERED_FILES} files) precedes ")
    n = s["records"]
    first = s["first_start"].strftime("%Y-%m-%d %H:%M UTC") if s["first_start"] is not None else None
    if not n:
        text += f"every `{PROFILE}` record, since none is among these results."
    elif s["holds"]:
        if n == 1:
            text += f"the one `{PROFILE}` record" + (f": it started {first}" if first else "")
        else:
            text += ("both" if n == 2 else f"all {in_words(n)}") + f" `{PROFILE}` records" + (
                "" if not first or s["late_dated"] else f": the first of them started {first}")
        text += _descent(s, which=n == 1 and not first) + "." + ("" if brief else _late_dated(s))
    else:
        after, unknown = s["started_after"], s["unknown"]
        before = n - after - unknown
        some = f"only {after}" if after else "none"
        parts = ([f"{before} started before it"] if before else []) + (
            [f"{unknown} {'does' if unknown == 1 else 'do'} not record when {'it' if unknown == 1 else 'they'} "
             "started"] if unknown else [])
        text = text.replace("were registered before its data", "were registered") + (
            f"{some} of the {n} `{PROFILE}` records: {' and '.join(parts)}, so the verdicts that read "
            f"{'it' if n - after == 1 else 'them'} may rest on rules written with {'it' if n - after == 1 else 'them'}"
            " in view.") + ("" if brief else _late_dated(s))
    if AMENDMENTS and brief:
        times = {1: "once", 2: "twice"}.get(len(AMENDMENTS), f"{len(AMENDMENTS)} times")
        existed, made = sum(a.records_existed for a in AMENDMENTS), len(AMENDMENTS)
        when = ("before any `paper-10m` record existed" if not existed else "after a `paper-10m` record existed")
        when = (when if made == 1 else f"each {when}" if existed in (0, made) else
                f"{in_words(existed)} of them after a `paper-10m` record existed")
        text += (f" The files were amended {times} since, {when}" + _while_training(s) +
                 ". The [scorecard](../book/scorecard.html) lists what each changed and why" + _late_pointer(s) + ".")
    elif AMENDMENTS:
        times = {1: "once", 2: "twice"}.get(len(AMENDMENTS), f"{len(AMENDMENTS)} times")
        text += f" The files were amended {times} since{_while_training(s)}. Each change, oldest first:\n\n" + "\n".join(
            f"- {a.date}: {a.change}. Why: {a.reason}. {'A' if a.records_existed else 'No'} `paper-10m` record "
            "existed then." for a in AMENDMENTS)
    else:
        text += " They have not changed since."
    return text
