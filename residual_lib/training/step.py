"""One optimisation step, the same for one model and for K fused ones.

Optimisation follows nanoGPT's ``train.py``: AdamW with weight decay on 2-D weights only
(matrices and embeddings; biases and LayerNorm gains are not decayed), linear warm-up then
cosine decay to ``min_lr``, gradient clipping on each model's global norm, gradient
accumulation. :func:`take_step` is the step's one definition; a trainer
(:class:`residual_lib.training.train.SingleTrainer`, :class:`residual_lib.training.fused.FusedTrainer`)
supplies only what differs between one model and a stack of them: how a micro-batch's
losses are computed, and how gradient norms are taken and clipped per model.
"""

from __future__ import annotations

import math
from typing import Protocol

import torch

from ..run.profiles import Profile
from .state import RunState


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


def is_log_step(step: int, profile: Profile) -> bool:
    return step % profile.log_interval == 0 or step == profile.max_iters - 1


class Stepper(Protocol):
    """What :func:`take_step` needs of a trainer of K models (K = 1 for a single run)."""

    profile: Profile
    states: list[RunState]  # one per model, in the order of the hooks' outputs
    device: str
    optimizer: torch.optim.Optimizer
    slices: int  # each micro-batch is served as this many equal slices (Profile.cpu_micro_batch)

    def losses(self, with_hidden: bool) -> tuple[torch.Tensor, list | None]:
        """One micro-batch's (or slice's) per-model losses (shape (K,) or a scalar) and, when asked,
        each model's hidden-state norms."""

    def layer_norms(self) -> list[dict]:
        """Each model's gradient norm per layer group."""

    def clip(self, max_norm: float) -> torch.Tensor:
        """Clip each model's gradients to ``max_norm``; the norms before clipping, shape (K,)."""


def take_step(trainer: Stepper, step: int, log: bool) -> None:
    """One optimisation step of every model of ``trainer``: set the learning rate, accumulate
    gradients over ``grad_accum`` micro-batches, clip each model's global norm, step AdamW,
    and, when ``log``, append each model's loss, learning rate and norms to its curves."""
    profile = trainer.profile
    lr = lr_at(step, profile)
    for group in trainer.optimizer.param_groups:
        group["lr"] = lr
    loss_sum = torch.zeros(len(trainer.states), device=trainer.device)
    h_norms = None
    micro_steps = profile.grad_accum * trainer.slices  # equal-sized micro-batches: the mean of means is the mean
    for micro in range(micro_steps):
        losses, hidden = trainer.losses(with_hidden=log and micro == 0)
        # models are independent, so d(sum_k loss_k)/d(params_k) = d(loss_k)/d(params_k)
        (losses / micro_steps).sum().backward()
        loss_sum += losses.detach()
        h_norms = hidden if hidden is not None else h_norms
    per_layer = trainer.layer_norms() if log else None  # before clipping, as nanoGPT logs them
    totals = trainer.clip(profile.grad_clip if profile.grad_clip > 0 else float("inf"))
    trainer.optimizer.step()
    trainer.optimizer.zero_grad(set_to_none=True)
    if log:
        norms = totals.tolist()
        for k, state in enumerate(trainer.states):
            state.log_train(step, float(loss_sum[k]) / micro_steps, lr, norms[k], per_layer[k], h_norms[k])
