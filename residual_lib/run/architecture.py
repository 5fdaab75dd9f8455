"""What a model is, as plain data (no torch): the residual variants and the hyper-parameters
that shape a model. The model (:mod:`residual_lib.run.model`) builds from these; the profiles
read them without importing torch."""

from __future__ import annotations

from dataclasses import dataclass

#: The sublayer in the attention slot of every block: attention, the position-blind
#: mixer, or a per-position MLP (no path between positions).
TOKEN_SUBLAYERS = ("attention", "mixer", "pointwise")

# variant name -> (attn_residual, ffn_residual, sublayer in the attention slot)
VARIANTS: dict[str, tuple[bool, bool, str]] = {
    "full": (True, True, "attention"),
    "attn_only": (True, False, "attention"),  # FFN residual removed
    "ffn_only": (False, True, "attention"),  # attention residual removed
    "no_residual": (False, False, "attention"),
    # The paper's section 7 test: AttnOnly's layout with attention replaced by a
    # position-blind token mixer (see model.CausalMeanMixer).
    "mixer": (True, False, "mixer"),
    # Its control: the mixer without the running mean, so the same parameters with no
    # path between positions (see model.PointwiseMLP). What it closes of the FFNOnly-AttnOnly
    # gap, the mixer's mixing cannot claim.
    "pointwise": (True, False, "pointwise"),
}

#: The four residual configurations of the paper, in the order the pages show them.
CENTRAL_VARIANTS = ("full", "attn_only", "ffn_only", "no_residual")
#: How a reader meets the central variants in prose, tables and figures (the names above are
#: code: they stay in commands, keys and file names).
DISPLAY_NAMES = {"full": "Full", "attn_only": "AttnOnly", "ffn_only": "FFNOnly", "no_residual": "NoResidual"}


#: How dropout draws its masks on CPU (:attr:`Architecture.cpu_dropout`): torch's own
#: (``nn.Dropout``, and SDPA's inside attention), or ``int32``: 32-bit random integers against a
#: threshold, several times cheaper to draw (see :func:`residual_lib.run.model.keep_mask`).
CPU_DROPOUT = ("torch", "int32")

#: Fields added after records existed, with the default every earlier record was made with: a
#: profile's or a model's dict leaves them out at that default, so that those records' keys hold.
LATE_FIELDS = {"cpu_dropout": "torch", "precision": "fp32", "cpu_micro_batch": None}


def without_late_defaults(fields: dict) -> dict:
    """``fields`` without the :data:`LATE_FIELDS` that hold their default."""
    return {k: v for k, v in fields.items() if not (k in LATE_FIELDS and v == LATE_FIELDS[k])}


#: Block 0's sub-modules whose gradient norms are logged on their own (see ResidualGPT.layer_groups).
LAYER0_PARTS = ("attn", "mlp", "ln")


@dataclass(frozen=True)
class Architecture:
    """The model's hyper-parameters that a training profile sets (and
    :class:`residual_lib.run.profiles.Profile` inherits): defaults of the ``cpu`` profile."""

    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    block_size: int = 64
    dropout: float = 0.0
    bias: bool = True
    init_std: float = 0.02
    #: dropout masks on CPU: ``torch`` or ``int32`` (:data:`CPU_DROPOUT`); CUDA always uses torch's
    cpu_dropout: str = "torch"
