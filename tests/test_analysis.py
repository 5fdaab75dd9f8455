"""Numbers the chapters compute from records: the mixer test's shares of the gap."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from residual_lib.study import analysis


def _frame(losses: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame([{"variant": v, "seed": s, "final_val_loss": x}
                         for v, xs in losses.items() for s, x in enumerate(xs)])


def test_mixer_shares_split_the_gap_between_the_control_and_the_mixing():
    # means: attn_only 1.8, ffn_only 3.3 (gap 1.5), mixer 2.1, pointwise 2.7
    frame = _frame({"attn_only": [1.7, 1.8, 1.9], "ffn_only": [3.2, 3.3, 3.4], "mixer": [2.0, 2.1, 2.2],
                    "pointwise": [2.6, 2.7, 2.8], "full": [1.6, 1.7, 1.8]})
    shares = analysis.mixer_shares(frame)
    assert shares["gap"] == pytest.approx(1.5)
    assert shares["mixer"] == pytest.approx(1.2 / 1.5)
    assert shares["pointwise"] == pytest.approx(0.6 / 1.5)
    assert shares["mixing"] == pytest.approx(0.6 / 1.5)
    assert shares["mixing"] == pytest.approx(shares["mixer"] - shares["pointwise"])
    for name in ("mixer", "pointwise", "mixing"):
        assert shares[f"{name}_low"] < shares[name] < shares[f"{name}_high"]
    assert shares["gap_ci_low"] < 1.5 < shares["gap_ci_high"]
    assert (shares["n_attn_only"], shares["n_pointwise"]) == (3, 3)
    # the same values read in another order give the same intervals
    again = analysis.mixer_shares(frame.sample(frac=1.0, random_state=1))
    assert again["mixing_low"] == shares["mixing_low"] and again["mixing_high"] == shares["mixing_high"]


def test_mixer_shares_without_the_control_leave_its_shares_missing():
    frame = _frame({"attn_only": [1.7, 1.9], "ffn_only": [3.2, 3.4], "mixer": [2.4]})
    shares = analysis.mixer_shares(frame)
    assert shares["mixer"] == pytest.approx(0.9 / 1.5)
    assert math.isnan(shares["mixer_low"])  # one mixer seed: no interval
    assert all(math.isnan(shares[k]) for k in ("pointwise", "mixing", "pointwise_low", "mixing_high"))
    assert shares["n_pointwise"] == 0
    assert math.isnan(analysis.mixer_shares(_frame({"mixer": [2.0, 2.1]}))["mixer"])


def test_a_variant_in_numerator_and_denominator_is_resampled_once():
    """AttnOnly and the mixer constant and equal: the mixer closes exactly the whole gap for any
    resample of FFNOnly's seeds, so its interval is the point 1. Resampling FFNOnly separately
    in the numerator and the denominator would widen it."""
    frame = _frame({"attn_only": [1.8] * 4, "ffn_only": [3.0, 3.2, 3.4, 3.6], "mixer": [1.8] * 4,
                    "pointwise": [2.7, 2.7, 2.7, 2.7]})
    shares = analysis.mixer_shares(frame)
    assert shares["mixer"] == pytest.approx(1.0)
    assert shares["mixer_low"] == pytest.approx(1.0) and shares["mixer_high"] == pytest.approx(1.0)


def test_mixer_shares_from_a_baseline_measure_from_it_and_ignore_ffn_only():
    """Measured from a fixed loss (the floor) instead of FFNOnly's mean: FFNOnly's records, escaped
    seeds and all, change nothing, and the baseline is not resampled."""
    losses = {"attn_only": [0.9, 1.1], "mixer": [2.0, 2.0], "pointwise": [2.5, 2.5]}
    shares = analysis.mixer_shares(_frame({**losses, "ffn_only": [3.0, 1.0]}), baseline=3.0)
    assert shares["gap"] == pytest.approx(2.0) and shares["n_ffn_only"] == 0
    assert shares["mixer"] == pytest.approx(0.5)
    assert shares["pointwise"] == pytest.approx(0.25)
    assert shares["mixing"] == pytest.approx(0.25)
    # the mixer and the control are constant: only AttnOnly's two seeds vary the gap
    assert shares["mixing_low"] == pytest.approx(0.5 / (3.0 - 0.9)) and shares["mixing_high"] == pytest.approx(0.5 / (3.0 - 1.1))
    assert shares["gap_boot_low"] == pytest.approx(1.9) and shares["gap_boot_high"] == pytest.approx(2.1)
    assert shares == analysis.mixer_shares(_frame(losses), baseline=3.0) | {"n_ffn_only": 0}


def test_one_selection_of_the_central_sweep_for_every_page_when_a_record_is_missing():
    """Full's seed-42 record missing: chapter 6's table, the scorecard's rules and the intro's
    headline average FFNOnly over the same seeds, and the page names the runs left out."""
    from residual_lib.pages.chapters import central
    from residual_lib.pages.scorecard.prose import headline
    from residual_lib.pages.scorecard.rule import ProfileRecords
    from residual_lib.study.frames import load_records
    from residual_lib.study.sections import central_sweep, controlled

    every = load_records(Path(__file__).resolve().parents[1] / "results" / "cpu")
    frame = every[~((every.variant == "full") & (every.seed == 42))]
    page = central_sweep(frame)
    assert 42 not in set(page.seed) and any("ffn_only seed 42" in line for line in page.attrs["left_out"])
    ffn = central.loss_summary(page, page.eval_floor.iloc[0]).loc["ffn_only", "mean"]
    assert ffn == ProfileRecords(frame, "cpu").means()["ffn_only"]
    everywhere = controlled(frame)
    assert abs(ffn - everywhere[everywhere.variant == "ffn_only"].final_val_loss.mean()) > 1e-3  # it matters
    table = pd.DataFrame({"claim": ["asymmetry_10m"], "profile": ["cpu"], "verdict": ["reproduced"]})
    assert f"FFNOnly at {ffn:.3f}" in headline(table, frame)


def test_a_table_keeps_runs_of_other_conditions_apart():
    frame = pd.DataFrame({"variant": ["full", "full", "ffn_only", "ffn_only", "ffn_only"], "seed": [1, 2, 1, 2, 1],
                          "gain": [1.0, 1.0, 1.0, 1.0, 2.0], "eval_mode": ["fixed"] * 5,
                          "final_val_loss": [1.0, 1.2, 3.0, 3.1, 2.0]})
    summary = analysis.variant_summary(frame)
    assert list(summary.index) == ["full (gain 1)", "ffn_only (gain 1)", "ffn_only (gain 2)"]
    assert summary.loc["ffn_only (gain 1)", "mean"] == pytest.approx(3.05) and summary.seeds.sum() == 5
    assert list(analysis.variant_summary(frame[frame.gain == 1]).index) == ["full", "ffn_only"]
