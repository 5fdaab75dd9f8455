"""The results folder as a store of records: :func:`obtain` returns the record of every run
asked for, training only those that are missing, and writes what it trains.

Cached or trained, a run's record is filed under its key (:class:`residual_lib.run.runs.Run`), so
the same request always finds the same file. A missing run is claimed first
(:mod:`residual_lib.storage.locks`), so two processes asking for it train it once: the second waits
for the first's record. A checkpoint lets a killed long run resume; it is deleted once the
record is written.
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path

from ..core.files import check_writable
from ..core.paths import results_folder
from ..run.runs import Run, fuse_groups
from ..storage.locks import claim_run, clean_stale_files
from ..storage.records import find_record, write_record
from .checkpoint import checkpoint_path, clear_killed_saves, default_every
from .train import train_group


def obtain(
    runs: list[Run],
    results_dir: str | os.PathLike | None = None,
    force: bool = False,
    claim: bool = True,
    fuse: int = 1,
    checkpoint_every: int | None = None,
    **train_options,
) -> list[tuple[Path, bool]]:
    """The records of ``runs`` under ``results_dir`` (default: the checkout's ``results/``),
    training the missing ones, up to ``fuse`` of one fuse key together. Returns ``(path,
    trained)`` per run, in order. Unless ``claim`` is False (a sweep's worker, whose sweep
    holds the claims), each missing run is claimed first
    (:func:`residual_lib.storage.locks.claim_run`): if another process is training it, this waits
    for that record instead. Checkpoints: every ``checkpoint_every`` steps (default
    :func:`~residual_lib.training.checkpoint.default_every`; 0 for none)."""
    results = results_folder(results_dir)
    out: dict[Run, tuple[Path, bool]] = {}
    todo: list[Run] = []
    for folder in dict.fromkeys(results / r.profile.name for r in runs):
        clean_stale_files(folder)
        clear_killed_saves(folder)
    for r in dict.fromkeys(runs):
        existing = None if force else find_record(results, r.profile.name, r.key)
        if existing is not None:
            out[r] = (existing, False)
        else:
            todo.append(r)
    for group in fuse_groups(todo, fuse) if todo else []:
        folder = results / group[0].profile.name
        check_writable(folder)
        new_folders = [f for f in (folder, *folder.parents) if not f.exists()]
        try:
            # Claims are taken without waiting, so that two processes asking for the same runs in
            # another order cannot wait on each other; a run another process holds is waited for
            # afterwards, holding nothing (its record appears, or its owner dies and it is ours).
            with ExitStack() as claims:
                mine = [r for r in group if claims.enter_context(claim_run(r.path(results), wait=False,
                                                                           enabled=claim, reuse=not force))]
                out.update(_train_and_write(mine, results, force, checkpoint_every, train_options))
            for r in group:
                if r not in out:
                    with claim_run(r.path(results), wait=True, reuse=not force) as ours:
                        out.update(_train_and_write([r], results, force, checkpoint_every, train_options)
                                   if ours else {r: (r.path(results), False)})
        except BaseException:
            for created in new_folders:  # leave no empty folder behind a run that never started
                try:
                    created.rmdir()
                except OSError:
                    break
            raise
    return [out[r] for r in runs]


def _train_and_write(runs: list[Run], results: Path, force: bool, every: int | None, options: dict) -> dict:
    if not runs:
        return {}
    every = default_every(runs[0].profile.name) if every is None else every
    saved = checkpoint_path(results, runs)
    if force:
        saved.unlink(missing_ok=True)
    records = train_group(runs, checkpoint=saved if every else None, checkpoint_every=every or None, **options)
    written = {r: (write_record(rec, r.path(results)), True) for r, rec in zip(runs, records)}
    saved.unlink(missing_ok=True)
    return written
