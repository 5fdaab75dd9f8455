"""Batches: random training windows, and the validation batches a run is evaluated on (fixed
once for every run, or drawn afresh at each evaluation)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

FIXED_VAL_SEED = 99_991  # the paper's seed for the fixed validation batches


def get_batch(
    data: np.ndarray, block_size: int, batch_size: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch_size`` random windows of ``block_size`` tokens and their next-token targets.
    The offsets come from ``generator`` alone, so the batch sequence is a function of its seed."""
    ix = torch.randint(len(data) - block_size, (batch_size,), generator=generator).tolist()
    x = np.stack([data[i : i + block_size] for i in ix]).astype(np.int64)
    y = np.stack([data[i + 1 : i + 1 + block_size] for i in ix]).astype(np.int64)
    return torch.from_numpy(x), torch.from_numpy(y)


def fixed_val_batches(
    val: np.ndarray, block_size: int, batch_size: int, n_batches: int, seed: int = FIXED_VAL_SEED
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The ``fixed`` evaluation set: ``n_batches`` batches drawn once from a generator
    seeded ``seed`` (99,991, as the paper), the same for every variant and run."""
    return list(iter_fixed_val_batches(val, block_size, batch_size, n_batches, seed))


def iter_fixed_val_batches(
    val: np.ndarray, block_size: int, batch_size: int, n_batches: int, seed: int = FIXED_VAL_SEED
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """:func:`fixed_val_batches` one batch at a time, drawn as they are consumed."""
    g = torch.Generator().manual_seed(seed)
    return (get_batch(val, block_size, batch_size, g) for _ in range(n_batches))


class ValidationSet:
    """Validation batches in one of two modes.

    ``fixed``: :func:`fixed_val_batches`, identical at every evaluation.
    ``random``: fresh batches at every evaluation, as nanoGPT's ``estimate_loss``;
    they come from a generator seeded by the run's seed, so a rerun sees the same
    sequence of evaluation batches while consecutive evaluations differ.
    """

    MODES = ("fixed", "random")

    def __init__(self, val: np.ndarray, block_size: int, batch_size: int, n_batches: int, mode: str, seed: int):
        if mode not in self.MODES:
            raise ValueError(f"unknown eval mode {mode!r}: choose fixed or random")
        self.val, self.block_size, self.batch_size, self.n_batches = val, block_size, batch_size, n_batches
        self.mode = mode
        self._fixed = fixed_val_batches(val, block_size, batch_size, n_batches) if mode == "fixed" else None
        self._generator = torch.Generator().manual_seed(seed + 7_919) if mode == "random" else None

    def batches(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        if self._fixed is not None:
            return self._fixed
        return list(self.iter_batches())

    def iter_batches(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """:meth:`batches` one batch at a time: a random draw is taken from the generator as it
        is consumed (a fused group evaluates batch by batch without holding every model's draw
        in memory). Consume one evaluation's batches before the next one's."""
        if self._fixed is not None:
            return iter(self._fixed)
        return (get_batch(self.val, self.block_size, self.batch_size, self._generator) for _ in range(self.n_batches))
