"""Chapter 9's findings on hand-built records: the recipe the prose quotes, the token budget, the loss summary, the
gaps, their trend and the sentences on them."""

from __future__ import annotations

import pandas as pd

from residual_lib.pages.chapters import ladder
from residual_lib.run.profiles import ladder as rungs_of
from residual_lib.run.runs import Run

FLOOR = 3.3


def records_frame(losses) -> pd.DataFrame:
    """Records from ``{(profile, n_params): {variant: [loss per seed]}}``, seeds 1, 2, ... and one floor."""
    rows = [{"profile": profile, "n_params": n_params, "variant": variant, "seed": seed,
             "final_val_loss": loss, "eval_floor": FLOOR}
            for (profile, n_params), variants in losses.items() for variant, per_seed in variants.items()
            for seed, loss in enumerate(per_seed, start=1)]
    return pd.DataFrame(rows)


def test_recipe_quotes_the_ladders_budget_widths_top_shape_and_the_papers_budget():
    assert ladder.recipe(rungs_of("cpu")) == {
        "ladder_context": "64", "ladder_batch": "32", "ladder_steps": "2,000", "ladder_dropout": "0",
        "ladder_widths": "48, 80, 128 and 256", "ladder_top_layers": "6", "ladder_top_heads": "6",
        "ladder_top_width": "384", "paper_steps": "5,000", "paper_batch": "64", "paper_context": "256"}
    assert ladder.recipe(rungs_of("smoke"))["ladder_widths"] == "12 and 20"


def test_token_budget_reads_the_first_rungs_tokens_and_the_top_rungs_size():
    shape = pd.DataFrame({"profile": ["small", "top"], "parameters": [100_000, 10_000_000],
                          "tokens": [4_096_000, 4_096_000], "tokens per parameter": [40.96, 0.4096]})
    # the paper's 10M run: 5,000 steps of 64 x 256 tokens over the top rung's 10M parameters
    assert ladder.token_budget(shape) == {"ladder_tokens": "4.1M", "ladder_top_tokens_per_param": "0.4",
                                          "paper_tokens_per_param": "8"}


def test_recorded_names_whole_partial_and_missing_rungs():
    shape = pd.DataFrame({"profile": ["ladder-0.1m", "cpu", "ladder-3m", "ladder-10m"],
                          "parameters": [120_000, 801_664, 3_176_192, 10_672_512]})
    variants = ("full", "attn_only", "ffn_only", "no_residual")
    plan = [Run(p, v, s) for p in shape.profile for v in variants for s in ((1337,) if p == "ladder-10m" else (1, 2))]
    have = [r for r in plan if r.profile.name in ("ladder-0.1m", "cpu")
            or (r.profile.name == "ladder-10m" and r.variant in ("full", "attn_only"))]
    records = pd.DataFrame([(r.profile.name, r.variant, r.seed) for r in have], columns=["profile", "variant", "seed"])
    absent = [r for r in plan if r not in have]
    assert ladder.recorded(shape, records, absent) == ("The 0.12M and 0.8M rungs are recorded; at 10.7M only full and"
                                                       " attn_only so far; the 3.2M rung has no records yet.")
    assert ladder.recorded(shape.head(1), records, absent) == "The 0.12M rung is recorded."
    assert ladder.recorded(shape, records.head(0), plan) == "No rung has records yet."
    # every variant at some of the seeds: the count of seeds; rungs recorded alike share one clause
    one_seed = [r for r in plan if r.profile.name == "ladder-3m" and r.seed == 1]
    records = pd.concat([records, pd.DataFrame([(r.profile.name, r.variant, r.seed) for r in one_seed],
                                               columns=["profile", "variant", "seed"])])
    absent = [r for r in absent if r not in one_seed]
    assert ladder.recorded(shape, records, absent) == ("The 0.12M and 0.8M rungs are recorded; at 3.2M 1 of 2 seeds"
                                                       " so far; at 10.7M only full and attn_only so far.")
    cpu_partial = [r for r in plan if r.profile.name == "cpu" and r.seed == 2]
    records = records[~((records.profile == "cpu") & (records.seed == 2))]
    assert ladder.recorded(shape, records, absent + cpu_partial).startswith(
        "The 0.12M rung is recorded; at 0.8M and 3.2M 1 of 2 seeds so far;")


def test_trend_summary_says_whether_either_gap_moves_with_size():
    def fit(gap, slope, low, high, trend):
        return {"gap": gap, "rungs": 5, "points": 11, "slope_per_decade": slope, "slope_low": low,
                "slope_high": high, "p": 0.1, "trend": trend}
    flat = "no trend distinguishable from zero"
    trend = pd.DataFrame([fit("attn_only - full", 0.021, -0.003, 0.044, flat),
                          fit("ffn_only - floor", -0.045, -0.154, 0.064, flat)])
    assert ladder.trend_summary(trend) == (
        "Neither gap shows a trend distinguishable from zero across the rungs (AttnOnly's cost over Full: +0.021 nats"
        " per tenfold size, 95% interval −0.003 to +0.044; FFNOnly's distance from the floor: −0.045 nats per"
        " tenfold size, 95% interval −0.154 to +0.064).")
    trend.loc[0, ["slope_low", "trend"]] = [0.01, "grows with size"]
    assert ladder.trend_summary(trend).startswith("AttnOnly's cost over Full grows with size (+0.021 nats per tenfold"
                                                  " size, 95% interval +0.010 to +0.044); FFNOnly's distance from the"
                                                  " floor shows no trend distinguishable from zero (")
    assert ladder.trend_summary(trend.head(0)) == ""


def test_seed_note_reads_a_rung_at_every_seed_its_profile_has():
    def run(seed, loss, variant="ffn_only"):
        return {"key": f"{variant}{seed}", "profile": "cpu", "variant": variant, "seed": seed, "n_params": 801_664,
                "final_val_loss": loss, "eval_floor": FLOOR, "eval_mode": "fixed", "gain": 1.0,
                "deterministic": True, "replicate": 0, "init_noise": 0.0, "status": "ok"}
    ladder_runs = pd.DataFrame([run(1, FLOOR - 0.2), run(2, FLOOR - 0.1), run(3, FLOOR)])
    every_run = pd.concat([ladder_runs, pd.DataFrame([run(s, FLOOR + 0.001) for s in range(4, 21)])])
    note = ladder.seed_note(ladder_runs, every_run, 0.05)
    assert note == ("The 0.8M rung is `cpu` read at the ladder's seeds (1, 2 and 3), where FFNOnly ends 0.100 nats"
                    " below the floor on average. `cpu` has FFNOnly records at 20 seeds; over all of them it ends"
                    " 0.014 nats below the floor, and only seeds 1 and 2 leave the floor by more than 0.05 nats (both"
                    " are among the ladder's). Averaged over all its seeds, FFNOnly ends within 0.05 nats of the floor"
                    " at 0.8M, so the ladder's point there says more about which seeds it reads than about the size.")
    assert ladder.seed_note(ladder_runs, ladder_runs, 0.05) == ""  # no seeds beyond the ladder's: nothing to add
    assert ladder.seed_note(ladder_runs.head(0), every_run, 0.05) == ""


def test_anchor_note_names_a_no_residual_run_further_below_the_floor_than_an_input_blind_model():
    def run(profile, n_params, seed, loss, variant="no_residual", status="ok", mode="fixed"):
        return {"profile": profile, "n_params": n_params, "variant": variant, "seed": seed, "final_val_loss": loss,
                "eval_floor": FLOOR, "eval_mode": mode, "status": status}
    at_floor = [run("ladder-0.1m", 120_000, s, FLOOR + 0.0007 * s) for s in (1, 2)]  # 0.0014: "within 0.002"
    below = run("ladder-0.3m", 320_000, 3, FLOOR - 0.024)
    diverged = run("ladder-3m", 3_200_000, 4, float("nan"), status="diverged")
    line = {("ladder-0.1m", "fixed"): 0.0102, ("ladder-0.3m", "fixed"): 0.0102, ("ladder-0.3m", "random"): 0.009}
    note = ladder.anchor_note(pd.DataFrame([*at_floor, below, diverged, run("ladder-0.3m", 320_000, 3, FLOOR - 0.5,
                                                                           "ffn_only")]),
                              0.05, lambda profile, mode: line[profile, mode])
    assert note == ("NoResidual ends within 0.002 nats of the floor in its 2 other runs, but seed 3 at 0.32M ends 0.024"
                    " nats below it: still within the 0.05 nats counted as at the floor, yet further below it than a"
                    " model that ignores its input can reach (0.010 nats, [chapter 10](../notebooks/10_ffn_escape.html)). Without either"
                    " residual, a model can still use its input, if little.")
    # a run within the line is at the floor, however close to the line; a diverged run is no run here
    inside = ladder.anchor_note(pd.DataFrame([*at_floor, run("ladder-0.3m", 320_000, 3, FLOOR - 0.0099), diverged]),
                                0.05, lambda profile, mode: 0.01)
    assert inside == "NoResidual ends within 0.010 nats of the floor in all its 3 runs."
    # past the tolerance too, and each run against its own line where the lines differ
    far = run("ladder-0.3m", 320_000, 5, FLOOR - 0.08, mode="random")
    both = ladder.anchor_note(pd.DataFrame([below, far]), 0.05, lambda profile, mode: line[profile, mode])
    assert both.startswith("In each of its runs NoResidual ends below the floor: seed 3 at 0.32M ends 0.024 nats below"
                           " it (its line: 0.010 nats) and seed 5 at 0.32M ends 0.080 nats below it (its line: 0.009"
                           " nats): further below it than a model that ignores its input can reach ([chapter 10]")
    assert ladder.anchor_note(pd.DataFrame([run("cpu", 1, 1, FLOOR, "ffn_only")]), 0.05, lambda p, m: 0.01) == ""
    assert ladder.anchor_note(pd.DataFrame([diverged]), 0.05, lambda p, m: 0.01) == ""
    assert ladder.anchor_note(pd.DataFrame(), 0.05) == ""


def test_missing_runs_lists_one_label_per_row():
    absent = [Run("ladder-3m", "full", 1337), Run("ladder-10m", "ffn_only", 42)]
    assert ladder.missing_runs(absent).to_dict("list") == {"run": ["ladder-3m Full seed 1337",
                                                                   "ladder-10m FFNOnly seed 42"]}


def test_loss_summary_gives_mean_std_and_seeds_smallest_rung_first():
    records = records_frame({("big", 2000): {"full": [1.0, 3.0]}, ("small", 100): {"full": [2.0], "attn_only": [4.0]}})
    summary = ladder.loss_summary(records)
    assert list(summary.columns) == ["profile", "n_params", "variant", "mean", "std", "seeds"]
    assert list(zip(summary.profile, summary.variant, summary["mean"], summary.seeds)) == [
        ("small", "attn_only", 4.0, 1), ("small", "full", 2.0, 1), ("big", "full", 2.0, 2)]
    assert summary["std"].iloc[-1] == 2 ** 0.5
    assert ladder.loss_summary(records.head(0)).empty


def test_gaps_and_trend_are_empty_before_any_rung_is_recorded():
    empty = records_frame({})
    assert ladder.gaps(empty).empty and ladder.trend(empty).empty


def test_findings_say_where_ffn_only_leaves_the_floor_and_the_trend_per_gap():
    records = records_frame({
        ("small", 100_000): {"full": [3.0, 3.0], "attn_only": [3.1, 3.12], "ffn_only": [3.3, 3.31]},
        ("big", 1_000_000): {"full": [2.5, 2.5], "attn_only": [2.7, 2.72], "ffn_only": [3.1, 3.14]}})
    gaps = ladder.gaps(records)
    trend = ladder.trend(records)
    assert set(trend.gap) == {"attn_only - full", "ffn_only - floor"} and (trend.rungs == 2).all()
    findings = ladder.findings(gaps, trend)
    assert list(findings) == ["attn_only - full", "ffn_only - floor"]
    # each rung's mean with the 95% t interval of two seeds: 0.11 +- 12.706 * 0.01 / sqrt(2)
    assert findings["attn_only - full"].startswith("Removing the feed-forward residual (AttnOnly minus Full, paired"
                                                   " by seed) costs 0.110 nats at 0.1M"
                                                   " parameters (95% interval −0.017 to +0.237, 2 seeds) and 0.210"
                                                   " at 1M (95% interval +0.083 to +0.337, 2 seeds)")
    one_seed = records[records.seed == 1]
    assert "0.100 nats at 0.1M parameters (one seed, so no interval)" in \
        ladder.findings(ladder.gaps(one_seed), ladder.trend(one_seed))["attn_only - full"]
    # FFNOnly ends within 0.05 nats of the floor at the small rung and 0.18 below it at the big one
    assert findings["ffn_only - floor"].startswith("Without the attention residual the model ends at the floor at"
                                                   " 0.1M, and 0.180 nats below it at 1M (mean of 2 seeds).")
    assert "nats per tenfold increase in parameters" in findings["ffn_only - floor"]
    assert "The cost grows with size across 2 rungs" in findings["attn_only - full"]
    at_floor = records.assign(final_val_loss=records.final_val_loss.where(records.variant != "ffn_only", FLOOR + 0.01))
    assert "ends at the floor at every rung (within 0.010 nats of it" in \
        ladder.findings(ladder.gaps(at_floor), ladder.trend(at_floor))["ffn_only - floor"]
    nothing = ladder.findings(ladder.gaps(records.head(0)), ladder.trend(records.head(0)))
    assert set(nothing.values()) == {"No rung has the runs for this comparison yet."}


def test_bullet_list_puts_each_text_on_a_markdown_item():
    assert ladder.bullet_list(["One.", "Two."]) == "- One.\n- Two."


def test_a_top_rung_of_one_seed_gets_the_trend_without_it_too():
    gaps3 = {"full": [2.0, 2.0, 2.0], "attn_only": [2.1, 2.11, 2.12]}
    records = records_frame({("a", 100_000): gaps3, ("b", 300_000): gaps3, ("c", 1_000_000): gaps3,
                             ("d", 10_000_000): {"full": [1.5], "attn_only": [1.8]}})
    attn = ladder.findings(ladder.gaps(records), ladder.trend(records), ladder.points(records))["attn_only - full"]
    assert "The cost grows with size across 4 rungs" in attn
    # without the single-seed top rung the three others are flat: slope 0
    assert attn.endswith("Without the 10M rung, which has one seed, the slope is 0.000 nats per tenfold increase in"
                         " parameters (95% interval −0.018 to +0.018, p = 1.000).")
    assert "Without the" not in ladder.findings(ladder.gaps(records), ladder.trend(records))["attn_only - full"]
