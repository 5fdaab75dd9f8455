"""The scorecard's verdicts follow its stated rules, from records alone."""

from __future__ import annotations

import hashlib

import pytest

from residual_lib import paper, scorecard
from residual_lib.records import record_path, write_record

FLOOR = 3.347


def fake_record(results, profile, variant, seed, final, eval_mode="fixed", gain=1.0, deterministic=True,
                replicate=0, drift=1.0, growth=1.0, layer0=0.1, steps=100):
    identity = repr((profile, variant, seed, eval_mode, gain, deterministic, replicate)).encode()
    key = hashlib.sha256(identity).hexdigest()[:16]  # same identity, same file: a rewrite replaces it
    log_steps = list(range(0, steps, 10))
    record = {
        "key": key, "profile": profile, "variant": variant, "seed": seed, "eval_mode": eval_mode, "gain": gain,
        "deterministic": deterministic, "replicate": replicate, "final_val_loss": final, "best_val_loss": final,
        "unigram_floor": FLOOR, "n_params": 1, "steps": steps, "wall_seconds": 1.0, "tokens_per_second": 1.0,
        "config": {}, "provenance": {"device": "cpu"},
        "curves": {"train": {"step": log_steps, "loss": [final] * len(log_steps),
                             "grad_norm_layer0": [layer0] * len(log_steps)},
                   "val": {"step": [steps], "loss": [final]}},
        "diagnostics": {"representation_drift": drift, "hidden_norm_growth": growth},
    }
    write_record(record, record_path(results, profile, variant, seed, key))


def central(results, profile, attn, ffn, seeds=(1, 2, 3), spread=0.003):
    for i, seed in enumerate(seeds):
        jitter = (i - 1) * spread
        fake_record(results, profile, "attn_only", seed, attn + jitter, drift=14.0, growth=14.0)
        fake_record(results, profile, "ffn_only", seed, ffn + jitter, drift=5.4, growth=5.4)
        fake_record(results, profile, "full", seed, 1.47 + jitter, drift=1.4)
        fake_record(results, profile, "no_residual", seed, ffn + 0.006 + jitter)


def verdicts(results, claim, stand_in="cpu"):
    table = scorecard.build(results, stand_in=stand_in)
    return dict(zip(table[table.claim == claim].profile, table[table.claim == claim].verdict))


def test_every_claim_has_a_row_per_profile_of_its_scale_and_none_is_run_without_records(tmp_path):
    table = scorecard.build(tmp_path)
    claims = paper.claims()
    expected = sum(len(scorecard.profiles_for_scale(s)) for s in claims.drop_duplicates(["claim", "scale"]).scale)
    assert len(table) == expected and set(table.claim) == set(claims.claim)
    assert set(table.verdict) == {"not run at this scale"}


def test_central_claim_is_reproduced_when_attn_only_recovers_and_ffn_only_collapses(tmp_path):
    central(tmp_path, "cpu", attn=1.8, ffn=3.33)
    result = verdicts(tmp_path, "central_10m")
    assert result == {"paper-10m": "not run at this scale", "cpu": "reproduced"}
    assert verdicts(tmp_path, "ffn_vs_no_residual")["cpu"] == "reproduced"
    assert verdicts(tmp_path, "representation_drift")["cpu"] == "reproduced"
    assert verdicts(tmp_path, "hidden_norm_growth")["cpu"] == "reproduced"
    assert verdicts(tmp_path, "intermediate_reproduction")["cpu"] == "not reproduced"  # the seeds agree
    assert verdicts(tmp_path, "original_record")["cpu"] == "inconclusive"  # an absolute 10M number


def test_central_claim_fails_when_attn_only_collapses_too(tmp_path):
    central(tmp_path, "cpu", attn=3.33, ffn=3.33)
    assert verdicts(tmp_path, "central_10m")["cpu"] == "not reproduced"


@pytest.mark.parametrize("attn, expected", [(1.580, "reproduced"), (1.700, "not reproduced")])
def test_at_paper_scale_the_numbers_must_agree_too(tmp_path, attn, expected):
    central(tmp_path, "paper-10m", attn=attn, ffn=3.350)
    assert verdicts(tmp_path, "central_10m")["paper-10m"] == expected


def test_nondeterministic_repeats_need_run_to_run_spread(tmp_path):
    for replicate, final in enumerate((1.97, 1.94, 2.06)):
        fake_record(tmp_path, "cpu", "attn_only", 1337, final, deterministic=False, replicate=replicate)
    fake_record(tmp_path, "cpu", "attn_only", 1337, 2.0)
    fake_record(tmp_path, "cpu", "attn_only", 1337, 2.0, replicate=1)
    assert verdicts(tmp_path, "nondeterministic_repeats")["cpu"] == "reproduced"


def test_identical_nondeterministic_repeats_do_not_reproduce_the_variance(tmp_path):
    for replicate in range(3):
        fake_record(tmp_path, "cpu", "attn_only", 1337, 2.0, deterministic=False, replicate=replicate)
    assert verdicts(tmp_path, "nondeterministic_repeats")["cpu"] == "not reproduced"


def test_joint_collapse_and_layer0_starvation(tmp_path):
    fake_record(tmp_path, "cpu", "full", 1337, 1.5, eval_mode="random", layer0=0.11)
    for variant in ("attn_only", "ffn_only", "no_residual"):
        fake_record(tmp_path, "cpu", variant, 1337, 3.34, eval_mode="random", layer0=0.0)
    assert verdicts(tmp_path, "joint_collapse_10m")["cpu"] == "reproduced"
    assert verdicts(tmp_path, "layer0_gradient")["cpu"] == "reproduced"
    fake_record(tmp_path, "cpu", "attn_only", 1337, 1.8, eval_mode="random", layer0=0.2)  # overwrite: recovers
    assert verdicts(tmp_path, "joint_collapse_10m")["cpu"] == "not reproduced"
    assert verdicts(tmp_path, "layer0_gradient")["cpu"] == "not reproduced"


def test_gain_confound_needs_equivalent_gains(tmp_path):
    for gain, final in ((0.5, 1.81), (1.0, 1.80), (2.0, 1.82), (4.0, 1.80)):
        fake_record(tmp_path, "cpu", "attn_only", 1337, final, gain=gain)
    assert verdicts(tmp_path, "gain_confound")["cpu"] == "reproduced"
    fake_record(tmp_path, "cpu", "attn_only", 1337, 2.5, gain=4.0)
    assert verdicts(tmp_path, "gain_confound")["cpu"] == "not reproduced"


def test_scale_note_gives_the_stand_in_size_and_the_missing_paper_profiles(tmp_path):
    central(tmp_path, "cpu", attn=1.8, ffn=3.34)
    for path in tmp_path.rglob("full_*.json"):  # a 0.8M-parameter full model
        text = path.read_text().replace('"n_params": 1,', '"n_params": 801664,')
        path.write_text(text)
    note = scorecard.scale_note(tmp_path, stand_in="cpu")
    assert "a 0.8M-parameter stand-in" in note
    assert "`paper-10m` or `paper-124m` records" in note
    central(tmp_path, "paper-10m", attn=1.98, ffn=3.34)
    note = scorecard.scale_note(tmp_path, stand_in="cpu")
    assert "no `paper-124m` records" in note and "paper-10m` or" not in note


def test_controlled_keeps_one_run_per_variant_and_seed(tmp_path):
    from residual_lib.records import controlled, load_records

    central(tmp_path, "cpu", attn=1.8, ffn=3.34, seeds=(1, 2))
    fake_record(tmp_path, "cpu", "attn_only", 1, 1.9, gain=2.0)
    fake_record(tmp_path, "cpu", "attn_only", 1, 1.9, eval_mode="random")
    fake_record(tmp_path, "cpu", "attn_only", 1, 1.9, deterministic=False)
    fake_record(tmp_path, "cpu", "attn_only", 1, 1.8, replicate=1)
    frame = controlled(load_records(tmp_path))
    assert len(frame) == 8 and not frame.duplicated(["variant", "seed"]).any()
    assert set(frame[frame.variant == "attn_only"].final_val_loss) == {1.8 - 0.003, 1.8}


def test_central_row_counts_the_seeds_whose_ffn_only_sits_at_the_floor(tmp_path):
    central(tmp_path, "cpu", attn=1.8, ffn=3.33, seeds=(1, 2, 3))
    fake_record(tmp_path, "cpu", "ffn_only", 3, 3.10)  # one seed escapes the floor
    table = scorecard.build(tmp_path, stand_in="cpu").set_index(["claim", "profile"])
    assert "(at the floor in 2 of 3 seeds)" in table.loc[("central_10m", "cpu"), "ours"]
