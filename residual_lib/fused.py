"""Fused training: K models of one shape trained together, step by step, in one process.

A seed sweep trains many small models of the same shape. One such model leaves a GPU
mostly idle, so :func:`train_fused` stacks the K models' parameters along a leading
model dimension (``torch.func.stack_module_state``) and runs every forward and backward
pass once for all of them (``torch.func.vmap`` over ``functional_call``): K small
matrix multiplications become one batched one.

What stays per model, exactly as in :func:`residual_lib.train.train`:

* initialisation: model ``k`` is built right after ``torch.manual_seed(seed_k)``;
* data order: each model draws its batches from its own generator seeded with its seed;
* gradient clipping: the global norm is taken over model ``k``'s gradients alone and
  only model ``k``'s gradients are scaled;
* the optimiser: AdamW is element-wise, so one AdamW over the stacked tensors keeps a
  separate state (moments, weight decay) for every model; the learning-rate schedule is
  the profile's, the same for every model of the group;
* evaluation, diagnostics and the run record: before each evaluation the stacked weights
  are copied into model ``k``'s own module, which is then evaluated by the single-run
  code, so a fused run's record has the same form and key as a single run's.

Models of different variants can share a group: the residual switches and the gain
become per-model buffers (:meth:`ResidualGPT.use_tensor_switches`). Only the ``mixer``
variant, whose token mixer has other parameters than attention, needs a group of its
own; :func:`fuse_groups` splits a list of runs accordingly.

Numerics: batched matrix multiplications may sum in another order than K separate
ones, so a fused run matches its single run to float rounding (the test suite checks
1e-5 relative over the loss curves), not bitwise. Dropout under ``vmap`` draws
different masks per model, but not the masks a single run would draw.
"""

from __future__ import annotations

import copy
import hashlib
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.func import functional_call, stack_module_state, vmap

from .data import load_corpus
from .model import VARIANTS
from .profiles import Profile, get_profile
from .records import code_version, find_record, record_path, run_key, write_record
from .train import (CHECKPOINT_EVERY, RunError, _Reporter, adamw, RunState, check_run, check_seed, checkpoint_path, cpu_threads,
                    determinism, is_log_step, load_checkpoint, lr_at, resolve_device, run_identity, save_checkpoint)


@dataclass(frozen=True)
class FusedRun:
    """One member of a fused group: what :func:`residual_lib.train.train` takes besides the profile."""

    variant: str
    seed: int
    eval_mode: str = "fixed"
    gain: float = 1.0
    deterministic: bool = True
    replicate: int = 0
    init_noise: float = 0.0


def shape_key(variant: str, deterministic: bool = True) -> tuple:
    """Runs with the same shape key (and profile) can be fused: same parameter shapes
    (attention or mixer) and the same determinism setting, which is process-wide."""
    return (VARIANTS[variant][2], bool(deterministic))


def fuse_groups(runs: list, fuse: int) -> list[list]:
    """Split ``runs`` (objects with ``profile``, ``variant`` and ``deterministic``
    attributes) into groups of at most ``fuse`` runs that can be trained together. Groups
    come in the order of their first run and keep the given order within, so a queue
    ordered seed by seed stays so."""
    if fuse < 1:
        raise RunError(f"fuse must be at least 1, got {fuse}: pass --fuse 1 to train runs one by one")
    by_shape: dict[tuple, list] = {}
    for r in runs:
        by_shape.setdefault((getattr(r, "profile", None), *shape_key(r.variant, r.deterministic)), []).append(r)
    groups = []
    for members in by_shape.values():
        groups += [members[i:i + fuse] for i in range(0, len(members), fuse)]
    # in the order of each group's first run: with fuse=1 the runs keep their order exactly
    position = {id(r): i for i, r in enumerate(runs)}
    return sorted(groups, key=lambda g: position[id(g[0])])


class FusedTrainer:
    """The stacked parameters of K :class:`RunState` models and their AdamW."""

    def __init__(self, states: list[RunState], compile: bool = False):
        self.states = states
        self.profile: Profile = states[0].profile
        self.device = states[0].device
        self.K = len(states)
        models = [s.model for s in states]
        for m in models:
            m.use_tensor_switches(True)
        self.params, self.buffers = stack_module_state(models)
        # a weightless copy whose forward the stacked tensors are substituted into
        self.skeleton = copy.deepcopy(models[0]).to("meta")
        # moving to "meta" gives each module a new parameter object: tie the head again
        self.skeleton.lm_head.weight = self.skeleton.transformer.wte.weight
        for m in models:
            m.use_tensor_switches(False)
        names = {id(p): n for n, p in self.skeleton.named_parameters()}
        self.groups = {g: [names[id(p)] for p in ps] for g, ps in self.skeleton.layer_groups().items()}
        # the single trainer's optimiser, the model axis not counting towards a weight's rank
        self.optimizer = adamw(self.params.values(), self.profile, self.device, stacked=1)
        p = self.profile
        randomness = "different" if p.dropout > 0 else "error"
        self._loss = vmap(self._one_loss, randomness=randomness)
        self._loss_hidden = vmap(self._one_loss_hidden, randomness=randomness)
        if compile:
            self._loss = torch.compile(self._loss)
            self._loss_hidden = torch.compile(self._loss_hidden)

    def _one_loss(self, params, buffers, x, y):
        return functional_call(self.skeleton, (params, buffers), (x, y))[1]

    def _one_loss_hidden(self, params, buffers, x, y):
        _, loss, hidden = functional_call(self.skeleton, (params, buffers), (x, y), {"return_hidden": True})
        norms = torch.stack([h.float().norm(dim=-1).mean() for h in hidden])
        return loss, norms

    def _batches(self):
        xs, ys = zip(*(s.next_batch() for s in self.states))
        return torch.stack(xs), torch.stack(ys)

    @torch.no_grad()
    def _group_norms(self, names: list[str]) -> torch.Tensor:
        """Per-model L2 norm of the gradients of ``names``: shape (K,)."""
        norms = [self.params[n].grad.reshape(self.K, -1).norm(dim=1) for n in names
                 if self.params[n].grad is not None]
        if not norms:
            return torch.zeros(self.K, device=self.device)
        return torch.linalg.vector_norm(torch.stack(norms), dim=0)

    def step(self, step: int, log: bool) -> None:
        """One optimisation step of every model of the group."""
        profile = self.profile
        lr = lr_at(step, profile)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        loss_sum = torch.zeros(self.K, device=self.device)
        autocast = self.states[0].autocast
        for micro in range(profile.grad_accum):
            x, y = self._batches()
            with autocast, warnings.catch_warnings():
                # CPU SDPA has no vmap rule: torch loops over the models, which is what
                # separate runs do anyway (CUDA's flash and efficient kernels have one)
                warnings.filterwarnings("ignore", message="There is a performance drop", category=UserWarning)
                if log and micro == 0:
                    losses, h_norms = self._loss_hidden(self.params, self.buffers, x, y)
                else:
                    losses = self._loss(self.params, self.buffers, x, y)
            # models are independent, so d(sum_k loss_k)/d(params_k) = d(loss_k)/d(params_k)
            (losses / profile.grad_accum).sum().backward()
            loss_sum += losses.detach()
        if log:
            per_layer = {g: self._group_norms(names).tolist() for g, names in self.groups.items()}
        with torch.no_grad():
            # per-model global-norm clipping, as torch.nn.utils.clip_grad_norm_ does for one model
            total = self._group_norms(list(self.params))
            clip = profile.grad_clip if profile.grad_clip > 0 else float("inf")
            coef = (clip / (total + 1e-6)).clamp(max=1.0)
            for p in self.params.values():
                if p.grad is not None:
                    p.grad.mul_(coef.view(-1, *([1] * (p.dim() - 1))).to(p.grad.dtype))
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if log:
            losses_k = (loss_sum / profile.grad_accum).tolist()
            totals, h = total.tolist(), h_norms.tolist()
            for k, state in enumerate(self.states):
                state.log_train(step, losses_k[k], lr, totals[k], {g: v[k] for g, v in per_layer.items()}, h[k])

    @torch.no_grad()
    def sync(self) -> None:
        """Copy the stacked weights into each run's own module (before evaluating it)."""
        for k, state in enumerate(self.states):
            for name, p in state.model.named_parameters():
                p.copy_(self.params[name][k])


def train_fused(
    profile: Profile | str,
    runs: list[FusedRun | dict],
    device: str = "auto",
    data_dir: str | os.PathLike | None = None,
    progress: bool | None = None,
    compile: bool = False,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int | None = None,
) -> list[dict]:
    """Train ``runs`` (same profile, one shape: see :func:`fuse_groups`) together and
    return their records, in order (not written; see :func:`run_fused`). With
    ``checkpoint`` and ``checkpoint_every`` the group saves its state every N steps and
    resumes from it (see :mod:`residual_lib.train`)."""
    started = time.perf_counter()
    code_version()
    profile = get_profile(profile)
    runs = [r if isinstance(r, FusedRun) else FusedRun(**r) for r in runs]
    if not runs:
        return []
    for r in runs:
        check_run(r.variant, r.eval_mode, r.gain, r.init_noise)
    if len({shape_key(r.variant, r.deterministic) for r in runs}) > 1:
        raise RunError("runs of one fused group must share a shape and a determinism setting "
                       "(mixer runs apart from the others): split them with residual_lib.fused.fuse_groups")
    device = resolve_device(device)
    corpus = load_corpus(profile.dataset, data_dir)
    for r in runs:
        check_seed(r.seed)
    with determinism(runs[0].deterministic), cpu_threads(device, runs[0].deterministic):
        states = [RunState(profile, corpus, r.variant, r.seed, r.eval_mode, r.gain, r.deterministic, r.replicate,
                           device, progress=False, init_noise=r.init_noise) for r in runs]
        trainer = FusedTrainer(states, compile=compile)
        checkpoint = Path(checkpoint) if checkpoint is not None and checkpoint_every else None
        first, train_seconds, before = load_checkpoint(checkpoint, states, trainer.optimizer, trainer.params)
        started -= before
        # the single trainer's progress report, for the group (its members' own are silent)
        reporter = _Reporter(profile.max_iters, f"{len(runs)} fused runs", progress)
        reporter.step(first)
        for step in range(first, profile.max_iters):
            if step % profile.eval_interval == 0:
                trainer.sync()
                for state in states:
                    state.record_eval(step)
            if all(state.diverged_at is not None for state in states):
                break
            t0 = time.perf_counter()
            log = is_log_step(step, profile)
            trainer.step(step, log)
            train_seconds += time.perf_counter() - t0
            if log:  # a diverged model's slice stays NaN without touching the others'
                for state in states:
                    state.check_divergence(step)
            if checkpoint is not None and (step + 1) % checkpoint_every == 0 and step + 1 < profile.max_iters:
                save_checkpoint(checkpoint, step + 1, states, trainer.optimizer, trainer.params, train_seconds,
                                time.perf_counter() - started)
            reporter.step(1)
        reporter.close()
        trainer.sync()
        # every model's share of the group's training time: tokens_per_second is per model
        for state in states:
            state.compiled = compile
        return [s.finish(started, train_seconds, {"fused_models": len(runs)}) for s in states]


def run_fused(
    profile: Profile | str,
    runs: list[FusedRun | dict],
    results_dir: str | os.PathLike = "results",
    force: bool = False,
    **train_kwargs,
) -> list[tuple[Path, bool]]:
    """Like :func:`residual_lib.train.run` for a group: the records of ``runs`` under
    ``results_dir``, training the missing ones fused. Returns ``(path, trained)`` per run."""
    profile = get_profile(profile)
    runs = [r if isinstance(r, FusedRun) else FusedRun(**r) for r in runs]
    out: list[tuple[Path, bool] | None] = []
    todo = []
    for r in runs:
        check_run(r.variant, r.eval_mode, r.gain, r.init_noise)
        key = run_key(run_identity(profile, r.variant, r.seed, r.eval_mode, r.gain, r.deterministic, r.replicate,
                                   r.init_noise))
        existing = find_record(results_dir, profile.name, key)
        if existing is not None and not force:
            out.append((existing, False))
        else:
            out.append(None)
            todo.append(r)
    every = train_kwargs.pop("checkpoint_every", None)
    every = CHECKPOINT_EVERY.get(profile.name) if every is None else every
    keys = [run_key(run_identity(profile, r.variant, r.seed, r.eval_mode, r.gain, r.deterministic, r.replicate,
                                 r.init_noise)) for r in todo]
    saved = checkpoint_path(results_dir, profile.name,
                            f"fused{len(todo)}_" + hashlib.sha256(",".join(keys).encode()).hexdigest()[:16])
    if force:
        saved.unlink(missing_ok=True)
    records = iter(train_fused(profile, todo, checkpoint=saved if every else None, checkpoint_every=every or None,
                               **train_kwargs)) if todo else iter(())
    for i, slot in enumerate(out):
        if slot is None:
            record = next(records)
            path = record_path(results_dir, profile.name, record["variant"], record["seed"], record["key"])
            out[i] = (write_record(record, path), True)
    saved.unlink(missing_ok=True)
    return out
