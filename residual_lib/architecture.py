"""What a model is, as plain data (no torch): the residual variants and the hyper-parameters
that shape a model. The model (:mod:`residual_lib.model`) builds from these; the profiles
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

#: Block 0's sub-modules whose gradient norms are logged on their own (see ResidualGPT.layer_groups).
LAYER0_PARTS = ("attn", "mlp", "ln")


@dataclass(frozen=True)
class Architecture:
    """The model's hyper-parameters that a training profile sets (and
    :class:`residual_lib.profiles.Profile` inherits): defaults of the ``cpu`` profile."""

    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    block_size: int = 64
    dropout: float = 0.0
    bias: bool = True
    init_std: float = 0.02
