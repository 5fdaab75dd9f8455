"""Where a page's runs trained, in words: the device and the kernels each record names in its
``provenance``. Records of one profile can come from different machines (a long run resumed on
the machine it started on, the next run on another); kernels that differ sum in different orders,
so such runs agree in what they learn, not in their last bits, and a page says which ran where."""

from __future__ import annotations

import pandas as pd

from ..run.architecture import display_name
from ..storage.records import read_record
from ..core.text import listing

#: torch's names of its CPU kernel sets (``torch.backends.cpu.get_cpu_capability()``), as prose.
ISA_NAMES = {"AVX512": "AVX-512", "AVX2": "AVX2", "DEFAULT": "portable (non-vector)"}


def platform(provenance: dict) -> str:
    """One record's device and kernels in a phrase: "one CPU core with AVX-512 kernels and the
    AMX matrix units", "one NVIDIA H200". The AMX units are named only for bf16, the one precision
    whose matrix multiplies they run, and only where the record says whether it had them."""
    device = str(provenance.get("device", "cpu"))
    if device.startswith("cuda"):
        return f"one {provenance.get('device_name') or 'GPU'}"
    threads = provenance.get("cpu_threads")
    cores = "one CPU core" if threads == 1 else (f"{threads} CPU threads" if threads else "the CPU")
    capability = provenance.get("cpu_capability")
    if not capability:
        return f"{cores}, its kernels not recorded"
    text = f"{cores} with {ISA_NAMES.get(capability, capability)} kernels"
    if "bf16" in str(provenance.get("precision", "")) and provenance.get("amx") is not None:
        text += " and the AMX matrix units" if provenance["amx"] else " and no AMX matrix units"
    return text


def trained_on(records: pd.DataFrame) -> str:
    """Where ``records`` trained, as a sentence: one clause when every record names the same
    device and kernels, else one clause per platform naming its runs ("AttnOnly seed 1337")."""
    if not len(records):
        return ""
    where = pd.Series([platform(read_record(path).get("provenance", {})) for path in records.path],
                      index=records.index)
    if where.nunique() == 1:
        every = "The run" if len(records) == 1 else f"All {len(records)} runs"
        return f"{every} trained on {where.iloc[0]}."
    clauses = []
    for place, runs in records.groupby(where, sort=False):
        names = []
        for variant, seeds in runs.groupby("variant", sort=False).seed:
            seeds = sorted(seeds)
            names.append(f"{display_name(variant)} {'seed' if len(seeds) == 1 else 'seeds'} {listing(seeds)}")
        clauses.append(f"{listing(names)} on {place}")
    return ("The runs did not all train on the same kernels: " + "; ".join(clauses) + ". Kernels of different "
            "kinds sum in different orders, so a run reproduces bit for bit only on kernels of its own kind.")
