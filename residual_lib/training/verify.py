"""Rerunning a committed record: is it a fact of its run, or of the code version that made it?

A record names the commit that trained it (``provenance.git_sha``), but the book is built by
later code. :func:`verify_record` trains the record's run again with the code loaded now, by
the path ``python -m residual_lib train`` takes, into a scratch results folder (the committed
record is never touched), and compares the two records bitwise: ``final_val_loss``,
``best_val_loss``, every list under ``curves`` and every entry of ``diagnostics``, each as
its JSON text. A deterministic run's bits are a function of its key for one torch build and
CPU instruction set (:mod:`residual_lib.training.train`), so equality shows that nothing that changed
in the code since the record's commit changed what that run computes. (A record trained fused,
``provenance.fused_models`` > 1, is rerun alone, which agrees with it to about 1e-5, not bitwise.)

The answer is a certificate, written atomically to ``<results>/<profile>/verified/<record
file stem>.json`` (a folder :func:`residual_lib.study.frames.load_records` does not read):
``key``, ``profile``, ``variant``, ``seed``, ``record`` (the record's file name),
``record_digest`` (the digest of the record it verified: a record changed since leaves its
certificate stale, and the pages say so),
``record_commit`` and ``record_dirty``, ``rerun_commit`` and ``rerun_dirty``,
``record_torch_version`` and ``rerun_torch_version``, ``device``, ``record_cpu_capability``
and ``rerun_cpu_capability`` (the kernels' instruction set: a CPU record is rerun under its
own, :func:`isa_environment`), ``equal``,
``fields_compared``, ``fields_only_in_rerun`` (measurements added after the record was made,
not compared), ``first_difference`` (null, or ``{field, recorded, rerun}``),
``final_val_loss``, ``rerun_wall_seconds`` and ``verified_at``. :func:`load_certificates`
reads them back for the pages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import torch

from ..core.paths import results_folder
from ..run.isa import CPU_ISA, ISA_ENV
from ..run.profiles import BOOK_PROFILE
from ..run.runs import Run, RunError
from ..run.runtime import amx_available, isa_mode, machine_isa, resolve_device
from ..storage.provenance import kernels_differ
from ..storage.records import RecordError, digest, read_record, seal, write_record
from .store import obtain

#: The folder beside a profile's records that holds their certificates.
VERIFIED = "verified"


def certificate_path(record: str | os.PathLike) -> Path:
    record = Path(record)
    return record.parent / VERIFIED / f"{record.stem}.json"


def _text(value) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=False)


def _first_difference(field: str, recorded, rerun) -> dict | None:
    """The first place where ``recorded`` and ``rerun`` differ as JSON, or None."""
    if _text(recorded) == _text(rerun):
        return None
    if isinstance(recorded, list) and isinstance(rerun, list):
        for i, (a, b) in enumerate(zip(recorded, rerun)):
            found = _first_difference(f"{field}[{i}]", a, b)
            if found:
                return found
        return {"field": f"{field} (length)", "recorded": len(recorded), "rerun": len(rerun)}
    if isinstance(recorded, dict) and isinstance(rerun, dict):
        for name in sorted(set(recorded) | set(rerun)):
            found = _first_difference(f"{field}.{name}", recorded.get(name), rerun.get(name))
            if found:
                return found
    return {"field": field, "recorded": recorded, "rerun": rerun}


def _leaves(tree: dict, prefix: str) -> dict:
    """Every list under ``tree`` (nested dicts), by dotted name."""
    out = {}
    for name, value in tree.items():
        if isinstance(value, dict):
            out.update(_leaves(value, f"{prefix}.{name}"))
        else:
            out[f"{prefix}.{name}"] = value
    return out


#: The numbers a record publishes besides its curves and diagnostics, compared where the record
#: holds them (a record made before a field existed is not compared on it). Times are not
#: compared: they are facts of the machine's load, not of the run.
PUBLISHED = ("status", "diverged_at_step", "final_val_loss", "best_val_loss", "best_step", "unigram_floor",
             "eval_floor", "n_params", "steps", "tokens")


def _fields(rec: dict) -> dict:
    corpus = (rec.get("config") or {}).get("corpus_sha256")  # what the run trained on, where the record names it
    return {**{name: rec[name] for name in PUBLISHED if name in rec},
            **({"config.corpus_sha256": corpus} if corpus is not None else {}),
            **_leaves(rec["curves"], "curves"),
            **{f"diagnostics.{k}": v for k, v in (rec.get("diagnostics") or {}).items()}}


def compare(recorded: dict, rerun: dict) -> tuple[list[str], list[str], dict | None]:
    """``(fields_compared, fields_only_in_rerun, first_difference)`` of two records: every
    field the recorded one has, in order; a field the rerun lacks differs."""
    old, new = _fields(recorded), _fields(rerun)
    first = None
    for name, value in old.items():
        first = first or _first_difference(name, value, new.get(name))
    return list(old), [name for name in new if name not in old], first


def rerunnable(path: str | os.PathLike) -> tuple[dict, Run]:
    """The record at ``path`` and the run that made it, as this code builds it. Raises
    :class:`RecordError` for a file that is not a valid record and :class:`RunError` for a
    record whose configuration this code maps to another key (its profile's fields changed), or
    whose run was resumed on kernels of another kind partway, which no one machine reproduces."""
    recorded = read_record(path)
    if kernels_differ((recorded.get("provenance") or {}).get("processes") or []):  # as the book reads them (pages.platforms)
        raise RunError(f"{Path(path).name}: its run was resumed on kernels of another kind partway (provenance.processes), "
                       "so no one machine reproduces its bits: train it afresh into another results folder and compare")
    spec = Run.from_record(recorded)
    if spec.key != recorded["key"]:
        raise RunError(f"{Path(path).name}: this code maps the record's configuration to key {spec.key}, not "
                       f"{recorded['key']} (its profile's fields changed since): it cannot be rerun as the same run")
    return recorded, spec


#: The kernels a CPU record that names none is rerun under. Records made before provenance named
#: them were made before the AVX2 pin existed, on kernels nobody wrote down; the AVX2 pin
#: reproduces those checked so far at ``cpu`` (``tests/test_kernels.py``; ``ffn_only`` seed 42
#: in full), and verify says so when it does not.
UNNAMED_ISA = "AVX2"
#: The environment variables that choose the CPU kernels (see :mod:`residual_lib.run.isa`).
_KERNEL_VARS = (*CPU_ISA, ISA_ENV)


def isa_environment(prov: dict) -> dict | None:
    """The environment under which this machine runs the CPU kernels a record's provenance
    names (its instruction set, the MKL and oneDNN limits it was made under, AMX for bf16):
    ``None`` if this process already runs them; raises :class:`RunError` if the machine cannot."""
    recorded = prov.get("cpu_capability") or UNNAMED_ISA
    limits = {"MKL_ENABLE_INSTRUCTIONS": prov.get("mkl_enable_instructions"),
              "ONEDNN_MAX_CPU_ISA": prov.get("onednn_max_cpu_isa")}
    best = machine_isa()
    if recorded == "AVX2" and best in ("AVX2", "AVX512"):
        wanted = {ISA_ENV: "avx2", **CPU_ISA}  # the portable pin (an AVX2 machine's own kernels are the same)
    elif recorded == "DEFAULT":
        wanted = {"ATEN_CPU_CAPABILITY": "default", **limits}
    elif recorded == best:
        wanted = dict(limits)
    else:
        raise RunError(f"the record was made on {recorded} CPU kernels, which this machine does not have (its best "
                       f"is {best}): verify it on a machine that has them")
    if str(prov.get("precision", "")).startswith("bf16") and "amx" in prov and prov["amx"] != amx_available(wanted):
        had = "with" if prov["amx"] else "without"
        raise RunError(f"the record's bf16 matrix multiplies ran {had} AMX units and this machine's would not: "
                       "verify it on a machine like the one that made it")
    wanted = {k: v for k, v in wanted.items() if v}
    here = {k: os.environ[k] for k in _KERNEL_VARS if os.environ.get(k)}
    if wanted == here and torch.backends.cpu.get_cpu_capability() == recorded:
        return None
    return {**{k: v for k, v in os.environ.items() if k not in _KERNEL_VARS}, **wanted}


def _verify_elsewhere(path: Path, env: dict, progress: bool | None, data_dir: str | None) -> dict:
    """Verify in a child process whose CPU kernels are the record's (they are chosen when torch
    loads, once per process), and return the certificate it wrote. The old certificate is
    removed first, so that a child that fails cannot leave an earlier verdict standing."""
    if data_dir is not None:
        env = {**env, "RESIDUAL_DATA_DIR": str(data_dir)}
    certificate = certificate_path(path)
    certificate.unlink(missing_ok=True)
    # this module as the child's entry point (below), not the command line above every layer
    command = [sys.executable, "-m", "residual_lib.training.verify", str(path), *([] if progress else ["--quiet"])]
    child = subprocess.run(command, env=env, stdout=None if progress else subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    if not certificate.is_file():
        lines = child.stderr.strip().splitlines()
        raise RunError(f"verifying {path.name} under its own CPU kernels failed"
                       + (f": {lines[-1]}" if lines else f" (exit status {child.returncode})"))
    return json.loads(certificate.read_text(encoding="utf-8"))


def verify_record(path: str | os.PathLike, scratch_dir: str | os.PathLike | None = None, *,
                  device: str | None = None, progress: bool | None = False, data_dir: str | None = None) -> dict:
    """Retrain the run of the record at ``path`` into ``scratch_dir`` (default: a temporary
    folder, removed afterwards), compare, and write and return the certificate. ``device``:
    default the record's own. On CPU the rerun uses the kernels the record names (a child
    process with the portable AVX2 pin for a record made with it, on any machine that has
    AVX2). Raises :class:`RecordError` for a bad record and :class:`RunError` for one this
    code cannot rerun as the same run."""
    path = Path(path)
    recorded, spec = rerunnable(path)
    prov = recorded["provenance"]
    device = resolve_device(device or prov.get("device") or "cpu")
    if device == "cpu":
        env = isa_environment(prov)
        if env is not None:
            if scratch_dir is not None:
                raise RunError("a record made on other CPU kernels is verified in a child process with a scratch "
                               "folder of its own: leave scratch_dir unset")
            return _verify_elsewhere(path, env, progress, data_dir)
    with tempfile.TemporaryDirectory(prefix="residual-verify-") as tmp:
        scratch = Path(scratch_dir) if scratch_dir is not None else Path(tmp)
        if spec.path(scratch).resolve() == path.resolve():
            raise RunError(f"the scratch folder {scratch} is the record's own results folder: give another one")
        started = time.perf_counter()
        new_path, _ = obtain([spec], scratch, force=True, device=device, data_dir=data_dir, progress=progress,
                          compile=bool(prov.get("compiled")))[0]
        seconds = time.perf_counter() - started
        rerun = read_record(new_path)
    fields, added, first = compare(recorded, rerun)
    cert = {
        "key": recorded["key"], "profile": recorded["profile"], "variant": recorded["variant"],
        "seed": recorded["seed"], "record": path.name, "record_digest": recorded["digest"],
        "record_commit": prov.get("git_sha"), "record_dirty": prov.get("git_dirty"),
        "rerun_commit": rerun["provenance"].get("git_sha"), "rerun_dirty": rerun["provenance"].get("git_dirty"),
        "record_torch_version": prov.get("torch_version"),
        "rerun_torch_version": rerun["provenance"].get("torch_version"), "device": device,
        "record_cpu_capability": prov.get("cpu_capability"),
        "rerun_cpu_capability": rerun["provenance"].get("cpu_capability"),
        "equal": first is None, "fields_compared": fields, "fields_only_in_rerun": added,
        "first_difference": first, "final_val_loss": recorded["final_val_loss"],
        "rerun_wall_seconds": round(seconds, 3),
        "verified_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    cert = seal(cert)  # a certificate vouches for itself as a record does
    write_record(cert, certificate_path(path))
    return cert


def load_certificates(results_dir: str | os.PathLike | None = None, profile: str = BOOK_PROFILE) -> pd.DataFrame:
    """One row per certificate under ``<results_dir>/<profile>/verified/``: its scalar fields,
    ``n_fields_compared``, ``difference_field`` (None when equal), ``stale`` (True when the
    record it verified has changed or gone since: its digest is no longer ``record_digest``)
    and ``path``."""
    folder = results_folder(results_dir) / profile / VERIFIED
    rows = []
    for file in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            cert = json.loads(file.read_text(encoding="utf-8"))
            if cert.get("digest") != digest({k: v for k, v in cert.items() if k != "digest"}):
                raise RecordError(file, "its content does not match its digest: the certificate was changed after "
                                        "verify wrote it (rerun verify on its record)")
            row = {k: v for k, v in cert.items() if not isinstance(v, (list, dict))}
            row["n_fields_compared"] = len(cert["fields_compared"])
            row["difference_field"] = (cert["first_difference"] or {}).get("field")
            record = folder.parent / cert["record"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise RecordError(file, f"not a verification certificate ({exc.__class__.__name__})") from None
        try:
            current = json.loads(record.read_text(encoding="utf-8")).get("digest")
        except (OSError, ValueError, AttributeError):
            current = None
        row["stale"] = current is None or current != cert.get("record_digest")
        rows.append({**row, "path": str(file)})
    columns = ["key", "profile", "variant", "seed", "record_commit", "rerun_commit", "equal", "final_val_loss",
               "n_fields_compared", "difference_field", "record_digest", "stale", "path"]
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=columns)


def certificates_text(certificates: pd.DataFrame, runs: pd.DataFrame) -> str:
    """Sentences on which of ``runs`` (with ``key``, ``seed``, ``profile``) were retrained
    and whether each matched its record bitwise (``certificates``: :func:`load_certificates`)."""
    if runs.empty:
        return "No run escapes at this profile, so there is nothing to retrain."
    said = []
    for cert in certificates.itertuples():
        outcome = (f"bitwise equal to its record in all {cert.n_fields_compared} fields compared" if cert.equal
                   else f"not equal to its record: the first difference is in {cert.difference_field}")
        said.append(f"FFNOnly seed {cert.seed} (`{cert.profile}`, final loss {cert.final_val_loss:.3f}), recorded "
                    f"at commit {str(cert.record_commit)[:7]} and retrained at commit {str(cert.rerun_commit)[:7]}, "
                    f"was {outcome}." + (" That certificate is stale: the record has changed since it was verified, "
                                         "so it vouches for nothing now (rerun verify)." if getattr(cert, "stale", False)
                                         else ""))
    missing = runs[~runs.key.isin(set(certificates.key))]
    if len(missing):
        seeds = ", ".join(str(s) for s in sorted(missing.seed))
        said.append(f"Not retrained yet: seed{'s' if len(missing) > 1 else ''} {seeds} "
                    f"(`python -m residual_lib verify <record>` makes the certificate).")
    return " ".join(said)


if __name__ == "__main__":  # the child of _verify_elsewhere: python -m residual_lib.training.verify RECORD [--quiet]
    isa_mode()  # a kernel mode the child cannot take stops it before it trains, as the command line does
    verify_record(sys.argv[1], progress=False if "--quiet" in sys.argv[2:] else None)
