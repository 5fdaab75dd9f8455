"""Run records: one JSON file per training run, written atomically, read back as pandas.

A run is identified by its *key*, a hash of everything that determines its result
(the profile's fields, variant, seed, evaluation mode, gain, determinism and a
replicate index). The device is recorded under ``provenance`` but is not part of the
key, so records made on a GPU answer the same request made on a CPU.

Records live at ``<results>/<profile>/<variant>_seed<seed>_<key>.json``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import subprocess
from pathlib import Path

import pandas as pd

from .data import atomic_write_bytes

RECORD_VERSION = 1

#: Scalar fields copied into :func:`load_records`' frame, in this order.
SCALARS = (
    "key", "profile", "variant", "seed", "eval_mode", "gain", "deterministic", "replicate", "init_noise",
    "final_val_loss", "best_val_loss", "unigram_floor", "eval_floor", "n_params", "steps",
    "wall_seconds", "tokens_per_second",
)


def run_key(identity: dict) -> str:
    """A 16-hex-digit hash of the run's identity (a JSON-serialisable dict)."""
    blob = json.dumps({"record_version": RECORD_VERSION, **identity}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def record_path(results_dir: str | os.PathLike, profile: str, variant: str, seed: int, key: str) -> Path:
    return Path(results_dir) / profile / f"{variant}_seed{seed}_{key}.json"


def find_record(results_dir: str | os.PathLike, profile: str, key: str) -> Path | None:
    """The record with ``key`` under ``results_dir/profile``, if there is one."""
    matches = sorted((Path(results_dir) / profile).glob(f"*_{key}.json"))
    return matches[0] if matches else None


def write_record(record: dict, path: str | os.PathLike) -> Path:
    """Write ``record`` as JSON to a temporary file beside ``path`` and rename it into
    place: readers see either no file or the whole record. Output is byte-stable
    (sorted keys), so rewriting the same record changes nothing."""
    path = Path(path)
    payload = json.dumps(record, sort_keys=True, indent=1, allow_nan=True) + "\n"
    atomic_write_bytes(path, payload.encode())
    return path


def read_record(path: str | os.PathLike) -> dict:
    return json.loads(Path(path).read_text())


def _record_files(path: str | os.PathLike) -> list[Path]:
    path = Path(path)
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*.json") if not p.name.startswith("."))


def load_records(path: str | os.PathLike) -> pd.DataFrame:
    """One row per record found under ``path`` (a file or a directory, searched
    recursively): the scalar fields of :data:`SCALARS`, the scalar diagnostics
    (prefixed ``diag_``), and ``path``. Curves stay in the files; see :func:`load_curves`."""
    rows = []
    for file in _record_files(path):
        rec = read_record(file)
        if "key" not in rec or "curves" not in rec:
            continue  # some other JSON file
        row = {name: rec.get(name) for name in SCALARS}
        row["init_noise"] = row["init_noise"] or 0.0  # absent from records made before the field existed
        if row["eval_floor"] is None:  # records made before the field existed
            row["eval_floor"] = record_eval_floor(rec)
        for name, value in (rec.get("diagnostics") or {}).items():
            if isinstance(value, (int, float)):
                row[f"diag_{name}"] = value
        row["path"] = str(file)
        rows.append(row)
    columns = list(SCALARS) + ["path"]
    frame = pd.DataFrame(rows) if rows else pd.DataFrame(columns=columns)
    return frame.sort_values(["profile", "variant", "seed", "key"], ignore_index=True) if rows else frame


def load_curves(path: str | os.PathLike, split: str = "train") -> pd.DataFrame:
    """Tidy frame of one curve family (``train`` or ``val``) across records: one row per
    (record, step) with the record's ``key``, ``variant``, ``seed``, ``gain``, ``eval_mode``
    and every scalar series logged at that step."""
    frames = []
    for file in _record_files(path):
        rec = read_record(file)
        if "curves" not in rec:
            continue
        curve = rec["curves"][split]
        scalar = {k: v for k, v in curve.items() if v and not isinstance(v[0], (list, dict))}
        frame = pd.DataFrame(scalar)
        for name in ("key", "profile", "variant", "seed", "gain", "eval_mode", "replicate", "deterministic"):
            frame[name] = rec.get(name)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


@functools.lru_cache(maxsize=None)
def _eval_floor(dataset: str, block_size: int, batch_size: int, eval_iters: int, mode: str) -> float:
    from .data import eval_floor, load_corpus

    return eval_floor(load_corpus(dataset), block_size, batch_size, eval_iters, mode)


def record_eval_floor(rec: dict) -> float:
    """The unigram floor on the tokens ``rec``'s losses were measured on (its
    ``eval_floor``; computed from its configuration for records that predate the field)."""
    if rec.get("eval_floor") is not None:
        return float(rec["eval_floor"])
    config = rec.get("config") or {}
    prof = config.get("profile") or {}
    try:
        return _eval_floor(config["dataset"], prof["block_size"], prof["batch_size"], prof["eval_iters"],
                           rec.get("eval_mode", "fixed"))
    except KeyError:
        return float("nan")


def summarize(frame: pd.DataFrame, value: str = "final_val_loss", by=("profile", "variant")) -> pd.DataFrame:
    """Mean, standard deviation (ddof=1), min, max and count of ``value`` per group."""
    grouped = frame.groupby(list(by))[value]
    return grouped.agg(["mean", "std", "min", "max", "count"]).reset_index()


def controlled(frame: pd.DataFrame) -> pd.DataFrame:
    """The runs of the controlled comparison: fixed validation batches, gain 1, deterministic,
    unperturbed initialisation, first replicate -- one run per (profile, variant, seed)."""
    mask = ((frame.eval_mode == "fixed") & (frame.gain == 1.0) & frame.deterministic.astype(bool)
            & (frame.replicate == 0) & (frame.init_noise == 0))
    return frame[mask]


# --------------------------------------------------------------------------- provenance


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=Path(__file__).resolve().parent, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


@functools.lru_cache(maxsize=None)
def code_version() -> tuple[str | None, bool | None]:
    """(git commit, dirty flag) of this checkout, read once per process. The trainer calls
    it when a run starts, so a record names the code that was loaded, even if the files
    change while it trains. ``(None, None)`` outside a git checkout."""
    sha = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if sha else None
    return sha, (bool(status) if sha else None)


def provenance(device: str, deterministic: bool) -> dict:
    """Where and how a run was made, without host names or user names."""
    import torch

    sha, dirty = code_version()
    if device.startswith("cuda") and torch.cuda.is_available():
        device_name = torch.cuda.get_device_name(torch.device(device))
    else:
        device_name = platform.processor() or platform.machine() or "cpu"
    return {
        "git_sha": sha,
        "git_dirty": dirty,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "device": device,
        "device_name": device_name,
        "cpu_threads": torch.get_num_threads(),
        "deterministic": deterministic,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
    }
