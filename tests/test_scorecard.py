"""The scorecard's verdicts follow its stated rules, from records alone."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from residual_lib.pages import scorecard
from residual_lib.run.profiles import get_profile
from residual_lib.run.runs import RECORD_VERSION, record_path, run_identity, run_key
from residual_lib.storage.records import write_record
from residual_lib.study import paper

#: No verdict to mark fragile: a verdict box given this skips the sensitivity run it would otherwise make.
UNMARKED: set = set()

FLOOR = 3.347


def fake_record(results, profile, variant, seed, final, eval_mode="fixed", gain=1.0, deterministic=True,
                replicate=0, layer0=0.1, steps=100, norms=(1.0, 1.0, 1.0), alpha=0.2, device="cpu", train_loss=None,
                val_loss=None, noise=0.01, every=10):
    """A record of the profile's recipe with what the rules read; ``norms`` are |h_0|, |h_1|, |h_L| of the final
    model (the same at step 0 unless a test changes them); ``val_loss``: a validation curve
    logged every ``every`` steps (else one point, the final loss); ``noise``: how far the final
    model's random-batch re-evaluations land from its fixed-batch loss."""
    config_profile = get_profile(profile).to_dict()
    # a valid record: its key is the hash of its own configuration (same identity, same file)
    key = run_key(run_identity(config_profile, variant, seed, eval_mode, gain, deterministic, replicate))
    log_steps = list(range(0, steps, every))
    record = {
        "record_version": RECORD_VERSION, "key": key, "profile": profile, "variant": variant, "seed": seed, "eval_mode": eval_mode, "gain": gain,
        "deterministic": deterministic, "replicate": replicate, "final_val_loss": final, "best_val_loss": final,
        "unigram_floor": FLOOR + 0.012, "eval_floor": FLOOR, "n_params": 1, "steps": steps, "wall_seconds": 1.0,
        "tokens_per_second": 1.0, "config": {"profile": config_profile}, "provenance": {"device": device},
        "curves": {"train": {"step": log_steps, "loss": train_loss or [final] * len(log_steps),
                             "grad_norm_layer0": [layer0] * len(log_steps),
                             "hidden_norms": [[1.0, 1.0, 1.0]] * len(log_steps)},
                   "val": ({"step": log_steps, "loss": val_loss} if val_loss else {"step": [steps], "loss": [final]})},
        "diagnostics": {"hidden_norms": list(norms), "representation_drift": norms[-1] / norms[1],
                        "hidden_norm_growth": norms[-1] / norms[1], "alpha_tt": [[alpha, alpha]],
                        "val_estimates": {"fixed": final, "random": [final + noise, final - noise]}},
    }
    write_record(record, record_path(results, profile, variant, seed, key))


def central(results, profile, attn, ffn, seeds=(1, 2, 3), spread=0.003):
    for i, seed in enumerate(seeds):
        jitter = (i - 1) * spread
        fake_record(results, profile, "attn_only", seed, attn + jitter, norms=(1.0, 2.0, 28.0), layer0=0.0)
        fake_record(results, profile, "ffn_only", seed, ffn + jitter, norms=(1.0, 2.0, 10.8), layer0=0.0)
        fake_record(results, profile, "full", seed, 1.47 + jitter, norms=(1.0, 2.0, 2.8))
        fake_record(results, profile, "no_residual", seed, ffn + 0.006 + jitter, layer0=0.0)


def verdicts(results, claim, stand_in="cpu"):
    table = scorecard.build(results, stand_in=stand_in)
    return dict(zip(table[table.claim == claim].profile, table[table.claim == claim].verdict))


def test_every_claim_has_a_row_per_profile_of_its_scale_and_none_is_run_without_records(tmp_path):
    table = scorecard.build(tmp_path)
    claims = paper.claims()
    # a 10M claim is checked at paper-10m and at the stand-in, a 124M claim at paper-124m, "both" at all
    # three; a claim the central sweep decides also at the stand-in's dropout twin
    per_scale = {"10M": 2, "124M": 1, "both": 3}
    pairs = claims.drop_duplicates(["claim", "scale"])
    central = [scorecard.RULES[scorecard.CLAIMS[c].rule].central for c in pairs.claim]
    expected = sum(per_scale[s] + (s != "124M" and c) for s, c in zip(pairs.scale, central))
    assert expected >= 40 and 0 < sum(central) < len(central)
    assert len(table) == expected and set(table.claim) == set(claims.claim)
    assert set(table.profile) == {"cpu", "cpu-dropout", "paper-10m", "paper-124m"}
    twin = set(table[table.profile == "cpu-dropout"].claim)
    assert "asymmetry_10m" in twin and "ffn_collapse_10m" in twin
    assert not twin & {"gain_confound", "mixer_test", "joint_collapse_10m", "nondeterministic_repeats"}
    # without records nothing is run, except a claim no record could ever test
    untestable = table.claim.map(lambda c: not scorecard.RULES[scorecard.CLAIMS[c].rule].needs_records)
    assert set(table[untestable].claim) == {"asymmetry_by_scale"}
    assert set(table[~untestable].verdict) == {"not run at this scale"}
    assert set(table[untestable].verdict) == {"not testable here"}


def test_a_claim_no_record_can_test_is_not_testable_at_every_profile_records_or_not(tmp_path):
    everywhere = {"cpu", "cpu-dropout", "paper-10m", "paper-124m"}
    assert verdicts(tmp_path, "asymmetry_by_scale") == dict.fromkeys(everywhere, "not testable here")
    central(tmp_path, "cpu", attn=1.8, ffn=3.33)
    assert verdicts(tmp_path, "asymmetry_by_scale") == dict.fromkeys(everywhere, "not testable here")
    rows = scorecard.build(tmp_path).query("claim == 'asymmetry_by_scale'")
    assert set(rows.rule) == {scorecard.RULES["undefined"].text}  # the rule is shown where it decided


def test_one_name_per_verdict_in_the_grid_and_the_badges():
    def shortens(label, verdict):  # the label's words are the verdict's, some left out
        words = iter(verdict.split())
        return all(word in words for word in label.split())

    for verdict in scorecard.VERDICTS:
        assert shortens(scorecard.GRID_LABELS[verdict][1], verdict), verdict
    assert "</span> not run at this scale</span>" in scorecard.badge("not run at this scale")


def test_rows_come_in_the_order_of_the_claims_file(tmp_path):
    table = scorecard.build(tmp_path)
    assert list(dict.fromkeys(table.claim)) == list(dict.fromkeys(paper.claims().claim))


def test_asymmetry_and_collapse_are_reproduced_when_attn_only_recovers_and_ffn_only_collapses(tmp_path):
    central(tmp_path, "cpu", attn=1.8, ffn=3.33)
    assert verdicts(tmp_path, "asymmetry_10m") == {"paper-10m": "not run at this scale", "cpu": "reproduced",
                                                   "cpu-dropout": "not run at this scale"}
    assert verdicts(tmp_path, "ffn_collapse_10m")["cpu"] == "reproduced"
    assert verdicts(tmp_path, "ffn_vs_no_residual")["cpu"] == "reproduced"
    assert verdicts(tmp_path, "hidden_norm_growth")["cpu"] == "reproduced"
    assert verdicts(tmp_path, "intermediate_reproduction")["cpu"] == "agrees with the paper's confirmed result"
    assert verdicts(tmp_path, "original_record")["cpu"] == "inconclusive"  # an absolute 10M number
    assert verdicts(tmp_path, "asymmetry_by_scale")["cpu"] == "not testable here"  # undefined in the paper


def test_asymmetry_fails_when_attn_only_collapses_too(tmp_path):
    central(tmp_path, "cpu", attn=3.33, ffn=3.33)
    assert verdicts(tmp_path, "asymmetry_10m")["cpu"] == "not reproduced"


def test_an_escaping_ffn_only_seed_splits_the_claims(tmp_path):
    central(tmp_path, "cpu", attn=1.8, ffn=3.34, seeds=(1, 2, 3))
    fake_record(tmp_path, "cpu", "ffn_only", 3, 3.10)  # one seed escapes the floor
    table = scorecard.build(tmp_path, stand_in="cpu").set_index(["claim", "profile"])
    # the asymmetry still holds in every seed; "collapse in every seed" does not
    assert table.loc[("asymmetry_10m", "cpu"), "verdict"] == "reproduced"
    assert table.loc[("ffn_collapse_10m", "cpu"), "verdict"] == "not reproduced"
    assert "escapes in 1 of 3 seeds (33%, 95% interval 1% to 91%)" in table.loc[("ffn_collapse_10m", "cpu"), "ours"]
    assert "seed 3 (3.100)" in table.loc[("ffn_collapse_10m", "cpu"), "ours"]
    assert table.loc[("ffn_vs_no_residual", "cpu"), "verdict"] == "partly reproduced"


def test_seeds_trained_for_ffn_only_alone_count_for_its_own_claims_and_no_comparison(tmp_path):
    central(tmp_path, "cpu", attn=1.8, ffn=3.34)
    for seed in (1, 2, 3):
        fake_record(tmp_path, "cpu", "mixer", seed, 2.05)
    rows = ["mixer_test", "ratio_10m", "hidden_norm_growth", "asymmetry_10m", "eval_noise_explains"]
    before = scorecard.build(tmp_path, stand_in="cpu").set_index(["claim", "profile"])
    for seed in (11, 12, 13, 14):  # the escape rate's extra seeds: ffn_only only, two of them escape
        fake_record(tmp_path, "cpu", "ffn_only", seed, 3.0 if seed > 12 else FLOOR, norms=(1.0, 2.0, 40.0))
    after = scorecard.build(tmp_path, stand_in="cpu").set_index(["claim", "profile"])
    for claim in rows:  # a comparison between variants averages each over the central sweep's seeds 1-3
        assert after.loc[(claim, "cpu"), "ours"] == before.loc[(claim, "cpu"), "ours"], claim
        assert after.loc[(claim, "cpu"), "seeds"] == before.loc[(claim, "cpu"), "seeds"], claim
    collapse = after.loc[("ffn_collapse_10m", "cpu")]  # "in every seed": every ffn_only seed counts
    assert "escapes in 2 of 7 seeds" in collapse["ours"] and collapse["verdict"] == "not reproduced"
    assert "of 7 seeds" in after.loc[("layer0_starved_ffn_only", "cpu"), "ours"]


def test_the_floor_is_the_one_of_the_evaluation_batches_on_both_sides(tmp_path):
    # 0.04 below the evaluation floor is "at the floor"; 0.06 below is not (the whole-split
    # floor, 0.012 higher, would have made the tolerance lopsided)
    central(tmp_path, "cpu", attn=1.8, ffn=FLOOR - 0.04, spread=0.0)
    assert verdicts(tmp_path, "ffn_collapse_10m")["cpu"] == "reproduced"
    central(tmp_path, "cpu", attn=1.8, ffn=FLOOR - 0.06, spread=0.0)
    assert verdicts(tmp_path, "ffn_collapse_10m")["cpu"] == "not reproduced"


@pytest.mark.parametrize("attn, expected", [(1.580, "reproduced"), (1.700, "not reproduced")])
def test_at_paper_scale_the_numbers_must_agree_too(tmp_path, attn, expected):
    central(tmp_path, "paper-10m", attn=attn, ffn=3.350)
    assert verdicts(tmp_path, "asymmetry_10m")["paper-10m"] == expected


def test_growth_is_judged_on_the_papers_ordering_seed_by_seed(tmp_path):
    # central() gives drift 14.0 (attn_only), 5.4 (ffn_only) and 1.4 (full): the paper's order in every seed
    central(tmp_path, "cpu", attn=1.8, ffn=3.33)
    assert verdicts(tmp_path, "hidden_norm_growth")["cpu"] == "reproduced"
    fake_record(tmp_path, "cpu", "attn_only", 2, 1.8, norms=(1.0, 2.0, 2.4), layer0=0.0)  # seed 2: 1.2 < 5.4
    table = scorecard.build(tmp_path, stand_in="cpu").set_index(["claim", "profile"])
    assert table.loc[("hidden_norm_growth", "cpu"), "verdict"] == "partly reproduced"
    ours = table.loc[("hidden_norm_growth", "cpu"), "ours"]
    assert ours.startswith("attn_only > ffn_only > full in 2 of 3 seeds")
    assert "attn_only 9.73 (seeds 1.20 to 14.00; paper 14)" in ours and "full 1.40 (seeds 1.40 to 1.40" in ours
    for seed in (1, 3):  # AttnOnly below FFNOnly in every seed, however close the values are to the paper's
        fake_record(tmp_path, "cpu", "attn_only", seed, 1.8, norms=(1.0, 2.0, 10.0), layer0=0.0)
        fake_record(tmp_path, "cpu", "ffn_only", seed, 3.33, norms=(1.0, 2.0, 11.0), layer0=0.0)
    assert verdicts(tmp_path, "hidden_norm_growth")["cpu"] == "not reproduced"


def test_layer0_starvation_is_scored_per_variant_and_per_seed(tmp_path):
    central(tmp_path, "cpu", attn=1.8, ffn=3.33)
    assert verdicts(tmp_path, "layer0_starved_ffn_only")["cpu"] == "reproduced"
    assert verdicts(tmp_path, "layer0_full")["cpu"] == "reproduced"
    fake_record(tmp_path, "cpu", "ffn_only", 2, 3.33, layer0=0.01)  # one seed keeps a gradient
    assert verdicts(tmp_path, "layer0_starved_ffn_only")["cpu"] == "partly reproduced"
    for seed in (1, 2, 3):
        fake_record(tmp_path, "cpu", "attn_only", seed, 1.8, layer0=0.7)
    assert verdicts(tmp_path, "layer0_starved_attn_only")["cpu"] == "not reproduced"
    fake_record(tmp_path, "cpu", "full", 1, 1.47, layer0=0.0)
    assert verdicts(tmp_path, "layer0_full")["cpu"] == "not reproduced"


def test_routing_needs_alpha_near_one_above_the_full_control(tmp_path):
    central(tmp_path, "cpu", attn=1.8, ffn=3.33)

    def row():
        table = scorecard.build(tmp_path, stand_in="cpu").set_index(["claim", "profile"])
        return table.loc[("alpha_routing", "cpu"), "verdict"], table.loc[("alpha_routing", "cpu"), "ours"]

    # the paper measured no alpha_tt: any measurement is new evidence, for or against its proposal
    assert row()[0] == "new evidence against" and row()[1].startswith("against the proposal")  # 0.2 everywhere
    for seed in (1, 2, 3):
        fake_record(tmp_path, "cpu", "attn_only", seed, 1.8, alpha=0.95)
    assert row() [0] == "new evidence for" and row()[1].startswith("for the proposal")
    for seed in (1, 2, 3):
        fake_record(tmp_path, "cpu", "full", seed, 1.47, alpha=0.97)
    assert row()[0] == "new evidence against"  # no more than the control


def test_the_mixer_is_new_evidence_never_a_reproduction(tmp_path):
    central(tmp_path, "cpu", attn=1.8, ffn=3.3)
    for seed, final in ((1, 2.05), (2, 2.06), (3, 2.04)):
        fake_record(tmp_path, "cpu", "mixer", seed, final)
    table = scorecard.build(tmp_path, stand_in="cpu").set_index(["claim", "profile"])
    assert table.loc[("mixer_test", "cpu"), "verdict"] == "inconclusive"  # no direction without the control
    assert "closes 83% of the ffn_only − attn_only gap" in table.loc[("mixer_test", "cpu"), "ours"]
    assert "no record of the no-mixing control yet" in table.loc[("mixer_test", "cpu"), "ours"]
    for seed, final in ((1, 2.80), (2, 2.81), (3, 2.79)):  # the control closes a third of the gap
        fake_record(tmp_path, "cpu", "pointwise", seed, final)
    table = scorecard.build(tmp_path, stand_in="cpu").set_index(["claim", "profile"])
    assert "the no-mixing control 2.800 closes 33%, so mixing itself closes 50% of the gap, 75% of the 67%" in \
        table.loc[("mixer_test", "cpu"), "ours"]
    # mixing closes 50 of the 67 points the control leaves open: more than half, against routing
    assert table.loc[("mixer_test", "cpu"), "verdict"] == "new evidence against"
    for seed, final in ((1, 2.60), (2, 2.61), (3, 2.59)):  # now 17 of 67: the mixer stays near its control
        fake_record(tmp_path, "cpu", "mixer", seed, final)
    assert verdicts(tmp_path, "mixer_test")["cpu"] == "new evidence for"


def test_a_large_attn_only_seed_spread_reproduces_the_intermediate_anomaly(tmp_path):
    central(tmp_path, "cpu", attn=2.6, ffn=3.33, spread=0.5)
    assert verdicts(tmp_path, "intermediate_reproduction")["cpu"] == "reproduced"


def test_paper_notes_flag_inferred_seeds_and_inconsistencies(tmp_path):
    table = scorecard.build(tmp_path).drop_duplicates("claim").set_index("claim")
    assert "population std" in table.loc["seeds_124m", "paper_note"] and "1.353" in table.loc["seeds_124m", "paper_note"]
    assert "unsigned" in table.loc["ffn_vs_no_residual", "paper_note"].lower()
    assert "1.580" in table.loc["original_record", "paper_note"] and "1.600" in table.loc["original_record", "paper_note"]
    assert "inferred" in table.loc["gain_confound", "paper_note"]
    assert "inferred" not in table.loc["joint_collapse_10m", "paper_note"]  # the summary states seed 1337


def test_paper_std_notes_match_the_values_they_describe():
    claims = paper.claims()
    values = claims[(claims.claim == "seeds_124m") & claims.quantity.str.startswith("final_val_loss_seed")]
    import numpy as np

    mean = claims[(claims.claim == "seeds_124m") & (claims.quantity == "final_val_loss")].iloc[0]
    assert np.std(values.value, ddof=0) == pytest.approx(mean["std"], abs=5e-4)
    assert np.mean(values.value) == pytest.approx(mean["value"], abs=5e-4)


def test_nondeterministic_repeats_need_run_to_run_spread(tmp_path):
    for replicate, final in enumerate((1.97, 1.94, 2.06)):
        fake_record(tmp_path, "cpu", "attn_only", 1337, final, deterministic=False, replicate=replicate)
    fake_record(tmp_path, "cpu", "attn_only", 1337, 2.0)
    fake_record(tmp_path, "cpu", "attn_only", 1337, 2.0, replicate=1)
    assert verdicts(tmp_path, "nondeterministic_repeats")["cpu"] == "reproduced"
    ours = scorecard.build(tmp_path).set_index(["claim", "profile"]).loc[("nondeterministic_repeats", "cpu"), "ours"]
    assert "(spread 0.120); deterministic spread 0;" in ours  # equal deterministic repeats: 0, not 0.000
    fake_record(tmp_path, "cpu", "attn_only", 1337, 2.0003, replicate=1)  # they differ: the verdict turns
    ours = scorecard.build(tmp_path).set_index(["claim", "profile"]).loc[("nondeterministic_repeats", "cpu"), "ours"]
    assert "deterministic spread 3.0×10⁻⁴" in ours  # and the page shows why, not a spread of 0.000
    assert verdicts(tmp_path, "nondeterministic_repeats")["cpu"] == "not reproduced"


def test_identical_nondeterministic_repeats_are_not_testable_on_cpu_and_fail_on_a_gpu(tmp_path):
    for replicate in range(3):
        fake_record(tmp_path, "cpu", "attn_only", 1337, 2.0, deterministic=False, replicate=replicate)
    assert verdicts(tmp_path, "nondeterministic_repeats")["cpu"] == "not testable here"
    for replicate in range(3):
        fake_record(tmp_path, "cpu", "attn_only", 1337, 2.0, deterministic=False, replicate=replicate, device="cuda")
    assert verdicts(tmp_path, "nondeterministic_repeats")["cpu"] == "not reproduced"


def test_joint_collapse_is_judged_against_the_floor_of_random_evaluation(tmp_path):
    fake_record(tmp_path, "cpu", "full", 1337, 1.5, eval_mode="random")
    for variant in ("attn_only", "ffn_only", "no_residual"):
        fake_record(tmp_path, "cpu", variant, 1337, 3.34, eval_mode="random")
    assert verdicts(tmp_path, "joint_collapse_10m")["cpu"] == "reproduced"
    fake_record(tmp_path, "cpu", "attn_only", 1337, 1.8, eval_mode="random")  # overwrite: recovers
    assert verdicts(tmp_path, "joint_collapse_10m")["cpu"] == "not reproduced"


def test_gain_confound_needs_equivalent_gains(tmp_path):
    for gain, final in ((0.5, 1.81), (1.0, 1.80), (2.0, 1.82), (4.0, 1.80)):
        fake_record(tmp_path, "cpu", "attn_only", 1337, final, gain=gain, val_loss=[final] * 10)
    assert verdicts(tmp_path, "gain_confound")["cpu"] == "reproduced"
    # the timing is read on the validation curves, not on one-batch training losses: a noisy
    # training curve changes nothing
    noisy = [1.82 + (0.3 if i % 2 else -0.3) for i in range(10)]
    fake_record(tmp_path, "cpu", "attn_only", 1337, 1.82, gain=2.0, train_loss=noisy, val_loss=[1.82] * 10)
    assert verdicts(tmp_path, "gain_confound")["cpu"] == "reproduced"
    # the paper's ~200 of 5,000 steps is step 4 of these 100-step runs, evaluated at step 10:
    # validation curves that meet only at step 50 reproduce the final equivalence, not its timing
    late = [2.5] * 5 + [1.82] * 5
    fake_record(tmp_path, "cpu", "attn_only", 1337, 1.82, gain=2.0, val_loss=late)
    assert verdicts(tmp_path, "gain_confound")["cpu"] == "partly reproduced"
    ours = scorecard.build(tmp_path).set_index(["claim", "profile"]).loc[("gain_confound", "cpu"), "ours"]
    assert "seed 1337: final spread 0.020, within 0.05 from step 50 (evaluated every 10)" in ours
    assert "are step 4 of 100 here" in ours
    fake_record(tmp_path, "cpu", "attn_only", 1337, 2.5, gain=4.0)
    assert verdicts(tmp_path, "gain_confound")["cpu"] == "not reproduced"


def test_gain_confound_is_judged_at_every_seed_and_timed_on_the_timing_runs(tmp_path):
    for seed in (1337, 42):
        for gain in (0.5, 1.0, 2.0, 4.0):
            fake_record(tmp_path, "cpu", "attn_only", seed, 1.80, gain=gain, val_loss=[2.5] + [1.80] * 9)
    assert verdicts(tmp_path, "gain_confound")["cpu"] == "reproduced"  # both meet at step 10 (the paper's 4)
    # a second seed whose curves meet late: the timing holds at one seed of two
    fake_record(tmp_path, "cpu", "attn_only", 42, 1.80, gain=2.0, val_loss=[2.5] * 5 + [1.80] * 5)
    assert verdicts(tmp_path, "gain_confound")["cpu"] == "partly reproduced"
    assert "come together by then in 1 of 2 seeds;" in \
        scorecard.build(tmp_path).set_index(["claim", "profile"]).loc[("gain_confound", "cpu"), "ours"]
    fake_record(tmp_path, "cpu", "attn_only", 42, 1.80, gain=2.0, val_loss=[2.5] + [1.80] * 9)
    # the timing runs train the first steps again and evaluate them more often (here every 5 steps
    # of the first 40): where a seed has one for each gain, each retracing its gain run at the steps
    # both evaluate, its first steps are read from them, and here gain 2 is off between evaluations
    for gain in (0.5, 1.0, 2.0, 4.0):
        fake_record(tmp_path, "cpu-gain-early", "attn_only", 1337, 1.80, gain=gain, steps=40, every=5,
                    val_loss=[2.5, 2.5, 1.80, 2.5, 1.80, 2.5, 1.80, 1.80] if gain == 2.0 else [2.5] + [1.80] * 7)
    ours = scorecard.build(tmp_path).set_index(["claim", "profile"]).loc[("gain_confound", "cpu"), "ours"]
    assert "seed 1337: final spread 0.000, within 0.05 from step 30 (evaluated every 5)" in ours
    assert verdicts(tmp_path, "gain_confound")["cpu"] == "partly reproduced"
    # a timing run that does not retrace its gain run (here at step 10) is not read: the gain runs' own
    fake_record(tmp_path, "cpu-gain-early", "attn_only", 1337, 1.80, gain=2.0, steps=40, every=5,
                val_loss=[2.5, 2.5, 2.5, 2.5, 1.80, 2.5, 1.80, 1.80])
    assert "seed 1337: final spread 0.000, within 0.05 from step 0 (evaluated every 10)" in \
        scorecard.build(tmp_path).set_index(["claim", "profile"]).loc[("gain_confound", "cpu"), "ours"]
    assert verdicts(tmp_path, "gain_confound")["cpu"] == "reproduced"


def test_gain_confound_leaves_out_seeds_not_run_at_every_gain(tmp_path):
    for gain in (0.5, 1.0, 2.0, 4.0):
        fake_record(tmp_path, "cpu", "attn_only", 1337, 1.80, gain=gain, val_loss=[2.5] + [1.80] * 9)
    for gain in (0.5, 1.0):  # a seed part-way through its gains, and one seed at gain 1 only
        fake_record(tmp_path, "cpu", "attn_only", 42, 1.80 + gain, gain=gain)
    fake_record(tmp_path, "cpu", "attn_only", 123, 1.80)
    ours = scorecard.build(tmp_path).set_index(["claim", "profile"]).loc[("gain_confound", "cpu"), "ours"]
    assert ours.startswith("gains 0.5, 1, 2, 4 at 1 seed (seed 42 not at every gain, left out); seed 1337:")
    assert verdicts(tmp_path, "gain_confound")["cpu"] == "reproduced"  # seed 42's 0.5-nat spread is not judged
    assert "read as the same 200 steps: come together by then in 1 of 1 seed" in ours


def test_scale_note_gives_the_stand_in_size_and_the_missing_paper_profiles(tmp_path):
    central(tmp_path, "cpu", attn=1.8, ffn=3.34)
    for path in tmp_path.rglob("full_*.json"):  # a 0.8M-parameter full model
        write_record({**json.loads(path.read_text()), "n_params": 801664}, path)
    note = scorecard.scale_note(tmp_path, stand_in="cpu")
    assert "a 0.8M-parameter stand-in" in note
    assert "`paper-10m` or `paper-124m` records" in note
    central(tmp_path, "paper-10m", attn=1.98, ffn=3.34)
    note = scorecard.scale_note(tmp_path, stand_in="cpu")
    assert "no `paper-124m` records" in note and "paper-10m` or" not in note


def test_scale_note_says_what_the_top_rung_of_the_ladder_shows(tmp_path):
    central(tmp_path, "cpu", attn=1.8, ffn=3.34)
    assert "scale ladder" not in scorecard.scale_note(tmp_path, stand_in="cpu")  # the ladder's seeds are 1337, 42, 123
    for profile, attn in (("cpu", 1.60), ("ladder-10m", 1.72)):
        fake_record(tmp_path, profile, "full", 1337, 1.55)
        fake_record(tmp_path, profile, "attn_only", 1337, attn)
    for path in (tmp_path / "ladder-10m").glob("*.json"):
        write_record({**json.loads(path.read_text()), "n_params": 10672512}, path)
    note = scorecard.scale_note(tmp_path, stand_in="cpu")
    assert ("At 10.7M parameters (6 layers, width 384, `ladder-10m`), AttnOnly still recovers: it ends at 1.720 "
            "(one seed) against a floor of 3.347, 0.170 above Full; FFNOnly and NoResidual have no records there yet."
            ) in note
    # two rungs of one seed each: a slope, but no interval to speak of (three points are needed)
    assert "shows no trend" not in note and "grows with size" not in note
    fake_record(tmp_path, "ladder-10m", "attn_only", 1337, FLOOR - 0.01)  # no longer below the floor
    assert "AttnOnly does not recover" in scorecard.scale_note(tmp_path, stand_in="cpu")


def test_controlled_keeps_one_run_per_variant_and_seed(tmp_path):
    from residual_lib.study.frames import load_records
    from residual_lib.study.sections import controlled

    central(tmp_path, "cpu", attn=1.8, ffn=3.34, seeds=(1, 2))
    fake_record(tmp_path, "cpu", "attn_only", 1, 1.9, gain=2.0)
    fake_record(tmp_path, "cpu", "attn_only", 1, 1.9, eval_mode="random")
    fake_record(tmp_path, "cpu", "attn_only", 1, 1.9, deterministic=False)
    fake_record(tmp_path, "cpu", "attn_only", 1, 1.8, replicate=1)
    frame = controlled(load_records(tmp_path))
    assert len(frame) == 8 and not frame.duplicated(["variant", "seed"]).any()
    assert set(frame[frame.variant == "attn_only"].final_val_loss) == {1.8 - 0.003, 1.8}


def test_escape_step_is_where_the_loss_leaves_the_floor_for_good():
    from residual_lib.study.escapes import escape_step

    steps = [0, 100, 200, 300, 400]
    assert escape_step(steps, [4.0, 3.3, 3.2, 3.3, 3.1], floor=3.3, tolerance=0.05) == 400
    assert escape_step(steps, [4.0, 3.3, 3.2, 3.2, 3.1], floor=3.3, tolerance=0.05) == 200
    assert escape_step(steps, [4.0, 3.3, 3.2, 3.3, 3.3], floor=3.3, tolerance=0.05) is None


def test_the_escape_plan_covers_every_condition_and_keeps_the_central_runs():
    from residual_lib.study.sections import ESCAPE_RATE_SEEDS, escape_condition, plan

    specs = plan("10_ffn_escape", "cpu", seeds=[1, 2], variants=["full"])
    assert {s.variant for s in specs} == {"ffn_only"}
    labels = [escape_condition("cpu", s.profile.name, s.gain, s.init_noise) for s in specs]
    # the escape rate's twenty seeds, at the base profile and with dropout; the other conditions at the given seeds
    assert labels.count("cpu recipe") == 20 and labels.count("dropout 0.2") == 20
    assert labels.count("initial weights nudged by 1×10⁻⁶") == 2 and labels.count("6,000 steps") == 2
    assert {s.seed for s in specs if s.profile.name == "cpu-dropout"} == set(ESCAPE_RATE_SEEDS) | {1, 2}
    assert len(specs) == len(set(specs))
    smoke = plan("10_ffn_escape", "smoke", seeds=[1, 2], variants=["full"])  # the tests' profile: the seeds given
    assert {s.seed for s in smoke} == {1, 2}
    assert sorted(s.gain for s in specs if s.gain != 1.0) == [0.5, 2.0, 4.0]
    assert all(s.seed == 1 for s in specs if s.gain != 1.0)


def test_the_verdict_grid_has_a_row_per_claim_and_a_symbol_per_checked_cell(tmp_path):
    central(tmp_path, "cpu", attn=1.8, ffn=3.33)
    table = scorecard.build(tmp_path, stand_in="cpu")
    frame = scorecard.grid(table, stand_in="cpu")
    # no paper-scale records: their columns are left out and named for the note under the grid
    assert list(frame.columns) == ["cpu", "cpu-dropout"]
    assert frame.attrs["without_records"] == ["paper-10m", "paper-124m"]
    assert "`paper-10m` and `paper-124m` have no records yet" in scorecard.grid_note(frame)
    assert list(frame.index) == [scorecard.TITLES[c] for c in dict.fromkeys(paper.claims().claim)]
    assert frame.loc[scorecard.TITLES["asymmetry_10m"], "cpu"] == "reproduced"
    # a verdict from paper-10m's records brings its column (a 124M claim has no cell there)
    judged = table.assign(verdict=table.verdict.where(~((table.profile == "paper-10m")
                                                        & (table.claim == "asymmetry_10m")), "reproduced"))
    frame = scorecard.grid(judged, stand_in="cpu")
    assert list(frame.columns) == ["cpu", "cpu-dropout", "paper-10m"] and scorecard.grid_note(frame).startswith(
        "`paper-124m` has no records yet")
    assert pd.isna(frame.loc[scorecard.TITLES["seeds_124m"], "paper-10m"])
    html = scorecard.grid_html(frame)
    assert html.count('class="verdict v-') == int(frame.notna().sum().sum())
    assert '<span class="verdict-symbol" aria-hidden="true">✓</span><span class="verdict-label"> reproduced</span>' in html


def _luminance(hex_colour: str) -> float:
    rgb = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def test_verdict_colours_meet_wcag_aa_contrast_in_light_and_dark_mode():
    import re
    from pathlib import Path

    css = (Path(__file__).resolve().parents[1] / "_static" / "verdicts.css").read_text()
    for dark in (False, True):
        prefix = 'html[data-theme="dark"] ' if dark else ""
        text = re.search(re.escape(prefix) + r"\.verdict \{ color: (#[0-9a-f]{6})", css).group(1)
        for verdict in scorecard.VERDICTS:
            slug = scorecard.verdict_slug(verdict)
            rules = [m for m in re.finditer(r"([^{}]+)\{ background: (#[0-9a-f]{6}); \}", css)
                     if m.group(1).strip().startswith("html[") == dark
                     and f".{slug}" in [sel.strip().removeprefix('html[data-theme="dark"]').strip()
                                        for sel in m.group(1).split(",")]]
            assert rules, (verdict, dark)
            back = rules[0].group(2)
            lighter, darker = sorted((_luminance(text), _luminance(back)), reverse=True)
            assert (lighter + 0.05) / (darker + 0.05) >= 4.5, (verdict, dark, text, back)


def test_evaluation_noise_cannot_explain_a_discrepancy_many_times_its_size(tmp_path):
    central(tmp_path, "cpu", attn=1.8, ffn=3.33)  # random re-evaluations 0.01 from the fixed loss
    assert verdicts(tmp_path, "eval_noise_explains")["cpu"] == "not reproduced"
    fake_record(tmp_path, "cpu", "ffn_only", 1, 3.33, noise=0.5, layer0=0.0)  # noisy, but below the discrepancy
    assert verdicts(tmp_path, "eval_noise_explains")["cpu"] == "inconclusive"
    fake_record(tmp_path, "cpu", "ffn_only", 1, 3.33, noise=2.0, layer0=0.0)  # as large as the discrepancy
    assert verdicts(tmp_path, "eval_noise_explains")["cpu"] == "reproduced"


def test_the_dropout_twin_is_judged_on_its_own_records(tmp_path):
    central(tmp_path, "cpu", attn=1.8, ffn=3.33)
    central(tmp_path, "cpu-dropout", attn=1.9, ffn=3.10)  # with dropout, FFNOnly escapes
    both = verdicts(tmp_path, "ffn_collapse_10m")
    assert both["cpu"] == "reproduced" and both["cpu-dropout"] == "not reproduced"


def test_a_verdict_that_flips_at_a_plausible_threshold_is_fragile(tmp_path):
    central(tmp_path, "cpu", attn=1.8, ffn=3.34)
    assert not scorecard.fragile(scorecard.sensitivity(tmp_path))
    fake_record(tmp_path, "cpu", "ffn_only", 2, FLOOR - 0.07, layer0=0.0)  # escapes at 0.05, not at 0.10
    sens = scorecard.sensitivity(tmp_path)
    assert ("ffn_collapse_10m", "cpu") in scorecard.fragile(sens)
    row = sens[(sens.threshold == "FLOOR_TOL") & (sens.alternative == 0.10)].iloc[0]
    assert ("ffn_collapse_10m", "cpu", "not reproduced", "reproduced") in row.changes
    assert scorecard.FLOOR_TOL == 0.05  # restored after the sensitivity run
    html = scorecard.grid_html(scorecard.grid(scorecard.build(tmp_path)), fragile_cells=scorecard.fragile(sens))
    assert html.count('class="verdict-fragile"') == len(scorecard.fragile(sens))
    with pytest.raises(ValueError, match="unknown threshold"):
        scorecard.thresholds(FLOOR_TOLERANCE=0.1)
    # the threshold table's dates never split at a hyphen in a narrow column
    from residual_lib.study.frames import load_records

    shown = scorecard.threshold_table(sens, load_records(tmp_path), stand_in="cpu")
    floor = shown.set_index("threshold").loc["FLOOR_TOL"]
    assert floor["value set"].startswith("2026\u201112\u201102 11:41 UTC, commit 8008129: before all ")
    assert re.match(r"\d{4}\u2011\d\d\u2011\d\d \d\d:\d\d UTC, commit [0-9a-f]{7} \(",
                    floor["logic of the rules that use it last changed"])


def test_the_pages_share_one_sensitivity_run_and_a_changed_record_gets_its_own(tmp_path, monkeypatch):
    import importlib
    import tempfile

    from residual_lib.study.frames import load_records

    module = importlib.import_module("residual_lib.pages.scorecard.sensitivity")  # the package exports the function

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    from residual_lib.pages.scorecard import limits  # one threshold is enough to keep and fingerprint: a quicker test
    monkeypatch.setattr(limits, "THRESHOLDS", tuple(t for t in limits.THRESHOLDS if t.name == "FLOOR_TOL"))
    (tmp_path / "tmp").mkdir()
    results = tmp_path / "results"
    central(results, "cpu", attn=1.8, ffn=3.34)
    fake_record(results, "cpu", "ffn_only", 2, FLOOR - 0.07, layer0=0.0)
    fresh = scorecard.sensitivity(results)
    kept = scorecard.sensitivity(results, remember=True)
    pd.testing.assert_frame_equal(kept, fresh)
    kept = list((tmp_path / "tmp").glob("residual-lib-*/sensitivity-*.json"))
    assert len(kept) == 1
    computed = module._sensitivity
    monkeypatch.setattr(module, "_sensitivity", lambda *a: pytest.fail("recomputed what was kept"))
    pd.testing.assert_frame_equal(scorecard.sensitivity(results, remember=True), fresh)  # read back, tuples and all
    monkeypatch.setattr(module, "_sensitivity", computed)
    kept[0].write_text('[{"threshold": ')  # a damaged file is computed again, not trusted or fatal
    pd.testing.assert_frame_equal(scorecard.sensitivity(results, remember=True), fresh)
    fake_record(results, "cpu", "ffn_only", 2, 3.34, layer0=0.0)  # the record changes: so does the table
    assert not scorecard.fragile(scorecard.sensitivity(results, remember=True))
    assert len(list((tmp_path / "tmp").glob("residual-lib-*/sensitivity-*.json"))) == 2
    # a chapter's box marks the fragile verdicts of the scorecard built for its profile, without being told them
    fake_record(results, "cpu", "ffn_only", 2, FLOOR - 0.07, layer0=0.0)
    records = load_records(results)
    records.attrs.update(profile="cpu", results_dir=str(results))
    assert 'class="verdict-fragile"' in scorecard.verdict_box(["ffn_collapse_10m"], records).data
    assert 'class="verdict-fragile"' not in scorecard.verdict_box(["asymmetry_10m"], records).data


def test_thresholds_were_set_by_the_commits_they_name():
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for t in scorecard.THRESHOLDS:
        found = subprocess.run(["git", "log", "--format=%h %cI", "--reverse", f"-S{t.name} = ", "--", "residual_lib"],
                               cwd=root, capture_output=True, text=True)
        if found.returncode or not found.stdout.strip():
            pytest.skip("no git history here (a shallow or exported checkout)")
        shas = [line.split()[0] for line in found.stdout.splitlines()]
        dates = dict(line.split() for line in found.stdout.splitlines())
        assert any(sha.startswith(t.commit) or t.commit.startswith(sha) for sha in shas), t.name
        assert dates[next(sha for sha in shas if sha.startswith(t.commit) or t.commit.startswith(sha))] == t.set_on


def test_escape_rates_give_clopper_pearson_intervals_and_fishers_test():
    from residual_lib.study.escapes import escape_rate, escape_rates

    r = escape_rate(0, 20)
    assert r["rate"] == 0 and r["low"] == 0 and r["high"] == pytest.approx(0.1684, abs=1e-4)  # 1 - 0.025^(1/20)
    runs = pd.DataFrame({"setting": ["a"] * 10 + ["b"] * 10,
                         "below_floor": [0.2] * 6 + [0.0] * 4 + [0.03] * 2 + [0.0] * 8})
    table = escape_rates(runs, (0.02, 0.05)).set_index(["setting", "threshold"])
    assert table.loc[("a", 0.02), "escaped"] == 6 and table.loc[("b", 0.02), "escaped"] == 2
    assert table.loc[("b", 0.05), "escaped"] == 0
    assert table.loc[("a", 0.05), "fisher_p"] == pytest.approx(0.0108, abs=1e-4)  # 6/10 vs 0/10


def test_the_central_chapter_needs_its_own_runs_and_shows_the_dropout_twin_in_part():
    from residual_lib.study.sections import plan, required

    runs = plan("06_central", "cpu", seeds=[1, 2], variants=["full", "ffn_only"])
    assert {r.profile.name for r in runs} == {"cpu", "cpu-dropout"} and len(runs) == 8
    needed = required("06_central", runs, "cpu")
    assert {r.profile.name for r in needed} == {"cpu"} and len(needed) == 4
    mechanism = plan("07_mechanism", "cpu", seeds=[1])
    assert {r.variant for r in required("07_mechanism", mechanism, "cpu")} == {"attn_only", "ffn_only", "mixer", "full"}
    ladder = plan("09_scale_ladder", "cpu", seeds=[1])
    assert required("09_scale_ladder", ladder, "cpu") == []  # shown in part by the book
    assert required("09_scale_ladder", ladder, "cpu", partial_ok=False) == ladder  # but asked for whole


def test_a_stray_overridden_run_is_named_and_changes_no_verdict(tmp_path):
    central(tmp_path, "cpu", attn=1.8, ffn=3.34)
    before = scorecard.build(tmp_path)
    # a 100-step attn_only run of seed 1 lands in the cpu folder under the cpu name, with its own key
    stray = get_profile("cpu", max_iters=100).to_dict()
    key = run_key(run_identity(stray, "attn_only", 1, "fixed", 1.0, True, 0))
    record = json.loads(next(tmp_path.glob("cpu/attn_only_seed1_*.json")).read_text())
    record.update(key=key, config={"profile": stray}, final_val_loss=3.3, best_val_loss=3.3)
    record["curves"]["val"]["loss"] = [3.3]
    write_record(record, record_path(tmp_path, "cpu", "attn_only", 1, key))
    after = scorecard.build(tmp_path)
    pd.testing.assert_frame_equal(before, after)
    note = scorecard.scale_note(tmp_path)
    assert f"cpu attn_only seed 1 (key {key}): max_iters 100 (profile: 2000)" in note
    assert "not part of its profile" in note


def test_the_verdict_box_counts_each_profiles_runs_on_its_own(tmp_path):
    from residual_lib.study.frames import load_records

    central(tmp_path, "cpu", attn=1.8, ffn=3.34, seeds=(1, 2, 3))
    for seed in range(1, 9):
        fake_record(tmp_path, "cpu-dropout", "ffn_only", seed, 3.34)
    records = load_records(tmp_path)
    records.attrs.update(profile="cpu", results_dir=str(tmp_path))
    html = scorecard.verdict_box(["ffn_collapse_10m"], records, fragile_cells=UNMARKED).data
    scope = html[html.index('class="verdict-box-scope"'):]
    assert "12 runs at <code>cpu</code> (seeds 1, 2, 3) and 8 runs at <code>cpu-dropout</code> (8 seeds)" in scope
    assert f"read from <code>{tmp_path.name}/</code>" in scope
    # the runs it leaves out are named as the page names variants, Full included
    records.attrs.update(diverged=["cpu full seed 4 (key abc)"], left_out=["cpu full seed 5", "cpu ffn_only seed 6"])
    scope = scorecard.verdict_box(["ffn_collapse_10m"], records, fragile_cells=UNMARKED).data
    assert "diverged (non-finite loss): cpu Full seed 4 (key abc)." in scope
    assert "on every other page: cpu Full seed 5; cpu FFNOnly seed 6." in scope
    # a verdict that changes at a plausible threshold is marked as the grid marks it, at its own profile only
    marked = scorecard.verdict_box(["ffn_collapse_10m"], records, fragile_cells={("ffn_collapse_10m", "cpu")}).data
    assert marked.count('class="verdict-fragile"') == 1 and "verdict-fragile" not in html
    elsewhere = {("ffn_collapse_10m", "paper-10m"), ("asymmetry_10m", "cpu")}  # neither is in this box
    assert "verdict-fragile" not in scorecard.verdict_box(["ffn_collapse_10m"], records, fragile_cells=elsewhere).data


def test_the_verdict_box_says_when_a_verdict_reads_more_seeds_than_its_page_and_leaves_no_empty_value(tmp_path):
    from residual_lib.study.frames import load_records

    central(tmp_path, "cpu", attn=1.8, ffn=3.34, seeds=(1, 2, 3))
    for seed in range(1, 9):
        fake_record(tmp_path, "cpu-dropout", "ffn_only", seed, 3.34)
    records = load_records(tmp_path)
    page = records[(records.profile == "cpu") | (records.seed <= 4)]  # a page that shows 4 of the 8 seeds
    page.attrs.update(profile="cpu", results_dir=str(tmp_path))
    html = scorecard.verdict_box(["ffn_collapse_10m", "asymmetry_10m"], page, fragile_cells=UNMARKED).data
    assert "The verdict reads 8 seeds; this page shows 4." in html
    assert html.count("The verdict reads") == 1  # at cpu the verdict reads the page's own three seeds
    alone = records[records.profile == "cpu"]  # no cpu-dropout run on the page: the scorecard describes that row
    alone.attrs.update(profile="cpu", results_dir=str(tmp_path))
    assert "The verdict reads" not in scorecard.verdict_box(["ffn_collapse_10m"], alone, fragile_cells=UNMARKED).data
    # what the records show reads as a sentence after the claim's title
    starved = scorecard.verdict_box(["layer0_starved_ffn_only"], alone, fragile_cells=UNMARKED).data
    assert "</a>. Median 0.000 (per seed 1:" in starved
    page = records[records.profile == "cpu"]
    page.attrs.update(profile="cpu-dropout", results_dir=str(tmp_path))
    html = scorecard.verdict_box(["asymmetry_10m"], page, fragile_cells=UNMARKED).data  # no Full or AttnOnly: not run
    assert "not run at this scale" in html and "—." not in html and "</a>.</li>" in html


def test_a_mean_over_one_seed_is_shown_without_a_spread(tmp_path):
    from residual_lib.study.frames import load_records

    fake_record(tmp_path, "paper-10m", "attn_only", 1337, 1.52)
    fake_record(tmp_path, "paper-10m", "ffn_only", 1337, 3.35)
    table = scorecard.build(tmp_path)
    said = table[(table.claim == "ffn_collapse_10m") & (table.profile == "paper-10m")].ours.iloc[0]
    assert said.startswith("ffn_only 3.350, floor") and "±" not in said  # one seed: no standard deviation
    records = load_records(tmp_path)
    records.attrs.update(profile="paper-10m", results_dir=str(tmp_path))
    box = scorecard.verdict_box(["ffn_collapse_10m"], records, fragile_cells=UNMARKED).data
    block = scorecard.claims_html(table)
    for shown in (box, block):
        assert "FFNOnly 3.350, floor" in shown and "± —" not in shown
    assert scorecard.ours_text("ffn_only 3.340 ± 0.010, floor 3.347") == "FFNOnly 3.340 ± 0.010, floor 3.347"
    assert scorecard.ours_text("gap 1.827; holds in 1 of 1 seed") == "gap 1.827; holds in the one seed"
    assert scorecard.ours_text("holds in 1 of 12 seeds") == "holds in 1 of 12 seeds"
    # a box that shows a claim not yet run says what the mark means; one without such a claim does not
    assert "<em>Not run at this scale</em> marks a claim whose runs" not in box
    waiting = scorecard.verdict_box(["ffn_collapse_10m", "layer0_full"], records, fragile_cells=UNMARKED).data
    assert "<em>Not run at this scale</em> marks a claim whose runs at this profile are not all recorded yet." in waiting
    marked = scorecard.verdict_box(["ffn_collapse_10m"], records, fragile_cells={("ffn_collapse_10m", "paper-10m")}).data
    assert "<em>Fragile</em> marks a verdict" in marked and "<em>Fragile</em> marks" not in box
    undecided = scorecard.verdict_box(["asymmetry_10m"], records, fragile_cells=UNMARKED).data  # one seed each
    assert "<em>Inconclusive</em> marks a claim these records do not decide" in undecided
    assert "<em>Inconclusive</em>" not in box
    # at the paper's setting an inconclusive verdict is not a stand-in's scale
    counted = scorecard.count_sentence(table, "paper-10m")
    assert "one is not decided by these records" in counted and "stand-in" not in counted
    assert "(the other twelve wait for runs not yet recorded)" in counted
    # at a stand-in an inconclusive verdict is an absolute number only where an absolute rule gave it
    rows = [("original_record", "inconclusive"), ("mixer_test", "inconclusive"), ("asymmetry_10m", "reproduced")]
    fake = pd.DataFrame([{"claim": c, "profile": "cpu", "verdict": v} for c, v in rows])
    assert scorecard.count_sentence(fake, "cpu").endswith(
        ": one is reproduced; one is an absolute number of the paper's model, which a smaller stand-in cannot check; "
        "and one is not decided by these records.")
    # the paper's value and its spread stay on one line
    assert "1.580\u00a0±\u00a00.003" in block and "1.580 ± 0.003" not in block


def test_the_headline_states_the_asymmetry_over_the_sweeps_seeds_and_every_ffn_only_escape(tmp_path):
    from residual_lib.study.frames import load_records

    central(tmp_path, "cpu", attn=1.8, ffn=3.34)
    fake_record(tmp_path, "cpu", "ffn_only", 11, 3.0)  # an escape-rate seed: ffn_only alone, and it escapes
    records = load_records(tmp_path)
    text = scorecard.headline(scorecard.build(tmp_path, stand_in="cpu"), records, stand_in="cpu")
    # the means compare the variants over the central sweep's seeds only (3.0 would pull ffn_only to 3.255)
    assert "it holds in every seed: AttnOnly ends at 1.800 nats and FFNOnly at 3.340, against a floor of 3.347" in text
    assert "(means over the central sweep's three seeds)" in text
    # every ffn_only seed counts here, at the escape line and at the input-blind line
    assert (" FFNOnly does not collapse in every seed, as the paper says it does: without dropout, 1 of 4 seeds ends"
            " more than 0.05 nats below the floor, and 1 ends more than 0.010 nats below it, further than a model"
            " that ignores its input can reach.") in text
    assert "pull its mean down" not in text and "pulls its mean down" not in text  # no sweep seed left the floor
    assert text.endswith("No paper-10m or paper-124m run is recorded yet.")
    central(tmp_path, "cpu-dropout", attn=1.9, ffn=3.34)  # with dropout every seed stays at the floor
    text = scorecard.headline(scorecard.build(tmp_path, stand_in="cpu"), load_records(tmp_path), stand_in="cpu")
    assert (" With dropout 0.2 (nanoGPT's recipe, which paper-10m follows), FFNOnly collapses in every seed, as the"
            " paper says (3 of 3). Without dropout it does not: 1 of 4 seeds ends more than 0.05 nats") in text
    assert "; at 0.05 the two settings do not differ clearly (Fisher's p = 1.00)." in text
    fake_record(tmp_path, "cpu", "ffn_only", 2, 3.1)  # a sweep seed escapes: the mean is pulled down
    text = scorecard.headline(scorecard.build(tmp_path, stand_in="cpu"), load_records(tmp_path), stand_in="cpu")
    assert "(means over the central sweep's three seeds; FFNOnly's median is 3.337, one escaped seed pulls its mean" \
           " down)" in text
    fake_record(tmp_path, "cpu", "attn_only", 1, 3.34)  # seed 1 collapses too: the asymmetry holds in part
    text = scorecard.headline(scorecard.build(tmp_path, stand_in="cpu"), load_records(tmp_path), stand_in="cpu")
    assert "it holds in some seeds only" in text


def test_the_papers_values_mark_the_seeds_the_summary_does_not_state():
    from residual_lib.study import paper

    rows = paper.section(6)
    inferred = rows[rows.inferred.fillna("").str.contains("seeds")]
    stated = rows[~rows.inferred.fillna("").str.contains("seeds") & rows.seeds.notna()]
    assert len(inferred) and len(stated)
    shown = scorecard.section_view(6).data
    assert f"{inferred.seeds.iloc[0]} (inferred)" in shown
    assert shown.count("(inferred)") == len(inferred)
    # the paper's values keep the precision the summary gives them: "14.0" and "1.54", "200" steps,
    # as the claims file writes them, not three decimals for every quantity
    five = scorecard.section_view(5).data
    cells = re.findall(r">([^<>]*)</td>", five)
    assert {"200", "14.0", "1.54", "1.600"} <= set(cells) and not {"200.000", "14.000"} & set(cells)
    assert "1.580 ± 0.003" in scorecard.section_view(6).data.replace("\u00a0", " ")
    # each value's text is matched to its row, not only its position: rows in another order stop the page
    reordered = rows.iloc[::-1].reset_index(drop=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(paper, "section", lambda number: reordered)
        with pytest.raises(ValueError, match="paper_claims.csv"):
            scorecard.section_view(6)


def test_escape_rate_text_gives_the_rate_per_setting_fishers_test_and_the_other_lines():
    from residual_lib.study.escapes import escape_rate_text, escape_rates

    below = {"cpu": [0.3, 0.08, 0.03] + [0.0] * 17, "cpu-dropout": [0.0] * 20}
    runs = pd.DataFrame([{"setting": s, "below_floor": b} for s, values in below.items() for b in values])
    text = escape_rate_text(escape_rates(runs, (0.02, 0.05, 0.1)), 0.05)
    assert text.startswith("At `cpu`, FFNOnly ends more than 0.05 nats below the floor in 2 of 20 runs (10%; 95%"
                           " interval 1% to 32%); at `cpu-dropout`, in 0 of 20 runs (0%; 95% interval 0% to 17%).")
    assert text.endswith("With the line at 0.02 nats the counts are 3 and 0 of 20 (p = 0.231); at 0.1 nats, 1 and"
                         " 0 of 20 (p = 1.000).")
    assert escape_rate_text(escape_rates(runs.head(0), (0.05,)), 0.05) == "No escape-rate records at this profile yet."


def test_the_first_rules_judged_ffn_only_by_its_mean_and_the_floor_of_the_whole_split(tmp_path):
    """Under the first rules an escape that pulls FFNOnly's mean 0.069 below the split's floor
    undoes the asymmetry; today's rules judge the asymmetry seed by seed."""
    from residual_lib.pages.scorecard import history
    from residual_lib.study.frames import load_records

    central(tmp_path, "cpu", attn=1.8, ffn=FLOOR)
    records = load_records(tmp_path)
    assert history.first_verdicts(records)["asymmetry_10m"] == "reproduced"
    fake_record(tmp_path, "cpu", "ffn_only", 2, FLOOR - 0.2, layer0=0.0)  # one seed leaves the floor
    records = load_records(tmp_path)
    first = history.first_verdicts(records)
    assert first["asymmetry_10m"] == "not reproduced" and first["ffn_collapse_10m"] == "not reproduced"
    table = scorecard.build(tmp_path, stand_in="cpu", records=records)
    rows = history.history_table(table, records)
    row = rows[rows.claim.str.startswith("The asymmetry")].iloc[0]
    assert (row["first rules"], row["today"]) == ("not reproduced", "reproduced")
    assert "5380c9f" in row["changes"] and len(history.moved(rows)) >= 1


def test_the_papers_values_name_every_quantity_and_variant_in_words():
    from residual_lib.study import paper

    rows = paper.claims()
    labels = [paper.quantity_label(q) for q in rows.quantity]
    assert all("_" not in label.replace("α_tt", "") for label in labels)
    assert paper.quantity_label("final_val_loss_seed_42") == "final validation loss, seed 42"
    assert paper.variant_label("ffn_only-attn_only") == "FFNOnly − AttnOnly"
    with pytest.raises(KeyError, match="add it to residual_lib.study.paper.QUANTITIES"):
        paper.quantity_label("made_up")
    # a gap is named in the order that makes the paper's value its sign
    gap = rows[(rows.claim == "asymmetry_10m") & (rows.quantity == "gap")].iloc[0]
    attn, ffn = (paper.value("asymmetry_10m", v, "final_val_loss") for v in ("attn_only", "ffn_only"))
    assert gap.variant == "ffn_only-attn_only" and gap.value == pytest.approx(ffn - attn)
    # every gap or ratio the paper gives as positive is named larger-first: FFNOnly before AttnOnly
    paired = rows[rows.variant.str.contains("attn_only") & rows.variant.str.contains("ffn_only")]
    assert all(v.startswith("ffn_only") for v in paired.variant), list(paired.variant)
    shown = scorecard.section_view(6).data
    assert "gap in final validation loss" in shown and "final_val_loss" not in shown


def test_the_collapse_sentences_judge_at_the_escape_line_and_count_seeds_in_number():
    from residual_lib.pages.scorecard import prose

    # past the input-blind line only: still a collapse by the scorecard's line, with the deeper seeds said
    text = prose._collapse_sentences([("without dropout", 0, 2, 4, 0.0102)], [(0, 4)])
    assert text == (" Without dropout, FFNOnly collapses in every seed, as the paper says (4 of 4), though 2 end more"
                    " than 0.010 nats below the floor, further than a model that ignores its input can reach.")
    assert prose._collapse_sentences([("without dropout", 0, 0, 1, 0.01)], [(0, 1)]) == \
        " FFNOnly stays at the floor in every seed (1 seed without dropout)."
    one = prose._collapse_sentences([("without dropout", 1, 1, 1, 0.01)], [(1, 1)])
    assert "as the paper says it does: without dropout, 1 of 1 seed ends more than 0.05 nats" in one


def test_the_verdict_box_gives_a_claim_judged_alike_at_every_profile_one_line_and_orders_runs_by_size(tmp_path):
    from residual_lib.study.frames import load_records

    central(tmp_path, "cpu", attn=1.8, ffn=3.34, seeds=(1, 2, 3))
    for seed in range(1, 9):
        fake_record(tmp_path, "cpu-dropout", "ffn_only", seed, 3.34)
    for profile in ("ladder-3m", "ladder-0.1m"):
        fake_record(tmp_path, profile, "full", 1, 1.9)
    records = load_records(tmp_path)
    records["n_params"] = records.profile.map({"ladder-0.1m": 1.2e5, "cpu": 8e5, "cpu-dropout": 8e5, "ladder-3m": 3.2e6})
    records.attrs.update(profile="cpu", results_dir=str(tmp_path))
    html = scorecard.verdict_box(["asymmetry_by_scale", "ffn_collapse_10m"], records, fragile_cells=UNMARKED).data
    items = re.findall(r"<li>(.*?)</li>", html)
    assert len(items) == 3 and "<code>cpu</code> and <code>cpu-dropout</code> <a" in items[0]  # one line for both
    # judged differently: each profile named, the page's own too
    assert "</span> <code>cpu</code> <a" in items[1] and "</span> <code>cpu-dropout</code> <a" in items[2]
    scope = html[html.index("This page shows"):]
    assert scope.index("<code>cpu</code>") < scope.index("ladder-0.1m") < scope.index("cpu-dropout") < \
        scope.index("ladder-3m")  # the page's profile, then by model size
