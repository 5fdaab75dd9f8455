"""Chapter 6's findings (residual_lib.pages.chapters.central) on small hand-built frames."""

from __future__ import annotations

import pandas as pd
import pytest

from residual_lib.pages import scorecard
from residual_lib.pages.chapters import central

FLOOR = 3.3


def records(n_params: int = 800_000, **losses) -> pd.DataFrame:
    """One row per seed: variant=[final losses], seeds 1, 2, ... in that order."""
    return pd.DataFrame([{"variant": v, "seed": s, "final_val_loss": x, "n_params": n_params}
                         for v, xs in losses.items() for s, x in enumerate(xs, 1)])


def test_loss_summary_measures_from_the_floor():
    summary = central.loss_summary(records(ffn_only=[3.2, 3.4], full=[1.6, 1.8]), FLOOR)
    assert list(summary.index) == ["full", "ffn_only"]  # the variants' order, not the alphabet
    assert summary.loc["full", "below the floor"] == pytest.approx(FLOOR - 1.7)
    assert summary.loc["ffn_only", "below the floor"] == pytest.approx(0.0)


def test_quoted_numbers_with_several_seeds():
    frame = records(full=[1.6, 1.8, 1.7], attn_only=[1.8, 1.9])
    quoted = central.quoted_numbers(frame, central.loss_summary(frame, FLOOR), FLOOR)
    assert quoted == {"full_result": "1.700 ± 0.100", "attn_only_result": "1.850 ± 0.071", "eval_floor": "3.300",
                      "n_params": "0.8M-parameter", "n_seeds": "2 seeds"}  # the fewest seeds any variant has


def test_quoted_numbers_with_one_seed_and_no_full_model():
    frame = records(attn_only=[1.8], ffn_only=[3.3, 3.2])
    quoted = central.quoted_numbers(frame, central.loss_summary(frame, FLOOR), FLOOR)
    assert quoted["attn_only_result"] == "1.800"  # no spread from one seed
    assert quoted["n_seeds"] == "1 seed"
    assert quoted["n_params"] == "0M-parameter"


def test_per_seed_table_marks_ffn_only_at_the_floor_within_the_tolerance():
    inside, outside = FLOOR + 0.9 * scorecard.FLOOR_TOL, FLOOR - 1.1 * scorecard.FLOOR_TOL
    table = central.per_seed_table(records(ffn_only=[inside, outside], full=[1.7, 1.6]), FLOOR)
    assert list(table.columns) == ["full", "ffn_only", "ffn_only at the floor"]
    assert list(table["ffn_only at the floor"]) == [True, False]


def test_per_seed_table_without_ffn_only_has_no_floor_column():
    assert list(central.per_seed_table(records(full=[1.7], attn_only=[1.8]), FLOOR)) == ["full", "attn_only"]


def test_gaps_adds_ffn_only_to_the_floor_with_no_test():
    frame = records(full=[1.6, 1.7], attn_only=[1.8, 1.9], ffn_only=[3.2, 3.3], no_residual=[3.3, 3.4])
    table = central.gaps(frame, FLOOR)
    assert list(table.index) == ["ffn_only − attn_only", "ffn_only − no_residual", "attn_only − full",
                                 "ffn_only − floor"]
    assert table.loc["ffn_only − attn_only", "gap"] == pytest.approx(1.4)
    assert table.loc["ffn_only − floor", "gap"] == pytest.approx(-0.05)
    assert table.loc["ffn_only − floor", "n_a"] == 2 and pd.isna(table.loc["ffn_only − floor", "n_b"])
    assert pd.isna(table.loc["ffn_only − floor", "p"])
    assert str(table["n_a"].dtype) == "Int64"  # seed counts print as integers beside the missing one


def test_gaps_leaves_out_pairs_without_records():
    table = central.gaps(records(attn_only=[1.8, 1.9], ffn_only=[3.2, 3.3]), FLOOR)
    assert list(table.index) == ["ffn_only − attn_only", "ffn_only − floor"]
