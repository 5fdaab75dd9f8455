"""Checkpoints: everything a run (or a fused group) needs to continue at step N exactly as if
it had never stopped -- weights, optimiser, the data order's and the evaluation batches'
generators, torch's RNG (dropout), the curves so far -- written atomically under
``<results>/<profile>/.checkpoints/``. :func:`residual_lib.train.train_group` saves one every
N steps and resumes from it; :func:`residual_lib.train.obtain` deletes it once the records
are written."""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

import torch

#: Steps between checkpoints for the profiles whose runs last longer than ~10 minutes on the
#: machines they are meant for; shorter runs are cheaper to retrain than to checkpoint.
CHECKPOINT_EVERY = {"paper-10m": 250, "paper-124m": 250}


def checkpoint_path(results_dir: str | os.PathLike, runs: list) -> Path:
    """Where the checkpoint of ``runs`` (one run, or a fused group of one profile) lives: named
    after the run's record, or after a hash of the group's keys."""
    first = runs[0]
    name = first.path(results_dir).stem if len(runs) == 1 else \
        f"fused{len(runs)}_" + hashlib.sha256(",".join(r.key for r in runs).encode()).hexdigest()[:16]
    return Path(results_dir) / first.profile.name / ".checkpoints" / f"{name}.pt"


def save_checkpoint(path: Path, step: int, states: list, optimizer, params: dict, train_seconds: float,
                    elapsed: float) -> None:
    """Everything needed to continue at ``step`` exactly as if never stopped, written atomically."""
    payload = {
        "step": step, "keys": [s.key for s in states], "params": {k: v.detach().clone() for k, v in params.items()},
        "optimizer": optimizer.state_dict(), "runs": [s.checkpoint_state() for s in states],
        "torch_rng": torch.get_rng_state(), "train_seconds": train_seconds, "elapsed": elapsed,
        "cuda_rng": torch.cuda.get_rng_state_all() if states[0].device.startswith("cuda") else None,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        torch.save(payload, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_checkpoint(path: Path | None, states: list, optimizer, params: dict) -> tuple[int, float, float]:
    """Restore ``states``, ``optimizer`` and ``params`` from ``path`` if it holds these runs;
    returns (the step to continue from, training seconds so far, wall seconds so far)."""
    if path is None or not path.is_file():
        return 0, 0.0, 0.0
    try:
        payload = torch.load(path, map_location=states[0].device, weights_only=False)
    except Exception as exc:  # a damaged checkpoint costs the time it saved, nothing else
        print(f"residual_lib: ignoring unreadable checkpoint {path} ({exc.__class__.__name__}); starting over",
              file=sys.stderr)
        return 0, 0.0, 0.0
    if payload.get("keys") != [s.key for s in states]:
        return 0, 0.0, 0.0
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
    return payload["step"], payload["train_seconds"], payload["elapsed"]
