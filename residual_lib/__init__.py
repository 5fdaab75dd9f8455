"""residual_lib: partial residual ablations in Pre-LN GPT-style transformers.

The model, trainer and run records behind the replication book (the README's module map
says which module does what): ``obtain([Run("cpu", "attn_only", 1337)])`` returns the path of
that run's record, training it if it is missing. Command line: ``python -m residual_lib``.

CPU instruction set. PyTorch, MKL and oneDNN pick their CPU kernels by the instruction set
of the machine, and AVX-512 kernels sum in another order than AVX2 ones, so the same run
differs in its last bits between machines. Importing this package before torch pins all
three to AVX2 (:data:`CPU_ISA`; a variable already set is left alone), which every x86
machine of the last decade has: a deterministic CPU run then gives the same bits on any of
them. Each record's provenance names the instruction set its run used.
"""

import os as _os
import sys as _sys

#: Environment that pins the CPU kernels' instruction set (read by torch, MKL and oneDNN when
#: they load, hence set here, before anything imports torch).
CPU_ISA = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
if "torch" not in _sys.modules:
    for _name, _value in CPU_ISA.items():
        _os.environ.setdefault(_name, _value)

from .data import Corpus, DataError, load_corpus, unigram_floor
from .architecture import VARIANTS
from .model import GPTConfig, ResidualGPT
from .profiles import PROFILES, Profile, get_profile
from .frames import load_curves, load_records, summarize
from .runs import Run
from .store import obtain

__all__ = [
    "Corpus", "DataError", "GPTConfig", "PROFILES", "Profile", "ResidualGPT", "Run", "VARIANTS",
    "get_profile", "load_corpus", "load_curves", "load_records", "obtain", "summarize",
    "unigram_floor",
]
__version__ = "0.1.0"
