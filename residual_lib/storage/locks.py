"""Claims: a process about to train a run first claims it, with an exclusive
``.<name>.claim`` file beside the record holding its process id, host and start time, so two
processes on one results folder split the work instead of training a run twice. A claim whose
process has died (its id gone, or reused by a process started later) is taken over.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

from .records import RecordError, validate_record


def _start_time(pid: int) -> str | None:
    """The kernel's start time of process ``pid`` (Linux), telling a live process from a new
    one that reuses a dead one's id; None where /proc is not available."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _alive(owner: dict) -> bool:
    if owner.get("host") != socket.gethostname():
        return True  # another machine's process: assume it lives (remove the claim file if it does not)
    pid = owner.get("pid")
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    started = owner.get("started")
    return started is None or _start_time(pid) in (None, started)


def claim_path(record: Path) -> Path:
    return record.with_name(f".{record.stem}.claim")


def try_claim(record: str | os.PathLike) -> bool:
    """Claim the run whose record goes to ``record`` for this process: True if it now holds
    the claim, False if a live process holds it. A claim whose owner has died is taken over."""
    path = claim_path(Path(record))
    path.parent.mkdir(parents=True, exist_ok=True)
    me = {"pid": os.getpid(), "host": socket.gethostname(), "started": _start_time(os.getpid()),
          "since": time.strftime("%Y-%m-%dT%H:%M:%S")}
    for _ in range(3):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                owner = json.loads(path.read_text() or "{}")
            except (OSError, ValueError):
                owner = {}  # being written this instant, or garbage
                if time.time() - _mtime(path) < 5:
                    return False
            if owner.get("pid") == os.getpid() and owner.get("host") == me["host"]:
                return True
            if _alive(owner):
                return False
            # take the stale claim over: only one process can rename it away
            try:
                os.replace(path, path.with_name(f"{path.name}.stale.{os.getpid()}"))
                path.with_name(f"{path.name}.stale.{os.getpid()}").unlink()
            except FileNotFoundError:
                pass
            continue
        with os.fdopen(fd, "w") as f:
            json.dump(me, f)
        return True
    return False


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def release_claim(record: str | os.PathLike) -> None:
    """Give up this process's claim on a run (a claim of another process is left alone)."""
    path = claim_path(Path(record))
    try:
        owner = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    if owner.get("pid") == os.getpid() and owner.get("host") == socket.gethostname():
        path.unlink(missing_ok=True)


#: What :func:`claim` found: the run's record exists, this process now holds the run, or a
#: live process elsewhere does.
RECORDED, OURS, ELSEWHERE = "recorded", "ours", "elsewhere"


def _recorded(record: Path) -> bool:
    if not record.is_file():
        return False
    try:
        validate_record(record)
        return True
    except RecordError:
        return False


def claim(record: str | os.PathLike, reuse: bool = True) -> str:
    """Claim the run whose record goes to ``record``, without waiting: :data:`OURS` if this
    process now holds it, :data:`RECORDED` if its valid record is there already (made by
    whoever held it; with ``reuse`` False, a forced retraining, an existing record does not
    count), :data:`ELSEWHERE` if a live process holds it. The trainer and the sweep both
    decide what to train with this."""
    record = Path(record)
    if try_claim(record):
        if reuse and _recorded(record):  # the previous holder finished it and let go
            release_claim(record)
            return RECORDED
        return OURS
    return RECORDED if reuse and _recorded(record) else ELSEWHERE


class claim_run:
    """``with claim_run(record_path, wait=True) as mine:`` -- hold the run's claim for the
    block (``mine`` True), or, when another live process holds it, wait until its record
    appears (``mine`` False) or its claim goes stale (then take it over). With ``wait=False``
    a run held by another process is ``mine`` False at once, as is a run already recorded
    (unless ``reuse`` is False: a forced retraining). ``enabled=False`` holds nothing and
    yields True."""

    def __init__(self, record: str | os.PathLike, wait: bool = True, enabled: bool = True, poll: float = 2.0,
                 reuse: bool = True):
        self.record, self.wait, self.enabled, self.poll, self.reuse = Path(record), wait, enabled, poll, reuse
        self.held = False

    def __enter__(self) -> bool:
        if not self.enabled:
            return True
        announced = False
        while True:
            state = claim(self.record, self.reuse)
            if state != ELSEWHERE or not self.wait:
                self.held = state == OURS
                return self.held
            if not announced:
                print(f"residual_lib: {self.record.name} is being trained by another process; waiting for it",
                      file=sys.stderr, flush=True)
                announced = True
            time.sleep(self.poll)

    def __exit__(self, *exc) -> None:
        if self.held:
            release_claim(self.record)


def clean_stale_files(folder: str | os.PathLike, age: float = 300.0) -> list[Path]:
    """Remove what a killed writer left in ``folder``: temporary record files (``.*.tmp``)
    older than ``age`` seconds -- a record is written in well under a second -- and claims
    whose process has died. Returns what was removed."""
    folder, now, removed = Path(folder), time.time(), []
    if not folder.is_dir():
        return removed
    for tmp in folder.glob(".*.tmp"):
        if now - _mtime(tmp) > age:
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    for claim in folder.glob(".*.claim"):
        try:
            owner = json.loads(claim.read_text())
        except (OSError, ValueError):
            owner = None
        if (owner is not None and not _alive(owner)) or (owner is None and now - _mtime(claim) > age):
            claim.unlink(missing_ok=True)
            removed.append(claim)
    return removed
