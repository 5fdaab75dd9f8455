"""Where and how a run computes: the device, bf16 autocast on CUDA, and the settings that
make a run bitwise reproducible.

Determinism (``deterministic=True``, the default). The trainer calls
``torch.use_deterministic_algorithms(True)``, sets ``CUBLAS_WORKSPACE_CONFIG=:4096:8``
and turns cuDNN benchmarking off for the duration of the run, then restores the
previous settings.

* On CPU a deterministic run always uses :data:`DETERMINISTIC_CPU_THREADS` (one) intra-op
  thread, whatever the process was given, so its bits depend on its key alone -- not on
  how a sweep laid out its processes -- for the same torch build and CPU instruction set
  (the test suite checks ``train``, ``sweep --jobs 1``, the default sweep and a resumed
  sweep against each other). Another thread count would change the order of
  floating-point reductions and so the last bits.
* On CUDA, PyTorch raises an error rather than run an operation that has no
  deterministic implementation, so a run that completes used only deterministic
  kernels and is bitwise reproducible on the same GPU model, driver, CUDA and torch
  build. Across GPU models or software versions results differ in the last bits and,
  through training, in the final loss: the paper's cross-environment gap is a reminder
  that this is not a formality.

``deterministic=False`` leaves PyTorch free to use non-deterministic kernels
(atomics in CUDA backward passes) and the process's thread count.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

import torch

from .runs import RunError

#: Intra-op threads of a deterministic CPU run (the committed records were made with one).
DETERMINISTIC_CPU_THREADS = 1


def resolve_device(device: str = "auto") -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RunError("CUDA is not available on this machine: use --device cpu")
    if not (device == "cpu" or device.startswith("cuda")):
        raise RunError(f"unknown device {device!r}: use auto, cpu or cuda")
    return device


@contextmanager
def determinism(enabled: bool):
    """Apply the deterministic settings (see the module docstring) for a block."""
    saved = (
        torch.are_deterministic_algorithms_enabled(),
        torch.backends.cudnn.benchmark,
        os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
    )
    if enabled:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(enabled)
    torch.backends.cudnn.benchmark = False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(saved[0])
        torch.backends.cudnn.benchmark = saved[1]
        if saved[2] is None:
            os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)


_BF16_ON_CUDA = True


def bf16_on_cuda() -> bool:
    """Whether CUDA training runs under bf16 autocast (it does, except inside :func:`fp32_on_cuda`)."""
    return _BF16_ON_CUDA


@contextmanager
def fp32_on_cuda():
    """Train on CUDA without bf16 autocast for a block (the device checks compare fused and
    single training in fp32, where they agree to float rounding)."""
    global _BF16_ON_CUDA
    saved, _BF16_ON_CUDA = _BF16_ON_CUDA, False
    try:
        yield
    finally:
        _BF16_ON_CUDA = saved


@contextmanager
def cpu_threads(device: str, deterministic: bool):
    """Pin a deterministic CPU run to :data:`DETERMINISTIC_CPU_THREADS` threads for a block
    (and say so when the kernels' instruction set is not the pinned one: see the package
    docstring)."""
    if not (deterministic and device == "cpu"):
        yield
        return
    if torch.backends.cpu.get_cpu_capability() == "AVX512":
        print("residual_lib: torch was imported before residual_lib, so its CPU kernels use AVX-512 and this run's "
              "last bits may differ from records made on other machines: import residual_lib first, or set "
              "ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2", file=sys.stderr)
    saved = torch.get_num_threads()
    torch.set_num_threads(DETERMINISTIC_CPU_THREADS)
    try:
        yield
    finally:
        torch.set_num_threads(saved)
