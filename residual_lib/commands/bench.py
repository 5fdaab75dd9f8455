"""Training throughput on this machine, measured there and then.

``python -m residual_lib bench --profile cpu --fuse 4 --json bench.json`` prints, in one
run, tokens per second for

* ``single``: one model trained alone with every thread, diagnostics logged at the
  profile's ``log_interval`` (what ``train`` does);
* ``nodiag``: the same without the per-layer gradient and hidden-state norms;
* ``fused``: K models trained together in one process (:mod:`residual_lib.training.fused`);
* ``sweep``: K runs trained in the sweep's default layout (processes x threads x fused
  models, :func:`residual_lib.commands.sweep.default_layout`), all processes started together;

* ``reference`` (with ``--reference PATH/model.py``): nanoGPT's ``GPT`` from that file at the
  same shape, batch, precision and threads, trained by nanoGPT's own step (its AdamW groups,
  clipping at 1.0), timed in turns with ``single`` -- the side-by-side figure the project's
  speed targets are stated against;

and the machine's own matrix-multiply throughput in fp32 and in bf16, with the fraction of
the rate of the profile's precision each training figure reaches (model FLOPs utilisation,
counting ``6 N + 12 L T C`` FLOPs per token as nanoGPT does). The report names the
precision and the CPU kernels in force. Every figure is total tokens per second over all
models trained at once, evaluation not included (at ``paper-10m`` its 200-batch evaluations
come to about a quarter of a run's time); ``--threads`` sets the threads of ``single``, ``nodiag``, ``fused``
and ``reference`` (default: every core). Evaluation is not timed: it is a small share of
a run (``eval_iters`` forward batches every ``eval_interval`` steps).
"""

from __future__ import annotations

import gc
import importlib.util
import json
import multiprocessing as mp
import os
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from queue import Empty

import torch

from ..core.files import atomic_write
from ..core.text import plural
from ..run.architecture import CENTRAL_VARIANTS
from ..run.data import load_corpus
from ..run.profiles import BOOK_PROFILE, Profile, get_profile
from ..run.runs import Run, RunError
from ..run.runtime import autocast, determinism, kernel_environment, resolve_device
from ..training.state import RunState
from ..training.step import is_log_step
from ..training.train import make_trainer
from .inputs import available_cores
from .sweep import default_layout


@contextmanager
def _threads(n: int | None):
    saved = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _states(profile: Profile, corpus, n: int, device: str, first_seed: int = 0) -> list[RunState]:
    return [RunState(Run(profile, CENTRAL_VARIANTS[i % len(CENTRAL_VARIANTS)], first_seed + i), corpus, device)
            for i in range(n)]


class _Loop:
    """The training steps of ``n_models`` models, without evaluation: one trainer of them all
    (fused), or one per model stepped one after another (as a sweep without fusion trains
    them). The trainers are :func:`residual_lib.training.train.make_trainer`'s, the ones ``train``
    drives."""
    def __init__(self, profile: Profile, corpus, n_models: int, fused: bool, device: str, diagnostics: bool = True,
                 first_seed: int = 0, compile: bool = False):
        self.profile, self.device, self.diagnostics = profile, device, diagnostics
        self.n_models = n_models
        states = _states(profile, corpus, n_models, device, first_seed)
        groups = [states] if fused else [[state] for state in states]
        self.trainers = [make_trainer(group, compile) for group in groups]
        self.done = 0

    def run(self, steps: int) -> None:
        for _ in range(steps):
            log = self.diagnostics and is_log_step(self.done, self.profile)
            for trainer in self.trainers:
                trainer.step(self.done, log)
            self.done += 1
        _sync(self.device)


def _best_rates(loops: dict[str, _Loop], steps: int, warmup: int, repeats: int) -> dict[str, float]:
    """Tokens per second of each loop over ``steps`` steps of every model, after ``warmup``
    steps: the best of ``repeats`` rounds, the loops taking turns within a round, so that a
    slow spell of a shared machine does not land on one figure only."""
    for loop in loops.values():
        loop.run(warmup)
    best = dict.fromkeys(loops, 0.0)
    for _ in range(repeats):
        for name, loop in loops.items():
            t0 = time.perf_counter()
            loop.run(steps)
            rate = loop.n_models * loop.profile.tokens_per_step * steps / (time.perf_counter() - t0)
            best[name] = max(best[name], rate)
    return best


def _sweep_worker(profile: Profile, data_dir, n_models: int, fuse: int, threads: int, steps: int, warmup: int,
                  first_seed: int, device: str, compile: bool, repeats: int, barrier, queue) -> None:
    torch.set_num_threads(threads)
    corpus = load_corpus(profile.dataset, data_dir)
    with determinism(True):
        loops, left, seed = [], n_models, first_seed
        while left > 0:
            size = min(fuse, left)
            loops.append(_Loop(profile, corpus, size, fuse > 1, device, first_seed=seed, compile=compile))
            left, seed = left - size, seed + size
        for loop in loops:
            loop.run(warmup)
        rounds = []
        for _ in range(repeats):
            barrier.wait()  # every process starts the round together
            t0 = time.monotonic()
            for loop in loops:
                loop.run(steps)
            rounds.append((t0, time.monotonic()))
        queue.put((rounds, n_models * profile.tokens_per_step * steps))


def _sweep_throughput(profile: Profile, data_dir, k: int, jobs: int, threads: int, fuse: int, steps: int, warmup: int,
                      device: str, compile: bool = False, repeats: int = 3) -> float:
    """Total tokens/s of ``k`` runs spread over ``jobs`` processes started together (best of
    ``repeats`` rounds)."""
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(jobs), ctx.Queue()
    shares = [k // jobs + (1 if i < k % jobs else 0) for i in range(jobs)]
    procs, seed = [], 0
    for share in shares:
        procs.append(ctx.Process(target=_sweep_worker, args=(profile, data_dir, share, fuse, threads, steps, warmup,
                                                             seed, device, compile, repeats, barrier,
                                                             queue)))
        seed += share
    for p in procs:
        p.start()
    results = []
    while len(results) < len(procs):  # a process that dies before its figures would leave get() waiting
        try:
            results.append(queue.get(timeout=5))
        except Empty:
            if any(p.exitcode for p in procs):
                for p in procs:
                    p.terminate()
                raise RuntimeError("a benchmark process failed before its figures") from None
    for p in procs:
        p.join()
        if p.exitcode:
            raise RuntimeError(f"a benchmark process failed (exit {p.exitcode})")
    tokens = sum(r[1] for r in results)
    rates = []
    for i in range(repeats):
        start, end = min(r[0][i][0] for r in results), max(r[0][i][1] for r in results)
        rates.append(tokens / (end - start))
    return max(rates)


class _ReferenceLoop:
    """nanoGPT's ``GPT`` (``model.py`` at ``path``) at ``profile``'s shape, trained as nanoGPT's
    ``train.py`` trains it: its ``configure_optimizers``, autocast in the profile's precision,
    clipping at ``grad_clip``. Batches are random tokens (speed does not depend on them)."""

    def __init__(self, path: str | os.PathLike, profile: Profile, vocab_size: int, device: str):
        module_spec = importlib.util.spec_from_file_location("reference_model", Path(path))
        if module_spec is None or not Path(path).is_file():
            raise RunError(f"{path} is not a Python file: pass nanoGPT's model.py, e.g. --reference nanoGPT/model.py")
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        missing = [name for name in ("GPT", "GPTConfig") if not hasattr(module, name)]
        if missing or not hasattr(getattr(module, "GPT", None), "configure_optimizers"):
            raise RunError(f"{path} has no {', '.join(missing) or 'GPT.configure_optimizers'}: pass nanoGPT's model.py")
        torch.manual_seed(0)
        config = module.GPTConfig(block_size=profile.block_size, vocab_size=vocab_size, n_layer=profile.n_layer,
                                  n_head=profile.n_head, n_embd=profile.n_embd, dropout=profile.dropout,
                                  bias=profile.bias)
        self.model = module.GPT(config).to(device)
        self.optimizer = self.model.configure_optimizers(profile.weight_decay, profile.learning_rate,
                                                         (profile.beta1, profile.beta2), torch.device(device).type)
        self.profile, self.device, self.n_models = profile, device, 1
        self.autocast = autocast(device, profile.precision)
        self.batch = torch.randint(vocab_size, (2, profile.batch_size, profile.block_size), device=device)

    def run(self, steps: int) -> None:
        for _ in range(steps):
            for _ in range(self.profile.grad_accum):
                with self.autocast:
                    _, loss = self.model(self.batch[0], self.batch[1])
                (loss / self.profile.grad_accum).backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.profile.grad_clip)
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        _sync(self.device)


def matmul_gflops(device: str, seconds: float = 1.0, dtype: torch.dtype | None = None) -> float:
    """This machine's dense matrix-multiply rate in ``dtype`` (default: fp32 on CPU, bf16 on
    CUDA), on the threads in force."""
    if device.startswith("cuda"):
        n, dtype = 8192, dtype or torch.bfloat16
    else:
        n, dtype = 1024, dtype or torch.float32
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    _sync(device)
    reps, t0 = 0, time.perf_counter()
    while True:
        a @ b
        reps += 1
        if reps % 4 == 0:
            _sync(device)
            if time.perf_counter() - t0 >= seconds:
                break
    return 2 * n**3 * reps / (time.perf_counter() - t0) / 1e9


def flops_per_token(profile: Profile, n_params: int) -> float:
    """nanoGPT's estimate: 6 N for the weights, 12 L T C for attention (forward + backward)."""
    return 6 * n_params + 12 * profile.n_layer * profile.block_size * profile.n_embd


def bench(
    profile: str | Profile = BOOK_PROFILE,
    fuse: int = 4,
    steps: int | None = None,
    warmup: int = 3,
    device: str = "auto",
    data_dir=None,
    layout: tuple[int, int, int] | None = None,
    compile: bool = False,
    repeats: int = 3,
    threads: int | None = None,
    reference: str | os.PathLike | None = None,
    fuse_sizes: tuple[int, ...] = (),
    progress: Callable[[dict], None] | None = None,
) -> dict:
    """Measure the figures described in the module docstring; returns them as a dict.
    ``fuse_sizes``: also the fused rate of groups of each of these sizes (``fused_sizes``:
    size -> tokens/s over the group), which a lease's plan chooses its group size from
    (:func:`residual_lib.commands.devicecheck.plan_groups`); a group size that fails (a GPU's
    memory runs out) is kept as None, its error in ``fused_size_errors``. ``progress``: called
    with the figures so far (``partial``: True) once the single and fused rates are in and after
    each group size, so that a benchmark stopped early still leaves the rates a plan needs."""
    profile = get_profile(profile)
    device = resolve_device(device)
    corpus = load_corpus(profile.dataset, data_dir)
    if steps is None:
        steps = 30 if device.startswith("cuda") or profile.n_embd <= 128 else 5
    cores = available_cores()  # the ones this process may run on, as --threads is checked against
    threads = threads or cores
    out = {"profile": profile.name, "device": device, "fuse": fuse, "steps": steps, "repeats": repeats,
           "compile": compile, "cores": cores, "threads": threads, "torch_version": torch.__version__,
           "precision": profile.precision, "cpu_dropout": profile.cpu_dropout,
           "cpu_micro_batch": profile.cpu_micro_batch, **({} if device.startswith("cuda") else kernel_environment())}
    with determinism(True), _threads(None if device.startswith("cuda") else threads):
        reference_loop = None if reference is None else _ReferenceLoop(reference, profile, corpus.vocab_size, device)
        loops = {
            "single": _Loop(profile, corpus, 1, False, device, compile=compile),
            "nodiag": _Loop(profile, corpus, 1, False, device, diagnostics=False, compile=compile),
            "fused": _Loop(profile, corpus, fuse, True, device, compile=compile),
        }
        if reference_loop is not None:
            loops["reference"] = reference_loop
            out["reference"] = str(reference)
        n_params = loops["single"].trainers[0].states[0].model.num_params()
        for name, rate in _best_rates(loops, steps, warmup, repeats).items():
            out[f"{name}_tokens_per_s"] = rate
        del loops
        if progress is not None:
            progress({**out, "partial": True})
        if fuse_sizes:
            out["fused_sizes"] = {}
            for size in fuse_sizes:  # one group at a time: a group of 32 paper-10m models fills a GPU's memory
                try:
                    rates = _best_rates({"group": _Loop(profile, corpus, size, True, device, compile=compile)}, steps,
                                        warmup, repeats)
                    out["fused_sizes"][str(size)] = rates["group"]
                except RuntimeError as exc:  # torch.OutOfMemoryError is one: the larger groups are not tried
                    out["fused_sizes"][str(size)] = None
                    out.setdefault("fused_size_errors", {})[str(size)] = f"{type(exc).__name__}: {str(exc)[:300]}"
                if progress is not None:
                    progress({**out, "fused_sizes": dict(out["fused_sizes"]), "partial": True})
                if out["fused_sizes"][str(size)] is None:
                    break
            # the failed group's tensors, which its traceback held until now, go back to the device
            gc.collect()
            if device.startswith("cuda"):
                torch.cuda.empty_cache()
        out["matmul_gflops_fp32"] = matmul_gflops(device, dtype=torch.float32)
        out["matmul_gflops_bf16"] = matmul_gflops(device, dtype=torch.bfloat16)
        out["matmul_gflops"] = out[f"matmul_gflops_{profile.precision}"]  # the rate the profile's precision can reach
    jobs, threads_per_job, layout_fuse = layout or default_layout(fuse, device)
    out["sweep_layout"] = {"jobs": jobs, "threads": threads_per_job, "fuse": layout_fuse}
    out["sweep_tokens_per_s"] = _sweep_throughput(profile, data_dir, fuse, jobs, threads_per_job, layout_fuse, steps, warmup,
                                                  device, compile, repeats)
    per_token = flops_per_token(profile, n_params)
    out["flops_per_token"] = per_token
    for name in ("single", "nodiag", "fused", "sweep"):
        # the sweep runs on jobs x threads threads, the other figures on `threads`: scale the measured rate
        used = jobs * threads_per_job if name == "sweep" and not device.startswith("cuda") else out["threads"]
        rate = out["matmul_gflops"] * used / out["threads"]
        out[f"mfu_{name}"] = out[f"{name}_tokens_per_s"] * per_token / (rate * 1e9)
    if fuse_sizes:
        out["mfu_fused_sizes"] = {k: None if v is None else v * per_token / (out["matmul_gflops"] * 1e9)
                                  for k, v in out["fused_sizes"].items()}
    out["mfu"] = max(out[f"mfu_{name}"] for name in ("single", "fused", "sweep"))
    out["sweep_speedup"] = out["sweep_tokens_per_s"] / out["single_tokens_per_s"]
    out["fused_speedup"] = out["fused_tokens_per_s"] / out["single_tokens_per_s"]
    out["diagnostics_overhead"] = 1.0 - out["single_tokens_per_s"] / out["nodiag_tokens_per_s"]
    if reference is not None:
        out["mfu_reference"] = out["reference_tokens_per_s"] * per_token / (out["matmul_gflops"] * 1e9)
        out["single_vs_reference"] = out["single_tokens_per_s"] / out["reference_tokens_per_s"]
    return out


def report(result: dict) -> str:
    lay = result["sweep_layout"]
    precision = result.get("precision", "bf16" if result["device"].startswith("cuda") else "fp32")
    threads = result.get("threads", result["cores"])
    kernels = (f", {result['cpu_capability']} kernels ({result['isa_mode']}"
               f"{', AMX' if result.get('amx') and precision == 'bf16' else ''})" if "cpu_capability" in result else "")
    lines = [
        f"profile {result['profile']} on {result['device']} ({result['cores']} cores), {precision}{kernels}, best of"
        f" {result['repeats']} x {result['steps']} timed steps"
        + (", torch.compile" if result.get("compile") else ""),
        f"  single  {result['single_tokens_per_s']:>12,.0f} tokens/s   one model, {threads}"
        f" {plural('thread', threads)} (MFU {result['mfu_single']:.1%})",
        f"  fused   {result['fused_tokens_per_s']:>12,.0f} tokens/s   {result['fuse']} models in one process"
        f" ({result['fused_speedup']:.2f}x single, MFU {result['mfu_fused']:.1%})",
        f"  sweep   {result['sweep_tokens_per_s']:>12,.0f} tokens/s   {result['fuse']} runs: {lay['jobs']} process(es)"
        f" x {lay['threads']} {plural('thread', lay['threads'])}, fused {lay['fuse']} ({result['sweep_speedup']:.2f}x single,"
        f" MFU {result['mfu_sweep']:.1%})",
        f"  nodiag  {result['nodiag_tokens_per_s']:>12,.0f} tokens/s   single without diagnostics"
        f" (diagnostics cost {result['diagnostics_overhead']:.1%})",
    ]
    for size, rate in (result.get("fused_sizes") or {}).items():
        lines.append(f"  fused{size:<3}{'failed':>12}            {result['fused_size_errors'][size]}" if rate is None else
                     f"  fused{size:<3}{rate:>12,.0f} tokens/s   {size} models in one group"
                     f" (MFU {result['mfu_fused_sizes'][size]:.1%})")
    if "reference_tokens_per_s" in result:
        lines.append(f"  ref     {result['reference_tokens_per_s']:>12,.0f} tokens/s   nanoGPT's model.py, same shape,"
                     f" precision and threads (single is {result['single_vs_reference']:.2f}x it,"
                     f" MFU {result['mfu_reference']:.1%})")
    for dtype in ("fp32", "bf16"):
        rate = result.get(f"matmul_gflops_{dtype}", result["matmul_gflops"] if dtype == precision else None)
        if rate is not None:
            lines.append(f"  matmul  {rate:>12,.1f} GFLOP/s  {dtype} dense matmul on {threads}"
                         f" {plural('thread', threads)}" + (" (the MFU denominator)" if dtype == precision else ""))
    lines.append(f"          {result['flops_per_token']:,.0f} FLOPs per token")
    return "\n".join(lines)


def write_json(result: dict, path: str | os.PathLike) -> None:
    atomic_write(Path(path), (json.dumps(result, indent=1, sort_keys=True) + "\n").encode())
