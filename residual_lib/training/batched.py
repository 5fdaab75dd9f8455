"""The forward pass of K models of one shape at once, on weights with a leading model axis.

:mod:`residual_lib.training.fused` trains a group of models on their stacked parameters
(``torch.func.stack_module_state``: each weight of shape ``(K, ...)``). This module computes
the group's losses from those tensors directly, with ordinary batched operations, instead of
``torch.func.vmap`` over :class:`~residual_lib.run.model.ResidualGPT`'s forward:

* a linear layer is one ``torch.baddbmm`` (``bmm`` without a bias) over the model axis:
  ``(K, N, in) @ (K, in, out)``;
* a LayerNorm normalises without its affine part, then scales and shifts by each model's own
  weight and bias;
* the token embedding is one lookup in the ``(K * vocab, C)`` table, each model's token ids
  offset by ``k * vocab``; the tied head is a ``bmm`` with the same table;
* attention has no weights: the model axis is folded into the batch, ``(K * B, heads, T,
  head_dim)``, and one ``scaled_dot_product_attention`` call serves the group. Under ``vmap``
  the fast CUDA kernels' backward passes fail (the trainer fell back to the ``math`` kernel);
  here they see an ordinary batch;
* the residual switches and the gain are per-model buffers of shape ``(K,)``, so the four
  central variants share one group.

What a single run computes, this computes for each model: the same operations in the same
order, so in fp32 the losses agree with single runs to float rounding (batched products may
sum in another order). Dropout draws one mask over the whole group, so each model gets masks
of its own, but not the masks it would draw alone.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..run.model import GPTConfig


def _linear(x: torch.Tensor, params: dict, name: str) -> torch.Tensor:
    """``x @ W.T + b`` per model: ``x`` (K, ..., in), ``W`` (K, out, in), ``b`` (K, out)."""
    K, shape = x.shape[0], x.shape[1:-1]
    flat = x.reshape(K, -1, x.shape[-1])
    weight = params[f"{name}.weight"].transpose(1, 2)
    bias = params.get(f"{name}.bias")
    out = torch.baddbmm(bias.unsqueeze(1), flat, weight) if bias is not None else torch.bmm(flat, weight)
    return out.reshape(K, *shape, out.shape[-1])


def _layer_norm(x: torch.Tensor, params: dict, name: str, eps: float = 1e-5) -> torch.Tensor:
    """LayerNorm without affine, then each model's own scale and shift."""
    view = (x.shape[0],) + (1,) * (x.dim() - 2) + (x.shape[-1],)
    y = F.layer_norm(x, x.shape[-1:], eps=eps) * params[f"{name}.weight"].view(view)
    bias = params.get(f"{name}.bias")
    return y + bias.view(view) if bias is not None else y


def _dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    return F.dropout(x, p, training) if training and p > 0 else x


def _per_model(t: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A (K,) buffer shaped to broadcast over ``like`` (K, ...)."""
    return t.view((t.shape[0],) + (1,) * (like.dim() - 1))


def _attention(x: torch.Tensor, params: dict, name: str, config: GPTConfig, training: bool) -> torch.Tensor:
    K, B, T, C = x.shape
    H = config.n_head
    q, k, v = _linear(x, params, f"{name}.c_attn").split(C, dim=-1)
    # the model axis folded into the batch: attention has no weights of its own
    q, k, v = (t.reshape(K * B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
    p = config.dropout if training else 0.0
    y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
    y = y.transpose(1, 2).reshape(K, B, T, C)
    return _dropout(_linear(y, params, f"{name}.c_proj"), config.dropout, training)


def _mixer(x: torch.Tensor, params: dict, name: str, config: GPTConfig, training: bool) -> torch.Tensor:
    """:class:`~residual_lib.run.model.CausalMeanMixer` (or, for ``pointwise``, its control)."""
    u = _linear(F.gelu(_linear(x, params, f"{name}.fc1")), params, f"{name}.fc2")
    if not config.pointwise:
        counts = torch.arange(1, x.shape[2] + 1, device=x.device, dtype=u.dtype).view(1, 1, -1, 1)
        u = u.cumsum(dim=2) / counts
    return _dropout(_linear(u, params, f"{name}.c_proj"), config.dropout, training)


def _mlp(x: torch.Tensor, params: dict, name: str, config: GPTConfig, training: bool) -> torch.Tensor:
    h = F.gelu(_linear(x, params, f"{name}.c_fc"))
    return _dropout(_linear(h, params, f"{name}.c_proj"), config.dropout, training)


def forward(params: dict, buffers: dict, config: GPTConfig, idx: torch.Tensor, targets: torch.Tensor | None = None,
            training: bool = True, return_hidden: bool = False):
    """The group's logits (K, B, T, vocab) and, with ``targets``, each model's mean
    cross-entropy (K,); with ``return_hidden`` also the residual stream of every model, as
    :meth:`ResidualGPT.forward` gives it for one (each entry (K, B, T, C)). ``params`` and
    ``buffers`` are ``stack_module_state``'s, keyed as :class:`ResidualGPT`'s (the tied head is
    the token embedding); ``idx`` and ``targets`` are (K, B, T)."""
    K, B, T = idx.shape
    if T > config.block_size:
        raise ValueError(f"sequence of length {T} exceeds block_size {config.block_size}")
    wte = params["transformer.wte.weight"]  # (K, vocab, C)
    V = wte.shape[1]
    offsets = (torch.arange(K, device=idx.device) * V).view(K, 1, 1)
    tokens = F.embedding(idx + offsets, wte.reshape(K * V, -1))
    x = _dropout(tokens + params["transformer.wpe.weight"][:, :T].unsqueeze(1), config.dropout, training)
    sublayer = _mixer if (config.mixer or config.pointwise) else _attention
    hidden = [x]
    for i in range(config.n_layer):
        name = f"transformer.h.{i}"
        gain = _per_model(buffers[f"{name}.gain"], x)
        a = sublayer(_layer_norm(x, params, f"{name}.ln_1"), params, f"{name}.attn", config, training)
        h = x * _per_model(buffers[f"{name}.attn_skip"], x) + a * gain
        f = _mlp(_layer_norm(h, params, f"{name}.ln_2"), params, f"{name}.mlp", config, training)
        x = h * _per_model(buffers[f"{name}.ffn_skip"], h) + f * gain
        hidden.append(x)
    x = _layer_norm(x, params, "transformer.ln_f")
    logits = torch.bmm(x.reshape(K, B * T, -1), wte.transpose(1, 2)).view(K, B, T, V)
    loss = None
    if targets is not None:
        logits_hp = logits.to(torch.promote_types(logits.dtype, torch.float32))
        loss = F.cross_entropy(logits_hp.reshape(-1, V), targets.reshape(-1), reduction="none").view(K, -1).mean(1)
    if return_hidden:
        return logits, loss, hidden
    return logits, loss


def hidden_norms(hidden: list[torch.Tensor]) -> torch.Tensor:
    """Each model's mean per-token L2 norm of every residual-stream state, shape (K, L + 1):
    :func:`residual_lib.training.diagnostics.hidden_norms` per model."""
    return torch.stack([h.detach().float().norm(dim=-1).mean(dim=(1, 2)) for h in hidden], dim=1)

