"""residual_lib: partial residual ablations in Pre-LN GPT-style transformers.

The model (:mod:`.model`), corpora (:mod:`.data`), profiles (:mod:`.profiles`),
trainer (:mod:`.train`), diagnostics (:mod:`.diagnostics`) and run records
(:mod:`.records`) behind the replication book. Command line: ``python -m residual_lib``.
"""

from .data import Corpus, DataError, load_corpus, unigram_floor
from .model import VARIANTS, GPTConfig, ResidualGPT
from .profiles import PROFILES, Profile, get_profile
from .records import load_curves, load_records, summarize
from .train import run

__all__ = [
    "Corpus", "DataError", "GPTConfig", "PROFILES", "Profile", "ResidualGPT", "VARIANTS",
    "get_profile", "load_corpus", "load_curves", "load_records", "run", "summarize", "unigram_floor",
]
__version__ = "0.1.0"
