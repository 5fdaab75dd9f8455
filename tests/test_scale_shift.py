"""The introduction's sentence on what the paper's setting changes on the verdict grid."""

from __future__ import annotations

import pandas as pd

from residual_lib.pages import scorecard


def _grid(**columns) -> pd.DataFrame:
    return pd.DataFrame(columns, index=["A holds", "B holds", "C's ratio", "D", "E"])


def test_the_shift_is_read_against_the_dropout_twin_and_names_what_turns():
    grid = _grid(**{"cpu": ["reproduced", "not reproduced", "inconclusive", "reproduced", "not testable here"],
                    "cpu-dropout": ["reproduced", "reproduced", "inconclusive", "reproduced", None],
                    "paper-10m": ["reproduced", "not reproduced", "not reproduced", "not run at this scale",
                                  "not testable here"]})
    text = scorecard.scale_shift(grid, "cpu")
    assert text.startswith(
        "Set beside `cpu-dropout`, the stand-in with `paper-10m`'s dropout of 0.2, `paper-10m` gives the same "
        "verdict on one of the three claims both judge. It differs on one: *B holds* (reproduced at "
        "`cpu-dropout`, not reproduced at `paper-10m`). It decides one that `cpu-dropout` leaves "
        "inconclusive: *C's ratio* (not reproduced). At `paper-10m` some rules also hold a value")
    assert text.endswith("so a verdict can change where the result does not; the [scorecard](../book/scorecard.html) "
                         "gives each rule and what it read.")
    assert scorecard.scale_shift(grid, "cpu", seeds=1, link=False).endswith(
        "which no stand-in is held to, and its variants are compared over one seed so far, so a verdict can change "
        "where the result does not.")  # the scorecard does not link to itself
    # without the twin's column it reads against the stand-in itself, where B agrees
    alone = scorecard.scale_shift(grid.drop(columns="cpu-dropout"), "cpu")
    assert alone.startswith("Set beside `cpu`, the stand-in, `paper-10m` gives the same verdict on two of the "
                            "three claims") and "It differs" not in alone


def test_decided_claims_of_one_verdict_are_said_once_and_nothing_is_said_without_the_column():
    grid = _grid(**{"cpu": ["inconclusive", "inconclusive", "reproduced", "reproduced", None],
                    "paper-10m": ["not reproduced", "not reproduced", "reproduced", "reproduced", None]})
    assert scorecard.scale_shift(grid, "cpu").split(" At `paper-10m`", 1)[0].endswith(
        "It decides two that `cpu` leaves inconclusive, neither reproduced: *A holds* and *B holds*.")
    assert "gives the same verdict on all four claims both judge." in scorecard.scale_shift(
        grid.assign(**{"paper-10m": grid["cpu"]}), "cpu")
    # a verdict the stand-in gives and the paper's setting leaves open is not said to differ
    opened = scorecard.scale_shift(grid.assign(**{"paper-10m": ["inconclusive"] * 4 + [None]}), "cpu")
    assert "the same verdict on two of the four claims both judge. It leaves open two that `cpu` decides: " \
           "*C's ratio* (reproduced at `cpu`) and *D* (reproduced at `cpu`)." in opened and "differs" not in opened
    assert scorecard.scale_shift(grid.drop(columns="paper-10m"), "cpu") == ""
    assert scorecard.scale_shift(grid.assign(**{"paper-10m": "not run at this scale"}), "cpu") == ""


def test_the_seeds_counted_are_those_every_variant_is_compared_over():
    rows = [("attn_only", 1337), ("attn_only", 42), ("full", 1337), ("full", 123), ("ffn_only", 42), ("ffn_only", 1337)]
    frame = pd.DataFrame(rows, columns=["variant", "seed"]).assign(
        profile="paper-10m", status="ok", eval_mode="fixed", gain=1.0, deterministic=True, replicate=0, init_noise=0.0)
    assert frame.groupby("variant").seed.nunique().min() == 2  # each variant has two seeds ...
    assert scorecard.compared_seeds(frame) == 1  # ... but only seed 1337 has all three
    assert scorecard.compared_seeds(frame.assign(profile="cpu")) == 0 and scorecard.compared_seeds(frame.head(0)) == 0
