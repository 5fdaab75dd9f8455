"""Checks of the code paths an accelerator takes, runnable without pytest.

``python -m residual_lib device-check --device cuda --json checks.json`` runs each check
of :data:`CHECKS` on one device and reports a line per check with the numbers it measured;
the exit status is 1 if any failed. The GPU machine this project is lent has torch but no
pytest, so ``scripts/device_check.sh`` calls this; ``tests/test_device.py`` runs the same
functions under pytest (the CUDA-only ones only where CUDA exists).

Each check returns a dict of what it measured and raises :class:`CheckFailed` (with the
numbers) when a tolerance is not met. Tolerances are stated where they are used:

* ``smoke_bf16`` -- a smoke run (``full``, 150 steps) in bf16 autocast (the paper profiles'
  precision) ends at least 0.3 nats below the unigram floor of its batches;
* ``fused_matches_single`` -- two models fused and the same two trained one by one, in
  fp32: loss curves agree to 1e-4 relative on CUDA (TF32 off; kernels differ between the
  batched and the single matrix multiplies), 1e-5 on CPU;
* ``dropout_fused`` -- dropout 0.2 in a fused group: two members with the same seed (same
  initialisation, same data) but their own dropout masks end with different losses, both
  finite and below the floor;
* ``grad_accum`` -- one step of 4 micro-batches of 4 sequences gives the gradient of one
  batch of 16 (single and fused trainers), to 1e-5 relative in fp32;
* ``fused_attention`` (CUDA only) -- at ``paper-10m``'s attention shape in bf16, with the
  model axis folded into the batch as a fused group computes it (:mod:`residual_lib.training.batched`),
  each fast attention kernel's gradient against ``math``'s: the flash kernel, which SDPA
  takes first, must agree to 0.05 relative (bf16 rounding gives a few 10^-3);
* ``compile`` (CUDA only) -- 40 smoke steps through ``torch.compile`` match eager training
  to 1e-2 relative in the loss (fused kernels sum in another order, in bf16).
"""

from __future__ import annotations

import contextlib
import json
import math
import platform
import sys
import time
from pathlib import Path

import torch

from ..core.files import atomic_write
from ..core.text import plural
from ..run.batches import get_batch
from ..run.data import load_corpus
from ..run.profiles import get_profile
from ..run.runs import Run
from ..run.runtime import resolve_device
from ..storage.provenance import code_version
from ..training.fused import FusedTrainer
from ..training.state import RunState
from ..training.train import SingleTrainer, train, train_group


class CheckFailed(AssertionError):
    """A check whose measurement is outside its tolerance; the message gives the numbers."""


def _rel(a: list[float], b: list[float]) -> float:
    a, b = torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)
    return float(((a - b).abs() / a.abs().clamp_min(1e-12)).max())


@contextlib.contextmanager
def _no_tf32():
    """TF32 matrix multiplies off for a block (fp32 comparisons on Ampere and later)."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def smoke_bf16(device: str) -> dict:
    rec = train(Run(get_profile("smoke", precision="bf16"), "full", 1337), device=device, progress=False)
    below = rec["eval_floor"] - rec["final_val_loss"]
    result = {"final_val_loss": rec["final_val_loss"], "eval_floor": rec["eval_floor"], "below_floor": below,
              "precision": rec["provenance"]["precision"], "tokens_per_second": rec["tokens_per_second"]}
    if not below >= 0.3:
        raise CheckFailed(f"smoke run ended {below:.3f} nats below the floor (needs >= 0.3): {result}")
    return result


def fused_matches_single(device: str) -> dict:
    profile = get_profile("smoke", max_iters=60, eval_interval=20, log_interval=5, learning_rate=1e-3, min_lr=1e-4)
    runs = [Run(profile, "attn_only", 1), Run(profile, "ffn_only", 2)]
    tolerance = 1e-4 if device.startswith("cuda") else 1e-5
    with _no_tf32():  # smoke trains in fp32
        fused = train_group(runs, device=device, progress=False)
        single = [train(r, device=device, progress=False) for r in runs]
    errors = [max(_rel(s["curves"][split]["loss"], f["curves"][split]["loss"]) for split in ("train", "val"))
              for s, f in zip(single, fused)]
    result = {"max_relative_loss_difference": max(errors), "tolerance": tolerance}
    if not max(errors) <= tolerance:
        raise CheckFailed(f"fused and single training differ by {max(errors):.2e} relative (> {tolerance:g})")
    return result


def dropout_fused(device: str) -> dict:
    profile = get_profile("smoke-dropout")
    runs = [Run(profile, "full", 5), Run(profile, "full", 5, replicate=1)]
    recs = train_group(runs, device=device, progress=False)
    finals = [r["final_val_loss"] for r in recs]
    floor = recs[0]["eval_floor"]
    result = {"final_val_losses": finals, "eval_floor": floor, "dropout": profile.dropout}
    if not all(math.isfinite(x) and x < floor - 0.1 for x in finals):
        raise CheckFailed(f"dropout runs did not train below the floor: {result}")
    if finals[0] == finals[1]:
        raise CheckFailed(f"two fused members with one seed drew the same dropout masks: {result}")
    return result


class _GradientProbe:
    """Stands in for the optimiser: records the (clipped) gradients a step would apply."""
    def __init__(self, params):
        self.params, self.param_groups, self.grads = list(params), [{}], None

    def step(self):
        self.grads = [p.grad.detach().clone() for p in self.params]

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            p.grad = None


def _gradient(profile, fused: bool, device: str, batch) -> list[torch.Tensor]:
    """The gradient one step of ``profile`` takes on ``batch`` (x, y of 16 sequences),
    served as ``profile.grad_accum`` micro-batches."""
    corpus = load_corpus(profile.dataset)
    x, y = batch
    micro = x.shape[0] // profile.grad_accum
    pieces = iter([(x[i:i + micro].to(device), y[i:i + micro].to(device)) for i in range(0, x.shape[0], micro)])
    with _no_tf32():  # smoke trains in fp32
        state = RunState(Run(profile, "full", 3), corpus, device)
        state.next_batch = lambda: next(pieces)
        trainer = FusedTrainer([state]) if fused else SingleTrainer(state)
        trainer.optimizer = probe = _GradientProbe(trainer.params.values())
        trainer.step(0, log=False)
        return [g[0] for g in probe.grads] if fused else probe.grads


def grad_accum(device: str) -> dict:
    whole = get_profile("smoke", batch_size=16, grad_accum=1, grad_clip=0.0)
    split = get_profile("smoke", batch_size=4, grad_accum=4, grad_clip=0.0)
    gen = torch.Generator().manual_seed(11)

    batch = get_batch(load_corpus("shakespeare_char").train, whole.block_size, 16, gen)
    result = {}
    for fused in (False, True):
        a, b = _gradient(whole, fused, device, batch), _gradient(split, fused, device, batch)
        num = max(float((ga - gb).abs().max()) for ga, gb in zip(a, b))
        den = max(float(ga.abs().max()) for ga in a)
        result["fused" if fused else "single"] = num / den
    if not max(result.values()) <= 1e-5:
        raise CheckFailed(f"4 micro-batches of 4 and one batch of 16 give gradients {result} apart (> 1e-5)")
    return {"max_relative_gradient_difference": result, "tolerance": 1e-5}


def compile_matches_eager(device: str) -> dict:
    profile = get_profile("smoke", max_iters=40, eval_interval=20, log_interval=5)
    eager = train(Run(profile, "attn_only", 1), device=device, progress=False)
    compiled = train(Run(profile, "attn_only", 1), device=device, progress=False, compile=True)
    err = _rel(eager["curves"]["train"]["loss"], compiled["curves"]["train"]["loss"])
    result = {"max_relative_loss_difference": err, "tolerance": 1e-2, "compiled": compiled["provenance"]["compiled"]}
    if not err <= 1e-2:
        raise CheckFailed(f"compiled and eager training differ by {err:.2e} relative (> 1e-2)")
    return result


def fused_attention(device: str) -> dict:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    p = get_profile("paper-10m")
    g = torch.Generator(device=device).manual_seed(0)
    # 4 models x 2 sequences folded into one batch of 8, as residual_lib.training.batched folds them
    shape = (8, p.n_head, p.block_size, p.n_embd // p.n_head)
    q, k, v, w = (torch.randn(shape, device=device, generator=g) for _ in range(4))

    def grads(kernel):
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        with sdpa_kernel(kernel), torch.autocast("cuda", dtype=torch.bfloat16):
            out = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=True)
        (out.float() * w).sum().backward()
        return torch.cat([t.grad.flatten().float() for t in leaves])

    reference = grads(SDPBackend.MATH)
    errors = {}
    for kernel in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION):
        try:
            errors[kernel.name] = float((grads(kernel) - reference).norm() / reference.norm())
        except RuntimeError:
            errors[kernel.name] = None
    flash = errors["FLASH_ATTENTION"]
    if flash is None or flash > 0.05:
        raise CheckFailed(f"the flash kernel's gradient on the folded batch is {flash} from math's (> 0.05)")
    return {"relative_gradient_error": errors, "tolerance": 0.05}


#: name -> (check, runs on CPU too)
CHECKS = {
    "smoke_bf16": (smoke_bf16, True),
    "fused_matches_single": (fused_matches_single, True),
    "dropout_fused": (dropout_fused, True),
    "grad_accum": (grad_accum, True),
    "fused_attention": (fused_attention, False),
    "compile": (compile_matches_eager, False),
}


#: The share of a lease's remaining time a plan fills: the rest absorbs the difference between
#: the benchmark's steady rate and a run's (start-up, evaluation, writing records).
PLAN_MARGIN = 0.8
#: The largest group a plan forms.
MAX_FUSE = 32


def run_seconds(profile, tokens_per_s: float) -> float:
    """Seconds one run of ``profile`` spends training and evaluating during training at
    ``tokens_per_s`` (a group's rate per model): its training tokens, plus its evaluations
    (``eval_iters`` batches every ``eval_interval`` steps and at the end), counted at a third
    of a training token each (a forward pass without the backward)."""
    evals = profile.max_iters // profile.eval_interval + 1
    eval_tokens = evals * profile.eval_iters * profile.batch_size * profile.block_size
    return (profile.tokens_per_step * profile.max_iters + eval_tokens / 3) / tokens_per_s


def finish_seconds(profile, tokens_per_s: float) -> float:
    """Seconds of one run's final evaluations (the fixed batches and ``eval_noise_repeats``
    random draws, after the last step; a group takes them in one batched pass per batch) at
    ``tokens_per_s`` (a group's rate per model), a forward token counted as a third of a
    training token."""
    tokens = (profile.eval_noise_repeats + 1) * profile.eval_iters * profile.batch_size * profile.block_size
    return tokens / 3 / tokens_per_s


def plan_groups(bench: dict, seconds: float, profile, per_group: int = 4) -> dict:
    """The group size that records the most runs in ``seconds``, from a benchmark's figures
    (``bench``: :func:`residual_lib.commands.bench.bench`'s, whose ``fused_sizes`` gives the group rates
    it measured; ``single_tokens_per_s`` the rate alone). Only whole groups are planned, so
    none is cut off at the deadline, within :data:`PLAN_MARGIN` of ``seconds``; a group's time
    counts its training and all its evaluations at the group's rate; groups are multiples of
    ``per_group`` (a seed's four central variants), at most :data:`MAX_FUSE`. Of sizes that record
    as many runs, the smallest wins: its first records land sooner, and a rate misjudged by the
    benchmark loses fewer runs at the deadline. Returns ``fuse``, ``runs``, ``groups`` and
    ``seconds_per_group``; ``runs`` 0 when not even one run fits. Raises ``ValueError`` for a
    report without a usable single rate, or ``seconds`` that is not a positive finite number."""
    if not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"the time left must be a positive number of seconds, not {seconds}")
    measured = bench.get("profile") if isinstance(bench, dict) else None
    if measured is not None and measured != profile.name:
        raise ValueError(f"the bench report measures {measured}, not {profile.name}: pass --profile {measured}, or "
                         f"a report of python -m residual_lib bench --profile {profile.name}")
    single = bench.get("single_tokens_per_s") if isinstance(bench, dict) else None
    if not (isinstance(single, (int, float)) and math.isfinite(single) and single > 0):
        raise ValueError("the bench report has no positive single_tokens_per_s: pass the --json file of "
                         "python -m residual_lib bench")
    rates = {1: float(single)}
    for key, rate in (bench.get("fused_sizes") or {}).items():
        size = int(key) if str(key).isdigit() else 0
        if 1 < size <= MAX_FUSE and size % per_group == 0 and isinstance(rate, (int, float)) \
                and math.isfinite(rate) and rate > 0:
            rates[size] = float(rate)
    best = {"fuse": 1, "runs": 0, "groups": 0, "seconds_per_group": None}
    for size, rate in sorted(rates.items()):  # smallest first: a larger size must record more runs
        group_seconds = run_seconds(profile, rate / size) + finish_seconds(profile, rate / size)
        groups = int(PLAN_MARGIN * seconds // group_seconds)
        if groups and groups * size > best["runs"]:
            best = {"fuse": size, "runs": groups * size, "groups": groups, "seconds_per_group": group_seconds}
    return best


def plan_from_report(path, seconds: float | None, profile) -> dict:
    """:func:`plan_groups` from a bench report's JSON file; ``ValueError`` with a one-line
    message naming the fix for a missing time, an unreadable file or an unusable report."""
    if seconds is None:
        raise ValueError("--plan needs --seconds, the time left for training (a positive number)")
    try:
        report = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read the bench report {path} ({exc.__class__.__name__}): pass the --json file of "
                         "python -m residual_lib bench") from None
    try:
        return plan_groups(report, seconds, profile)
    except ValueError as exc:
        raise ValueError(f"--plan: {exc}") from None


def environment(device: str) -> dict:
    """What the checks ran on."""
    info = {"python": platform.python_version(), "torch": torch.__version__, "device": device,
            "cuda": torch.version.cuda, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "git_sha": code_version()[0]}
    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(torch.device(device))
        info.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1),
                    bf16_supported=torch.cuda.is_bf16_supported())
    return info


def applicable(device: str, leave_out: tuple[str, ...] = ()) -> list[str]:
    """The checks that apply to ``device`` (a resolved one), but ``leave_out``: a lease's script
    leaves out ``compile``, which its sweep does not use."""
    return [n for n, (_, on_cpu) in CHECKS.items() if (on_cpu or device.startswith("cuda")) and n not in leave_out]


def run_checks(device: str = "auto", names: list[str] | None = None, out=sys.stdout) -> dict:
    """Run the checks (all that apply to the device, or ``names``); returns the report."""
    device = resolve_device(device)
    names = names or applicable(device)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise ValueError(f"unknown {plural('check', len(unknown))} {', '.join(unknown)}: choose from {', '.join(CHECKS)}")
    report = {"environment": environment(device), "checks": {}}
    for name in names:
        started = time.perf_counter()
        try:
            result, status = CHECKS[name][0](device), "ok"
        except CheckFailed as exc:
            result, status = {"error": str(exc)}, "FAILED"
        except Exception as exc:  # a crash is a failed check, reported, not a lost report
            result, status = {"error": f"{exc.__class__.__name__}: {exc}"}, "FAILED"
        seconds = time.perf_counter() - started
        report["checks"][name] = {"status": status, "seconds": round(seconds, 1), **result}
        print(f"{status:6} {name} ({seconds:.1f}s): {json.dumps(result, default=str)}", file=out, flush=True)
    report["ok"] = all(c["status"] == "ok" for c in report["checks"].values())
    return report


def write_report(report: dict, path: str | Path) -> None:
    atomic_write(Path(path), (json.dumps(report, indent=1, default=str) + "\n").encode())
