"""Fused training: K models trained together match the same runs trained one by one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from residual_lib.commands.sweep import sweep
from residual_lib.run.profiles import get_profile
from residual_lib.run.runs import Run, RunError, fuse_groups
from residual_lib.storage.records import read_record
from residual_lib.training import fused
from residual_lib.training.state import RunState
from residual_lib.training.store import obtain
from residual_lib.training.train import train, train_group

# smoke's shape at the cpu profile's learning rate; a diagnostic on every step
PROFILE = get_profile("smoke", max_iters=60, eval_interval=20, log_interval=1, learning_rate=1e-3, min_lr=1e-4)


def _max_rel(a, b) -> float:
    a, b = torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)
    assert a.shape == b.shape
    return float(((a - b).abs() / a.abs().clamp_min(1e-12)).max())


def _compare(runs: list[dict], tolerance: float, profile=PROFILE) -> list[dict]:
    fused = train_group([Run(profile, **spec) for spec in runs], progress=False)
    assert len(fused) == len(runs)
    for spec, rec in zip(runs, fused):
        single = train(Run(profile, **spec), progress=False)
        assert rec["key"] == single["key"]
        assert set(rec) == set(single) and set(rec["diagnostics"]) == set(single["diagnostics"])
        assert rec["curves"]["train"]["step"] == single["curves"]["train"]["step"]
        assert len(rec["curves"]["train"]["step"]) >= 50
        for split in ("train", "val"):
            err = _max_rel(single["curves"][split]["loss"], rec["curves"][split]["loss"])
            assert err <= tolerance, f"{spec} {split} loss differs by {err:.2e} relative"
        ests = [[r["diagnostics"]["val_estimates"]["fixed"], *r["diagnostics"]["val_estimates"]["random"]]
                for r in (single, rec)]
        assert len(ests[0]) == 1 + profile.eval_noise_repeats
        err = _max_rel(*ests)
        assert err <= tolerance, f"{spec} final evaluation-noise estimates differ by {err:.2e} relative"
        err = _max_rel(single["curves"]["train"]["grad_norm_layers"], rec["curves"]["train"]["grad_norm_layers"])
        assert err <= 1000 * tolerance, f"{spec} per-layer gradient norms differ by {err:.2e}"
        assert rec["provenance"]["fused_models"] == len(runs)
    return fused


def test_fused_variant_mix_matches_single_runs_fp32():
    # four variants, two seeds, one group: each model keeps its own init, data order,
    # clipping and AdamW state
    runs = [{"variant": "full", "seed": 1}, {"variant": "attn_only", "seed": 2},
            {"variant": "ffn_only", "seed": 1}, {"variant": "no_residual", "seed": 2}]
    fused = _compare(runs, 1e-5)
    # the models really are different: distinct curves
    finals = [r["final_val_loss"] for r in fused]
    assert len(set(finals)) == len(finals)


@pytest.fixture
def float64():
    saved = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(saved)


def test_fused_training_is_the_same_algorithm_fp64(float64):
    # in double precision rounding cannot hide a difference in what is computed: gains,
    # random evaluation batches and replicates included
    runs = [{"variant": "full", "seed": 3, "gain": 2.0}, {"variant": "ffn_only", "seed": 3, "eval_mode": "random"},
            {"variant": "attn_only", "seed": 4, "gain": 0.5, "replicate": 1}]
    _compare(runs, 1e-9)


def test_mixer_runs_fuse_among_themselves(float64):
    _compare([{"variant": "mixer", "seed": 1}, {"variant": "mixer", "seed": 2}], 1e-9)


def test_fuse_groups_split_by_shape_and_size():
    specs = [Run("smoke", v, s) for s in (1, 2, 3) for v in ("full", "mixer", "ffn_only")]
    specs.append(Run("smoke", "attn_only", 1, deterministic=False))
    groups = fuse_groups(specs, 4)
    assert sorted(len(g) for g in groups) == [1, 2, 3, 4]
    for group in groups:
        assert len({(s.variant == "mixer", s.deterministic) for s in group}) == 1
    assert sum(len(g) for g in groups) == len(specs)
    assert [g for g in fuse_groups(specs, 1)] == [[s] for s in specs]  # fuse 1: the queue's order, unchanged
    assert [g[0] for g in groups] == sorted((g[0] for g in groups), key=specs.index)
    with pytest.raises(RunError, match="--fuse 1"):
        fuse_groups(specs, 0)


def test_a_group_mixing_attention_and_mixer_is_refused():
    with pytest.raises(RunError, match="fuse_groups"):
        train_group([Run(PROFILE, "full", 1), Run(PROFILE, "mixer", 1)])


def test_obtain_fuses_the_missing_runs_and_reuses_the_others(tmp_path):
    profile = get_profile("smoke", max_iters=20, eval_interval=10)
    first = obtain([Run(profile, "full", 1), Run(profile, "ffn_only", 1)], tmp_path, fuse=2, progress=False)
    assert [trained for _, trained in first] == [True, True]
    assert read_record(first[0][0])["provenance"]["fused_models"] == 2
    again = obtain([Run(profile, "ffn_only", 1), Run(profile, "attn_only", 1)], tmp_path, fuse=2, progress=False)
    assert again[0] == (first[1][0], False) and again[1][1] is True
    # the one run left to train is trained alone, by the single trainer: bitwise what train gives
    alone = read_record(again[1][0])
    assert "fused_models" not in alone["provenance"]
    assert alone["curves"] == train(Run(profile, "attn_only", 1), progress=False)["curves"]


def test_sweep_with_fuse_trains_groups_and_resumes(tmp_path):
    notebook = str(Path(__file__).resolve().parents[1] / "notebooks" / "06_central.py")
    report = sweep([notebook], profile="smoke", seeds=[5, 6], results_dir=tmp_path, run_notebooks=False,
                   progress=False, fuse=4)
    # the four variants at two seeds, and the same at the dropout twin (chapter 6 plans both)
    assert report.ok and len(report.trained) == 16 and report.cached == 0
    records = [read_record(p) for p in report.trained]
    assert sorted(r["provenance"]["fused_models"] for r in records) == [4] * 16
    assert {(r["profile"], r["variant"], r["seed"]) for r in records} == {
        (p, v, s) for p in ("smoke", "smoke-dropout") for v in ("full", "attn_only", "ffn_only", "no_residual")
        for s in (5, 6)}
    # a sweep stopped in the middle of its groups: one run of each group never got its record
    lost = [p for p in report.trained if "/full_seed" in p]
    kept = {p: Path(p).read_bytes() for p in report.trained if p not in lost}
    for path in lost:
        Path(path).unlink()
    again = sweep([notebook], profile="smoke", seeds=[5, 6], results_dir=tmp_path, run_notebooks=False,
                  progress=False, fuse=4)
    assert sorted(again.trained) == sorted(lost) and again.cached == 12
    assert [read_record(p)["provenance"]["fused_models"] for p in again.trained] == [2] * 4  # fused in pairs
    assert all(Path(p).read_bytes() == data for p, data in kept.items())  # the others untouched


def test_bench_prints_and_writes_every_figure(tmp_path):
    out = tmp_path / "bench.json"
    cmd = [sys.executable, "-m", "residual_lib", "bench", "--profile", "smoke", "--fuse", "2", "--steps", "2",
           "--warmup", "1", "--repeats", "1", "--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    for word in ("single", "fused", "sweep", "nodiag", "matmul"):
        assert word in proc.stdout
    result = json.loads(out.read_text())
    for key in ("single_tokens_per_s", "fused_tokens_per_s", "sweep_tokens_per_s", "nodiag_tokens_per_s",
                "matmul_gflops", "mfu"):
        assert result[key] > 0, key
    assert result["sweep_layout"]["jobs"] >= 1
    # the figures agree with each other and with what was printed
    for name in ("single", "fused", "sweep", "nodiag"):
        mfu = result[f"{name}_tokens_per_s"] * result["flops_per_token"] / (result["matmul_gflops"] * 1e9)
        assert result[f"mfu_{name}"] == pytest.approx(mfu, rel=1e-9)
        assert f"{result[f'{name}_tokens_per_s']:,.0f} tokens/s" in proc.stdout, name
    assert result["sweep_speedup"] == pytest.approx(result["sweep_tokens_per_s"] / result["single_tokens_per_s"])
    assert result["fuse"] == 2 and result["steps"] == 2


def test_bench_rejects_bad_input_in_one_line():
    proc = subprocess.run([sys.executable, "-m", "residual_lib", "bench", "--profile", "nope"], capture_output=True,
                          text=True)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "unknown profile" in proc.stderr


def test_clipping_and_weight_decay_stay_per_model():
    """A clip that bites on every step and a heavy weight decay: each model of the group is
    clipped by its own norm and decayed by its own AdamW groups, as when it trains alone."""
    profile = get_profile("smoke", max_iters=60, eval_interval=20, log_interval=1, learning_rate=1e-3, min_lr=1e-4,
                          grad_clip=0.05, weight_decay=0.5)
    runs = [{"variant": "full", "seed": 1}, {"variant": "ffn_only", "seed": 2}]
    fused_runs = _compare(runs, 1e-5, profile)
    norms = [r["curves"]["train"]["grad_norm"] for r in fused_runs]
    assert all(n > 0.05 for curve in norms for n in curve)  # the clip was active at every step
    assert norms[0] != norms[1]  # and each model's norm is its own


def test_dropout_gives_each_model_of_a_group_its_own_masks_with_the_same_statistics():
    """Two copies of one model in a group, dropout 0.2: on the same batch their training losses
    differ draw by draw (masks of their own), and over many draws each averages what the
    model alone averages."""
    from torch.func import stack_module_state

    from residual_lib.run.model import GPTConfig, ResidualGPT
    from residual_lib.training import batched

    config = GPTConfig.for_variant("full", n_layer=2, n_head=2, n_embd=16, block_size=16, vocab_size=11, dropout=0.2)
    torch.manual_seed(0)
    model = ResidualGPT(config).use_tensor_switches(True)
    params, buffers = stack_module_state([model, model])
    model.use_tensor_switches(False).use_int32_masks(False)
    g = torch.Generator().manual_seed(1)
    x, y = torch.randint(0, 11, (4, 16), generator=g), torch.randint(0, 11, (4, 16), generator=g)
    with torch.no_grad():
        pairs = torch.stack([batched.forward(params, buffers, config, torch.stack([x, x]), torch.stack([y, y]))[1]
                             for _ in range(400)])
        alone = torch.tensor([float(model(x, y)[1]) for _ in range(400)])
        clean = float(batched.forward(params, buffers, config, torch.stack([x, x]), torch.stack([y, y]),
                                      training=False)[1][0])
    assert (pairs[:, 0] != pairs[:, 1]).all()  # never the same masks
    with torch.no_grad():
        eval_loss = float(model.eval()(x, y)[1])
    assert float(pairs.std()) > 1e-3 and abs(clean - eval_loss) < 1e-6
    stderr = float(alone.std()) / 20  # 400 draws
    for k in range(2):
        assert abs(float(pairs[:, k].mean()) - float(alone.mean())) < 4 * 2 ** 0.5 * stderr


def test_a_group_evaluates_every_model_in_one_pass_as_each_would_alone():
    from residual_lib.run.data import load_corpus

    corpus = load_corpus("shakespeare_char")
    profile = get_profile("smoke", max_iters=2)
    states = [RunState(Run(profile, variant, seed, eval_mode=mode), corpus, "cpu")
              for variant, seed, mode in (("full", 1, "fixed"), ("ffn_only", 2, "random"), ("attn_only", 3, "fixed"))]
    trainer = fused.FusedTrainer(states)
    together = trainer.evaluate()
    again = [RunState(Run(profile, variant, seed, eval_mode=mode), corpus, "cpu")  # fresh generators, same seeds
             for variant, seed, mode in (("full", 1, "fixed"), ("ffn_only", 2, "random"), ("attn_only", 3, "fixed"))]
    alone = [state.evaluate() for state in again]
    assert _max_rel(alone, together) < 1e-5


def test_a_groups_final_estimates_are_batched_not_taken_model_by_model(monkeypatch):
    runs = [Run(PROFILE, "full", 1), Run(PROFILE, "ffn_only", 2)]
    passes = []
    monkeypatch.setattr(fused.FusedTrainer, "evaluate",
                        lambda self, draws=None, _real=fused.FusedTrainer.evaluate: passes.append(1) or _real(self, draws))
    monkeypatch.setattr(RunState, "evaluate", lambda *a, **k: pytest.fail("a fused model was evaluated alone"))
    recs = train_group(runs, progress=False)
    # 4 evaluations (steps 0, 20 and 40, and 60 after the last step), then 8 random draws and the fixed batches
    assert len(passes) == 60 // 20 + 1 + 1 + PROFILE.eval_noise_repeats
    estimates = [r["diagnostics"]["val_estimates"] for r in recs]
    assert estimates[0]["fixed"] != estimates[1]["fixed"] and len(set(estimates[0]["random"])) == 8
    # the fixed estimate: the final evaluation's batches again, in a pass of their own
    assert abs(estimates[0]["fixed"] - recs[0]["final_val_loss"]) < 1e-4


def test_a_group_whose_models_all_diverged_takes_no_final_estimates(monkeypatch):
    monkeypatch.setattr(fused.FusedTrainer, "final_estimates", lambda self: pytest.fail("estimates of diverged runs"))
    recs = train_group([Run(PROFILE, "attn_only", 1, gain=1e30), Run(PROFILE, "full", 2, gain=1e30)], progress=False)
    assert [r["status"] for r in recs] == ["diverged", "diverged"] and not recs[0]["diagnostics"]


def test_batches_cut_on_the_device_are_the_hosts_bit_for_bit():
    """The CUDA path of next_batch (offsets drawn on the host, windows cut from a copy of the
    corpus on the device), run here on CPU: the same batches as get_batch, in the same order."""
    from residual_lib.run.data import load_corpus

    corpus = load_corpus("shakespeare_char")
    one, two = (RunState(Run(get_profile("smoke"), "full", 7), corpus, "cpu") for _ in range(2))
    for _ in range(3):
        (x1, y1), (x2, y2) = one.next_batch(), two.cut_batch()
        assert torch.equal(x1, x2) and torch.equal(y1, y2) and x2.dtype == torch.int64
