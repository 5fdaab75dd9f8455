"""What a model is, as plain data (no torch): the residual variants and the hyper-parameters
that shape a model. The model (:mod:`residual_lib.run.model`) builds from these; the profiles
read them without importing torch."""

from __future__ import annotations

import re
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


def prose_names(text: str) -> str:
    """:func:`display_name` applied to the prose of a Markdown or plain text, not to what it
    sets in backticks (commands and code keep the code names)."""
    parts = text.split("`")
    return "`".join(display_name(part) if i % 2 == 0 else part for i, part in enumerate(parts))


#: ``full`` where it names a run: after a profile, before its seed (``cpu full seed 42``).
_FULL_RUN = re.compile(r"(?<=\S )full(?= seed \d)")


def display_name(text: str) -> str:
    """``text`` with each variant's code name written as the reader meets it: ``attn_only`` ->
    ``AttnOnly`` anywhere in it, ``full`` only as the whole text or where it names a run
    (``cpu full seed 42``): it is also an English word."""
    if text in DISPLAY_NAMES:
        return DISPLAY_NAMES[text]
    for code in ("attn_only", "ffn_only", "no_residual"):
        text = text.replace(code, DISPLAY_NAMES[code])
    return _FULL_RUN.sub(DISPLAY_NAMES["full"], text)

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
