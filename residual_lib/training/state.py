"""One run's state apart from its optimiser: the model, its data order, its validation
batches, its curves and, at the end, its record.

Randomness. ``torch.manual_seed(seed)`` precedes model construction (initialisation)
and drives dropout; training batches come from their own generator seeded with the
run's seed, so the data order is a function of the seed alone and does not depend on
how many random numbers the model consumed. Validation batches: see
:class:`residual_lib.run.batches.ValidationSet`.

Divergence. A run whose training or validation loss becomes non-finite stops at the next
logged step; its record has ``status: "diverged"``, the step, and null losses, and the
pages list it instead of averaging it.
"""

from __future__ import annotations

import functools
import math
import time
from datetime import datetime, timedelta, timezone

import numpy as np
import torch

from ..run.architecture import LAYER0_PARTS
from ..run.batches import ValidationSet, fixed_val_batches, get_batch, iter_fixed_val_batches
from ..run.data import eval_floor
from ..run.model import GPTConfig, ResidualGPT
from ..run.runs import Run, RunError
from ..run.runtime import autocast
from ..storage.provenance import process_platform, provenance
from ..storage.records import make_record
from . import diagnostics


def perturb_init(model: torch.nn.Module, init_noise: float, seed: int, replicate: int) -> None:
    """Multiply every weight by ``1 + init_noise * N(0, 1)``, drawn element-wise from a
    generator of its own (seeded by ``seed`` and ``replicate``, so the global stream that
    drives dropout is untouched). With ``init_noise`` ~1e-6, a few float32 roundings
    (machine epsilon 1.2e-7): the size of the difference a change of thread count or of
    summation order makes to one step. Parameters initialised to exactly 0 or 1
    (biases, LayerNorm) stay 0 or move by the same relative amount."""
    gen = torch.Generator().manual_seed(1_000_003 * (int(replicate) + 1) + int(seed))
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(1.0 + init_noise * torch.randn(p.shape, generator=gen, dtype=p.dtype))


def _on_device(corpus, device: str) -> torch.Tensor:
    """The corpus's training split as an int32 tensor on ``device``: copied once and kept on
    the corpus object itself (the models of a group share one corpus), so it goes when the
    corpus goes and can never be another corpus's."""
    copies = corpus.__dict__.setdefault("_device_train", {})
    if device not in copies:
        copies[device] = torch.from_numpy(np.asarray(corpus.train, dtype=np.int32)).to(device)
    return copies[device]


@functools.lru_cache(maxsize=8)
def _offsets(n: int, device: str) -> torch.Tensor:
    return torch.arange(n, device=device)


class RunState:
    """One run's state apart from its optimiser: the model, its data order, its validation
    batches, its curves and, at the end, its record. A trainer (:class:`residual_lib.training.train.SingleTrainer`,
    :class:`residual_lib.training.fused.FusedTrainer`) steps the models of its states; :func:`residual_lib.training.train.train_group`
    drives a trainer and evaluates each state."""

    def __init__(self, run: Run, corpus, device: str):
        profile = run.profile
        self.run, self.profile, self.corpus, self.device = run, profile, corpus, device
        self.key = run.key
        if min(len(corpus.train), len(corpus.val)) <= profile.block_size:
            raise RunError(f"context {profile.block_size} is longer than {corpus.name}'s validation split "
                           f"({len(corpus.val):,} tokens): use a smaller block_size")
        torch.manual_seed(run.seed)  # initialisation (and dropout) follow the run's seed
        self.config = GPTConfig.for_profile(profile, run.variant, vocab_size=corpus.vocab_size, gain=run.gain)
        model = ResidualGPT(self.config)
        if run.init_noise:
            perturb_init(model, run.init_noise, run.seed, run.replicate)
        self.model = model.to(device)
        self.precision = "bf16 autocast" if profile.precision == "bf16" else "fp32"  # as the record names it
        self.autocast = autocast(device, profile.precision)
        self.data_gen = torch.Generator().manual_seed(run.seed)
        self.valset = ValidationSet(corpus.val, profile.block_size, profile.batch_size, profile.eval_iters,
                                    run.eval_mode, run.seed)
        self.probe = fixed_val_batches(corpus.val, profile.block_size, profile.batch_size, 1)[0][0].to(device)
        self.train_curve = {k: [] for k in ("step", "loss", "lr", "grad_norm", "grad_norm_layer0",
                                             "grad_norm_layers", "grad_norm_embedding", "hidden_norms",
                                             *(f"grad_norm_layer0_{part}" for part in LAYER0_PARTS))}
        self.val_curve = {"step": [], "loss": []}
        self.last_train_loss = None
        self.diverged_at = None  # the step at which a loss was first seen non-finite
        self.resumed_from = None  # the step a checkpoint resumed this run at
        self.resumed_code = None  # other code that trained steps before a resume (asked for): a list, oldest first
        self.started_at = None  # when a resumed run's first process began (ISO, UTC), from its checkpoint
        # the processes that trained the steps before a resume, oldest first, from its checkpoint
        # (None: it kept none); see :meth:`processes_so_far`
        self.earlier_processes = None
        self._platform = None  # this process's entry of provenance.processes, made once
        self.net = self.model  # what training steps call: the model, or its torch.compile'd wrapper
        self.compiled = False

    def checkpoint_state(self) -> dict:
        """This run's part of a checkpoint, apart from weights and optimiser."""
        gen = self.valset._generator
        return {"data_gen": self.data_gen.get_state(), "val_gen": None if gen is None else gen.get_state(),
                "train_curve": self.train_curve, "val_curve": self.val_curve,
                "last_train_loss": self.last_train_loss, "diverged_at": self.diverged_at}

    def restore(self, saved: dict) -> None:
        self.data_gen.set_state(saved["data_gen"])
        if saved["val_gen"] is not None:
            self.valset._generator.set_state(saved["val_gen"])
        self.train_curve, self.val_curve = saved["train_curve"], saved["val_curve"]
        self.last_train_loss, self.diverged_at = saved["last_train_loss"], saved["diverged_at"]

    def processes_so_far(self, prov: dict | None = None) -> list[dict]:
        """Every process that has trained this run that its checkpoints kept, oldest first, this
        one last: the step each began at and the machine and kernels it ran on
        (:func:`residual_lib.storage.provenance.process_platform`). A run resumed on another
        machine sums in another order from there on, so its record names each process; a list
        that starts after step 0 was resumed from a checkpoint that did not keep them."""
        if prov is not None or self._platform is None:
            prov = prov or provenance(self.device, self.run.deterministic)
            self._platform = process_platform({**prov, "precision": self.precision, "compiled": self.compiled},
                                              self.resumed_from or 0)
        return [*(self.earlier_processes or []), self._platform]

    def compile(self) -> None:
        """Train through ``torch.compile`` (evaluation and diagnostics use the plain module,
        which shares the weights). Fused kernels sum in another order: results agree with
        eager training to float rounding, not bitwise."""
        self.net, self.compiled = torch.compile(self.model), True

    def to_device(self, x: torch.Tensor, y: torch.Tensor):
        if self.device.startswith("cuda"):
            return x.pin_memory().to(self.device, non_blocking=True), y.pin_memory().to(self.device, non_blocking=True)
        return x, y

    def next_batch(self):
        """The run's next training batch (its own generator: the data order depends on the seed only).
        On CUDA the windows are cut on the device from a copy of the corpus kept there, at the
        offsets the same generator draws on the host, so the batches are the host's bit for bit
        and no step waits on a host-to-device copy of its tokens."""
        p = self.profile
        if not self.device.startswith("cuda"):
            return get_batch(self.corpus.train, p.block_size, p.batch_size, self.data_gen)
        return self.cut_batch()

    def cut_batch(self):
        """:meth:`next_batch`'s device path: the offsets drawn on the host, the windows cut
        from the copy of the corpus on the run's device."""
        p = self.profile
        ix = torch.randint(len(self.corpus.train) - p.block_size, (p.batch_size,), generator=self.data_gen)
        if self.device.startswith("cuda"):
            ix = ix.pin_memory().to(self.device, non_blocking=True)
        windows = ix.unsqueeze(1) + _offsets(p.block_size + 1, self.device)
        tokens = _on_device(self.corpus, self.device)[windows].long()
        return tokens[:, :-1], tokens[:, 1:]

    @torch.no_grad()
    def evaluate(self, batches=None) -> float:
        self.model.eval()
        losses = []
        for x, y in batches if batches is not None else self.valset.batches():
            x, y = self.to_device(x, y)
            with self.autocast:
                losses.append(self.model(x, y)[1])
        self.model.train()
        return float(torch.stack(losses).mean())

    def record_eval(self, step: int, loss: float | None = None) -> float:
        """Log the validation loss at ``step``: ``loss`` where the caller measured it (a fused
        group, all its models at once), else :meth:`evaluate`'s."""
        loss = self.evaluate() if loss is None else loss
        self.val_curve["step"].append(step)
        self.val_curve["loss"].append(loss)
        self.check_divergence(step)
        return loss

    def check_divergence(self, step: int) -> bool:
        """Note the first step at which the last training or validation loss is not finite."""
        losses = [self.last_train_loss, self.val_curve["loss"][-1] if self.val_curve["loss"] else None]
        if self.diverged_at is None and any(x is not None and not math.isfinite(x) for x in losses):
            self.diverged_at = step
        return self.diverged_at is not None

    def log_train(self, step: int, loss: float, lr: float, total_norm: float, per_layer: dict,
                  h_norms: list[float]) -> None:
        self.last_train_loss = loss
        layers = [per_layer[f"layer_{i}"] for i in range(self.profile.n_layer)]
        for name, value in (("step", step), ("loss", loss), ("lr", lr), ("grad_norm", total_norm),
                            ("grad_norm_layer0", layers[0]), ("grad_norm_layers", layers),
                            ("grad_norm_embedding", per_layer["embedding"]), ("hidden_norms", h_norms),
                            *((f"grad_norm_layer0_{part}", per_layer[f"layer_0_{part}"]) for part in LAYER0_PARTS)):
            self.train_curve[name].append(value)

    def final_draws(self) -> list:
        """The batches of the final model's evaluation-noise estimates, one iterable per
        estimate: ``eval_noise_repeats`` independent random draws the size of the validation set
        (what a nanoGPT-style evaluation could have reported for this very model), then the
        fixed batches. Drawn as they are consumed, so consume them in this order."""
        p, val = self.profile, self.corpus.val
        draws = ValidationSet(val, p.block_size, p.batch_size, p.eval_iters, "random", self.run.seed + 104_729)
        return ([draws.iter_batches() for _ in range(p.eval_noise_repeats)]
                + [iter_fixed_val_batches(val, p.block_size, p.batch_size, p.eval_iters)])

    def final_estimates(self, losses: list[float] | None = None) -> dict:
        """The record's ``val_estimates``: the losses on :meth:`final_draws`, in its order, from
        ``losses`` where the caller measured them (a fused group, all its models at once), else
        measured here."""
        if losses is None:
            losses = [self.evaluate(batches) for batches in self.final_draws()]
        return {"fixed": losses[-1], "random": losses[:-1]}

    def finish(self, started: float, train_seconds: float, extra_provenance: dict | None = None,
               estimates: dict | None = None) -> dict:
        """Diagnostics and the run record, after the final evaluation; ``estimates``:
        :meth:`final_estimates`'s, measured there when not given. Call inside
        :func:`residual_lib.run.runtime.determinism`. A diverged run gets no diagnostics: its losses are null."""
        profile, corpus = self.profile, self.corpus
        diverged = self.diverged_at is not None
        diag = {}
        if not diverged:
            diag = diagnostics.final_diagnostics(self.model, self.probe)
            diag["val_estimates"] = estimates or self.final_estimates()
        prov = provenance(self.device, self.run.deterministic)  # inside the block: the settings in force
        prov["compiled"] = self.compiled
        prov["precision"] = self.precision
        if self.resumed_from is not None:
            prov["resumed_from_step"] = self.resumed_from
        if self.resumed_code is not None:  # steps before this one were trained by that code
            prov["resumed_code"] = self.resumed_code
        if self.resumed_from is not None:  # the platform of each process, where it may have changed
            prov["processes"] = self.processes_so_far(prov)
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()
        val_losses = self.val_curve["loss"]
        finite = [i for i, v in enumerate(val_losses) if math.isfinite(v)]
        best = min(finite, key=lambda i: val_losses[i]) if finite and not diverged else None
        tokens = profile.tokens_per_step * profile.max_iters
        wall = time.perf_counter() - started
        finished = datetime.now(timezone.utc)
        # when the run began, a resumed run's first process included (what a pre-registration is checked
        # against); from a checkpoint that did not keep it, the wall time back, which leaves out the gaps
        started_at = self.started_at or (finished - timedelta(seconds=wall)).isoformat(timespec="seconds")
        return make_record(
            self.run,
            diverged_at_step=self.diverged_at,
            config={"profile": profile.to_dict(), "model": self.config.to_dict(), "dataset": corpus.name,
                    "corpus_sha256": corpus.sha256},
            final_val_loss=None if diverged else val_losses[-1],
            best_val_loss=None if best is None else val_losses[best],
            best_step=None if best is None else self.val_curve["step"][best],
            unigram_floor=corpus.unigram_floor(),
            eval_floor=eval_floor(corpus, profile.block_size, profile.batch_size, profile.eval_iters,
                                  self.run.eval_mode),
            n_params=self.model.num_params(),
            steps=profile.max_iters,
            tokens=tokens,
            curves={"train": self.train_curve, "val": self.val_curve},
            diagnostics=diag,
            wall_seconds=wall,
            tokens_per_second=tokens / train_seconds if train_seconds > 0 else None,
            provenance={**prov, **(extra_provenance or {}), "started_at": started_at,
                        "finished_at": finished.isoformat(timespec="seconds")},
        )
