"""Chapter 11, the budget study: its plan is the pre-registered study, and its sentences read the rule's outcome."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pytest

from residual_lib.pages.chapters import budget as chapter
from residual_lib.pages.tables import table as book_table
from residual_lib.run.runs import Run
from residual_lib.study import budget
from residual_lib.study.sections import plan


def test_the_chapters_plan_at_cpu_is_the_preregistered_study():
    assert plan("11_budget", "cpu") == budget.budget_runs()
    smoke = plan("11_budget", "smoke", seeds=[1337, 42, 123, 7])
    assert {r.profile.name for r in smoke} == {"smoke-budget"}
    assert [(r.variant, r.seed) for r in smoke][:3] == [("ffn_only", 1337), ("attn_only", 1337), ("no_residual", 1337)]
    assert sum(r.variant == "ffn_only" for r in smoke) == 3  # the section's first three seeds away from cpu
    assert plan("11_budget", "ladder-3m") == []
    intro = chapter.scope("cpu", plan("11_budget", "cpu"))["intro"]
    # the study's runs are set beside the paper's budget without hiding how much smaller their model is
    assert ("The budget study trains FFNOnly at the stand-in's shape, without dropout, for 20,000 steps (41M tokens, "
            "half the paper's, on a far smaller model) at 16 seeds") in intro


def _times(escaped_at: list[int | None], finals=None, steps=20_000) -> pd.DataFrame:
    finals = finals or [2.0 if t else 3.33 for t in escaped_at]
    return pd.DataFrame({"seed": budget.BUDGET_SEEDS[:len(escaped_at)], "escaped": [t is not None for t in escaped_at],
                         "time": [t if t else steps for t in escaped_at], "final_val_loss": finals,
                         "below_floor": [3.335 - f for f in finals], "eval_bigram": 2.47,
                         "below_bigram": [f < 2.47 for f in finals]})


def test_the_escape_table_gives_each_seeds_step_and_distances_in_the_studys_seed_order():
    times = _times([8750, None]).iloc[::-1]  # read in another order
    table = chapter.escape_table(times, 1.544)
    assert list(table.seed) == [1337, 42]
    assert list(table["leaves the floor at step"]) == ["8,750", "—"]
    assert table["below the bigram"].iloc[0] == pytest.approx(0.47)
    assert table["above AttnOnly"].iloc[0] == pytest.approx(2.0 - 1.544)
    assert "deepest below the floor" not in table  # no best losses given
    back = chapter.escape_table(times.assign(best_val_loss=[3.136, 1.9]), 1.544)  # 42 went deep and came back
    assert list(back["deepest below the floor"]) == pytest.approx([3.335 - 1.9, 3.335 - 3.136])
    shallow = book_table(chapter.escape_table(times.assign(best_val_loss=[1.9, 3.3346]), 1.544)).to_html()
    assert "×10" not in shallow and ">0.000<" in shallow  # 0.0004 nats below: a loss, written as the others are


def test_the_decision_is_provisional_until_every_seed_is_recorded():
    partial = budget.decide(_times([8750]))
    text = chapter.decision_text(partial, 16)
    assert text == ("The one FFNOnly seed recorded leaves the floor and ends below the bigram reference. With 1 of "
                    "the 16 seeds recorded, the rule cannot decide yet: *speed* and *structural* are still reachable"
                    " with the other 15.")
    two = chapter.decision_text(budget.decide(_times([8750, None])), 16)  # each verb agrees with its count
    assert two.startswith("1 of 2 FFNOnly seeds leaves the floor (it ends below the bigram reference), "
                          "1 ends within the line, and none leaves the floor after step 15,000.")
    none = chapter.decision_text(budget.decide(_times([None, None])), 16)
    assert none.startswith("None of the 2 FFNOnly seeds recorded leaves the floor: both end within the line.")
    mixed = chapter.decision_text(budget.decide(_times([4000, 4000, 16000], finals=[2.0, 2.9, 2.0])), 16)
    assert mixed.startswith("3 of 3 FFNOnly seeds leave the floor (2 of them ending below the bigram reference), "
                            "0 end within the line, and 1 leaves the floor after step 15,000.")
    three = budget.decide(_times([4000] * 4))  # four escapes: 13 within the line is out of reach
    assert chapter.decision_text(three, 16).endswith("*speed* is still reachable with the other 12, *structural* no "
                                                     "longer.")
    eight = budget.decide(_times([4000] * 2 + [None] * 8))  # 2 + 6 escapes would fall short of 9
    assert chapter.decision_text(eight, 16).endswith("*structural* is still reachable with the other 6, *speed* no "
                                                     "longer.")
    both = budget.decide(_times([4000] * 3 + [16000] + [None] * 8))  # a late escape, and too few left for speed
    assert chapter.decision_text(both, 16).endswith(
        "With 12 of the 16 seeds recorded, the outcome will be *undecided* whatever the other 4 show: *speed* and "
        "*structural* can no longer be reached.")
    last = budget.decide(_times([4000] * 3 + [None] * 12))  # one seed to come
    assert chapter.decision_text(budget.decide(_times([None] * 15)), 16).endswith(
        "an escape after step 15,000 in the one still to come would make it *undecided*.")
    assert chapter.decision_text(last, 16).endswith("*structural* is still reachable with the one still to come, "
                                                    "*speed* no longer.")
    early = budget.decide(_times([4000] * 9))
    assert chapter.decision_text(early, 16).endswith("the rule already reads *speed* (the asymmetry is about speed:"
                                                     " FFNOnly learns, late), whatever the other 7 show.")
    so_far = budget.decide(_times([None] * 13))  # 13 within the line, but a late escape among the other 3 undoes it
    assert so_far["outcome"] == "structural" and chapter.decision_text(so_far, 16).endswith(
        "the rule reads *structural* so far (the collapse is structural at this budget); an escape after step 15,000 "
        "among the other 3 would make it *undecided*.")
    speed = budget.decide(_times([5000] * 9 + [None] * 7))
    assert chapter.decision_text(speed, 16).endswith(
        "The pre-registered reading: *speed*, the asymmetry is about speed: FFNOnly learns, late.")
    structural = budget.decide(_times([3000] * 2 + [None] * 14))
    assert chapter.decision_text(structural, 16).endswith(  # the seeds that learned are not lost in the reading
        "*structural*, the collapse is structural at this budget. It holds with 1 seed to spare: 2 more seeds leaving "
        "the floor by step 15,000, or any one after it, would have undone it. The reading is of most seeds, not every "
        "one: the share that left the floor is 12% (95% interval 2% to 38%).")
    edge = chapter.decision_text(budget.decide(_times([3000] * 3 + [None] * 13)), 16)
    assert ("It holds with no seed to spare: 13 seeds within the line are the fewest the rule accepts, and one more "
            "seed leaving the floor would have undone it.") in edge
    none_left = chapter.decision_text(budget.decide(_times([None] * 16)), 16)
    assert none_left.endswith("*structural*, the collapse is structural at this budget. It holds with 3 seeds to spare: "
                              "4 more seeds leaving the floor by step 15,000, or any one after it, would have undone it.")
    for escaped in ([3000] * 4 + [None] * 12, [16000] + [None] * 15):  # what the margin says undoes it does undo it
        assert budget.decide(_times(escaped))["outcome"] == "undecided"
    assert chapter.margin(budget.decide(_times([3000] * 4 + [None] * 12))) == ""  # only a structural reading has one
    assert chapter.decision_text({"runs": 0}, 16).startswith("No FFNOnly run")


def test_a_plan_smaller_than_the_rules_counts_is_said_never_to_reach_a_reading_not_to_have_lost_it():
    smoke = chapter.decision_text(budget.decide(_times([None])), 3)  # `smoke` plans 3 FFNOnly seeds
    assert smoke.endswith("The rule's counts are for the registered study's 16 seeds: *speed* needs 9 seeds that "
                          "leave the floor below the bigram reference and *structural* needs 13 seeds within the line,"
                          " more than the 3 this profile plans, so at this profile it reads *undecided* whatever its "
                          "runs show.")
    done = chapter.decision_text(budget.decide(_times([None] * 3)), 3)  # every planned seed recorded: not "pre-registered"
    assert "whatever its runs show" in done and "pre-registered" not in done
    assert "no longer" not in smoke and "any more" not in smoke
    ten = chapter.decision_text(budget.decide(_times([4000])), 10)  # speed is open, structural never was
    assert ten.endswith("(*structural* needs 13 seeds within the line, more than the 10 this profile plans.) With 1 "
                        "of the 10 seeds recorded, the rule cannot decide yet: *speed* is still reachable with the "
                        "other 9.")
    complete = chapter.decision_text(budget.decide(_times([None] * 10)), 10)
    assert complete.endswith("The rule's reading: *undecided*, neither reading: the data do not decide between speed "
                             "and structure.")
    assert chapter.prospects(budget.decide(_times([None] * 10)), 10) == {"speed": "lost", "structural": "never"}


def test_the_rule_text_is_written_from_the_studys_constants():
    text = chapter.rule_text()
    assert f"at least {budget.MOST} leave the floor" in text and f"at least {budget.STAY} of the 16 (81%)" in text
    assert f"after step {budget.FLAT_AFTER:,}" in text and f"more than {budget.LINE:g} nats below" in text


def test_progress_counts_the_recorded_and_the_missing_runs():
    records = pd.DataFrame({"variant": ["ffn_only", "attn_only"]})
    absent = [Run("cpu-budget", "ffn_only", 42), Run("cpu-budget", "no_residual", 1337)]
    text = chapter.progress_text(records, absent)
    assert text.startswith("Recorded so far: 1 of 2 FFNOnly seeds and 1 of 2 anchor runs (AttnOnly and NoResidual).")
    assert "2 runs are still to come" in text
    assert chapter.progress_text(records, []) == ("Every run of the study is recorded: 1 FFNOnly seed and 1 anchor run"
                                                  " (AttnOnly and NoResidual).")


def test_the_budget_figures_label_twenty_thousand_steps_without_labels_running_together_and_keep_their_width():
    from residual_lib.pages import plots

    km = pd.DataFrame({"step": [0, 8_750], "on_floor": [1.0, 0.5]})
    curve = pd.concat([pd.DataFrame({"variant": v, "key": v, "step": range(0, 20_001, 250), "loss": loss})
                       for v, loss in (("ffn_only", 3.3), ("attn_only", 1.6), ("no_residual", 3.34))])
    for fig in (plots.survival(km, 20_000, 15_000, 0.8), plots.budget_curves(curve, 3.335, 0.1, 2.48)):
        ax = fig.axes[0]
        fig.canvas.draw()
        labels = [t for t in ax.get_xticklabels() if t.get_text() and t.get_visible()]
        boxes = [t.get_window_extent() for t in labels]
        assert len(labels) >= 3 and "20,000" in [t.get_text() for t in labels]
        assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:])), [t.get_text() for t in labels]
        # the data take most of the width (a phone shows the figure at 0.65 of it); a legend fits inside it
        assert ax.get_position().width > 0.75
        legend = ax.get_legend()
        assert legend is None or fig.bbox.contains(*legend.get_window_extent().p0) and fig.bbox.contains(
            *legend.get_window_extent().p1)
        if legend is not None:  # the runs in one row, the reference lines in the row below
            rows = {t.get_text(): round(t.get_window_extent().y0) for t in legend.get_texts()}
            assert rows["ffn_only"] == rows["attn_only"] == rows["no_residual"] > rows["floor"] == rows["bigram"]
        plots.plt.close(fig)


def test_the_registration_sentence_counts_records_by_whether_their_code_held_the_rule(monkeypatch):
    from residual_lib.pages.scorecard import preregistration

    rule = chapter.REGISTRATION_COMMIT
    monkeypatch.setattr(preregistration, "commit_time", lambda sha: datetime(2026, 12, 5, 3, 54, tzinfo=timezone.utc))
    held = {rule: True, "d" * 40: True, "b" * 40: False}  # the rule's commit, a later one, an earlier one
    monkeypatch.setattr(preregistration, "descends", lambda commit, sha: held.get(sha))

    def text(*shas, dirty=()):
        return chapter.registration_text(pd.DataFrame({"git_sha": shas, "git_dirty": [i in dirty for i in
                                                                                       range(len(shas))]}))

    assert text(rule, rule, rule) == (
        "The rule was fixed in commit c934416 of 5 December 2026, 03:54 UTC. All 3 records of the study were "
        "trained by code that already held it: each names that commit.")
    assert "Both records" in text(rule, rule) and text(rule).endswith("the study's one record was trained by code "
                                                                       "that held it.")
    assert text(rule, "d" * 40).endswith("each names a commit that descends from it.")
    assert text(rule, "b" * 40, "e" * 40, None, rule, dirty=(4,)).endswith(
        "1 of the 5 records was trained by code that already held it; 1 by code that did not yet hold it, 1 from "
        "code with uncommitted changes and 2 from code whose commit is unnamed or not in this history.")
    assert "None of the 2 records was trained" in text("b" * 40, "b" * 40)
    assert text("b" * 40).endswith("the study's one record was trained by code that did not yet hold it.")
    assert text(rule, dirty=(0,)).endswith("the study's one record was trained from code with uncommitted changes.")
    unknown = pd.DataFrame({"git_sha": [rule, rule], "git_dirty": [False, None]})  # None: the record cannot say
    assert chapter.registration_text(unknown).endswith(  # it names the commit: only its tree's state is unknown
        "1 of the 2 records was trained by code that already held it; 1 from a commit that holds it, without saying "
        "whether its code had uncommitted changes.")
    assert chapter.registration_text(unknown.iloc[1:]).endswith(
        "the study's one record names a commit that holds it but not whether its code had uncommitted changes.")
    assert chapter.registration_text(pd.DataFrame({"git_sha": []})) == ""
    monkeypatch.setattr(preregistration, "commit_time", lambda sha: None)
    assert "which this copy's git history does not hold" in text(rule)


def _rule(source: str) -> dict:
    """The study's rule as code: each upper-case constant's expression and each function's body
    without its docstring."""
    import ast

    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id.isupper():
            out[node.targets[0].id] = ast.unparse(node.value)
        elif isinstance(node, ast.FunctionDef):
            body = node.body[1:] if isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value,
                                                                                    ast.Constant) else node.body
            out[node.name] = ast.dump(ast.Module(body=body, type_ignores=[]))
    return out


def test_the_rule_today_is_the_registered_one_and_every_record_was_trained_after_it():
    """What chapter 11 claims, checked apart from the sentence that states it: the registration
    commit fixed the rule without any record of the study; the rule's constants and functions
    are unchanged since; every committed record's code is that commit or descends from it, from a
    clean tree, and finished after it."""
    import subprocess

    root, commit = Path(__file__).resolve().parents[1], chapter.REGISTRATION_COMMIT

    def git(*args):
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)

    if git("cat-file", "-e", f"{commit}^{{commit}}").returncode:
        pytest.skip("the registration commit is not in this checkout's history (an export or a shallow clone)")
    changed = git("show", "--name-only", "--format=", commit).stdout.split()
    assert "residual_lib/budget.py" in changed and not [p for p in changed if p.startswith("results/")]
    registered = _rule(git("show", f"{commit}:residual_lib/budget.py").stdout)
    assert registered and registered == _rule((root / "residual_lib" / "study" / "budget.py").read_text())
    seeds = next(line for line in git("show", f"{commit}:residual_lib/sections.py").stdout.splitlines()
                 if line.startswith("ESCAPE_RATE_SEEDS = "))  # the seeds, which budget.py takes from here
    assert eval(seeds.split(" = ", 1)[1])[:16] == budget.BUDGET_SEEDS
    assert git("ls-tree", commit, "results/cpu-budget").stdout == ""  # no record of the study existed then
    made = datetime.fromisoformat(git("show", "-s", "--format=%cI", commit).stdout.strip())
    records = sorted((root / "results" / "cpu-budget").glob("*.json"))
    assert len(records) >= 16
    for path in records:
        provenance = json.loads(path.read_text())["provenance"]
        assert provenance["git_dirty"] is False, path.name
        assert git("merge-base", "--is-ancestor", commit, provenance["git_sha"]).returncode == 0, path.name
        assert datetime.fromisoformat(provenance["finished_at"]) > made, path.name


def test_the_share_the_structural_reading_needs_is_drawn_only_against_the_whole_plan():
    from residual_lib.pages import plots

    assert chapter.km_line(16, 11) is None  # a share of 11 runs is not comparable with 13 of 16
    assert chapter.km_line(16, 16) == pytest.approx(13 / 16) and chapter.km_line(3, 3) is None
    assert "is drawn once all 16 seeds are recorded" in chapter.km_caption(None, 16)
    assert "cannot be reached with the 3 seeds this profile plans" in chapter.km_caption(None, 3)
    assert chapter.km_caption(13 / 16, 16) == chapter.KM_CAPTION and "dashed" not in chapter.km_alt(None)
    assert chapter.km_caption(13 / 16, 16, 13 / 16).endswith("The curve ends on the dashed line, which it hides from "
                                                             "there on.")
    assert chapter.km_caption(13 / 16, 16, 14 / 16) == chapter.KM_CAPTION
    km = pd.DataFrame({"step": [0, 8_750], "on_floor": [1.0, 0.5]})
    for line, dashed in ((None, 0), (0.8, 1)):
        fig = plots.survival(km, 20_000, 15_000, line)
        assert sum(ln.get_linestyle() == "--" for ln in fig.axes[0].get_lines()) == dashed
        plots.plt.close(fig)


def test_the_introductions_summary_names_the_readings_in_plain_words_and_where_each_stands():
    now = chapter.summary_text(budget.decide(_times([4000] * 2 + [None] * 9)), 16)
    assert now == ("So far, 2 of its 11 FFNOnly seeds have left the floor for good and 9 have ended on it. The "
                   "reading that FFNOnly learns, only late (at least 9 of 16 seeds leave the floor and end below a "
                   "bigram model's loss) can no longer be reached and the reading that FFNOnly's collapse is structural at "
                   "this budget (at least 13 of 16 seeds end on the floor, and none leaves it after step 15,000) is "
                   "still open.")
    assert "within the line" not in now and "bigram reference" not in now  # the chapter's terms stay in the chapter
    done = chapter.summary_text(budget.decide(_times([None] * 16)), 16)
    assert done.startswith("In all, none of its 16 FFNOnly seeds has left the floor for good. The rule") and done.endswith(
        "reads that FFNOnly's collapse is structural at this budget (at least 13 of 16 seeds end on the floor, and none leaves"
        " it after step 15,000). That reading holds with 3 seeds to spare.")
    edge = chapter.summary_text(budget.decide(_times([3000] * 3 + [None] * 13)), 16)
    assert edge.startswith("In all, 3 of its 16 FFNOnly seeds have left") and edge.endswith(
        "That reading holds with no seed to spare: one more seed leaving the floor would have undone it.")
    assert chapter.summary_text(budget.decide(_times([8750])), 16).startswith(
        "Its one FFNOnly seed recorded so far has left the floor for good.")
    assert chapter.summary_text(budget.decide(_times([None] * 3)), 3).endswith(
        "Neither reading can be reached with the 3 seeds this profile plans.")


def test_the_question_and_why_seeds_differ_are_read_from_the_committed_records():
    from residual_lib import load_records

    results = Path(__file__).resolve().parents[1] / "results"
    every = pd.concat([load_records(results / p) for p in ("cpu", "cpu-long", "cpu-budget")], ignore_index=True)
    question = chapter.question_text(every, "cpu")
    assert question.startswith("Every verdict on FFNOnly's collapse at the stand-in rests on runs of 2,000 steps "
                               "(4.1M training tokens), where a run can still be leaving the floor at its last step: "
                               "at `cpu`, seeds 42 and 123 end below the floor still falling, by 0.025 and 0.032 nats"
                               " per 100 steps over the last tenth of training (at `cpu-long`, both end on the floor);")
    assert "at `cpu-long` (6,000 steps), seed 1337 leaves it at step 4,300" in question
    assert "see 81.9M tokens" in question
    without = chapter.question_text(every[every.profile != "cpu-long"].iloc[:0], "cpu")  # no records: no clues
    assert without.startswith("Every verdict on FFNOnly's collapse at the stand-in rests on runs of 2,000 steps (4.1M"
                              " training tokens). The paper's 10M runs")
    times = budget.escape_times(every[every.profile == "cpu-budget"])
    carry = chapter.carry_over_text(every, "cpu", times)
    assert carry.startswith("The study's runs are not the stand-in's continued: `cpu`'s learning rate decays from "
                            "0.001 to 0.0001 over its 2,000 steps (`cpu-long`'s over 6,000), the study's stays at "
                            "0.001 after warm-up")
    assert "seeds 42 and 123 leave the floor at `cpu` and not here" in carry  # both on record at both profiles
    assert "within `cpu`'s" not in carry  # seeds 8 and 1337 leave it here only after step 2,000, cpu's last
    assert "seed 8 leaves it here within `cpu-long`'s 6,000 steps and not at `cpu-long`" in carry
    # both leave, but at cpu-long within its 6,000 steps and here only after them: a difference too
    assert "seed 1337 leaves it at `cpu-long` at step 4,300 and here only at step 8,750" in carry
    assert carry.endswith("it does not say what the stand-in's decaying one would do over a longer run.")
    alone = chapter.carry_over_text(every[every.profile != "cpu-long"], "cpu", times)  # no longer schedule recorded
    assert "cpu-long" not in alone
    assert chapter.carry_over_text(every, "cpu", times.iloc[:0]) == ""
    reference = chapter.reference_text(every[every.profile == "cpu-budget"])
    assert "the floor is 3.335 nats" in reference and "the bigram reference 2.475" in reference


def test_the_anchor_table_gives_each_variants_median_beside_its_mean():
    records = pd.DataFrame({"variant": ["ffn_only"] * 3 + ["attn_only", "no_residual"],
                            "final_val_loss": [2.0, 3.335, 3.336, 1.55, 3.335]})
    anchors = chapter.anchor_table(records)
    assert list(anchors.index) == ["attn_only", "ffn_only", "no_residual"]
    assert anchors.loc["ffn_only", "mean"] == pytest.approx(2.8903, abs=1e-4)  # between the two groups, near neither
    assert anchors.loc["ffn_only", "median"] == pytest.approx(3.335)
    assert anchors.loc["ffn_only", ["seeds", "lowest", "highest"]].tolist() == [3, 2.0, 3.336]


def test_the_introduction_says_where_the_seeds_that_left_the_floor_ended():
    anchors = pd.DataFrame({"variant": ["attn_only", "attn_only", "no_residual"], "final_val_loss": [1.53, 1.56, 3.33]})
    times = _times([4000, None, 8750], finals=[1.995, 3.33, 2.075])
    assert chapter.escaped_text(times, anchors) == ("The two seeds that left the floor end at 1.995 to 2.075 nats, below a bigram "
                                                    "model's 2.470 and above AttnOnly's 1.530 to 1.560 at the same budget.")
    one = chapter.escaped_text(_times([4000, None], finals=[2.6, 3.33]), anchors.head(1))
    assert one == ("The one seed that left the floor ends at 2.600 nats, above a bigram model's 2.470 and above AttnOnly's "
                   "1.530 at the same budget.")
    mixed = chapter.escaped_text(_times([4000, 5000], finals=[2.0, 2.6]), anchors.tail(1))
    assert mixed == ("The two seeds that left the floor end at 2.000 to 2.600 nats, one of them below a bigram "
                     "model's 2.470.")
    # AttnOnly's anchors beside or above the escaped seeds' ends
    beside = chapter.escaped_text(times, anchors.assign(final_val_loss=[1.9, 2.1, 3.33]))
    assert beside.endswith("and beside AttnOnly's 1.900 to 2.100 at the same budget.")
    below = chapter.escaped_text(times, anchors.assign(final_val_loss=[2.2, 2.3, 3.33]))
    assert below.endswith("and below AttnOnly's 2.200 to 2.300 at the same budget.")
    assert chapter.escaped_text(_times([None, None]), anchors) == ""
    # the introduction's paragraph: the rule's reading, then where the seeds that left the floor ended
    decision = budget.decide(times)
    assert chapter.intro_summary(decision, 3, times, anchors) == (
        chapter.summary_text(decision, 3) + " " + chapter.escaped_text(times, anchors))
    stayed = _times([None, None])
    assert chapter.intro_summary(budget.decide(stayed), 2, stayed, anchors) == chapter.summary_text(budget.decide(stayed), 2)
