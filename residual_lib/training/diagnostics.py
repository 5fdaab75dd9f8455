"""Internal diagnostics of a ResidualGPT: gradient norms per layer, the residual
stream's norms, representation drift and attention's diagonal mass.

Conventions used throughout:

* The *residual stream* ``h_0 .. h_L`` is the list :meth:`ResidualGPT.forward`
  returns with ``return_hidden=True``: ``h_0`` is the embedding output (token plus
  position embedding), ``h_l`` the output of block ``l - 1``. "Layer ``l``" is
  transformer block ``l`` (0-based), whose output is ``h_{l+1}``.
* Norms are Euclidean norms over the channel dimension, averaged over every
  token of the batch.
"""

from __future__ import annotations

import torch

from ..run.model import ResidualGPT


@torch.no_grad()
def grad_norms(model: ResidualGPT) -> dict[str, float]:
    """Gradient L2 norm of each parameter group of :meth:`ResidualGPT.layer_groups`
    (``embedding``, ``layer_0`` ... ``layer_{L-1}``, ``ln_f``), read from ``.grad``
    before clipping. ``layer_0`` covers every parameter of the first transformer block:
    LN1, attention (``c_attn``, ``c_proj``) or the mixer, LN2 and the MLP -- not the
    embeddings, which are reported on their own."""
    out = {}
    for name, params in model.layer_groups().items():
        grads = [p.grad for p in params if p.grad is not None]
        if not grads:
            out[name] = 0.0
            continue
        norms = torch._foreach_norm(grads)
        out[name] = float(torch.linalg.vector_norm(torch.stack(norms)))
    return out


def hidden_norms(hidden: list[torch.Tensor]) -> torch.Tensor:
    """Mean per-token L2 norm of each residual-stream state ``h_0 .. h_L``, shape (L + 1,)
    (a tensor; :func:`residual_lib.training.batched.hidden_norms` gives the same for a group, one row per model)."""
    return torch.stack([h.detach().float().norm(dim=-1).mean() for h in hidden])


def norm_growth(norms: list[float]) -> float:
    """Hidden-state norm growth as this project defines it: the norm of the last block's
    output over that of the first block's output, ``|h_L| / |h_1|``. The paper's summary
    reports growth figures without a definition; :data:`residual_lib.study.analysis.GROWTH_DEFINITIONS`
    computes the plausible alternatives from the same records."""
    return norms[-1] / norms[1]


@torch.no_grad()
def representation_drift(hidden: list[torch.Tensor]) -> float:
    """How far the blocks after the first move each token's representation, relative to
    its size after the first block: ``mean_tokens |h_L - h_1| / mean_tokens |h_1|``, with
    ``h_1`` the output of block 0 and ``h_L`` that of the last block (before the final
    LayerNorm), on the same tokens; this project's definition (the paper's summary gives
    none). With both residuals the later blocks add updates to
    ``h_1``; without an identity path they replace it, and drift measures how large the
    replacement is. The reference is ``h_1``, as in :func:`norm_growth`, rather than the
    embedding, whose small initial norm (std 0.02) would dominate the ratio."""
    h1, hL = hidden[1].float(), hidden[-1].float()
    return float((hL - h1).norm(dim=-1).mean() / h1.norm(dim=-1).mean())


@torch.no_grad()
def attention_diagonal_mass(model: ResidualGPT, hidden: list[torch.Tensor]) -> list[list[float]]:
    """``alpha_tt`` per layer and head: the attention weight a position puts on itself,
    averaged over the batch and over positions ``t >= 1`` (position 0 can only attend to
    itself, so its weight is 1 whatever the model learned). The routing hypothesis says
    AttnOnly learns ``alpha_tt ~= 1``. For the ``mixer`` variant this is the mixer's
    fixed ``1/t`` weight, one "head" per layer."""
    out = []
    for block, h in zip(model.transformer.h, hidden[:-1]):
        probs = block.attn.attention_probs(block.ln_1(h))  # (B, nh, T, T)
        diag = probs.diagonal(dim1=-2, dim2=-1)[..., 1:]  # (B, nh, T-1)
        out.append([float(v) for v in diag.mean(dim=(0, 2))])
    return out


@torch.no_grad()
def final_diagnostics(model: ResidualGPT, x: torch.Tensor) -> dict:
    """All end-of-training diagnostics on one batch ``x`` (the trainer uses the first
    fixed validation batch, so every run is measured on the same tokens)."""
    was_training = model.training
    model.eval()
    try:
        _, _, hidden = model(x, return_hidden=True)
        norms = hidden_norms(hidden).tolist()
        alpha = attention_diagonal_mass(model, hidden)
    finally:
        model.train(was_training)
    return {
        "hidden_norms": norms,
        "hidden_norm_growth": norm_growth(norms),
        "representation_drift": representation_drift(hidden),
        "alpha_tt": alpha,
        "alpha_tt_mean": sum(sum(layer) for layer in alpha) / sum(len(layer) for layer in alpha),
    }
