"""Checkpoints: everything a run (or a fused group) needs to continue at step N exactly as if
it had never stopped -- weights, optimiser, the data order's and the evaluation batches'
generators, torch's RNG (dropout), the curves so far -- written atomically under
``<results>/<profile>/.checkpoints/``. :func:`residual_lib.training.train.train_group` saves one every
N steps and resumes from it; :func:`residual_lib.training.store.obtain` deletes it once the records
are written.

A checkpoint file is one header line, ``residual_lib checkpoint sha256=<hex>``, followed by
the ``torch.save`` bytes it hashes. ``torch.load`` does not notice bytes overwritten inside a
tensor, so the hash is checked first: a checkpoint that fails it (overwritten, truncated, or
written without a header) is ignored with one line on stderr and the run starts over.

A checkpoint also names the code that wrote it: the commit and the digest of the modules that
decide a run's numbers (:func:`residual_lib.storage.provenance.code_digest`). Other code does not
continue it (a resumed AdamW, for one, would bring back the old code's settings with its
state): the run starts over, with one line, unless asked to continue (``train
--resume-other-code``), and then its record names both (``provenance.resumed_code``: each
other code that trained earlier steps, with the step it handed over at, oldest first, kept
through later resumes). It also keeps the machine and kernels of each process that trained the
run, which a resumed run's record names (``provenance.processes``)."""

from __future__ import annotations

import hashlib
import io
import os
import re
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import torch

from ..core.files import atomic_write
from ..run.runs import RunError
from ..storage.locks import clean_stale_files
from ..storage.provenance import code_digest, code_version

#: Steps between checkpoints for the profiles whose runs last longer than ~10 minutes on the
#: machines they are meant for; shorter runs are cheaper to retrain than to checkpoint.
CHECKPOINT_EVERY = {"paper-10m": 250, "paper-124m": 250}


def default_every(profile_name: str) -> int | None:
    """Steps between checkpoints for a run that names none: ``RESIDUAL_CHECKPOINT_EVERY`` where
    it is set (0: none; a lent GPU's checkpoints cannot outlive its lease, and a group's take
    seconds each to save), else :data:`CHECKPOINT_EVERY`'s for the profile."""
    given = os.environ.get("RESIDUAL_CHECKPOINT_EVERY", "").strip()
    if not given:
        return CHECKPOINT_EVERY.get(profile_name)
    if not re.fullmatch(r"[0-9]+", given):
        raise RunError(f"RESIDUAL_CHECKPOINT_EVERY must be a whole number of steps (0 for none), not {given!r}")
    return int(given)


#: The start of a checkpoint's header line; the sha256 of the rest of the file follows it.
HEADER = b"residual_lib checkpoint sha256="


class CheckpointError(ValueError):
    """A checkpoint file whose contents do not match its checksum, or that has none."""


def checkpoint_path(results_dir: str | os.PathLike, runs: list) -> Path:
    """Where the checkpoint of ``runs`` (one run, or a fused group of one profile) lives: named
    after the run's record, or after a hash of the group's keys."""
    first = runs[0]
    name = first.path(results_dir).stem if len(runs) == 1 else \
        f"fused{len(runs)}_" + hashlib.sha256(",".join(r.key for r in runs).encode()).hexdigest()[:16]
    return Path(results_dir) / first.profile.name / ".checkpoints" / f"{name}.pt"


#: A checkpoint's temporary file is a killed save's once it is this old (seconds since its last
#: write): a save takes seconds, and a stopped sweep's worker, or a cancelled cluster job,
#: whose claim is already given back, may still be finishing its last one.
KILLED_SAVE_AGE = 3600.0


def clear_killed_saves(profile_folder: str | os.PathLike) -> list[Path]:
    """Remove the temporary files of checkpoint saves killed before their rename in
    ``<profile_folder>/.checkpoints/`` (:func:`residual_lib.core.files.atomic_write` leaves none
    unless its process dies inside it; a ``paper-10m`` one is ~130 MB), once older than
    :data:`KILLED_SAVE_AGE`. Returns what was removed."""
    return clean_stale_files(Path(profile_folder) / ".checkpoints", age=KILLED_SAVE_AGE)


def save_checkpoint(path: Path, step: int, states: list, optimizer, params: dict, train_seconds: float,
                    elapsed: float) -> None:
    """Everything needed to continue at ``step`` exactly as if never stopped, written atomically."""
    payload = {
        "step": step, "keys": [s.key for s in states], "params": {k: v.detach().clone() for k, v in params.items()},
        "optimizer": optimizer.state_dict(), "runs": [s.checkpoint_state() for s in states],
        "torch_rng": torch.get_rng_state(), "train_seconds": train_seconds, "elapsed": elapsed,
        "cuda_rng": torch.cuda.get_rng_state_all() if states[0].device.startswith("cuda") else None,
        "code": {"commit": code_version()[0], "digest": code_digest()},
        # the other code that trained the steps before a resume, carried to the record through any later resume
        "resumed_code": states[0].resumed_code,
        # each process that trained the run, with its machine and kernels, carried to the record
        "processes": states[0].processes_so_far(),
        # when the run's first process began: a record's start time, the time between sessions included
        "started_at": states[0].started_at or (datetime.now(timezone.utc) - timedelta(seconds=elapsed)).isoformat(
            timespec="seconds"),
    }
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    body = buffer.getbuffer()
    atomic_write(path, HEADER + hashlib.sha256(body).hexdigest().encode() + b"\n", body)


def read_checkpoint(path: str | os.PathLike, map_location=None) -> dict:
    """The payload :func:`save_checkpoint` wrote to ``path``, once its sha256 matches the one in
    its header; :class:`CheckpointError` if it does not, or the header is missing."""
    data = Path(path).read_bytes()
    end = data.find(b"\n", 0, len(HEADER) + 65)
    if not data.startswith(HEADER) or end != len(HEADER) + 64:
        raise CheckpointError("no sha256 checksum header")
    body = memoryview(data)[end + 1:]
    if hashlib.sha256(body).hexdigest().encode() != data[len(HEADER):end]:
        raise CheckpointError("sha256 checksum mismatch")
    return torch.load(io.BytesIO(body), map_location=map_location, weights_only=False)


def load_checkpoint(path: Path | None, states: list, optimizer, params: dict,
                    other_code: bool = False) -> tuple[int, float, float]:
    """Restore ``states``, ``optimizer`` and ``params`` from ``path`` if it holds these runs
    and was written by this code (or ``other_code`` allows any); returns (the step to continue
    from, training seconds so far, wall seconds so far)."""
    if path is None or not path.is_file():
        return 0, 0.0, 0.0
    try:
        payload = read_checkpoint(path, map_location=states[0].device)
    except Exception as exc:  # a damaged checkpoint costs the time it saved, nothing else
        reason = exc if isinstance(exc, CheckpointError) else exc.__class__.__name__
        print(f"residual_lib: ignoring unreadable checkpoint {path} ({reason}); starting over", file=sys.stderr)
        return 0, 0.0, 0.0
    if payload.get("keys") != [s.key for s in states]:
        return 0, 0.0, 0.0
    code = payload.get("code") or {"commit": None, "digest": None}  # none: written before checkpoints named it
    earlier = list(payload.get("resumed_code") or [])  # other code that trained the steps before, oldest first
    if code["digest"] != code_digest():
        commit = (code["commit"] or "unnamed")[:12]
        if not other_code:
            print(f"residual_lib: checkpoint {path} (step {payload['step']}) was written by other code (commit "
                  f"{commit}); starting over (train --resume-other-code continues it, and the record names both)",
                  file=sys.stderr)
            return 0, 0.0, 0.0
        print(f"residual_lib: continuing {path} at step {payload['step']}, written by other code (commit {commit}), "
              "as asked; the record names both", file=sys.stderr)
        earlier.append({**code, "step": payload["step"]})
    for state in states:
        state.resumed_code = earlier or None
    with torch.no_grad():
        for name, value in payload["params"].items():
            params[name].copy_(value)
    optimizer.load_state_dict(payload["optimizer"])
    for state, saved in zip(states, payload["runs"]):
        state.restore(saved)
    torch.set_rng_state(payload["torch_rng"])
    if payload.get("cuda_rng") is not None:
        torch.cuda.set_rng_state_all(payload["cuda_rng"])
    for state in states:
        state.resumed_from = payload["step"]
        state.started_at = payload.get("started_at")  # none: written before checkpoints kept it
        state.earlier_processes = payload.get("processes")  # none: written before checkpoints kept them
    return payload["step"], payload["train_seconds"], payload["elapsed"]
