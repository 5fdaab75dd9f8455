"""Writing files so that a reader never sees half of one: every record, checkpoint,
executed notebook and report is written beside its destination and renamed into place."""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

#: Free space a results folder must have before a run starts (a record is ~1-5 MB).
MIN_FREE_BYTES = 64 * 2**20


class NotWritableError(ValueError):
    """A folder that cannot take the files about to be written; the message says what to do."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike, *parts: bytes | str | memoryview) -> Path:
    """Write ``parts`` one after the other to a temporary file beside ``path`` and rename it
    into place, with the permissions an ordinary file gets (``mkstemp``'s are owner-only). A
    write that fails or is interrupted leaves the old file, or none, and no temporary file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            for part in parts:
                f.write(part.encode() if isinstance(part, str) else part)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def check_writable(folder: str | os.PathLike, option: str = "--results", what: str = "run records",
                   fix: str | None = None) -> Path:
    """Fail before training, not after: ``folder`` (or, if it does not exist yet, the nearest
    folder above it, where it would be created) can be written and has room. Nothing is left
    behind. ``option`` is the command-line option the message tells the user to change, ``what``
    what would be written there; ``fix``, where no option would help, what to do instead."""
    folder = Path(folder).absolute()
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        if not existing.is_dir():
            raise NotADirectoryError(20, "not a folder")
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".write-check.", suffix=".tmp"):
            pass
    except OSError as exc:
        raise NotWritableError(f"cannot write {what} to {folder} ({exc.strerror or exc.__class__.__name__} at "
                               f"{existing}): " + (fix or f"pass {option} a writable "
                                                      f"{'path' if option == '--json' else 'folder'}")) from None
    free = shutil.disk_usage(existing).free
    if free < MIN_FREE_BYTES:
        raise NotWritableError(f"only {free / 2**20:.0f} MB free under {existing}: free some space or "
                               + (fix or f"pass {option} another folder"))
    return folder


def files_sha256(*paths: Path) -> str:
    """sha256 over the files' bytes, in order: read in chunks, and once per process while the
    files keep their sizes and modification times."""
    return _sha256(tuple((Path(p), Path(p).stat().st_size, Path(p).stat().st_mtime_ns) for p in paths))


@functools.lru_cache(maxsize=4)
def _sha256(files: tuple) -> str:
    digest = hashlib.sha256()
    for path, _, _ in files:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 24), b""):
                digest.update(block)
    return digest.hexdigest()
