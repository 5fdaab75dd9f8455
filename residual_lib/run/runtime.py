"""Where and how a run computes: the device, the precision its profile names, the CPU kernels
in force, and the settings that make a run bitwise reproducible.

Precision. A profile names it (:attr:`residual_lib.run.profiles.Profile.precision`): ``fp32``
for the stand-in profiles, ``bf16`` (autocast: matrix multiplies in bf16; weights, optimiser
state and the loss in fp32) for the paper's, on every device (:func:`autocast`).

CPU kernels. A run uses the fastest kernels the machine has unless ``RESIDUAL_CPU_ISA=avx2``
asks for the portable AVX2 ones (see the package docstring); :func:`kernel_environment` is what
a record's provenance names, and a run whose kernels are not the ones it asked for says so in
one line on stderr (:func:`kernel_mismatch`).

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

import functools
import os
import sys
from contextlib import contextmanager, nullcontext
from pathlib import Path

import torch

from .isa import CPU_ISA, ISA_ENV
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


#: The precisions a profile may name.
PRECISIONS = ("fp32", "bf16")


def autocast(device: str, precision: str):
    """The context a run's forward passes run in: bf16 autocast, or nothing for fp32."""
    if precision not in PRECISIONS:
        raise RunError(f"unknown precision {precision!r}: choose one of {', '.join(PRECISIONS)}")
    if precision == "fp32":
        return nullcontext()
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)


def isa_mode() -> str:
    """The CPU kernel mode asked for: ``native`` (the default: the machine's fastest) or ``avx2``
    (portable, ``RESIDUAL_CPU_ISA=avx2``)."""
    value = os.environ.get(ISA_ENV, "").strip().lower() or "native"
    if value not in ("native", "avx2"):
        raise RunError(f"{ISA_ENV}={value!r} is not a CPU kernel mode: unset it for the machine's fastest kernels, "
                       "or set it to avx2 for the portable ones")
    return value


@functools.lru_cache(maxsize=None)
def _cpu_flags() -> frozenset[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def machine_isa() -> str:
    """The best instruction set torch's CPU kernels can use on this machine, named as
    ``torch.backends.cpu.get_cpu_capability()`` names it (the capability in force where the
    processor's flags cannot be read)."""
    flags = _cpu_flags()
    if not flags:
        return torch.backends.cpu.get_cpu_capability()
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return "AVX512"
    if {"avx2", "fma"} <= flags:
        return "AVX2"
    return torch.backends.cpu.get_cpu_capability()


def amx_available(environment: dict | None = None) -> bool:
    """Whether oneDNN may run bf16 matrix multiplies on AMX units under ``environment`` (default
    this process's): the processor has them and no ``ONEDNN_MAX_CPU_ISA`` below AMX is set."""
    limit = ((os.environ if environment is None else environment).get("ONEDNN_MAX_CPU_ISA") or "").upper()
    return "amx_bf16" in _cpu_flags() and (not limit or "AMX" in limit or limit == "ALL")


def kernel_environment() -> dict:
    """The CPU kernels in force, as a record's provenance names them: the mode asked for,
    torch's instruction set, the MKL and oneDNN limits set in the environment (null: none),
    and whether oneDNN may use AMX matrix units for bf16 (:func:`amx_available`)."""
    return {
        "isa_mode": isa_mode(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "mkl_enable_instructions": os.environ.get("MKL_ENABLE_INSTRUCTIONS") or None,
        "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA") or None,
        "amx": amx_available(),
    }


def kernel_mismatch() -> str | None:
    """One line when the CPU kernels in force are not the ones this process asked for, else None."""
    mode, capability = isa_mode(), torch.backends.cpu.get_cpu_capability()
    if mode == "avx2":
        off = [f"{name}={os.environ.get(name) or '(unset)'}" for name, value in CPU_ISA.items()
               if (os.environ.get(name) or "").lower() != value.lower()]
        if capability != "AVX2" or off:
            return (f"residual_lib: {ISA_ENV}=avx2 asks for the portable AVX2 kernels, but torch uses {capability} "
                    f"({', '.join(off) or 'torch was imported before residual_lib'}): this run's bits may differ from "
                    "other AVX2 records; set the variable before anything imports torch")
        return None
    limits = [f"{name}={os.environ[name]}" for name in CPU_ISA if os.environ.get(name)]
    best = machine_isa()
    if capability != best or limits:
        what = (f"{capability} kernels, not this machine's fastest ({best})" if capability != best
                else f"{capability} kernels with a limit on MKL or oneDNN")
        cause = f"{', '.join(limits)} {'is' if len(limits) == 1 else 'are'} set" if limits else "of a setting outside residual_lib"
        return (f"residual_lib: this run uses {what}, because {cause}: its record names what it ran on; unset "
                f"{'them' if len(limits) > 1 else 'it'}, or set {ISA_ENV}=avx2 for the portable mode")
    return None


@contextmanager
def cpu_threads(device: str, deterministic: bool):
    """Pin a deterministic CPU run to :data:`DETERMINISTIC_CPU_THREADS` threads for a block
    (and say so in one line when the CPU kernels in force are not the ones asked for:
    :func:`kernel_mismatch`)."""
    if device != "cpu":
        yield
        return
    warning = kernel_mismatch()
    if warning:
        print(warning, file=sys.stderr)
    if not deterministic:
        yield
        return
    saved = torch.get_num_threads()
    torch.set_num_threads(DETERMINISTIC_CPU_THREADS)
    try:
        yield
    finally:
        torch.set_num_threads(saved)
