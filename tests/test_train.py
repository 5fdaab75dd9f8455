"""The trainer: schedule, optimiser groups, determinism, logging, records."""

from __future__ import annotations

import json

import pytest
import torch

from residual_lib import get_profile, load_curves, load_records
from residual_lib.run.model import GPTConfig, ResidualGPT
from residual_lib.run.runs import Run, RunError
from residual_lib.storage.records import read_record
from residual_lib.training.step import adamw, lr_at
from residual_lib.training.store import obtain
from residual_lib.training.train import train

# A 40-step smoke run: enough to move the loss, fast enough to run a few times.
SHORT = get_profile("smoke", max_iters=40, eval_interval=20, log_interval=5)


@pytest.fixture(scope="module")
def smoke_runs():
    """Two runs of seed 3 and one of seed 4, trained once for the module."""
    return {
        "a": train(Run(SHORT, "attn_only", 3), progress=False),
        "b": train(Run(SHORT, "attn_only", 3), progress=False),
        "other_seed": train(Run(SHORT, "attn_only", 4), progress=False),
    }


def test_learning_rate_warms_up_then_decays_to_min_lr():
    p = get_profile("cpu")
    assert lr_at(0, p) == pytest.approx(p.learning_rate / (p.warmup_iters + 1))
    assert lr_at(p.warmup_iters, p) == pytest.approx(p.learning_rate)
    assert lr_at(p.max_iters, p) == pytest.approx(p.min_lr)
    lrs = [lr_at(s, p) for s in range(p.warmup_iters, p.max_iters)]
    assert all(a >= b for a, b in zip(lrs, lrs[1:]))


def test_weight_decay_applies_to_two_dimensional_weights_only():
    model = ResidualGPT(GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16))
    decayed, plain = adamw(model.parameters(), get_profile("smoke"), "cpu").param_groups
    assert decayed["weight_decay"] > 0 and plain["weight_decay"] == 0
    assert all(p.dim() == 2 for p in decayed["params"]) and all(p.dim() == 1 for p in plain["params"])
    assert len(decayed["params"]) + len(plain["params"]) == len(list(model.parameters()))


def test_same_seed_gives_bitwise_identical_curves(smoke_runs):
    a, b = smoke_runs["a"]["curves"], smoke_runs["b"]["curves"]
    assert a == b  # exact float equality of every logged value
    assert smoke_runs["a"]["key"] == smoke_runs["b"]["key"]


def test_two_seeds_differ(smoke_runs):
    a, other = smoke_runs["a"], smoke_runs["other_seed"]
    assert a["curves"]["train"]["loss"] != other["curves"]["train"]["loss"]
    assert a["key"] != other["key"]
    # same fixed validation batches, different models: the first evaluation (untrained) differs too
    assert a["curves"]["val"]["loss"][0] != other["curves"]["val"]["loss"][0]


def test_record_logs_layer0_and_per_layer_diagnostics(smoke_runs):
    rec = smoke_runs["a"]
    train_curve, val_curve = rec["curves"]["train"], rec["curves"]["val"]
    assert train_curve["step"] == [0, 5, 10, 15, 20, 25, 30, 35, 39]
    assert val_curve["step"] == [0, 20, 40]
    assert rec["final_val_loss"] == val_curve["loss"][-1] and rec["best_val_loss"] == min(val_curve["loss"])
    layers = train_curve["grad_norm_layers"]
    assert all(len(row) == SHORT.n_layer for row in layers)
    assert train_curve["grad_norm_layer0"] == [row[0] for row in layers]
    assert all(len(row) == SHORT.n_layer + 1 for row in train_curve["hidden_norms"])
    # layer norms are parts of the global norm
    assert all(sum(x * x for x in row) <= g * g * (1 + 1e-5) for row, g in zip(layers, train_curve["grad_norm"]))
    diag = rec["diagnostics"]
    assert len(diag["alpha_tt"]) == SHORT.n_layer and len(diag["alpha_tt"][0]) == SHORT.n_head
    assert 0 < diag["alpha_tt_mean"] <= 1 and diag["hidden_norm_growth"] > 0 and diag["representation_drift"] > 0
    estimates = diag["val_estimates"]
    assert estimates["fixed"] == rec["final_val_loss"]  # fixed mode: the same batches, the same model
    assert len(estimates["random"]) == SHORT.eval_noise_repeats and len(set(estimates["random"])) > 1
    assert rec["provenance"]["deterministic_algorithms"] is True
    assert set(rec) >= {"key", "variant", "seed", "profile", "eval_mode", "gain", "config", "final_val_loss",
                        "best_val_loss", "curves", "diagnostics", "wall_seconds", "tokens_per_second", "provenance"}


def test_data_order_depends_on_the_seed_alone(monkeypatch):
    import residual_lib.training.state as state_module

    seen: dict[str, list] = {}
    real = state_module.get_batch

    def spy(*args):
        x, y = real(*args)
        seen.setdefault(current, []).append(x)
        return x, y

    monkeypatch.setattr(state_module, "get_batch", spy)
    short = SHORT.override(max_iters=10, eval_interval=10)
    records = {}
    for current in ("full", "ffn_only"):
        records[current] = train(Run(short, current, 3), progress=False)
    assert records["full"]["key"] != records["ffn_only"]["key"]
    assert records["full"]["curves"]["train"]["loss"] != records["ffn_only"]["curves"]["train"]["loss"]
    assert len(seen["full"]) == 10 and all(torch.equal(a, b) for a, b in zip(seen["full"], seen["ffn_only"]))


def test_full_smoke_run_ends_below_the_unigram_floor():
    rec = train(Run("smoke", "full", 1), progress=False)
    assert rec["final_val_loss"] < rec["unigram_floor"] - 0.3
    assert not torch.are_deterministic_algorithms_enabled()  # the run restored global state


def test_run_reuses_records_and_writes_atomically(tmp_path):
    profile = SHORT.override(max_iters=10, eval_interval=10)
    path, trained = obtain([Run(profile, "no_residual", 7)], tmp_path, progress=False)[0]
    assert trained and path.parent == tmp_path / "smoke" and path.name.startswith("no_residual_seed7_")
    before = path.read_bytes()
    again, trained_again = obtain([Run(profile, "no_residual", 7)], tmp_path, progress=False)[0]
    assert again == path and not trained_again and path.read_bytes() == before
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == [path.name]  # no temporary files left
    # a different gain or eval mode is a different run
    other, trained_other = obtain([Run(profile, "no_residual", 7, gain=2.0)], tmp_path, progress=False)[0]
    assert trained_other and other != path
    frame = load_records(tmp_path)
    assert sorted(frame["gain"]) == [1.0, 2.0]
    assert len(frame) == 2 and {"final_val_loss", "diag_hidden_norm_growth", "path"} <= set(frame.columns)
    curves = load_curves(tmp_path)
    assert set(curves["key"]) == set(frame["key"]) and {"step", "loss", "grad_norm_layer0"} <= set(curves.columns)
    assert json.loads(path.read_text())["key"] == read_record(path)["key"]


def test_init_noise_is_a_new_run_that_differs_and_reproduces(tmp_path):
    from residual_lib.run.runs import run_identity, run_key

    p = SHORT
    plain = run_identity(p, "ffn_only", 3, "fixed", 1.0, True, 0)
    assert run_key(run_identity(p, "ffn_only", 3, "fixed", 1.0, True, 0, init_noise=0.0)) == run_key(plain)
    nudged_key = run_key(run_identity(p, "ffn_only", 3, "fixed", 1.0, True, 0, init_noise=1e-6))
    assert nudged_key != run_key(plain)
    a = train(Run(p, "ffn_only", 3, init_noise=1e-6), progress=False)
    b = train(Run(p, "ffn_only", 3, init_noise=1e-6), progress=False)
    base = train(Run(p, "ffn_only", 3), progress=False)
    assert a["key"] == nudged_key and a["init_noise"] == 1e-6 and base["init_noise"] == 0.0
    assert a["curves"]["train"]["loss"] == b["curves"]["train"]["loss"]  # deterministic
    assert a["curves"]["train"]["loss"] != base["curves"]["train"]["loss"]  # but not the unperturbed run
    assert a["curves"]["train"]["loss"][0] == pytest.approx(base["curves"]["train"]["loss"][0], rel=1e-4)
    with pytest.raises(RunError, match="--init-noise"):
        Run(p, "ffn_only", 3, init_noise=-1.0)


def test_the_logged_block0_gradient_is_the_norm_over_transformer_h0_alone():
    """Checked against an independent sum over the first block's own parameters, at a logged
    step of the trainer (clipping off, so the gradient the optimiser sees is the logged one)."""
    from residual_lib.run.data import load_corpus
    from residual_lib.training.state import RunState
    from residual_lib.training.train import SingleTrainer

    profile = get_profile("smoke", grad_clip=0.0)
    state = RunState(Run(profile, "attn_only", 3), load_corpus("shakespeare_char"), "cpu")
    seen = {}

    class Probe:  # stands in for the optimiser: keeps the gradients of the step
        param_groups = [{}]

        def step(self):
            block0 = [p.grad for p in state.model.transformer.h[0].parameters()]
            embedding = state.model.transformer.wte.weight.grad
            seen["block0"] = float(torch.sqrt(sum((g.double() ** 2).sum() for g in block0)))
            seen["embedding"] = float(embedding.double().norm())

        def zero_grad(self, set_to_none=True):
            state.model.zero_grad(set_to_none=True)

    trainer = SingleTrainer(state)
    trainer.optimizer = Probe()
    trainer.step(0, log=True)
    logged = state.train_curve["grad_norm_layer0"][0]
    assert seen["block0"] > 1e-3 and logged == pytest.approx(seen["block0"], rel=1e-5)
    assert state.train_curve["grad_norm_embedding"][0] != pytest.approx(logged, rel=1e-3)  # not the embeddings


def test_block0_gradient_is_logged_by_sub_module_and_the_parts_make_the_whole(smoke_runs):
    curve = smoke_runs["a"]["curves"]["train"]
    whole = torch.tensor(curve["grad_norm_layer0"])
    parts = torch.tensor([curve[f"grad_norm_layer0_{p}"] for p in ("attn", "mlp", "ln")])
    assert torch.allclose(parts.square().sum(0).sqrt(), whole, rtol=1e-4)
    assert (parts[0] > 0).all() and (parts[1] > 0).all()


def test_records_carry_the_floor_of_their_evaluation_batches(smoke_runs):
    from residual_lib.run.data import eval_floor, load_corpus

    rec = smoke_runs["a"]
    corpus = load_corpus("shakespeare_char")
    assert rec["eval_floor"] == pytest.approx(eval_floor(corpus, SHORT.block_size, SHORT.batch_size,
                                                         SHORT.eval_iters, "fixed"))
    assert rec["eval_floor"] != rec["unigram_floor"]


def test_every_committed_record_keeps_its_key_and_reads_back_its_floor():
    from pathlib import Path

    from residual_lib.study.frames import record_eval_floor

    files = sorted((Path(__file__).resolve().parents[1] / "results").glob("*/*.json"))
    assert files, "no committed records"
    for path in files:
        rec = read_record(path)
        assert Run.from_record(rec).key == rec["key"], path.name  # the Run a record was made by keys it
        named = Run(rec["profile"], rec["variant"], rec["seed"], rec["eval_mode"], rec["gain"], rec["deterministic"],
                    rec["replicate"], rec.get("init_noise", 0.0))
        assert named.key == rec["key"], path.name  # and so does the same run asked for by profile name
        assert 3.3 < record_eval_floor(rec) < 3.4, path.name


def test_a_named_commit_stands_for_a_checkout_whose_history_lags_behind(monkeypatch):
    from residual_lib.storage import provenance

    head = provenance._git("rev-parse", "HEAD")
    if head is None:
        pytest.skip("not a git checkout")
    try:
        monkeypatch.setenv(provenance.COMMIT_ENV, head)
        provenance.code_version.cache_clear()
        sha, dirty = provenance.code_version()
        assert sha == head and dirty == bool(provenance._git("diff", "--name-only", "HEAD"))
        # a commit this history does not hold: named, but whether the files match it is unknown
        monkeypatch.setenv(provenance.COMMIT_ENV, "0" * 40)
        provenance.code_version.cache_clear()
        assert provenance.code_version() == ("0" * 40, None)
        # not a commit at all: refused in one line that names the fix
        for bad in ("main", "not a sha", "abc123"):
            monkeypatch.setenv(provenance.COMMIT_ENV, bad)
            provenance.code_version.cache_clear()
            with pytest.raises(provenance.CommitError, match="git rev-parse HEAD"):
                provenance.code_version()
    finally:
        monkeypatch.delenv(provenance.COMMIT_ENV)
        provenance.code_version.cache_clear()
