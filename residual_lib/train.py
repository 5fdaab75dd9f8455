"""The trainer: one ResidualGPT run from a profile, a variant and a seed to a run record.

Optimisation follows nanoGPT's ``train.py``: AdamW with weight decay on 2-D weights
only (matrices and embeddings; biases and LayerNorm gains are not decayed), linear
warm-up then cosine decay to ``min_lr``, gradient clipping on the global norm,
gradient accumulation, bf16 autocast on CUDA (fp32 on CPU).

Randomness. ``torch.manual_seed(seed)`` precedes model construction (initialisation)
and drives dropout; training batches come from their own generator seeded with the
run's seed, so the data order is a function of the seed alone and does not depend on
how many random numbers the model consumed. Validation batches: see
:class:`residual_lib.data.ValidationSet`.

Determinism (``deterministic=True``, the default). The trainer calls
``torch.use_deterministic_algorithms(True)``, sets ``CUBLAS_WORKSPACE_CONFIG=:4096:8``
and turns cuDNN benchmarking off for the duration of the run, then restores the
previous settings.

* On CPU a deterministic run always uses :data:`DETERMINISTIC_CPU_THREADS` (one) intra-op
  thread, whatever the process was given, so its bits depend on its key alone -- not on
  how a sweep laid out its processes -- for the same torch build and CPU instruction set
  (the test suite checks ``train``, ``sweep --jobs 1``, the default sweep and a resumed
  sweep against each other). Another thread count would change the order of
  floating-point reductions and so the last bits.
* On CUDA, PyTorch raises an error rather than run an operation that has no
  deterministic implementation, so a run that completes used only deterministic
  kernels and is bitwise reproducible on the same GPU model, driver, CUDA and torch
  build. Across GPU models or software versions results differ in the last bits and,
  through training, in the final loss: the paper's cross-environment gap is a reminder
  that this is not a formality.

``deterministic=False`` leaves PyTorch free to use non-deterministic kernels
(atomics in CUDA backward passes) and the process's thread count.

Checkpoints (:mod:`residual_lib.checkpoint`). Long runs (the paper profiles:
:data:`CHECKPOINT_EVERY`; any run with ``checkpoint_every``) save their whole state every N
steps. A killed run started again resumes from its last checkpoint and ends bitwise
identical to an uninterrupted one; the checkpoint is deleted once the record is written. A
checkpoint whose sha256 does not match its contents is ignored (one line on stderr) and the
run starts over.

Divergence. A run whose training or validation loss becomes non-finite stops at the next
logged step; its record has ``status: "diverged"``, the step, and null losses, and the
pages list it instead of averaging it.
"""

from __future__ import annotations

import math
import os
import sys
import time
from contextlib import ExitStack, contextmanager, nullcontext
from datetime import datetime, timezone
from pathlib import Path

import torch

from . import diagnostics
from .data import ValidationSet, eval_floor, fixed_val_batches, get_batch, load_corpus
from .checkpoint import CHECKPOINT_EVERY, checkpoint_path, load_checkpoint, save_checkpoint
from .model import GPTConfig, ResidualGPT
from .paths import default_results_dir
from .profiles import Profile
from .records import claim_run, clean_stale_files, code_version, find_record, make_record, provenance, write_record
from .runs import Run, RunError, fuse_groups

#: Block 0's sub-modules whose gradient norms are logged on their own (see ResidualGPT.layer_groups).
LAYER0_PARTS = ("attn", "mlp", "ln")
#: Intra-op threads of a deterministic CPU run (the committed records were made with one).
DETERMINISTIC_CPU_THREADS = 1
#: Free space a results folder must have before a run starts (a record is ~1-5 MB).
MIN_FREE_BYTES = 64 * 2**20


def resolve_device(device: str = "auto") -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RunError("CUDA is not available on this machine: use --device cpu")
    if not (device == "cpu" or device.startswith("cuda")):
        raise RunError(f"unknown device {device!r}: use auto, cpu or cuda")
    return device


def lr_at(step: int, profile: Profile) -> float:
    """Linear warm-up over ``warmup_iters``, cosine decay to ``min_lr`` at ``decay_iters``."""
    if step < profile.warmup_iters:
        return profile.learning_rate * (step + 1) / (profile.warmup_iters + 1)
    if step > profile.decay_iters:
        return profile.min_lr
    ratio = (step - profile.warmup_iters) / max(1, profile.decay_iters - profile.warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * ratio))
    return profile.min_lr + coeff * (profile.learning_rate - profile.min_lr)


def adamw(params, profile: Profile, device: str, stacked: int = 0) -> torch.optim.AdamW:
    """nanoGPT's AdamW: weight decay on the weights that are matrices or embeddings, none on
    biases and LayerNorm gains; the fused CUDA kernel on a GPU. ``stacked`` leading
    dimensions (the fused trainer's model axis) do not count towards a weight's rank."""
    params = [p for p in params if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() - stacked >= 2], "weight_decay": profile.weight_decay},
        {"params": [p for p in params if p.dim() - stacked < 2], "weight_decay": 0.0},
    ]
    extra = {"fused": True} if device.startswith("cuda") else {}
    return torch.optim.AdamW(groups, lr=profile.learning_rate, betas=(profile.beta1, profile.beta2), **extra)


@contextmanager
def determinism(enabled: bool):
    """Apply the deterministic settings (see the module docstring) for a block."""
    saved = (
        torch.are_deterministic_algorithms_enabled(),
        torch.backends.cudnn.benchmark,
        os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
    )
    if enabled:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(enabled)
    torch.backends.cudnn.benchmark = False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(saved[0])
        torch.backends.cudnn.benchmark = saved[1]
        if saved[2] is None:
            os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)


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


def check_writable(folder: str | os.PathLike) -> Path:
    """Fail before training, not after: ``folder`` (or, if it does not exist yet, the
    nearest folder above it, where it would be created) can be written and has room.
    Nothing is left behind."""
    import shutil
    import tempfile

    folder = Path(folder).absolute()
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        if not existing.is_dir():
            raise NotADirectoryError(20, "not a folder")
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".write-check.", suffix=".tmp"):
            pass
    except OSError as exc:
        raise RunError(f"cannot write run records to {folder} ({exc.strerror or exc.__class__.__name__} at "
                       f"{existing}): pass --results a writable folder") from None
    free = shutil.disk_usage(existing).free
    if free < MIN_FREE_BYTES:
        raise RunError(f"only {free / 2**20:.0f} MB free under {existing}: free some space or pass --results another "
                       "folder")
    return folder


_BF16_ON_CUDA = True


@contextmanager
def fp32_on_cuda():
    """Train on CUDA without bf16 autocast for a block (the device checks compare fused and
    single training in fp32, where they agree to float rounding)."""
    global _BF16_ON_CUDA
    saved, _BF16_ON_CUDA = _BF16_ON_CUDA, False
    try:
        yield
    finally:
        _BF16_ON_CUDA = saved


@contextmanager
def cpu_threads(device: str, deterministic: bool):
    """Pin a deterministic CPU run to :data:`DETERMINISTIC_CPU_THREADS` threads for a block
    (and say so when the kernels' instruction set is not the pinned one: see the package
    docstring)."""
    if not (deterministic and device == "cpu"):
        yield
        return
    if torch.backends.cpu.get_cpu_capability() == "AVX512":
        print("residual_lib: torch was imported before residual_lib, so its CPU kernels use AVX-512 and this run's "
              "last bits may differ from records made on other machines: import residual_lib first, or set "
              "ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2", file=sys.stderr)
    saved = torch.get_num_threads()
    torch.set_num_threads(DETERMINISTIC_CPU_THREADS)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


class _Reporter:
    """A tqdm bar when stderr is a terminal, plain lines at evaluations otherwise, nothing
    at all when ``progress`` is False. A closed stderr (a pipe whose reader went away)
    silences it rather than stopping the run."""

    def __init__(self, total: int, label: str, progress: bool | None):
        self.quiet = progress is False
        self.interactive = (not self.quiet) and (sys.stderr.isatty() if progress is None else progress)
        self.label, self.total, self.start = label, total, time.perf_counter()
        self.bar = None
        if self.interactive:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=label, leave=False, dynamic_ncols=True)

    def _guard(self, write) -> None:
        try:
            write()
        except (BrokenPipeError, OSError, ValueError):  # ValueError: writing to a closed file
            self.quiet, self.bar = True, None
            try:  # nobody reads stderr any more: later writes (and the exit's flush) go nowhere
                sys.stderr = open(os.devnull, "w")
            except OSError:
                pass

    def step(self, n: int = 1, **postfix) -> None:
        if self.bar is not None:
            bar = self.bar

            def write():
                bar.update(n)
                if postfix:
                    bar.set_postfix({k: f"{v:.4f}" for k, v in postfix.items()}, refresh=False)

            self._guard(write)

    def eval(self, step: int, val_loss: float, train_loss: float | None, label: str | None = None) -> None:
        if self.bar is not None or self.quiet:
            return
        train = f" train {train_loss:.4f}" if train_loss is not None else ""
        elapsed = time.perf_counter() - self.start
        self._guard(lambda: print(f"[{label or self.label}] step {step}/{self.total} val {val_loss:.4f}{train} "
                                  f"({elapsed:.1f}s)", file=sys.stderr, flush=True))

    def close(self) -> None:
        if self.bar is not None:
            self._guard(self.bar.close)


class RunState:
    """One run's state apart from its optimiser: the model, its data order, its validation
    batches, its curves and, at the end, its record. A trainer (:class:`SingleTrainer`,
    :class:`residual_lib.fused.FusedTrainer`) steps the models of its states; :func:`train_group`
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
        bf16 = device.startswith("cuda") and _BF16_ON_CUDA
        self.precision = "bf16 autocast" if bf16 else "fp32"
        self.autocast = torch.autocast("cuda", dtype=torch.bfloat16) if bf16 else nullcontext()
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
        """The run's next training batch (its own generator: the data order depends on the seed only)."""
        p = self.profile
        return self.to_device(*get_batch(self.corpus.train, p.block_size, p.batch_size, self.data_gen))

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

    def record_eval(self, step: int) -> float:
        loss = self.evaluate()
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

    def finish(self, started: float, train_seconds: float, extra_provenance: dict | None = None) -> dict:
        """Diagnostics and the run record, after the final evaluation. Call inside
        :func:`determinism`. A diverged run gets no diagnostics: its losses are null."""
        profile, corpus = self.profile, self.corpus
        diverged = self.diverged_at is not None
        diag = {}
        if not diverged:
            diag = diagnostics.final_diagnostics(self.model, self.probe)
            # Evaluation noise: the final model's loss on the fixed batches and on
            # eval_noise_repeats independent random draws of the same size (what a
            # nanoGPT-style evaluation could have reported for this very model).
            draws = ValidationSet(corpus.val, profile.block_size, profile.batch_size, profile.eval_iters, "random",
                                  self.run.seed + 104_729)
            random_estimates = [self.evaluate(draws.batches()) for _ in range(profile.eval_noise_repeats)]
            diag["val_estimates"] = {
                "fixed": self.evaluate(fixed_val_batches(corpus.val, profile.block_size, profile.batch_size,
                                                         profile.eval_iters)),
                "random": random_estimates,
            }
        prov = provenance(self.device, self.run.deterministic)  # inside the block: the settings in force
        prov["compiled"] = self.compiled
        prov["precision"] = self.precision
        if self.resumed_from is not None:
            prov["resumed_from_step"] = self.resumed_from
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()
        val_losses = self.val_curve["loss"]
        finite = [i for i, v in enumerate(val_losses) if math.isfinite(v)]
        best = min(finite, key=lambda i: val_losses[i]) if finite and not diverged else None
        tokens = profile.tokens_per_step * profile.max_iters
        return make_record(
            self.run,
            diverged_at_step=self.diverged_at,
            config={"profile": profile.to_dict(), "model": self.config.to_dict(), "dataset": corpus.name},
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
            wall_seconds=time.perf_counter() - started,
            tokens_per_second=tokens / train_seconds if train_seconds > 0 else None,
            provenance={**prov, **(extra_provenance or {}),
                        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds")},
        )


def train_step(state: RunState, optimizer: torch.optim.Optimizer, step: int, log: bool) -> None:
    """One optimisation step of a single model (gradient accumulation, clipping, AdamW),
    with the diagnostics logged when ``log``."""
    profile, model, net = state.profile, state.model, state.net
    lr = lr_at(step, profile)
    for group in optimizer.param_groups:
        group["lr"] = lr
    loss_sum = torch.zeros((), device=state.device)
    for micro in range(profile.grad_accum):
        x, y = state.next_batch()
        with state.autocast:
            if log and micro == 0:
                _, loss, hidden = net(x, y, return_hidden=True)
                h_norms = diagnostics.hidden_norms(hidden).tolist()
                del hidden
            else:
                _, loss = net(x, y)
        (loss / profile.grad_accum).backward()
        loss_sum += loss.detach()
    if log:
        per_layer = diagnostics.grad_norms(model)
    clip = profile.grad_clip if profile.grad_clip > 0 else float("inf")
    total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if log:
        state.log_train(step, float(loss_sum) / profile.grad_accum, lr, float(total_norm), per_layer, h_norms)


def is_log_step(step: int, profile: Profile) -> bool:
    return step % profile.log_interval == 0 or step == profile.max_iters - 1


class SingleTrainer:
    """One model and its AdamW, with :class:`residual_lib.fused.FusedTrainer`'s interface:
    ``states``, ``optimizer``, ``params`` (what a checkpoint saves), ``step`` and ``sync``."""

    fused = False

    def __init__(self, state: RunState, compile: bool = False):
        self.states, self.profile = [state], state.profile
        self.optimizer = adamw(state.model.parameters(), state.profile, state.device)
        self.params = dict(state.model.named_parameters())
        if compile:
            state.compile()

    def step(self, step: int, log: bool) -> None:
        train_step(self.states[0], self.optimizer, step, log)

    def sync(self) -> None:
        """Nothing to copy: the model is trained in place."""


def make_trainer(states: list[RunState], compile: bool = False):
    """A single trainer for one run, a fused one for several (same shape)."""
    if len(states) == 1:
        return SingleTrainer(states[0], compile)
    from .fused import FusedTrainer

    return FusedTrainer(states, compile)


def train_group(
    runs: list[Run],
    device: str = "auto",
    data_dir: str | os.PathLike | None = None,
    progress: bool | None = None,
    compile: bool = False,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int | None = None,
) -> list[dict]:
    """Train ``runs`` -- one alone, several of one :attr:`Run.shape` together
    (:mod:`residual_lib.fused`) -- and return their records, in order (not written; see
    :func:`obtain`). ``compile`` trains through ``torch.compile`` (see
    :meth:`RunState.compile`). With ``checkpoint`` (a path) and ``checkpoint_every``
    (steps), the state is saved there every N steps and resumed from when started again.
    A run whose loss turns non-finite stops being evaluated; the group stops when all have."""
    started = time.perf_counter()
    code_version()  # pin the commit this process's code came from before training starts
    runs = list(runs)
    if not runs:
        return []
    if len({r.shape for r in runs}) > 1:
        raise RunError("runs trained together must share a profile, a shape and a determinism setting (mixer runs "
                       "apart from the others): split them with residual_lib.runs.fuse_groups")
    device = resolve_device(device)
    profile, deterministic = runs[0].profile, runs[0].deterministic
    corpus = load_corpus(profile.dataset, data_dir)
    with determinism(deterministic), cpu_threads(device, deterministic):
        states = [RunState(r, corpus, device) for r in runs]
        trainer = make_trainer(states, compile)
        checkpoint = Path(checkpoint) if checkpoint is not None and checkpoint_every else None
        first, train_seconds, before = load_checkpoint(checkpoint, states, trainer.optimizer, trainer.params)
        started -= before  # wall time includes the interrupted process's
        single = len(states) == 1
        reporter = _Reporter(profile.max_iters, runs[0].label() if single else f"{len(runs)} fused runs", progress)
        reporter.step(first)

        def evaluate(step: int) -> None:
            trainer.sync()
            for state in states:
                if state.diverged_at is None:
                    loss = state.record_eval(step)
                    reporter.eval(step, loss, state.last_train_loss, state.run.label())

        def all_diverged() -> bool:
            return all(state.diverged_at is not None for state in states)

        for step in range(first, profile.max_iters):
            if step % profile.eval_interval == 0:
                evaluate(step)
            if all_diverged():
                break
            t0 = time.perf_counter()
            log = is_log_step(step, profile)
            trainer.step(step, log)
            train_seconds += time.perf_counter() - t0
            reporter.step(1, **({"loss": states[0].last_train_loss} if log and single else {}))
            if log:  # a diverged model's slice of a fused group stays NaN without touching the others'
                for state in states:
                    state.check_divergence(step)
                if all_diverged():
                    break
            if checkpoint is not None and (step + 1) % checkpoint_every == 0 and step + 1 < profile.max_iters:
                save_checkpoint(checkpoint, step + 1, states, trainer.optimizer, trainer.params, train_seconds,
                                time.perf_counter() - started)
        evaluate(profile.max_iters)
        reporter.close()
        # a fused run's tokens_per_second counts its share: the group's tokens over the group's time
        extra = {"fused_models": len(states)} if trainer.fused else {}
        return [state.finish(started, train_seconds, extra) for state in states]


def train(run: Run, **options) -> dict:
    """Train one run and return its record (not written; see :func:`obtain`). ``options``:
    those of :func:`train_group`."""
    return train_group([run], **options)[0]


def obtain(
    runs: list[Run],
    results_dir: str | os.PathLike | None = None,
    force: bool = False,
    claim: bool = True,
    fuse: int = 1,
    checkpoint_every: int | None = None,
    **train_options,
) -> list[tuple[Path, bool]]:
    """The records of ``runs`` under ``results_dir`` (default: the checkout's ``results/``),
    training the missing ones, up to ``fuse`` of one shape together. Returns ``(path,
    trained)`` per run, in order. Unless ``claim`` is False (a sweep's worker, whose sweep
    holds the claims), each missing run is claimed first
    (:func:`residual_lib.records.claim_run`): if another process is training it, this waits
    for that record instead. Checkpoints: every ``checkpoint_every`` steps (default
    :data:`CHECKPOINT_EVERY` for the profile; 0 for none)."""
    results = Path(results_dir) if results_dir else default_results_dir()
    out: dict[Run, tuple[Path, bool]] = {}
    todo: list[Run] = []
    for folder in dict.fromkeys(results / r.profile.name for r in runs):
        clean_stale_files(folder)
    for r in dict.fromkeys(runs):
        existing = None if force else find_record(results, r.profile.name, r.key)
        if existing is not None:
            out[r] = (existing, False)
        else:
            todo.append(r)
    for group in fuse_groups(todo, fuse) if todo else []:
        folder = results / group[0].profile.name
        check_writable(folder)
        new_folders = [f for f in (folder, *folder.parents) if not f.exists()]
        try:
            # Claims are taken without waiting, so that two processes asking for the same runs in
            # another order cannot wait on each other; a run another process holds is waited for
            # afterwards, holding nothing (its record appears, or its owner dies and it is ours).
            with ExitStack() as claims:
                mine = [r for r in group if claims.enter_context(claim_run(r.path(results), wait=False,
                                                                           enabled=claim, reuse=not force))]
                out.update(_train_and_write(mine, results, force, checkpoint_every, train_options))
            for r in group:
                if r not in out:
                    with claim_run(r.path(results), wait=True, reuse=not force) as ours:
                        out.update(_train_and_write([r], results, force, checkpoint_every, train_options)
                                   if ours else {r: (r.path(results), False)})
        except BaseException:
            for created in new_folders:  # leave no empty folder behind a run that never started
                try:
                    created.rmdir()
                except OSError:
                    break
            raise
    return [out[r] for r in runs]


def _train_and_write(runs: list[Run], results: Path, force: bool, every: int | None, options: dict) -> dict:
    if not runs:
        return {}
    every = CHECKPOINT_EVERY.get(runs[0].profile.name) if every is None else every
    saved = checkpoint_path(results, runs)
    if force:
        saved.unlink(missing_ok=True)
    records = train_group(runs, checkpoint=saved if every else None, checkpoint_every=every or None, **options)
    written = {r: (write_record(rec, r.path(results)), True) for r, rec in zip(runs, records)}
    saved.unlink(missing_ok=True)
    return written


def run(run: Run, results_dir: str | os.PathLike | None = None, **options) -> tuple[Path, bool]:
    """:func:`obtain` for one run: ``(path, trained)``."""
    return obtain([run], results_dir, **options)[0]
