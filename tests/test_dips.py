"""Dips below the floor that do not last: found on hand-made curves, and said in sentences that count them
apart from the escapes the rule reads."""

from __future__ import annotations

import pandas as pd
import pytest

from residual_lib.study import dips

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


def test_returns_reads_each_runs_curve_and_keeps_only_runs_that_dipped(monkeypatch):
    curves = {"a": [3.34, 3.2, 3.34, 3.34, 3.34, 3.336], "b": [3.34] * 6, "c": [3.34, 3.2, 3.34, 3.0, 2.5, 2.2]}
    monkeypatch.setattr(dips, "read_record", lambda path: {"curves": {"val": {"step": STEPS, "loss": curves[path]}}})
    finals = {"a": 3.336, "b": 3.34, "c": 2.2}
    times = pd.DataFrame({"seed": [12, 3, 10], "path": ["a", "b", "c"], "escaped": [False, False, True],
                          "escape_step": [None, None, 750], "final_val_loss": [finals[p] for p in "abc"],
                          "below_floor": [FLOOR - finals[p] for p in "abc"]})
    found = dips.returns(times, LINE)
    assert list(found.seed) == [10, 12]  # seed order; seed 3 never crossed the line
    assert found.set_index("seed").dips[12] == [{"first": 250, "last": 250, "deepest": pytest.approx(0.135), "at": 250}]


def _found(*rows) -> pd.DataFrame:
    return pd.DataFrame([{"seed": s, "escaped": e is not None, "escape_step": e, "below_floor": b, "dips": d}
                         for s, e, b, d in rows], columns=["seed", "escaped", "escape_step", "below_floor", "dips"])


DEEP = {"first": 2000, "last": 3500, "deepest": 0.199, "at": 3000}
SHALLOW = {"first": 3000, "last": 3000, "deepest": 0.053, "at": 3000}


def test_a_run_that_came_back_is_said_to_count_as_within_the_line():
    text = dips.returns_text(_found((12, None, -0.0014, [DEEP])), 15, LINE)
    assert text.startswith("Seed 12 went more than 0.05 nats below the floor from step 2,000 to 3,500 (0.199 below at its "
                           "deepest, at step 3,000) and came back, ending 0.001 above the floor. The rule counts it as "
                           "within the line")
    on = dips.returns_text(_found((12, None, 0.0002, [DEEP]), (5, None, 0.01, [SHALLOW])), 15, LINE)
    assert "ending on the floor" in on and "ending 0.010 below the floor" in on and "The rule counts them" in on


def test_runs_that_dipped_on_their_way_off_the_floor_are_told_apart():
    text = dips.returns_text(_found((10, 4000, 1.34, [SHALLOW]), (1337, 8750, 1.26, [SHALLOW, DEEP])), 15, LINE)
    assert text.startswith("Seeds 10 and 1337 crossed the line and came back on their way off the floor: seed 10 at step "
                           "3,000 (0.053 below at its deepest, at step 3,000), before leaving it for good at step 4,000;")
    assert "and from step 2,000 to 3,500" in text and "counts" not in text  # the rule's reading is not at stake
    one = dips.returns_text(_found((12, None, 0.0, [DEEP]), (10, 4000, 1.34, [SHALLOW])), 15, LINE)
    assert "Seed 10 also crossed the line and came back on its way off the floor: at step 3,000" in one


def test_no_dips_and_no_runs():
    assert dips.returns_text(_found(), 15, LINE).startswith("No FFNOnly run went more than 0.05 nats below the floor")
    assert dips.returns_text(_found(), 0, LINE) == ""
