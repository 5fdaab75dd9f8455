"""The training loop: runs of one fuse key, one alone or several together, from a profile, a
variant and a seed to run records (returned, not written: :mod:`residual_lib.training.store` writes
them).

Checkpoints (:mod:`residual_lib.training.checkpoint`). Long runs (the paper profiles:
:data:`residual_lib.training.checkpoint.CHECKPOINT_EVERY`; any run with ``checkpoint_every``) save their whole state every N
steps, again after an evaluation at a step they were saved at, so that a resumed run does not
evaluate that step a second time (one evaluation takes minutes at ``paper-10m`` on a CPU core; a
save, seconds: the paper profiles, which evaluate at every checkpoint, write each one twice, and a
stop during the evaluation keeps the first),
and once more after the last step, before the final evaluations (at ``paper-10m`` on
one CPU core, the last evaluation, then the fixed batches and eight random draws again, ten
passes over 200 batches, take about 90 minutes). A killed run started again resumes from its
last checkpoint and ends bitwise identical to an uninterrupted one; the checkpoint is deleted
once the record is written. A checkpoint whose sha256 does not match its contents is ignored
(one line on stderr) and the run starts over. A run that checkpoints and is stopped by Ctrl-C or SIGTERM (a scheduler's
preemption) while it trains a step finishes that step, saves a checkpoint after it and then
stops, so the steps since the last regular checkpoint are kept; a second signal stops it at once,
and one that arrives during an evaluation stops it there, keeping the last checkpoint, the one
after the last step during the final evaluations (as does a sweep's worker, which the sweep
ends at once).
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import torch

from ..core.stop import check, deferred
from ..run.data import load_corpus
from ..run.runs import Run, RunError
from ..run.runtime import cpu_threads, determinism, resolve_device
from ..storage.provenance import code_digest, code_version
from . import diagnostics
from .checkpoint import load_checkpoint, save_checkpoint
from .fused import FusedTrainer
from .progress import Progress
from .state import RunState
from .step import adamw, is_log_step, take_step


class SingleTrainer:
    """One model and its AdamW, with :class:`residual_lib.training.fused.FusedTrainer`'s interface:
    ``states``, ``optimizer``, ``params`` (what a checkpoint saves), ``step``, ``sync`` and
    the hooks of :func:`residual_lib.training.step.take_step`."""

    fused = False

    def __init__(self, state: RunState, compile: bool = False):
        self.states, self.profile, self.device = [state], state.profile, state.device
        micro = state.profile.cpu_micro_batch
        # on CPU a profile may run each batch in slices (Profile.cpu_micro_batch); the data are the
        # batch's, drawn whole, so that the data order does not depend on the slicing
        self.slices = state.profile.batch_size // micro if micro and self.device == "cpu" else 1
        self._pending: list = []
        self.optimizer = adamw(state.model.parameters(), state.profile, state.device)
        self.params = dict(state.model.named_parameters())
        if compile:
            state.compile()

    def losses(self, with_hidden: bool):
        """One micro-batch: the loss, and with ``with_hidden`` the hidden-state norms."""
        state = self.states[0]
        if not self._pending:
            x, y = state.next_batch()
            self._pending = list(zip(x.chunk(self.slices), y.chunk(self.slices)))
        x, y = self._pending.pop(0)
        with state.autocast:
            if with_hidden:
                _, loss, hidden = state.net(x, y, return_hidden=True)
                return loss, [diagnostics.hidden_norms(hidden).tolist()]
            _, loss = state.net(x, y)
        return loss, None

    def layer_norms(self) -> list[dict]:
        return [diagnostics.grad_norms(self.states[0].model)]

    def clip(self, max_norm: float) -> torch.Tensor:
        return torch.nn.utils.clip_grad_norm_(self.states[0].model.parameters(), max_norm).reshape(1)

    def step(self, step: int, log: bool) -> None:
        take_step(self, step, log)

    def sync(self) -> None:
        """Nothing to copy: the model is trained in place."""


def make_trainer(states: list[RunState], compile: bool = False):
    """A single trainer for one run, a fused one for several (one fuse key)."""
    return SingleTrainer(states[0], compile) if len(states) == 1 else FusedTrainer(states, compile)


def train_group(
    runs: list[Run],
    device: str = "auto",
    data_dir: str | os.PathLike | None = None,
    progress: bool | None = None,
    compile: bool = False,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int | None = None,
    resume_other_code: bool = False,
) -> list[dict]:
    """Train ``runs`` -- one alone, several of one :attr:`Run.fuse_key` together
    (:mod:`residual_lib.training.fused`) -- and return their records, in order (not written; see
    :func:`residual_lib.training.store.obtain`). ``compile`` trains through ``torch.compile`` (see
    :meth:`RunState.compile`). With ``checkpoint`` (a path) and ``checkpoint_every``
    (steps), the state is saved there every N steps and resumed from when started again, by
    this code only unless ``resume_other_code`` (see :mod:`residual_lib.training.checkpoint`).
    A run whose loss turns non-finite stops being evaluated; the group stops when all have."""
    started = time.perf_counter()
    code_version(), code_digest()  # pin the code this process loaded before training starts
    runs = list(runs)
    if not runs:
        return []
    if len({r.fuse_key for r in runs}) > 1:
        raise RunError("runs trained together must share a profile, a shape and a determinism setting (mixer runs "
                       "apart from the others): split them with residual_lib.run.runs.fuse_groups")
    device = resolve_device(device)
    profile, deterministic = runs[0].profile, runs[0].deterministic
    corpus = load_corpus(profile.dataset, data_dir)
    with determinism(deterministic), cpu_threads(device, deterministic):
        states = [RunState(r, corpus, device) for r in runs]
        trainer = make_trainer(states, compile)
        checkpoint = Path(checkpoint) if checkpoint is not None and checkpoint_every else None
        first, train_seconds, before = load_checkpoint(checkpoint, states, trainer.optimizer, trainer.params,
                                                         resume_other_code)
        started -= before  # wall time includes the interrupted process's
        single = len(states) == 1
        reporter = Progress(profile.max_iters, runs[0].label() if single else f"{len(runs)} fused runs", progress)
        reporter.step(first)

        def evaluate(step: int) -> None:
            trainer.sync()
            # a group evaluates every model in one batched pass per batch (FusedTrainer.evaluate)
            losses = trainer.evaluate() if trainer.fused else [None] * len(states)
            for state, loss in zip(states, losses):
                if state.diverged_at is None:
                    loss = state.record_eval(step, loss)
                    reporter.eval(step, loss, state.last_train_loss, state.run.label())

        def all_diverged() -> bool:
            return all(state.diverged_at is not None for state in states)

        def evaluated(step: int) -> bool:
            return all(state.val_curve["step"][-1:] == [step] for state in states if state.diverged_at is None)

        for step in range(first, profile.max_iters):
            check()  # a stop asked for is honoured at the next step, even one a finaliser swallowed
            if step % profile.eval_interval == 0 and not evaluated(step):
                evaluate(step)
                if (checkpoint is not None and step and (step == first or step % checkpoint_every == 0)
                        and not all_diverged()):
                    # the checkpoint of this step (a regular one, or the one a stop saved) again, now
                    # holding its evaluation (minutes at paper scale), so a run stopped before its
                    # next checkpoint resumes without redoing it
                    save_checkpoint(checkpoint, step, states, trainer.optimizer, trainer.params, train_seconds,
                                    time.perf_counter() - started)
            if all_diverged():
                break
            stepped = saved = False
            try:  # with checkpoints, a stop asked for during a step waits for its end, then saves
                with deferred() if checkpoint is not None else nullcontext():
                    t0 = time.perf_counter()
                    log = is_log_step(step, profile)
                    trainer.step(step, log)
                    train_seconds += time.perf_counter() - t0
                    reporter.step(1, **({"loss": states[0].last_train_loss} if log and single else {}))
                    if log:  # a diverged model's slice of a fused group stays NaN without touching the others'
                        for state in states:
                            state.check_divergence(step)
                    stepped = True
                    if log and all_diverged():
                        break
                    if checkpoint is not None and (step + 1) % checkpoint_every == 0 and step + 1 < profile.max_iters:
                        saved = True  # a stop during this save stops at once: the checkpoint before stands
                        save_checkpoint(checkpoint, step + 1, states, trainer.optimizer, trainer.params,
                                        train_seconds, time.perf_counter() - started)
            except KeyboardInterrupt:
                # after the last step too: the resumed run only evaluates and writes its record
                if checkpoint is not None and stepped and not saved and not all_diverged():
                    save_checkpoint(checkpoint, step + 1, states, trainer.optimizer, trainer.params, train_seconds,
                                    time.perf_counter() - started)
                    print(f"stopped after step {step + 1:,}: checkpoint saved, the same command resumes from it",
                          file=sys.stderr)
                raise
        if checkpoint is not None and first < profile.max_iters and not all_diverged():
            # a stop during the final evaluations resumes here: the resumed run only evaluates
            save_checkpoint(checkpoint, profile.max_iters, states, trainer.optimizer, trainer.params, train_seconds,
                            time.perf_counter() - started)
        evaluate(profile.max_iters)
        reporter.close()
        # a fused run's tokens_per_second counts its share: the group's tokens over the group's time
        extra = {"fused_models": len(states)} if trainer.fused else {}
        # a diverged model's estimates are not recorded: a group of only those takes none
        fused = trainer.fused and not all_diverged()
        estimates = trainer.final_estimates() if fused else [None] * len(states)
        return [state.finish(started, train_seconds, extra, e) for state, e in zip(states, estimates)]


def train(run: Run, **options) -> dict:
    """Train one run and return its record (not written; see :func:`residual_lib.training.store.obtain`). ``options``:
    those of :func:`train_group`."""
    return train_group([run], **options)[0]
