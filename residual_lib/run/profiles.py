"""Named training profiles: every hyper-parameter of a run except variant, seed,
evaluation mode and gain.

* ``smoke`` -- tests and CI: a 2-layer, 32-wide model, a run in a few seconds.
* ``cpu`` -- the book's profile (:data:`BOOK_PROFILE`) and the command line's default (a
  notebook run as it is trains ``smoke``): about 0.8M parameters (4 layers, 4 heads, 128 wide,
  context 64), the size of nanoGPT's documented CPU recipe, with batch 32 and
  2,000 steps: a quarter of an hour a run with two runs on 2 cores (the records'
  ``wall_seconds``). It stands in for the paper's 10M
  model on machines without a GPU.
* ``ladder-0.1m``, ``ladder-0.3m`` -- the ``cpu`` profile at widths 48 and 80 (about
  0.12M and 0.32M parameters): with ``cpu`` (0.8M) the lower rungs of the scale ladder,
  a study the paper does not have (:data:`LADDERS`).
* ``ladder-3m``, ``ladder-10m`` -- the ladder's recipe at width 256 (about 3.2M
  parameters) and at the paper-10m shape (6 layers, 6 heads, width 384: about 10.7M), the
  rungs that carry the ladder to the paper's own width and depth; 20 and 70 minutes a run
  on one core.
* ``cpu-dropout``, ``cpu-long`` -- ``cpu`` with dropout 0.2 (nanoGPT's ``shakespeare_char``
  setting, which ``paper-10m`` follows; the summary does not state the paper's dropout) and
  with 6,000 steps (three times the budget, cosine decay over all of it). ``cpu-dropout``
  is the central sweep's second stand-in (:data:`DROPOUT_TWIN`); both serve the FFNOnly
  escape study, which asks whether FFNOnly's escapes from the floor depend on settings
  in which ``cpu`` differs from ``paper-10m``.
* ``smoke-ladder-s``, ``smoke-ladder-m`` -- ``smoke`` at widths 12 and 20: the ladder at
  smoke scale, for tests.
* ``paper-10m`` -- the paper's 10M setting, nanoGPT's ``shakespeare_char`` config:
  6 layers, 6 heads, 384 wide, context 256, batch 64, dropout 0.2, lr 1e-3 cosine to
  1e-4 over 5,000 steps after 100 warm-up steps, beta2 0.99; bf16 autocast, as nanoGPT
  trains it; biases in the linear and LayerNorm layers, as in every profile here (nanoGPT's
  default has none; the summary does not say which the paper's models had); on CPU, dropout
  masks drawn as 32-bit integers (``cpu_dropout``) and each batch of 64 run in four slices of
  16 (``cpu_micro_batch``). Several
  hours a run on one CPU core with AMX (bf16) matrix units; minutes on a GPU.
* ``paper-124m`` -- GPT-2 small (12 layers, 12 heads, 768 wide, context 1024) on
  OpenWebText's first 100,000 documents (~113M GPT-2 tokens). The paper's summary
  gives no step budget; this profile takes 4,000 steps of 16 x 4 x 1024 = 65,536
  tokens (262M tokens, about 2.3 passes over the ~113M-token corpus) with
  nanoGPT's GPT-2 optimiser settings (lr 6e-4 -> 6e-5, 200 warm-up steps,
  beta2 0.95, weight decay 0.1, no dropout). That is long enough for the full model
  to leave the ~7.4 collapse plateau the paper reports far behind, and short enough
  for a multi-seed sweep on one GPU. bf16 autocast. Needs a GPU.

Precision is a profile's (``precision``): the stand-ins train in fp32 on every device, the
paper's profiles in bf16 autocast on every device.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from ..core.text import plural
from .architecture import CPU_DROPOUT, Architecture, without_late_defaults


class ProfileError(ValueError):
    """An unknown profile or an invalid override; the message says how to fix it."""


@dataclass(frozen=True, kw_only=True)
class Profile(Architecture):
    """A named recipe: the model's :class:`~residual_lib.run.architecture.Architecture` (layers, heads, width,
    context, dropout, bias, init std) and everything else below."""

    name: str
    dataset: str = "shakespeare_char"
    #: ``fp32``, or ``bf16`` autocast (weights, optimiser state and loss in fp32), on every device
    precision: str = "fp32"
    # optimisation
    batch_size: int = 32
    grad_accum: int = 1
    #: on CPU, each batch is run forward and backward in slices of this many sequences (its
    #: gradient summed over them); None: whole. Large attention matrices are memory-bound on CPU:
    #: at paper-10m slices of 16 train 1.4x faster than the batch of 64 at once. CUDA ignores it.
    cpu_micro_batch: int | None = None
    max_iters: int = 2000
    learning_rate: float = 1e-3
    min_lr: float = 1e-4
    warmup_iters: int = 100
    lr_decay_iters: int | None = None  # None: decay over max_iters
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0
    # evaluation and logging
    eval_interval: int = 100
    eval_iters: int = 20
    log_interval: int = 10
    eval_noise_repeats: int = 8  # random-batch re-evaluations of the final model (see training/train.py)

    def __post_init__(self):
        self._canonical_types()
        for name in ("max_iters", "batch_size", "block_size", "n_layer", "n_head", "n_embd", "grad_accum",
                     "eval_iters", "eval_interval", "log_interval"):
            if getattr(self, name) <= 0:
                flag = "--" + name.replace("_", "-")
                raise ProfileError(f"{name} must be positive, got {getattr(self, name)}: pass a positive {flag}")
        if not 0 <= self.dropout < 1:
            raise ProfileError(f"dropout must be at least 0 and below 1, got {self.dropout}: choose e.g. 0.2")
        if self.eval_noise_repeats < 0:
            raise ProfileError(f"eval_noise_repeats must be >= 0, got {self.eval_noise_repeats}: pass 0 to skip")
        if self.cpu_micro_batch is not None and (self.cpu_micro_batch <= 0 or self.batch_size % self.cpu_micro_batch):
            raise ProfileError(f"cpu_micro_batch {self.cpu_micro_batch} does not divide batch_size {self.batch_size}: "
                               "choose a divisor of the batch size, or None")
        if self.precision not in ("fp32", "bf16"):
            raise ProfileError(f"unknown precision {self.precision!r}: pass --precision fp32 or --precision bf16")
        if self.cpu_dropout not in CPU_DROPOUT:
            raise ProfileError(f"unknown cpu_dropout {self.cpu_dropout!r}: choose one of {', '.join(CPU_DROPOUT)}")
        if self.n_embd % self.n_head:
            raise ProfileError(f"n_embd {self.n_embd} is not divisible by n_head {self.n_head}: change one of them")

    def _canonical_types(self) -> None:
        """Each field in the type it is declared with, so that equal settings give one key: an
        int given for a float field becomes a float (dropout 0 is 0.0), and a whole float given
        for an int field an int; a fractional value for an int field is refused."""
        for f in fields(self):
            value, kind = getattr(self, f.name), str(f.type)
            if isinstance(value, bool) or value is None:
                continue
            if kind.startswith("float") and isinstance(value, int):
                object.__setattr__(self, f.name, float(value))
            elif kind.startswith("int") and isinstance(value, float):
                if not value.is_integer():
                    flag = "--" + f.name.replace("_", "-")
                    raise ProfileError(f"{f.name} must be a whole number, got {value}: pass e.g. {flag} {int(value)}")
                object.__setattr__(self, f.name, int(value))

    @property
    def decay_iters(self) -> int:
        return self.lr_decay_iters if self.lr_decay_iters is not None else self.max_iters

    @property
    def tokens_per_step(self) -> int:
        return self.batch_size * self.grad_accum * self.block_size

    @property
    def training_tokens(self) -> int:
        """Tokens one run trains on: its steps times its tokens per step."""
        return self.max_iters * self.tokens_per_step

    def to_dict(self) -> dict:
        """Every field, as a record stores it and a run's key hashes it (fields added later are
        left out at the default the earlier records were made with)."""
        return without_late_defaults(asdict(self))

    def override(self, **changes) -> "Profile":
        """A copy with some fields changed (``None`` values are ignored)."""
        known = {f.name for f in fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise ProfileError(f"unknown profile {plural('field', len(unknown))} {', '.join(sorted(unknown))}: choose from {', '.join(sorted(known))}")
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


PROFILES: dict[str, Profile] = {
    "smoke": Profile(
        name="smoke", n_layer=2, n_head=2, n_embd=32, block_size=32, batch_size=16, max_iters=150,
        learning_rate=3e-3, min_lr=3e-4, warmup_iters=10, eval_interval=50, eval_iters=4, log_interval=10,
    ),
    "cpu": Profile(name="cpu"),
    "ladder-0.1m": Profile(name="ladder-0.1m", n_embd=48),
    "ladder-0.3m": Profile(name="ladder-0.3m", n_embd=80),
    "paper-10m": Profile(
        name="paper-10m", n_layer=6, n_head=6, n_embd=384, block_size=256, dropout=0.2, batch_size=64,
        max_iters=5000, learning_rate=1e-3, min_lr=1e-4, warmup_iters=100, beta2=0.99,
        eval_interval=250, eval_iters=200, log_interval=10, precision="bf16", cpu_dropout="int32",
        cpu_micro_batch=16,
    ),
    "paper-124m": Profile(
        name="paper-124m", dataset="openwebtext", n_layer=12, n_head=12, n_embd=768, block_size=1024,
        dropout=0.0, batch_size=16, grad_accum=4, max_iters=4000, learning_rate=6e-4, min_lr=6e-5,
        warmup_iters=200, beta2=0.95, eval_interval=250, eval_iters=100, log_interval=10, precision="bf16",
        cpu_dropout="int32",
    ),
}


# The FFNOnly escape study: the ``cpu`` recipe with dropout 0.2 (as paper-10m) or with three
# times the step budget (the schedule stretched with it).
#: The profile whose records the committed book shows: the stand-in the scorecard judges the
#: paper's 10M claims with.
BOOK_PROFILE = "cpu"

PROFILES["cpu-dropout"] = replace(PROFILES["cpu"], name="cpu-dropout", dropout=0.2)
PROFILES["cpu-long"] = replace(PROFILES["cpu"], name="cpu-long", max_iters=6000)
PROFILES["smoke-dropout"] = replace(PROFILES["smoke"], name="smoke-dropout", dropout=0.2)
#: Each stand-in profile and its twin with nanoGPT's shakespeare_char dropout (0.2, as
#: ``paper-10m``): the claims the central sweep decides are judged at both.
DROPOUT_TWIN: dict[str, str] = {"cpu": "cpu-dropout", "smoke": "smoke-dropout"}
PROFILES["smoke-long"] = replace(PROFILES["smoke"], name="smoke-long", max_iters=450)

# The ladder's top rungs, towards the paper's model at the ladder's budget (2,000 steps of
# 32 x 64 tokens): width 256 (about 3.2M parameters), and the paper-10m shape itself
# (6 layers, 6 heads, width 384: about 10.7M) with the ladder's context, batch and steps.
PROFILES["ladder-3m"] = replace(PROFILES["cpu"], name="ladder-3m", n_embd=256)
PROFILES["ladder-10m"] = replace(PROFILES["cpu"], name="ladder-10m", n_layer=6, n_head=6, n_embd=384)

# The budget study (residual_lib.study.budget): the cpu shape for ten times the budget, 20,000 steps
# (41M tokens, half paper-10m's), at a constant learning rate after warm-up (min_lr is the
# peak), so that a run's first steps do not depend on its budget; the fixed batches every 250
# steps, the training curves every 50.
PROFILES["cpu-budget"] = replace(PROFILES["cpu"], name="cpu-budget", max_iters=20_000, min_lr=1e-3,
                                 eval_interval=250, log_interval=50)
PROFILES["smoke-budget"] = replace(PROFILES["smoke"], name="smoke-budget", max_iters=300, min_lr=3e-3)

# The gain confound's timing (chapter 5): the first 500 steps of a ``cpu`` run, evaluated on the
# fixed batches every 20 steps. The schedule still decays over the cpu run's 2,000 steps, so each
# step trains exactly as the cpu run's does; the paper's "~200 steps" of a 5,000-step run is
# step 80 of 2,000.
PROFILES["cpu-gain-early"] = replace(PROFILES["cpu"], name="cpu-gain-early", max_iters=500, lr_decay_iters=2000,
                                     eval_interval=20, eval_noise_repeats=0)
PROFILES["smoke-gain-early"] = replace(PROFILES["smoke"], name="smoke-gain-early", max_iters=50,
                                       lr_decay_iters=150, eval_interval=10, eval_noise_repeats=0)
#: Each profile and the profile that times its gain runs' first steps (:data:`PROFILES` above).
GAIN_TIMING: dict[str, str] = {"cpu": "cpu-gain-early", "smoke": "smoke-gain-early"}

# The paper's own 10M setting beside each stand-in (chapter 12): paper-10m itself, and at smoke a
# smoke model with paper-10m's dropout and a longer run, so that the chapter's code is exercised
# in seconds by the tests.
PROFILES["smoke-paper"] = replace(PROFILES["smoke"], name="smoke-paper", dropout=0.2, max_iters=200, eval_interval=25)
#: Each stand-in (and paper-10m itself) and the profile that runs the paper's 10M setting beside it.
PAPER_SCALE: dict[str, str] = {"cpu": "paper-10m", "paper-10m": "paper-10m", "smoke": "smoke-paper"}

PROFILES["smoke-ladder-s"] = replace(PROFILES["smoke"], name="smoke-ladder-s", n_embd=12)
PROFILES["smoke-ladder-m"] = replace(PROFILES["smoke"], name="smoke-ladder-m", n_embd=20)

#: The scale ladder's rungs, smallest first, at one budget (context 64, batch 32, 2,000
#: steps: 4.1M training tokens): four layers at widths 48 to 256, then the paper-10m shape
#: (6 layers, 6 heads, width 384) itself.
LADDERS: dict[str, tuple[str, ...]] = {
    "cpu": ("ladder-0.1m", "ladder-0.3m", "cpu", "ladder-3m", "ladder-10m"),
    "smoke": ("smoke-ladder-s", "smoke-ladder-m", "smoke"),
}


#: Rungs trained at fewer seeds than the ladder's others: the 10M rung costs over an hour a
#: run on one core, so it asks for its first seed (more where machine time allows).
LADDER_SEEDS: dict[str, int] = {"ladder-10m": 1}


def ladder(profile: str) -> tuple[str, ...]:
    """The ladder shown next to ``profile``: its own ladder, else the ``cpu`` one."""
    return LADDERS.get(profile, LADDERS["cpu"])


def get_profile(name: str | Profile, **overrides) -> Profile:
    """A profile by name (or a :class:`Profile` itself), with ``overrides`` applied."""
    if isinstance(name, Profile):
        return name.override(**overrides) if overrides else name
    if name not in PROFILES:
        raise ProfileError(f"unknown profile {name!r}: choose one of {', '.join(PROFILES)}")
    return PROFILES[name].override(**overrides)
