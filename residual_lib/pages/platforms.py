"""Where a page's runs trained, in words: the device and the kernels each record names in its
``provenance``. Records of one profile can come from different machines (a long run resumed on
the machine it started on, the next run on another); kernels that differ sum in different orders,
so such runs agree in what they learn, not in their last bits, and a page says which ran where.
A run resumed from checkpoints may itself span machines: its record's top-level provenance is its
last process's, and ``provenance.processes`` names each process (from step 0 where every
checkpoint kept them; a page says which steps no record names the kernels of)."""

from __future__ import annotations

import pandas as pd

from ..core.text import in_words, listing
from .names import display_name
from ..storage.provenance import kernels_differ, named_model
from ..storage.records import read_record

#: torch's names of its CPU kernel sets (``torch.backends.cpu.get_cpu_capability()``), as prose.
ISA_NAMES = {"AVX512": "AVX-512", "AVX2": "AVX2", "DEFAULT": "portable (non-vector)"}
#: What a record that names no device is said to have trained on.
UNRECORDED = "a device its record does not name"


def platform(provenance: dict) -> str:
    """One record's device and kernels in a phrase: "one CPU core of an AMD EPYC with AVX-512
    kernels and no AMX matrix units", "one NVIDIA H200". The CPU's model is named where the
    record names it; the AMX units only for bf16, the one precision whose matrix multiplies they
    run, and only where the record says whether it had them."""
    device = str(provenance.get("device") or "")
    if not device:
        return UNRECORDED
    if device.startswith("cuda"):
        return f"one {provenance.get('device_name') or 'GPU'}"
    threads = provenance.get("cpu_threads")
    cores = "one CPU core" if threads == 1 else (f"{in_words(threads)} CPU threads" if threads else "the CPU")
    model = named_model(provenance)
    if model:
        cores += f" of an {model}" if model[:1].upper() in "AEIOU" else f" of a {model}"
    capability = provenance.get("cpu_capability")
    if not capability:
        return f"{cores}, its kernels not recorded"
    text = f"{cores} with {ISA_NAMES.get(capability, capability)} kernels"
    if "bf16" in str(provenance.get("precision", "")) and provenance.get("amx") is not None:
        text += " and the AMX matrix units" if provenance["amx"] else " and no AMX matrix units"
    limits = [f"{name}={provenance[field]}" for field, name in (("mkl_enable_instructions", "MKL_ENABLE_INSTRUCTIONS"),
                                                              ("onednn_max_cpu_isa", "ONEDNN_MAX_CPU_ISA"))
              if provenance.get(field)]
    if limits and capability != "AVX2":  # the AVX2 pin sets them, and its kernels are named already
        text += f" under {listing(limits)}"
    return text


def _from_step(provenance: dict) -> int:
    """The first step whose kernels the record names: 0, unless the run was resumed from a
    checkpoint that did not keep the processes before it (then the first step the record's
    ``processes`` name, or the resume where it has none)."""
    processes = provenance.get("processes")
    if processes:
        return int(processes[0].get("from_step") or 0)
    return int(provenance.get("resumed_from_step") or 0)


def _history_notes(records: pd.DataFrame, provenance: list[dict]) -> str:
    """Sentences on the runs whose processes did not all run on kernels of one kind, and on those
    whose earlier processes no record names; none otherwise."""
    notes = []
    unnamed = [(i, _from_step(p)) for i, p in zip(records.index, provenance) if _from_step(p) > 0]
    if unnamed:
        one = len(unnamed) == 1
        steps = {step for _, step in unnamed}
        if len(steps) == 1:
            since = f"from step {next(iter(steps)):,} on"
        else:  # each run with its own step, named as the sentence's subject names it
            since = listing([f"{_runs(records.loc[[i]])} from step {step:,}" for i, step in unnamed])
        every = not one and len(unnamed) == len(records)  # "All four runs", not each one named again
        who = (("Both runs" if len(unnamed) == 2 else f"All {in_words(len(unnamed))} runs") if every
               else _runs(records.loc[[i for i, _ in unnamed]]))
        notes.append(f"{who} {'was' if one else 'were'} resumed from "
                     "checkpoints that did not keep the kernels of earlier processes, so "
                     f"{'its record names the kernels of its' if one else 'their records name the kernels of their'}"
                     f" last steps only ({since}): the earlier steps may have run on other kernels.")
    for i, prov in zip(records.index, provenance):
        if _mixed(prov):
            spans = []  # consecutive processes on kernels of one kind read as one span, named as fully as any does
            for process in prov["processes"]:
                if spans and not kernels_differ([spans[-1][1], process]):
                    if named_model(process) and not named_model(spans[-1][1]):
                        spans[-1][1] = process
                    continue
                spans.append([int(process.get("from_step") or 0), process])
            listed = "; ".join(f"from step {step:,} on {platform(process)}" for step, process in spans)
            notes.append(f"{_runs(records.loc[[i]])} trained in processes on kernels of different kinds ({listed}), "
                         "so it reproduces bit for bit on no single platform.")
    return " ".join(notes)


def _runs(runs: pd.DataFrame) -> str:
    """``runs`` named by variant and seeds: "AttnOnly seed 1337 and FFNOnly seeds 42 and 1337"."""
    names = []
    for variant, seeds in runs.groupby("variant", sort=False).seed:
        seeds = sorted(seeds)
        names.append(f"{display_name(variant)} {'seed' if len(seeds) == 1 else 'seeds'} {listing(seeds)}")
    return listing(names)


def _mixed(provenance: dict) -> bool:
    """Whether a record's processes ran on kernels of more than one kind."""
    return kernels_differ(provenance.get("processes") or [])


def trained_on(records: pd.DataFrame) -> str:
    """Where ``records`` trained, as a sentence: one clause when every record names the same
    device and kernels, else one clause per platform naming its runs; a run whose processes ran
    on different kernels gets a sentence of its own, as do runs whose earliest steps no record
    names the kernels of; where runs that each trained on one kind of kernels differ in it, a
    last sentence says what that means for their bits."""
    if not len(records):
        return ""
    provenance = [read_record(path).get("provenance") or {} for path in records.path]
    plain = [i for i, p in zip(records.index, provenance) if not _mixed(p)]
    where = pd.Series([platform(p) for p, i in zip(provenance, records.index) if i in plain], index=plain, dtype=object)
    if where.nunique() > 1:
        clauses = [f"{_runs(runs)} on {place}" for place, runs in records.loc[plain].groupby(where, sort=False)]
        said = ["The records name where each run trained: " + "; ".join(clauses) + "."]
    elif len(plain) == 1 or len(plain) == len(records):
        who = _runs(records.loc[plain]) if len(plain) == 1 else f"Each of the {in_words(len(plain))} runs"
        said = [f"{who} trained on {where.iloc[0]}."]
    else:  # one platform, and other runs on several
        said = [f"{_runs(records.loc[plain])} trained on {where.iloc[0]}."] if plain else []
    said.append(_history_notes(records, provenance))
    # runs on one kind of kernels each, whose kinds differ from each other's (a run that differs
    # within itself has said so already, and reproduces on no kernels at all)
    if kernels_differ([q for i, p in zip(records.index, provenance) if i in plain for q in p.get("processes") or [p]]):
        said.append("Kernels of different kinds sum in different orders, so a run reproduces bit for bit only on "
                    "kernels of its own kind.")
    return " ".join(filter(None, said))
