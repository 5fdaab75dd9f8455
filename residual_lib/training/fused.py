"""Fused training: K models of one shape trained together, step by step, in one process.

A seed sweep trains many small models of the same shape. One such model leaves a GPU
mostly idle, so a fused trainer stacks the K models' parameters along a leading model axis
(``torch.func.stack_module_state``: each weight becomes ``(K, ...)``) and computes every
forward and backward pass once for all of them with batched operations
(:mod:`residual_lib.training.batched`): K small matrix multiplications become one ``bmm``, and the K
models' attention is one kernel call on the folded batch.

What stays per model, exactly as when a model is trained alone:

* initialisation: model ``k`` is built right after ``torch.manual_seed(seed_k)``;
* data order: each model draws its batches from its own generator seeded with its seed;
* gradient clipping: the global norm is taken over model ``k``'s gradients alone and
  only model ``k``'s gradients are scaled;
* the optimiser: AdamW is element-wise, so one AdamW over the stacked tensors keeps a
  separate state (moments, weight decay) for every model, and its weight-decay groups are
  chosen by each weight's shape without the model axis; the learning-rate schedule is the
  profile's, the same for every model of the group;
* evaluation: every model is evaluated on its fixed batches in one batched pass
  (:meth:`FusedTrainer.evaluate`), and so are the final model's evaluation-noise estimates
  (:meth:`FusedTrainer.final_estimates`); diagnostics and the run record are the single-run code's,
  run on model ``k``'s own module after the stacked weights are copied into it, so a fused
  run's record has the same form and key as a single run's.

Models of different variants share a group: the residual switches and the gain are
per-model buffers (:meth:`ResidualGPT.use_tensor_switches`). Only the ``mixer`` and
``pointwise`` variants, whose token sublayer has other parameters than attention, need a
group of their own; :func:`residual_lib.run.runs.fuse_groups` splits a list of runs accordingly
(by :attr:`residual_lib.run.runs.Run.fuse_key`).

Numerics: batched matrix multiplications may sum in another order than K separate ones, so
a fused run matches its single run to float rounding (the test suite checks 1e-5 relative
over the loss curves), not bitwise. Dropout draws one mask over the whole group, so every
model gets masks of its own, but not the masks a single run would draw.
"""

from __future__ import annotations

import copy

import torch
from torch.func import stack_module_state

from ..run.profiles import Profile
from . import batched
from .state import RunState
from .step import adamw, take_step


class FusedTrainer:
    """The stacked parameters of K :class:`RunState` models and their AdamW, with
    :class:`residual_lib.training.train.SingleTrainer`'s interface (``states``, ``optimizer``,
    ``params``, ``step``, ``sync`` and the hooks of :func:`residual_lib.training.step.take_step`):
    :func:`residual_lib.training.train.train_group` drives either."""

    fused = True
    slices = 1  # a group runs each batch whole (Profile.cpu_micro_batch is the single trainer's)

    def __init__(self, states: list[RunState], compile: bool = False):
        self.states = states
        self.profile: Profile = states[0].profile
        self.device = states[0].device
        self.K = len(states)
        models = [s.model for s in states]
        for m in models:
            m.use_tensor_switches(True).use_int32_masks(False)
        self.params, self.buffers = stack_module_state(models)
        # a weightless copy whose forward the stacked tensors are substituted into
        self.skeleton = copy.deepcopy(models[0]).to("meta")
        # moving to "meta" gives each module a new parameter object: tie the head again
        self.skeleton.lm_head.weight = self.skeleton.transformer.wte.weight
        for m in models:
            m.use_tensor_switches(False).use_int32_masks(True)
        names = {id(p): n for n, p in self.skeleton.named_parameters()}
        self.groups = {g: [names[id(p)] for p in ps] for g, ps in self.skeleton.layer_groups().items()}
        # the single trainer's optimiser, the model axis not counting towards a weight's rank
        self.optimizer = adamw(self.params.values(), self.profile, self.device, stacked=1)
        self.config = self.skeleton.config
        self._forward = batched.forward
        if compile:
            self._forward = torch.compile(batched.forward)
        for state in states:
            state.compiled = compile

    def _batches(self):
        xs, ys = zip(*(s.next_batch() for s in self.states))
        return torch.stack(xs), torch.stack(ys)

    @torch.no_grad()
    def _group_norms(self, names: list[str]) -> torch.Tensor:
        """Per-model L2 norm of the gradients of ``names``: shape (K,)."""
        norms = [self.params[n].grad.reshape(self.K, -1).norm(dim=1) for n in names
                 if self.params[n].grad is not None]
        if not norms:
            return torch.zeros(self.K, device=self.device)
        return torch.linalg.vector_norm(torch.stack(norms), dim=0)

    def losses(self, with_hidden: bool):
        """One micro-batch of every model: the losses, shape (K,), and with ``with_hidden`` each
        model's hidden-state norms (the hook :func:`residual_lib.training.step.take_step` calls)."""
        x, y = self._batches()
        with self.states[0].autocast:
            if with_hidden:
                _, losses, hidden = self._forward(self.params, self.buffers, self.config, x, y, return_hidden=True)
                return losses, batched.hidden_norms(hidden).tolist()
            return self._forward(self.params, self.buffers, self.config, x, y)[1], None

    @torch.no_grad()
    def evaluate(self, draws=None) -> list[float]:
        """Every model's validation loss, in one batched pass per batch: model ``k`` on the
        batches its own :class:`~residual_lib.run.batches.ValidationSet` gives (the fixed batches are
        the same for all; random ones are drawn from each model's own generator, as when it
        trains alone), or on ``draws[k]``, the mean of the per-batch means, as
        :meth:`RunState.evaluate` takes it."""
        if draws is None:
            draws = [state.valset.iter_batches() for state in self.states]
        losses = []
        with self.states[0].autocast:
            for batch in zip(*draws):
                x = torch.stack([xy[0] for xy in batch]).to(self.device)
                y = torch.stack([xy[1] for xy in batch]).to(self.device)
                losses.append(self._forward(self.params, self.buffers, self.config, x, y, training=False)[1])
        return torch.stack(losses).mean(dim=0).tolist()

    def final_estimates(self) -> list[dict]:
        """Each model's evaluation-noise estimates (:meth:`RunState.final_estimates`), every
        estimate one batched pass over the group rather than K passes model by model."""
        losses = [self.evaluate(draws) for draws in zip(*(state.final_draws() for state in self.states))]
        return [state.final_estimates([loss[k] for loss in losses]) for k, state in enumerate(self.states)]

    def layer_norms(self) -> list[dict]:
        """Each model's gradient norm per layer group."""
        per_group = {g: self._group_norms(names).tolist() for g, names in self.groups.items()}
        return [{g: v[k] for g, v in per_group.items()} for k in range(self.K)]

    @torch.no_grad()
    def clip(self, max_norm: float) -> torch.Tensor:
        """Per-model global-norm clipping, as ``torch.nn.utils.clip_grad_norm_`` does for one
        model; returns the norms before clipping, shape (K,)."""
        total = self._group_norms(list(self.params))
        coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for p in self.params.values():
            if p.grad is not None:
                p.grad.mul_(coef.view(-1, *([1] * (p.dim() - 1))).to(p.grad.dtype))
        return total

    def step(self, step: int, log: bool) -> None:
        """One optimisation step of every model of the group."""
        take_step(self, step, log)

    @torch.no_grad()
    def sync(self) -> None:
        """Copy the stacked weights into each run's own module (before evaluating it)."""
        for k, state in enumerate(self.states):
            for name, p in state.model.named_parameters():
                p.copy_(self.params[name][k])
