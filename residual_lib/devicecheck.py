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
* ``dropout_fused`` -- dropout 0.2 under ``vmap(randomness="different")``: two members of
  one group with the same seed (same initialisation, same data) but their own dropout
  masks end with different losses, both finite and below the floor;
* ``grad_accum`` -- one step of 4 micro-batches of 4 sequences gives the gradient of one
  batch of 16 (single and fused trainers), to 1e-5 relative in fp32;
* ``fused_attention`` (CUDA only) -- at ``paper-10m``'s attention shape in bf16, each fast
  attention kernel's gradient under ``vmap`` against ``math``'s, and the kernel the fused
  trainer picks (:func:`residual_lib.fused.choose_kernel`; tolerance 0.05 relative);
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

from .batches import get_batch
from .data import load_corpus
from .files import atomic_write
from .fused import FusedTrainer
from .profiles import get_profile
from .provenance import code_version
from .runs import Run
from .runtime import resolve_device
from .state import RunState
from .tables import plural
from .train import SingleTrainer, train, train_group


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
    from .fused import choose_kernel, kernel_errors
    p = get_profile("paper-10m")
    errors = kernel_errors(device, torch.autocast("cuda", dtype=torch.bfloat16), p.n_head, p.n_embd // p.n_head,
                           p.block_size)
    return {"relative_gradient_error": {k.name: e for k, e in errors.items()}, "chosen": choose_kernel(errors).name}


#: name -> (check, runs on CPU too)
CHECKS = {
    "smoke_bf16": (smoke_bf16, True),
    "fused_matches_single": (fused_matches_single, True),
    "dropout_fused": (dropout_fused, True),
    "grad_accum": (grad_accum, True),
    "fused_attention": (fused_attention, False),
    "compile": (compile_matches_eager, False),
}


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


def run_checks(device: str = "auto", names: list[str] | None = None, out=sys.stdout) -> dict:
    """Run the checks (all that apply to the device, or ``names``); returns the report."""
    device = resolve_device(device)
    names = names or [n for n, (_, on_cpu) in CHECKS.items() if on_cpu or device.startswith("cuda")]
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
