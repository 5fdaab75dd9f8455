"""The scale ladder: its plan spans the ladder's profiles, its gaps are computed per rung."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from residual_lib.pages.notebook import ensure
from residual_lib.run.profiles import get_profile, ladder
from residual_lib.study import analysis, scaling
from residual_lib.study.sections import plan


def test_the_ladder_keeps_one_budget_and_changes_only_the_model():
    rungs = [get_profile(r) for r in ladder("cpu")]
    assert [r.name for r in rungs] == ["ladder-0.1m", "ladder-0.3m", "cpu", "ladder-3m", "ladder-10m"]
    base = rungs[2].to_dict()
    for rung in rungs[:4]:  # four layers: only the width changes
        assert {k for k, v in rung.to_dict().items() if base[k] != v} <= {"name", "n_embd"}
    top = rungs[-1].to_dict()  # the paper-10m shape at the ladder's budget
    assert {k for k, v in top.items() if base[k] != v} == {"name", "n_layer", "n_head", "n_embd"}
    paper = get_profile("paper-10m")
    assert (top["n_layer"], top["n_head"], top["n_embd"]) == (paper.n_layer, paper.n_head, paper.n_embd)
    assert [r.n_embd for r in rungs] == sorted(r.n_embd for r in rungs)
    assert ladder("paper-10m") == ladder("cpu")  # the ladder is a CPU study


def test_ladder_plan_covers_every_rung_variant_and_first_three_seeds():
    specs = plan("09_scale_ladder", "cpu", seeds=[1, 2, 3, 4], variants=["full", "ffn_only"])
    # the 10M rung, over an hour a run on one core, asks for the first seed only
    assert {(s.profile.name, s.variant, s.seed) for s in specs} == {
        (r, v, s) for r in ladder("cpu") for v in ("full", "ffn_only")
        for s in ((1,) if r == "ladder-10m" else (1, 2, 3))}


def test_the_rung_table_gives_tokens_per_parameter_and_the_cost_per_run():
    rows = pd.DataFrame([{"profile": "cpu", "wall_seconds": 600.0}, {"profile": "cpu", "wall_seconds": 900.0}])
    table = scaling.ladder_rungs(rows, ["cpu", "ladder-10m"]).set_index("profile")
    assert table.loc["cpu", "tokens"] == 2000 * 32 * 64 and table.loc["ladder-10m", "tokens"] == 2000 * 32 * 64
    assert 10.5e6 < table.loc["ladder-10m", "parameters"] < 10.8e6
    assert table.loc["ladder-10m", "tokens per parameter"] == pytest.approx(0.384, abs=0.01)
    assert table.loc["cpu", "minutes per run"] == pytest.approx(12.5) and math.isnan(table.loc["ladder-10m",
                                                                                           "minutes per run"])


def test_ensure_can_show_a_partial_ladder(tmp_path):
    with pytest.raises(FileNotFoundError, match="sweep notebooks/09_scale_ladder.py"):
        ensure("09_scale_ladder", "smoke", seeds=[1], variants=["full"], results_dir=tmp_path, train_missing=False)
    empty = ensure("09_scale_ladder", "smoke", seeds=[1], variants=["full"], results_dir=tmp_path,
                   train_missing=False, skip_missing=True)
    assert empty.empty and "final_val_loss" in empty.columns


def _row(profile, n_params, variant, seed, loss, floor=3.0):
    return {"profile": profile, "n_params": n_params, "variant": variant, "seed": seed, "final_val_loss": loss,
            "eval_floor": floor, "unigram_floor": floor + 0.5}  # the gap is taken to the evaluation floor


def test_ladder_gaps_pair_by_seed_and_skip_incomplete_pairs():
    frame = pd.DataFrame([
        _row("a", 100, "full", 1, 2.0), _row("a", 100, "attn_only", 1, 2.5),
        _row("a", 100, "full", 2, 2.2), _row("a", 100, "attn_only", 2, 2.5),
        _row("a", 100, "ffn_only", 1, 3.1), _row("a", 100, "ffn_only", 2, 2.9),
        _row("b", 1000, "full", 1, 1.0), _row("b", 1000, "ffn_only", 1, 3.0),  # no attn_only at b
    ])
    gaps = scaling.ladder_gaps(frame).set_index(["profile", "gap"])
    assert gaps.loc[("a", "attn_only - full"), "mean"] == pytest.approx(0.4)  # (0.5 + 0.3) / 2
    assert gaps.loc[("a", "attn_only - full"), "std"] == pytest.approx(math.sqrt(0.02))
    assert gaps.loc[("a", "ffn_only - floor"), "mean"] == pytest.approx(0.0)
    assert gaps.loc[("b", "ffn_only - floor"), "seeds"] == 1 and math.isnan(gaps.loc[("b", "ffn_only - floor"), "std"])
    assert ("b", "attn_only - full") not in gaps.index
    # the 95% t interval of a mean of two: mean +- t(0.975, 1) * std / sqrt(2) = 0.4 +- 12.706 * 0.1
    assert gaps.loc[("a", "attn_only - full"), "t_low"] == pytest.approx(0.4 - 1.2706, abs=1e-3)
    assert gaps.loc[("a", "attn_only - full"), "t_high"] == pytest.approx(0.4 + 1.2706, abs=1e-3)
    assert math.isnan(gaps.loc[("b", "ffn_only - floor"), "t_low"])  # one seed: no interval


def test_the_top_rung_says_whether_attn_only_recovers_and_ffn_only_collapses_there():
    frame = pd.DataFrame([
        _row("a", 100, "full", 1, 2.0), _row("a", 100, "attn_only", 1, 2.5),
        _row("ladder-10m", 10_672_512, "full", 1, 1.5), _row("ladder-10m", 10_672_512, "attn_only", 1, 1.7),
        _row("ladder-10m", 10_672_512, "full", 2, 1.5), _row("ladder-10m", 10_672_512, "attn_only", 2, 1.7),
    ])
    rungs = ("a", "ladder-10m", "ladder-3m")  # the last has no records: the top rung is the last recorded
    text = scaling.top_rung_text(frame, rungs, 0.05)
    assert text.startswith("At 10.7M parameters (")
    assert ("AttnOnly still recovers: it ends at 1.700 (mean of 2 seeds) against a floor of 3.000, 0.200 above Full;"
            " FFNOnly and NoResidual have no records there yet.") in text
    frame = pd.concat([frame, pd.DataFrame([_row("ladder-10m", 10_672_512, "ffn_only", 1, 3.01),
                                            _row("ladder-10m", 10_672_512, "no_residual", 1, 3.0)])])
    assert text.split("(")[1] == scaling.top_rung_text(frame, rungs, 0.05).split("(")[1]
    assert scaling.top_rung_text(frame, rungs, 0.05).endswith(
        "FFNOnly still collapses: it ends at 3.010 (one seed), NoResidual at 3.000 (one seed).")
    assert "FFNOnly leaves the floor" in scaling.top_rung_text(frame, rungs, 0.005)
    assert scaling.top_rung_text(frame.head(0), rungs, 0.05) == "No rung of the ladder has records yet."


def test_a_trend_reads_as_a_sentence_and_is_silent_without_a_fit():
    trend = pd.DataFrame([{"gap": "g", "rungs": 5, "points": 11, "slope_per_decade": 0.021, "slope_low": -0.003,
                           "slope_high": 0.044, "p": 0.08, "trend": "no trend distinguishable from zero"},
                          {"gap": "h", "rungs": 1, "points": 1, "slope_per_decade": math.nan, "slope_low": math.nan,
                           "slope_high": math.nan, "p": math.nan, "trend": "too few rungs or seeds"}])
    slope = "+0.021 nats per tenfold increase in parameters (95% interval −0.003 to +0.044, p = 0.080)"
    assert scaling.trend_sentence(trend, "g", "The cost") == \
        f"The cost shows no trend distinguishable from zero across 5 rungs: {slope}."
    grows = trend.assign(trend="grows with size")
    assert scaling.trend_sentence(grows, "g", "The cost").startswith("The cost grows with size across 5 rungs")
    assert scaling.trend_sentence(trend, "h", "x") == scaling.trend_sentence(trend, "absent", "x") == ""


def test_ladder_trend_fits_nats_per_decade_and_needs_two_rungs():
    frame = pd.DataFrame([
        _row(name, n, variant, seed, loss)
        for name, n, attn_gap in (("a", 100, 0.6), ("b", 1000, 0.4), ("c", 10000, 0.2))
        for seed, jitter in ((1, -0.01), (2, 0.01))
        for variant, loss in (("full", 2.0), ("attn_only", 2.0 + attn_gap + jitter), ("ffn_only", 3.0))
    ])
    trend = scaling.ladder_trend(scaling.ladder_gap_points(frame)).set_index("gap")
    attn = trend.loc["attn_only - full"]
    assert attn.slope_per_decade == pytest.approx(-0.2) and attn.slope_low < -0.2 < attn.slope_high and attn.p < 0.01
    assert (attn.rungs, attn.points) == (3, 6)
    assert attn.trend == "shrinks with size"
    assert trend.loc["ffn_only - floor"].slope_per_decade == pytest.approx(0.0, abs=1e-12)
    one_rung = scaling.ladder_trend(scaling.ladder_gap_points(frame[frame.profile == "a"]))
    assert one_rung.slope_per_decade.isna().all() and set(one_rung.trend) == {"too few rungs or seeds"}
    noisy = frame.copy()  # the same rungs with the attn_only gap flipping sign from seed to seed
    noisy.loc[(noisy.variant == "attn_only") & (noisy.seed == 2), "final_val_loss"] -= 1.0
    flat = scaling.ladder_trend(scaling.ladder_gap_points(noisy)).set_index("gap").loc["attn_only - full"]
    assert flat.slope_low <= 0 <= flat.slope_high and flat.trend == "no trend distinguishable from zero"


def test_the_bootstrap_interval_depends_on_the_values_not_their_order():
    a, b = [1.52, 1.48, 1.61, 1.39, 1.55], [3.31, 3.35, 2.90, 3.36, 3.10]
    gap = analysis.welch_gap(a, b)
    shuffled = analysis.welch_gap(a[::-1], [b[i] for i in (2, 0, 4, 1, 3)])
    assert (gap["boot_low"], gap["boot_high"]) == (shuffled["boot_low"], shuffled["boot_high"])
    assert gap["boot_low"] < gap["gap"] < gap["boot_high"]


def test_a_parameter_count_reads_with_two_significant_digits_and_three_from_ten_million():
    from residual_lib.study.scaling import size_text

    assert [size_text(n) for n in (116_304, 801_664, 3_176_192, 10_672_512)] == ["0.12M", "0.8M", "3.2M", "10.7M"]
