"""residual_lib: partial residual ablations in Pre-LN GPT-style transformers.

The model, trainer and run records behind the replication book (the README's folder map
says which folder and module does what): ``obtain([Run("cpu", "attn_only", 1337)])`` returns the path of
that run's record, training it if it is missing. Command line: ``python -m residual_lib``.

CPU kernels. PyTorch, MKL and oneDNN pick their CPU kernels by the instruction set of the
machine, and AVX-512 kernels sum in another order than AVX2 ones, so the same run differs in
its last bits between instruction sets. By default a run uses the fastest kernels the machine
has (AVX-512 for fp32, and the AMX matrix units for the bf16 profiles where the CPU has them);
its record names the instruction set in force (``provenance.cpu_capability``), and a run's bits
are a function of its key *and* that instruction set. ``RESIDUAL_CPU_ISA=avx2`` (set before
anything imports torch) is the portable mode: it pins all three libraries to AVX2
(:data:`CPU_ISA`), which every x86 machine of the last decade has, so a run gives the same
bits on any of them -- the mode every record made before the fast kernels were the default
was trained in, and the one ``verify`` reruns those records under.
"""

from .run.isa import pin_portable_kernels as _pin

_pin()  # before anything below imports torch

from .run.architecture import VARIANTS
from .run.data import Corpus, DataError, load_corpus, unigram_floor
from .run.model import GPTConfig, ResidualGPT
from .run.profiles import PROFILES, Profile, get_profile
from .run.runs import Run
from .study.frames import load_curves, load_records, summarize
from .training.store import obtain

__all__ = [
    "Corpus", "DataError", "GPTConfig", "PROFILES", "Profile", "ResidualGPT", "Run", "VARIANTS",
    "get_profile", "load_corpus", "load_curves", "load_records", "obtain", "summarize",
    "unigram_floor",
]
__version__ = "0.1.0"
