"""Dips below the floor that do not last: found on hand-made curves, and said in sentences that count them
apart from the escapes the rule reads."""

from __future__ import annotations

import pandas as pd
import pytest

from residual_lib.study import dips
from residual_lib.study.escapes import escape_step

FLOOR, LINE = 3.335, 0.05
STEPS = [0, 250, 500, 750, 1000, 1250]


def test_a_stretch_below_the_line_that_comes_back_is_a_dip_and_one_that_reaches_the_end_is_not():
    assert dips.dips(STEPS, [3.34, 3.33, 3.30, 3.34, 3.33, 3.34], FLOOR, LINE) == []  # never past the line
    found = dips.dips(STEPS, [3.34, 3.2, 3.1, 3.15, 3.34, 3.33], FLOOR, LINE)
    assert found == [{"first": 250, "last": 750, "deepest": pytest.approx(0.235), "at": 500}]
    escaped = dips.dips(STEPS, [3.34, 3.2, 3.34, 3.0, 2.5, 2.2], FLOOR, LINE)  # the last stretch is the escape
    assert escaped == [{"first": 250, "last": 250, "deepest": pytest.approx(0.135), "at": 250}]
    assert dips.dips(STEPS, [3.34, 3.28, 3.34, 3.1, 3.34, 3.34], FLOOR, LINE) == [
        {"first": 250, "last": 250, "deepest": pytest.approx(0.055), "at": 250},
        {"first": 750, "last": 750, "deepest": pytest.approx(0.235), "at": 750}]
    assert dips.dips(STEPS, [3.34, 3.285, 3.34, 3.34, 3.34, 3.34], FLOOR, LINE) == []  # exactly on the line


def test_returns_reads_each_runs_curve_against_its_own_floor_and_keeps_only_runs_that_dipped(monkeypatch):
    curves = {"a": [3.34, 3.2, 3.34, 3.34, 3.34, 3.336], "b": [3.34] * 6, "c": [3.34, 3.2, 3.34, 3.0, 2.5, 2.2],
              "d": [3.34, 3.27, 3.34, 3.34, 3.34, 3.34], "e": [3.44, 3.32, 3.44, 3.44, 3.44, 3.44]}
    monkeypatch.setattr(dips, "read_record", lambda path: {"curves": {"val": {"step": STEPS, "loss": curves[path]}}})
    frame = pd.DataFrame({"profile": "cpu-budget", "variant": ["ffn_only"] * 3 + ["no_residual", "ffn_only"], "seed": [12, 3, 10, 1337, 5],
                          "path": list("abcde"), "eval_floor": [FLOOR] * 4 + [FLOOR + 0.1],
                          "final_val_loss": [curves[p][-1] for p in "abcde"]})
    found = dips.returns(frame, LINE)
    # seed 3 never crossed the line; seed 5's 3.32 is 0.115 below its own floor of 3.435, not the others' 3.335
    assert list(zip(found.variant, found.seed)) == [("ffn_only", 5), ("ffn_only", 10), ("ffn_only", 12),
                                                    ("no_residual", 1337)]
    assert found.set_index("seed").dips[5] == [{"first": 250, "last": 250, "deepest": pytest.approx(0.115), "at": 250}]
    assert list(found.escaped) == [False, True, False, False] and found.escape_step.iloc[1] == 750  # as escape_step
    assert found.set_index("seed").dips[12] == [{"first": 250, "last": 250, "deepest": pytest.approx(0.135), "at": 250}]
    assert found.set_index("seed").below_floor[12] == pytest.approx(-0.001)
    assert dips.returns(frame.iloc[:0], LINE).empty


def test_a_loss_that_is_missing_or_not_finite_is_not_below_the_line_as_the_escape_rule_reads_it():
    nan = float("nan")
    curve = [3.34, 3.2, nan, 3.1, 3.0, 2.9]  # the escape is from step 750: the stretch at 250 came back
    assert escape_step(STEPS, curve, FLOOR, LINE) == 750
    assert dips.dips(STEPS, curve, FLOOR, LINE) == [{"first": 250, "last": 250, "deepest": pytest.approx(0.135),
                                                     "at": 250}]
    assert dips.dips(STEPS, [3.34, 3.2, 3.1, 3.0, nan, None], FLOOR, LINE) == [  # no escape, so a dip
        {"first": 250, "last": 750, "deepest": pytest.approx(0.335), "at": 750}]
    assert escape_step(STEPS, [3.34, 3.2, 3.1, 3.0, nan, nan], FLOOR, LINE) is None
    assert dips.dips(STEPS, [nan] * 5 + [3.0], FLOOR, LINE) == []  # below at the end only: the escape


def _found(*rows) -> pd.DataFrame:
    return pd.DataFrame([{"profile": "cpu-budget", "variant": v, "seed": s, "escaped": e is not None, "escape_step": e, "below_floor": b,
                          "dips": d} for v, s, e, b, d in rows], columns=dips.COLUMNS)


DEEP = {"first": 2000, "last": 3500, "deepest": 0.199, "at": 3000}
SHALLOW = {"first": 3000, "last": 3000, "deepest": 0.053, "at": 3000}


def test_a_run_that_came_back_is_said_to_count_as_within_the_line():
    text = dips.returns_text(_found(("ffn_only", 12, None, -0.0014, [DEEP])), 15, LINE)
    assert text == ("Seed 12 went more than 0.05 nats below the floor from step 2,000 to 3,500 (0.199 below at its "
                    "deepest, at step 3,000) and came back, ending 0.001 above the floor. The rule counts it as within "
                    "the line: a run leaves the floor only at the first evaluation from which it stays below the line "
                    "to the end.")
    on = dips.returns_text(_found(("ffn_only", 12, None, 0.0002, [DEEP]), ("ffn_only", 5, None, 0.01, [SHALLOW, DEEP])),
                           15, LINE)
    assert "ending on the floor" in on and "The rule counts them" in on
    assert ("Seed 5 went more than 0.05 nats below the floor twice: at step 3,000 (0.053 below at its deepest) and "
            "from step 2,000 to 3,500") in on and "coming back each time, ending 0.010 below the floor." in on
    lost = dips.returns_text(_found(("ffn_only", 7, None, float("nan"), [DEEP])), 15, LINE)
    assert "ending with no finite final loss" in lost and "nan" not in lost


def test_runs_that_dipped_on_their_way_off_the_floor_are_told_apart_one_sentence_each():
    text = dips.returns_text(_found(("ffn_only", 10, 4000, 1.34, [SHALLOW]),
                                    ("ffn_only", 1337, 8750, 1.26, [SHALLOW, DEEP])), 15, LINE)
    assert text == ("Seeds 10 and 1337 went below the line on their way off the floor. Seed 10 did so at step 3,000 "
                    "(0.053 below at its deepest) and came back, before leaving the floor for good at step 4,000. "
                    "Seed 1337 did so twice: at step 3,000 (0.053 below at its deepest) and from step 2,000 to 3,500 "
                    "(0.199 below at its deepest, at step 3,000), coming back each time, before leaving the floor for "
                    "good at step 8,750.")
    one = dips.returns_text(_found(("ffn_only", 12, None, 0.0, [DEEP]), ("ffn_only", 10, 4000, 1.34, [SHALLOW])), 15, LINE)
    assert ("Seed 10 also went below the line on its way off the floor: at step 3,000 (0.053 below at its deepest) and "
            "came back, before leaving the floor for good at step 4,000.") in one


def test_the_anchors_dips_are_said_apart_and_measured_against_a_model_blind_to_its_input():
    found = _found(("no_residual", 1337, None, 0.0, [SHALLOW]), ("ffn_only", 12, None, 0.0, [DEEP]),
                   ("no_residual", 42, 500, 1.0, [DEEP]))  # an anchor that escaped is not one that ends on the floor
    assert dips.returns_text(found, 15, LINE).startswith("Seed 12 went")  # FFNOnly's only
    assert dips.anchor_text(found, LINE, 0.0102) == (
        "The NoResidual anchor, which ends on the floor, crossed the line too. Seed 1337 went below it at step 3,000 "
        "(0.053 below at its deepest) and came back. So even a run that ends on the floor can go 0.053 below it for a "
        "while, 5 times as far as a model that ignores its input can reach on these batches (0.010): a dip that comes "
        "back is not evidence of lasting learning.")
    assert "times as far" not in dips.anchor_text(found, LINE, 0.0)
    assert dips.anchor_text(found[found.variant == "ffn_only"], LINE, 0.0102) == ""
    measured = dips.anchor_text(found, LINE)  # the profile's own input-blind line, from its evaluation batches
    assert measured.endswith("as far as a model that ignores its input can reach on these batches (0.010): a dip "
                             "that comes back is not evidence of lasting learning.")
    assert dips.anchor_text(found[found.seed == 42], LINE, 0.0102) == ""


def test_no_dips_and_no_runs():
    assert dips.returns_text(_found(), 15, LINE) == "No FFNOnly run crossed the line and came back."
    assert dips.returns_text(None, 15, LINE) == "No FFNOnly run crossed the line and came back."
    assert dips.returns_text(_found(), 0, LINE) == ""
    assert dips.anchor_text(None, LINE, 0.0102) == ""
