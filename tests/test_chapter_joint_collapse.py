"""Chapter 4's findings: the loss table under random evaluation and the block-0 starvation sentence."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from residual_lib.pages import scorecard
from residual_lib.pages.chapters import joint_collapse
from residual_lib.study import analysis
from residual_lib.study.sections import random_evaluation

FLOOR = 3.35


def _central(ffn_losses: dict[int, float]) -> pd.DataFrame:
    """Controlled runs: full and attn_only learn, no_residual sits at the floor, ffn_only at ``ffn_losses``."""
    losses = [("full", 1, 1.5), ("attn_only", 1, 1.6), ("no_residual", 1, FLOOR)]
    losses += [("ffn_only", seed, loss) for seed, loss in ffn_losses.items()]
    rows = [{"variant": v, "seed": s, "final_val_loss": loss} for v, s, loss in losses]
    return pd.DataFrame(rows).assign(eval_floor=FLOOR)


def _layer0(ffn_medians: dict[int, float], attn_median: float = 0.7) -> pd.DataFrame:
    """Block-0 medians: full and attn_only (``attn_median``) live, no_residual starved, ffn_only at ``ffn_medians``."""
    medians = [("full", 1, 0.8), ("attn_only", 1, attn_median), ("no_residual", 1, 2e-7)]
    medians += [("ffn_only", seed, m) for seed, m in ffn_medians.items()]
    return pd.DataFrame([{"variant": v, "seed": s, "median": m} for v, s, m in medians])


def test_the_loss_table_gives_ratios_to_full_and_the_distance_below_the_floor():
    runs = pd.DataFrame({"variant": ["ffn_only", "full", "full", "ffn_only"], "seed": [1, 1, 2, 2],
                         "final_val_loss": [3.3, 1.4, 1.6, 3.4], "eval_floor": FLOOR})
    table = joint_collapse.loss_table(runs)
    assert table.index.tolist() == ["full", "ffn_only"]  # the variants' canonical order
    assert table.loc["ffn_only", "ratio to full"] == pytest.approx(3.35 / 1.5)
    assert table.loc["full", "below the floor"] == pytest.approx(FLOOR - 1.5)
    assert table.loc["ffn_only", "below the floor"] == pytest.approx(0.0)
    assert {"std", "min", "max"} <= set(table.columns)  # two seeds: their spread is shown
    one = joint_collapse.loss_table(runs[runs.seed == 1])  # one seed: no spread columns to repeat the mean
    assert not {"std", "min", "max"} & set(one.columns) and one.loc["full", "mean"] == pytest.approx(1.4)


def test_random_runs_are_those_under_random_evaluation():
    records = pd.DataFrame({"eval_mode": ["random", "fixed", "random", "random"], "seed": [1, 2, 3, 4],
                            "gain": [1.0, 1.0, 1.0, 2.0], "deterministic": True, "replicate": 0, "init_noise": 0.0,
                            "on_recipe": True})
    assert random_evaluation(records).seed.tolist() == [1, 3]  # not the fixed run, nor another gain


def test_captions_name_the_seeds_in_order():
    runs = pd.DataFrame({"seed": [42, 7, 42]})
    assert "seed 7, 42 (the section's runs" in joint_collapse.curves_caption(runs)
    caption = joint_collapse.layer0_caption(runs)
    assert "every seed (7, 42)" in caption
    assert f"marks {analysis.LAYER0_FROM:.0%} of training" in caption


def test_the_layer0_table_is_per_variant_and_drops_parts_no_record_logs():
    layer0 = pd.DataFrame({"variant": ["ffn_only", "full", "full"], "median": [1e-7, 0.6, 1.0],
                           "starved": [1.0, 0.0, 0.0], "median_attn": math.nan, "median_mlp": [1e-7, 0.5, 0.7],
                           "median_ln": math.nan})
    table = joint_collapse.layer0_table(layer0)
    assert table.index.tolist() == ["full", "ffn_only"]
    assert table.columns.tolist() == ["median", "starved", "median_mlp"]
    assert table.loc["full", "median"] == pytest.approx(0.8)


def test_starvation_splits_ffn_only_into_the_seeds_at_the_floor_and_those_that_escape():
    central = _central({1: FLOOR, 2: FLOOR + 0.01, 3: FLOOR - 0.01, 4: FLOOR - 0.3, 5: FLOOR - 0.5})
    layer0 = _layer0({1: 1e-7, 2: 3e-7, 3: 5e-7, 4: 2e-4, 5: 6e-4})
    text = joint_collapse.starvation_tracks(central, layer0)
    assert text.startswith("After the cut-off, block 0's gradient has a median of 0.75")  # full 0.8, attn_only 0.7
    assert "and 2.0×10⁻⁷ in no_residual" in text
    assert "; ffn_only's is 3.0×10⁻⁷ in the 3 seeds that stay at the floor and 4.0×10⁻⁴ in the 2 that escape" in text
    # seed 4 escaped with block 0 below the starvation line: starvation does not decide collapse
    assert text.endswith("Starvation does not decide collapse by itself: seed 4 left the floor with block 0 below "
                         "the 5.0×10⁻⁴ line (2.0×10⁻⁴).")


def test_starvation_with_one_collapsed_seed_and_no_escape():
    text = joint_collapse.starvation_tracks(_central({1: FLOOR}), _layer0({1: 1e-7}))
    assert text.endswith("; ffn_only's is 1.0×10⁻⁷ in the 1 seed that stays at the floor.")
    assert "escape" not in text


def test_starvation_without_ffn_only_runs_names_only_the_other_variants():
    text = joint_collapse.starvation_tracks(_central({}), _layer0({}))
    assert text.endswith("and 2.0×10⁻⁷ in no_residual.")
    assert "ffn_only" not in text


def test_a_live_attn_only_gradient_contradicts_the_premise_of_section_7():
    central, layer0 = _central({1: FLOOR}), _layer0({1: 1e-7})
    tracks = joint_collapse.starvation_tracks(central, layer0)
    assert joint_collapse.starvation_finding(central, layer0) == tracks + joint_collapse.NOT_STARVED
    starved = _layer0({1: 1e-7}, attn_median=scorecard.LAYER0_ZERO / 2)
    assert joint_collapse.starvation_finding(central, starved) == joint_collapse.starvation_tracks(central, starved)


def test_the_quoted_constants_read_as_the_prose_writes_them():
    quoted = joint_collapse.quoted("smoke")  # 150 steps
    assert quoted["stand_in_steps"] == "150"
    assert quoted["layer0_from_step"] == str(round(analysis.LAYER0_FROM * 150))
    assert quoted["layer0_from"] == f"{round(analysis.LAYER0_FROM * 100)}%"
    assert quoted["paper_10m_steps"] == f"{analysis.PAPER_10M_STEPS:,}"
    assert quoted["layer0_zero"] == "5×10⁻⁴" and scorecard.LAYER0_ZERO == 5e-4
    assert joint_collapse.quoted("cpu")["stand_in_steps"] == "2,000"
