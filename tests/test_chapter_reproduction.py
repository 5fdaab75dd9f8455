"""Chapter 8's tables: repeats of one configuration, its seed spread and the comparison with the paper."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from residual_lib.pages.chapters import reproduction


def _records() -> pd.DataFrame:
    """attn_only at seed 1: two deterministic and three non-deterministic repeats; then one deterministic run per
    variant at seeds 2 and 3 (and ffn_only at seed 1): a central sweep of both variants at seeds 1, 2 and 3."""
    runs = [("attn_only", 1, True, 0, 1.60), ("attn_only", 1, True, 1, 1.60), ("attn_only", 1, False, 2, 1.70),
            ("attn_only", 1, False, 0, 1.50), ("attn_only", 1, False, 1, 1.65), ("attn_only", 2, True, 0, 1.70),
            ("attn_only", 3, True, 0, 1.80), ("ffn_only", 1, True, 0, 3.30), ("ffn_only", 2, True, 0, 3.40),
            ("ffn_only", 3, True, 0, 3.35)]
    frame = pd.DataFrame(runs, columns=["variant", "seed", "deterministic", "replicate", "final_val_loss"])
    # the central sweep's settings otherwise, as load_records gives them
    return frame.assign(best_val_loss=frame.final_val_loss - 0.01, device_name="cpu", eval_mode="fixed", gain=1.0,
                        init_noise=0.0, on_recipe=True)


def _claims() -> pd.DataFrame:
    """The paper's rows the comparison reads, with four non-deterministic repeats (one more than our runs)."""
    rows = [("nondeterministic_repeats", "attn_only", value, math.nan) for value in (1.97, 1.94, 2.06, 2.10)]
    rows += [("intermediate_reproduction", "attn_only", 2.591, 0.544), ("asymmetry_10m", "attn_only", 1.580, 0.003),
             ("asymmetry_10m", "ffn_only", 3.350, 0.002)]
    return pd.DataFrame(rows, columns=["claim", "variant", "value", "std"])


def test_repeats_are_every_run_of_the_variant_at_the_seed_deterministic_last():
    repeats = reproduction.repeat_runs(_records(), "attn_only", 1)
    assert len(repeats) == 5
    table = reproduction.repeat_table(repeats)
    assert list(zip(table.deterministic, table.replicate)) == [(False, 0), (False, 1), (False, 2), (True, 0),
                                                                (True, 1)]
    assert table.columns.tolist() == ["deterministic", "replicate", "final_val_loss", "best_val_loss", "device_name"]


def test_the_deterministic_replicates_are_listed_as_prose():
    repeats = reproduction.repeat_runs(_records(), "attn_only", 1)
    assert reproduction.deterministic_replicates(repeats) == "replicates 0 and 1"
    three = pd.DataFrame({"deterministic": [True, True, True, False], "replicate": [2, 0, 1, 3]})
    assert reproduction.deterministic_replicates(three) == "replicates 0, 1 and 2"
    assert reproduction.deterministic_replicates(three.iloc[:1]) == "replicate 2"
    assert reproduction.deterministic_replicates(three, False) == "replicate 3"  # the non-deterministic ones
    assert reproduction.deterministic_replicates(three.iloc[:3], False) == "none recorded"


def test_the_repeat_spread_is_per_setting_of_deterministic():
    spread = reproduction.repeat_spread(reproduction.repeat_runs(_records(), "attn_only", 1))
    assert spread.loc[True, "count"] == 2 and spread.loc[True, "max − min"] == 0.0
    assert spread.loc[False, "count"] == 3
    assert spread.loc[False, "max − min"] == pytest.approx(0.2)


def test_the_seed_spread_reads_one_deterministic_run_per_seed():
    seeds = reproduction.seed_runs(_records(), "attn_only")
    assert sorted(seeds.seed) == [1, 2, 3]  # not the second deterministic repeat, nor the non-deterministic ones
    spread = reproduction.seed_spread(seeds)
    assert spread.loc["attn_only", "count"] == 3
    assert spread.loc["attn_only", "mean"] == pytest.approx(1.70)
    assert spread.loc["attn_only", "std"] == pytest.approx(0.1)


def test_the_comparison_lists_every_paper_number_beside_ours():
    table = reproduction.comparison(_records(), _claims(), "attn_only", 1, "cpu").set_index("quantity")
    assert table.index.tolist() == [f"non-deterministic repeat {i}" for i in (1, 2, 3, 4)] + [
        "attn_only mean over seeds", "attn_only std over seeds", "attn_only central mean", "ffn_only central mean"]
    # ours in replicate order; the paper's fourth repeat has none of ours
    assert table.loc["non-deterministic repeat 1", "ours"] == 1.50
    assert table.loc["non-deterministic repeat 3", "ours"] == 1.70
    assert math.isnan(table.loc["non-deterministic repeat 4", "ours"])
    assert table.loc["non-deterministic repeat 4", "paper"] == 2.10
    assert table.loc["attn_only std over seeds", ["paper", "ours"]].tolist() == pytest.approx([0.544, 0.1])
    assert table.loc["ffn_only central mean", ["paper", "ours"]].tolist() == pytest.approx([3.350, 3.35])
    assert (table.profile == "cpu").all()
