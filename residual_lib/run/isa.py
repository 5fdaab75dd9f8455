"""The CPU kernels' instruction set, chosen before torch loads (see the package docstring):
the machine's fastest by default, the portable AVX2 ones with ``RESIDUAL_CPU_ISA=avx2``.
This module imports nothing heavy, so that the package can apply the choice first."""

import os
import sys

#: Set to ``avx2`` before importing residual_lib for the portable mode.
ISA_ENV = "RESIDUAL_CPU_ISA"
#: Environment that pins the CPU kernels' instruction set to AVX2 (read by torch, MKL and
#: oneDNN when they load, hence set before anything imports torch).
CPU_ISA = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}


def pin_portable_kernels() -> None:
    """In the portable mode, pin torch, MKL and oneDNN to AVX2, if torch has not loaded yet (a
    run then says that its kernels are not the ones asked for:
    :func:`residual_lib.run.runtime.kernel_mismatch`)."""
    if os.environ.get(ISA_ENV, "").strip().lower() == "avx2" and "torch" not in sys.modules:
        os.environ.update(CPU_ISA)
