"""Chapter 5's findings: the runtime-gain sentence and the evaluation-noise table."""

from __future__ import annotations

import pandas as pd
import pytest

from residual_lib.pages.chapters import confounds


def _gain_runs() -> pd.DataFrame:
    return pd.DataFrame({"gain": [4.0, 0.5, 1.0], "final_val_loss": [1.62, 1.60, 1.6123],
                         "best_val_loss": [1.61, 1.59, 1.60], "steps": 2000, "seed": 1337})


def test_the_gain_table_has_a_row_per_gain_a_column_per_seed_and_the_spread_last():
    runs = pd.concat([_gain_runs(), _gain_runs().assign(seed=42, final_val_loss=[1.70, 1.71, 1.75]),
                      _gain_runs().assign(seed=123).query("gain == 1.0")])
    table = confounds.gain_table(runs)
    assert table.index.tolist() == [0.5, 1.0, 4.0, "spread (max − min)"]
    assert table.columns.tolist() == ["seed 1337", "seed 42", "seed 123"]  # the order the seeds come in
    assert pd.isna(table.loc["spread (max − min)", "seed 123"])  # one gain: no spread
    assert table.loc[4.0, "seed 1337"] == 1.62
    assert table.loc["spread (max − min)", "seed 1337"] == pytest.approx(0.02)
    assert table.loc["spread (max − min)", "seed 42"] == pytest.approx(0.05)


def _timing(merged, spreads=(0.01, 0.03), every=20) -> pd.DataFrame:
    return pd.DataFrame({"seed": [1337, 42][:len(merged)], "gains": "0.5, 1, 2, 4", "merged": merged,
                         "every": every, "final_spread": list(spreads)[:len(merged)], "steps": 2000})


def test_the_timing_finding_counts_the_seeds_that_meet_by_the_papers_step():
    text = confounds.timing_finding(_timing([60, 140]), 80, tolerance=0.05, paper_steps=200)
    assert text.startswith("At each of the 2 seeds, the final validation losses of the gains lie 0.010 to 0.030 nats apart.")
    assert "stay within 0.05 nats of each other from step 60 on at seed 1337 and from step 140 on at seed 42." in text
    assert "evaluated every 20 steps early on" in text
    assert "are step 80: 1 of 2 seeds has come together by then (read at the first evaluation from then on)." in text
    assert text.endswith("Read instead as the same 200 steps (this schedule shares the paper's warm-up and peak learning"
                         " rate, so the optimiser has moved about as far by then), 2 of 2 seeds have come together by"
                         " then.")
    coarse = confounds.timing_finding(_timing([100], every=100), 80, tolerance=0.05)
    assert "1 of 1 seed has come together by then" in coarse  # step 80 is read at the evaluation of step 100


def test_the_timing_finding_says_when_curves_do_not_meet_and_which_seeds_are_left_out():
    timing = _timing([None])
    timing.attrs["incomplete"] = [42]
    text = confounds.timing_finding(timing, 80, tolerance=0.05)
    assert text.startswith("At the one seed, the final validation losses of the gains lie 0.010 nats apart.")
    assert "of each other not to the end at seed 1337." in text and "0 of 1 seed has come together by then" in text
    assert text.endswith("Seed 42, not run at every gain, is left out.")


def test_the_gain_finding_says_from_which_step_the_curves_merge():
    text = confounds.gain_finding(_gain_runs(), 1170, tolerance=0.05)
    assert text == ("The training-loss spread across gains stays below 0.05 nats from step 1,170 of 2,000; the"
                    " final validation losses differ by 0.020 nats.")


def test_the_gain_finding_says_when_the_curves_never_merge():
    text = confounds.gain_finding(_gain_runs(), None, tolerance=0.01)
    assert text == ("The spread across gains never stays below 0.01 nats; the final validation losses differ by"
                    " 0.020 nats.")


def test_the_gain_caption_names_the_variant_seed_and_tolerance():
    caption = confounds.gain_caption("attn_only", 42, tolerance=0.05)
    assert caption.startswith("Training loss of `attn_only` (seed 42) with a constant gain g")
    assert caption.endswith("(bottom; the dashed line is the 0.05-nat tolerance).")


def test_the_noise_table_gives_the_spread_and_the_largest_deviation_per_variant():
    estimates = pd.DataFrame({"variant": ["ffn_only", "ffn_only", "full", "full", "full"],
                              "deviation": [0.01, -0.03, 0.02, -0.02, 0.0]})
    noise = confounds.noise_table(estimates)
    assert noise.index.tolist() == ["full", "ffn_only"]  # the variants' canonical order
    assert noise.columns.tolist() == ["std", "max |deviation| (nats)"]
    assert noise.loc["ffn_only", "max |deviation| (nats)"] == pytest.approx(0.03)  # the negative one
    assert noise.loc["full", "std"] == pytest.approx(0.02)


def test_the_early_gain_profile_trains_the_first_steps_of_its_parent_run():
    """The timing profile's runs are their parent's first steps, evaluated more often: the same
    learning rates, batches and weights, so the shared evaluation step gives the same loss."""
    from residual_lib import Run
    from residual_lib.run.profiles import GAIN_TIMING, get_profile
    from residual_lib.training.train import train

    parent, early = get_profile("smoke"), get_profile(GAIN_TIMING["smoke"])
    assert early.max_iters < parent.max_iters and early.decay_iters == parent.max_iters
    whole = train(Run(parent, "attn_only", 1337, gain=2.0), progress=False)["curves"]["val"]
    first = train(Run(early, "attn_only", 1337, gain=2.0), progress=False)["curves"]["val"]
    assert first["step"] == list(range(0, early.max_iters + 1, early.eval_interval))
    shared = early.max_iters
    assert first["loss"][-1] == whole["loss"][whole["step"].index(shared)]
    assert len(first["step"]) > len([s for s in whole["step"] if s <= shared])


def test_the_timing_method_says_how_closely_the_timing_runs_retrace_the_whole_runs():
    whole = pd.DataFrame({"profile": ["smoke"], "seed": [1337], "gain": [2.0]})
    early = pd.DataFrame({"profile": ["smoke-gain-early"], "seed": [1337], "gain": [2.0]})
    agreement = pd.DataFrame({"seed": [1337, 1337], "gain": [1.0, 4.0], "steps": 6, "max_diff": [1.5e-5, 5.8e-3]})
    text = confounds.timing_method(whole, early, agreement)
    far = confounds.timing_method(whole, early, agreement.assign(max_diff=[1.5e-5, 0.02]))
    assert far.endswith("At seed 1337 a timing run differs from its gain run by more than 0.01 nats, so the whole runs'"
                        " evaluations alone are read there.")
    assert text.startswith("The first 50 steps of each run were trained again at `smoke-gain-early`")
    assert text.endswith("they agree to within 2.9×10⁻³ nats for the median run and 5.8×10⁻³ at worst (gain 4, seed"
                         " 1337): the same steps, though not bit for bit where a whole run was made by older code or"
                         " other kernels.")
    same = agreement.assign(max_diff=0.0)
    assert confounds.timing_method(whole, early, same).endswith("the two are bit for bit the same.")
    assert confounds.timing_method(whole, early.iloc[0:0]).startswith("No timing runs exist for these gain runs")
