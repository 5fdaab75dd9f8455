"""ResidualGPT: a GPT-2-style Pre-LN decoder whose residual connections can be removed.

Each block computes, with ``g`` the runtime gain (1.0 unless a gain experiment
asks otherwise)::

    h = x + g * Attn(LN1(x))   if attn_residual else   h = g * Attn(LN1(x))
    y = h + g * FFN(LN2(h))    if ffn_residual  else   y = g * FFN(LN2(h))

The four configurations of the paper are named in :data:`residual_lib.run.architecture.VARIANTS`. Everything
else follows nanoGPT's ``model.py``: learned position embeddings, a final
LayerNorm, an LM head tied to the token embedding, GELU MLP of width ``4 * C``,
normal(0, ``init_std``) initialisation with the residual projections scaled by
``1 / sqrt(2 * n_layer)``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import torch
import torch.nn as nn
import torch.nn.functional as F

from .architecture import VARIANTS, Architecture, without_late_defaults


@dataclass(frozen=True)
class GPTConfig(Architecture):
    vocab_size: int = 65
    attn_residual: bool = True
    ffn_residual: bool = True
    mixer: bool = False
    pointwise: bool = False
    gain: float = 1.0

    @classmethod
    def for_variant(cls, variant: str, **kwargs) -> "GPTConfig":
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}: choose one of {', '.join(VARIANTS)}")
        attn_residual, ffn_residual, sublayer = VARIANTS[variant]
        return cls(attn_residual=attn_residual, ffn_residual=ffn_residual, mixer=sublayer == "mixer",
                   pointwise=sublayer == "pointwise", **kwargs)

    @classmethod
    def for_profile(cls, profile: Architecture, variant: str, **kwargs) -> "GPTConfig":
        """The model a profile trains for ``variant`` (``kwargs``: ``vocab_size``, ``gain``)."""
        return cls.for_variant(variant, **{f.name: getattr(profile, f.name) for f in fields(Architecture)}, **kwargs)

    def to_dict(self) -> dict:
        out = without_late_defaults(asdict(self))
        if not self.pointwise:
            del out["pointwise"]  # as records made before the field existed store it
        return out


#: P(drop) of :func:`keep_mask` is ``round(p * 2^32) / 2^32``: within 2^-33 of ``p``.
def _drop_threshold(p: float) -> int:
    return -(2**31) + round(p * 2**32)


def keep_mask(shape: torch.Size, p: float, device) -> torch.Tensor:
    """A boolean mask of ``shape`` that keeps each element with probability ``1 - p`` (within
    2^-33), drawn from torch's generator as 32-bit random integers compared to a threshold:
    on CPU about eight times cheaper than ``bernoulli_``, which draws a double per element.
    The ``int32`` setting of :attr:`~residual_lib.run.architecture.Architecture.cpu_dropout`."""
    n = math.prod(shape)
    bits = torch.empty((n + 1) // 2, dtype=torch.int64, device=device).random_(-(2**63), None)
    return bits.view(torch.int32)[:n].view(shape) >= _drop_threshold(p)


class Dropout(nn.Dropout):
    """``nn.Dropout``, or, with ``int32_masks`` on CPU, the same dropout with :func:`keep_mask`'s
    masks (the fused trainer's batched forward draws torch's own, one mask over the whole group)."""

    def __init__(self, p: float, int32_masks: bool = False):
        super().__init__(p)
        self.int32_masks = int32_masks

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.int32_masks and self.training and self.p > 0 and x.device.type == "cpu":
            return x * keep_mask(x.shape, self.p, x.device) * (1.0 / (1.0 - self.p))
        return super().forward(x)


def causal_attention_int32_dropout(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, p: float) -> torch.Tensor:
    """Causal softmax attention with dropout ``p`` on its weights, as SDPA's math kernel computes
    it with dropout, but with :func:`keep_mask`'s masks, and the ``1 / (1 - p)`` rescaling
    applied to the (T times smaller) output instead of the weights. Under bf16 autocast the
    scores and weights are bf16, as in SDPA's math kernel (CPU softmax accumulates in fp32); a
    softmax with fp32 output costs 15% of a paper-10m step here and changes little, since the
    scores are already rounded to bf16 by the matrix multiply that makes them."""
    T = q.shape[-2]
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    weights = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    return ((weights * keep_mask(weights.shape, p, q.device)) @ v) * (1.0 / (1.0 - p))


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        assert config.n_embd % config.n_head == 0, "n_embd must be divisible by n_head"
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.c_proj.residual_projection = True
        self.dropout = config.dropout
        self.int32_masks = config.cpu_dropout == "int32"
        self.resid_dropout = Dropout(config.dropout, self.int32_masks)

    def _qkv(self, x: torch.Tensor):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        shape = (B, T, self.n_head, C // self.n_head)
        return (t.view(shape).transpose(1, 2) for t in (q, k, v))  # (B, nh, T, hs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self._qkv(x)
        p = self.dropout if self.training else 0.0
        if p > 0 and self.int32_masks and x.device.type == "cpu":
            y = causal_attention_int32_dropout(q, k, v, p)
        else:
            # SDPA dispatches to flash / memory-efficient kernels on CUDA; on CPU to its flash
            # kernel without dropout, to the math kernel (weights and mask in memory) with it.
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))

    @torch.no_grad()
    def attention_probs(self, x: torch.Tensor) -> torch.Tensor:
        """The softmax attention matrix, (B, n_head, T, T), computed explicitly
        (SDPA does not return it). ``x`` is the block's LN1 output."""
        q, k, _ = self._qkv(x)
        T = x.shape[1]
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.shape[-1])
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        return att.masked_fill(~mask, float("-inf")).softmax(dim=-1)


class CausalMeanMixer(nn.Module):
    """A position-blind token mixer used in place of attention (the ``mixer`` variant).

    What it computes, for the LN1 output ``x`` at positions ``1..T``::

        u_s = W2 GELU(W1 x_s)                    (a per-token MLP, C -> C -> C)
        m_t = (1 / t) * sum_{s <= t} u_s         (causal running mean over positions)
        out_t = dropout(c_proj(m_t))

    Why it is *cross-position* mixing: ``out_t`` depends on every earlier token,
    as attention's output does, so information can move between positions.

    Why it is *position-blind*: the mixing weights are fixed at ``1/t`` for every
    earlier position. They depend neither on content (no queries or keys) nor on
    the offset ``t - s``, so permuting the tokens before ``t`` leaves ``out_t``
    unchanged, and the mixer cannot single out the current token: its diagonal
    mass is ``alpha_tt = 1/t``, whereas attention can learn ``alpha_tt ~= 1``.
    The routing hypothesis says AttnOnly recovers because attention can learn that
    self-routing; a mixer that moves information across positions but cannot
    route it is the paper's control for that claim.

    Parameters: two C x C matrices plus ``c_proj`` (3 C^2), against attention's
    4 C^2; the block's FFN is unchanged.
    """

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.fc1 = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.fc2 = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.c_proj.residual_projection = True
        self.resid_dropout = Dropout(config.dropout, config.cpu_dropout == "int32")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u = self.fc2(F.gelu(self.fc1(x)))
        counts = torch.arange(1, x.shape[1] + 1, device=x.device, dtype=u.dtype).view(1, -1, 1)
        m = u.cumsum(dim=1) / counts
        return self.resid_dropout(self.c_proj(m))

    @torch.no_grad()
    def attention_probs(self, x: torch.Tensor) -> torch.Tensor:
        """The mixer's implicit mixing matrix, ``1/t`` on and below the diagonal,
        shaped like attention's with one head."""
        B, T, _ = x.shape
        w = torch.ones(T, T, device=x.device).tril()
        w = w / w.sum(dim=-1, keepdim=True)
        return w.expand(B, 1, T, T)


class PointwiseMLP(CausalMeanMixer):
    """The mixer's control (the ``pointwise`` variant): the same three C x C layers,
    ``out_t = dropout(c_proj(W2 GELU(W1 x_t)))``, without the running mean, so that
    position ``t`` sees only its own token. The same parameter count as the mixer
    (attention has one C x C matrix more), and no cross-position path at all: whatever
    part of the FFNOnly-AttnOnly gap this closes is capacity, not mixing."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.resid_dropout(self.c_proj(self.fc2(F.gelu(self.fc1(x)))))

    @torch.no_grad()
    def attention_probs(self, x: torch.Tensor) -> torch.Tensor:
        """The identity: each position reads only itself (``alpha_tt = 1``)."""
        B, T, _ = x.shape
        return torch.eye(T, device=x.device).expand(B, 1, T, T)


def token_sublayer(config: GPTConfig) -> nn.Module:
    """The module in a block's attention slot (see :data:`residual_lib.run.architecture.TOKEN_SUBLAYERS`)."""
    if config.mixer:
        return CausalMeanMixer(config)
    if config.pointwise:
        return PointwiseMLP(config)
    return CausalSelfAttention(config)


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.c_proj.residual_projection = True
        self.dropout = Dropout(config.dropout, config.cpu_dropout == "int32")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.attn_residual = config.attn_residual
        self.ffn_residual = config.ffn_residual
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = token_sublayer(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)
        # A constant, not a parameter, multiplying each sublayer's output: this book's
        # reading of the paper's "runtime gain scaling" (the summary does not say where
        # the gain acts). AdamW can undo any such constant by rescaling the sublayer's
        # weights, which is the confound the paper reports.
        self.register_buffer("gain", torch.tensor(float(config.gain)), persistent=False)
        self.use_gain = config.gain != 1.0
        # The residual switches as 1.0 / 0.0 constants too, for fused training
        # (residual_lib.training.fused): there one module graph serves models of different
        # variants, which then differ only in these buffers. x * 1.0 + a and
        # x * 0.0 + a are bitwise x + a and a, so both paths compute the same numbers.
        self.register_buffer("attn_skip", torch.tensor(float(config.attn_residual)), persistent=False)
        self.register_buffer("ffn_skip", torch.tensor(float(config.ffn_residual)), persistent=False)
        self.tensor_switches = False

    def _scale(self, y: torch.Tensor) -> torch.Tensor:
        return y * self.gain if self.use_gain else y

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.tensor_switches:
            h = x * self.attn_skip + self.attn(self.ln_1(x)) * self.gain
            return h * self.ffn_skip + self.mlp(self.ln_2(h)) * self.gain
        # The sublayers' outputs join the stream in its own dtype. Under bf16 autocast they come
        # out in bf16: Full's stream stays fp32 (x + a promotes), but a variant without a residual
        # would carry a bf16 stream and round every later addition in bf16, a difference between
        # the variants that is not the ablation. (In fp32, .to is the tensor itself: no operation.)
        a = self._scale(self.attn(self.ln_1(x))).to(x.dtype)
        h = x + a if self.attn_residual else a
        f = self._scale(self.mlp(self.ln_2(h))).to(h.dtype)
        return h + f if self.ffn_residual else f


class ResidualGPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=Dropout(config.dropout, config.cpu_dropout == "int32"),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=nn.LayerNorm(config.n_embd, bias=config.bias),
            )
        )
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        # Weight tying: the output projection is the token embedding (as in GPT-2).
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
        # nanoGPT / GPT-2: projections that write into the residual stream get
        # std / sqrt(2 * n_layer), so the stream's variance does not grow with depth
        # when every block adds two such terms.
        for module in self.modules():
            if getattr(module, "residual_projection", False):
                nn.init.normal_(module.weight, 0.0, config.init_std / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, 0.0, self.config.init_std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, 0.0, self.config.init_std)

    def num_params(self, non_embedding: bool = True) -> int:
        """Parameter count; the tied LM head is counted once (as the embedding),
        and position embeddings are left out when ``non_embedding``, as in nanoGPT."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.transformer.wpe.weight.numel()
        return n

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None, return_hidden: bool = False):
        """Returns ``(logits, loss)``; with ``return_hidden`` also the residual
        stream as a list: the embedding output, then each block's output."""
        B, T = idx.shape
        if T > self.config.block_size:
            raise ValueError(f"sequence of length {T} exceeds block_size {self.config.block_size}")
        pos = torch.arange(T, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        hidden = [x]
        for block in self.transformer.h:
            x = block(x)
            hidden.append(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None
        if targets is not None:
            # the loss in at least fp32 (bf16 logits under autocast; fp64 models stay fp64)
            logits_hp = logits.to(torch.promote_types(logits.dtype, torch.float32))
            loss = F.cross_entropy(logits_hp.view(-1, logits.size(-1)), targets.view(-1))
        if return_hidden:
            return logits, loss, hidden
        return logits, loss

    def use_int32_masks(self, enabled: bool) -> "ResidualGPT":
        """Draw dropout masks as :func:`keep_mask` does (``enabled`` and the config asks for it) or
        with torch's own (the fused trainer, whose batched forward uses ``F.dropout``)."""
        enabled = enabled and self.config.cpu_dropout == "int32"
        for module in self.modules():
            if isinstance(module, (Dropout, CausalSelfAttention)):
                module.int32_masks = enabled
        return self

    def use_tensor_switches(self, enabled: bool = True) -> "ResidualGPT":
        """Read the residual switches and the gain from buffers instead of Python flags
        (same numbers; lets ``torch.func`` stack models of different variants)."""
        for block in self.transformer.h:
            block.tensor_switches = enabled
        return self

    def layer_groups(self) -> dict[str, list[nn.Parameter]]:
        """Parameters grouped for per-layer gradient norms: ``embedding`` (wte, which is
        also the tied LM head, and wpe), ``layer_0`` ... ``layer_{L-1}`` (every parameter
        of that block: both LayerNorms, attention or mixer, MLP), ``ln_f``, and block 0 again by
        sub-module: ``layer_0_attn``, ``layer_0_mlp``, ``layer_0_ln`` (both LayerNorms)."""
        groups = {"embedding": [self.transformer.wte.weight, self.transformer.wpe.weight]}
        for i, block in enumerate(self.transformer.h):
            groups[f"layer_{i}"] = list(block.parameters())
        groups["ln_f"] = list(self.transformer.ln_f.parameters())
        # block 0 split by sub-module: the gradient starvation the paper reports is a claim
        # about the first block, and "layer 0's gradient" may mean its attention weights alone
        block = self.transformer.h[0]
        groups["layer_0_attn"] = list(block.attn.parameters())  # attention (or the mixer)
        groups["layer_0_mlp"] = list(block.mlp.parameters())
        groups["layer_0_ln"] = [*block.ln_1.parameters(), *block.ln_2.parameters()]
        return groups
