"""Fused training: K models of one shape trained together, step by step, in one process.

A seed sweep trains many small models of the same shape. One such model leaves a GPU
mostly idle, so a fused trainer stacks the K models' parameters along a leading
model dimension (``torch.func.stack_module_state``) and runs every forward and backward
pass once for all of them (``torch.func.vmap`` over ``functional_call``): K small
matrix multiplications become one batched one.

What stays per model, exactly as when a model is trained alone:

* initialisation: model ``k`` is built right after ``torch.manual_seed(seed_k)``;
* data order: each model draws its batches from its own generator seeded with its seed;
* gradient clipping: the global norm is taken over model ``k``'s gradients alone and
  only model ``k``'s gradients are scaled;
* the optimiser: AdamW is element-wise, so one AdamW over the stacked tensors keeps a
  separate state (moments, weight decay) for every model; the learning-rate schedule is
  the profile's, the same for every model of the group;
* evaluation, diagnostics and the run record: before each evaluation the stacked weights
  are copied into model ``k``'s own module, which is then evaluated by the single-run
  code, so a fused run's record has the same form and key as a single run's.

Models of different variants can share a group: the residual switches and the gain
become per-model buffers (:meth:`ResidualGPT.use_tensor_switches`). Only the ``mixer``
variant, whose token mixer has other parameters than attention, needs a group of its
own; :func:`residual_lib.runs.fuse_groups` splits a list of runs accordingly (by
:attr:`residual_lib.runs.Run.fuse_key`).

Attention on CUDA: ``vmap`` folds the model axis into the batch of the flash, memory-efficient
and cuDNN attention kernels, but the backward of some of them rejects or misreads the
log-sum-exp their forward saved under ``vmap`` (the memory-efficient kernel of torch 2.11
raises "LSE is not correctly aligned"). The trainer therefore tries each fast kernel once,
on a small batch of the group's own attention shape and precision, and uses the first whose
gradients under ``vmap`` match the reference ``math`` kernel's; if none does, every step
uses ``math`` (:func:`attention_backend`). On CPU, where SDPA has no ``vmap`` rule, nothing
changes.

Numerics: batched matrix multiplications may sum in another order than K separate
ones, so a fused run matches its single run to float rounding (the test suite checks
1e-5 relative over the loss curves), not bitwise. Dropout under ``vmap`` draws
different masks per model, but not the masks a single run would draw.
"""

from __future__ import annotations

import contextlib
import copy
import warnings

import torch
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state, vmap
from torch.nn.attention import SDPBackend, sdpa_kernel

from . import diagnostics
from .profiles import Profile
from .state import RunState
from .step import adamw, take_step


#: the fast attention kernels, in the order they are tried under ``vmap``
FAST_KERNELS = (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION)
#: largest relative gradient difference from ``math`` a kernel may show under ``vmap``
#: (a misread layout gives differences of order one; bf16 rounding a few 10^-3)
KERNEL_TOLERANCE = 0.05


def choose_kernel(errors: dict) -> SDPBackend:
    """The first of :data:`FAST_KERNELS` whose relative gradient error (``errors[kernel]``; ``None``
    where it raised) is within :data:`KERNEL_TOLERANCE`, else ``math``."""
    for kernel in FAST_KERNELS:
        error = errors.get(kernel)
        if error is not None and error <= KERNEL_TOLERANCE:
            return kernel
    return SDPBackend.MATH


def kernel_errors(device, autocast, n_head: int, head_dim: int, T: int) -> dict:
    """Each fast kernel's relative gradient difference from ``math`` under ``vmap`` over two
    models of batch 2 (``None`` where the kernel raised or is unavailable)."""
    g = torch.Generator(device=device).manual_seed(0)
    q, k, v, w = (torch.randn(2, 2, n_head, T, head_dim, device=device, generator=g) for _ in range(4))

    def grads(kernel):
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        with sdpa_kernel(kernel), autocast:
            out = vmap(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True))(*leaves)
        (out.float() * w).sum().backward()
        return torch.cat([t.grad.flatten().float() for t in leaves])

    reference = grads(SDPBackend.MATH)
    errors = {}
    for kernel in FAST_KERNELS:
        try:
            with warnings.catch_warnings():  # "kernel not used because ..." notes
                warnings.simplefilter("ignore")
                errors[kernel] = float((grads(kernel) - reference).norm() / reference.norm())
        except RuntimeError:
            errors[kernel] = None
    return errors


class FusedTrainer:
    """The stacked parameters of K :class:`RunState` models and their AdamW, with
    :class:`residual_lib.train.SingleTrainer`'s interface (``states``, ``optimizer``,
    ``params``, ``step``, ``sync`` and the hooks of :func:`residual_lib.step.take_step`):
    :func:`residual_lib.train.train_group` drives either."""

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
        p = self.profile
        randomness = "different" if p.dropout > 0 else "error"
        self._loss = vmap(self._one_loss, randomness=randomness)
        self._loss_hidden = vmap(self._one_loss_hidden, randomness=randomness)
        if compile:
            self._loss = torch.compile(self._loss)
            self._loss_hidden = torch.compile(self._loss_hidden)
        for state in states:
            state.compiled = compile
        self.attention_kernel = None
        if torch.device(self.device).type == "cuda":
            c = self.skeleton.config
            errors = kernel_errors(self.device, states[0].autocast, c.n_head, c.n_embd // c.n_head, p.block_size)
            self.attention_kernel = choose_kernel(errors)

    def _kernel(self):
        """The attention kernel the group's steps use (CUDA only; see the module's docstring)."""
        return sdpa_kernel(self.attention_kernel) if self.attention_kernel is not None else contextlib.nullcontext()

    def _one_loss(self, params, buffers, x, y):
        return functional_call(self.skeleton, (params, buffers), (x, y))[1]

    def _one_loss_hidden(self, params, buffers, x, y):
        _, loss, hidden = functional_call(self.skeleton, (params, buffers), (x, y), {"return_hidden": True})
        return loss, diagnostics.hidden_norms(hidden)

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
        model's hidden-state norms (the hook :func:`residual_lib.step.take_step` calls)."""
        x, y = self._batches()
        with self._kernel(), self.states[0].autocast, warnings.catch_warnings():
            # CPU SDPA has no vmap rule: torch loops over the models, which is what
            # separate runs do anyway (CUDA's flash and efficient kernels have one)
            warnings.filterwarnings("ignore", message="There is a performance drop", category=UserWarning)
            if with_hidden:
                losses, h_norms = self._loss_hidden(self.params, self.buffers, x, y)
                return losses, h_norms.tolist()
            return self._loss(self.params, self.buffers, x, y), None

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
