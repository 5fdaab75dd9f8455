"""Batch execution: train what the section notebooks need, then execute the notebooks.

``python -m residual_lib sweep notebooks/06_central.py --profile cpu --seeds 1337 42 123``

1. Each notebook's section plan (:func:`residual_lib.study.sections.plan`) lists its runs;
   runs whose record exists are skipped, so a second sweep trains nothing and a killed
   sweep resumes where it stopped. Runs are trained seed by seed, in the order the seeds
   are given, so a partial sweep leaves complete seeds.
2. Missing runs are trained by a pool of worker processes (``--jobs``, each with
   ``--threads`` torch threads, training up to ``--fuse`` runs of one fuse key together:
   :mod:`residual_lib.training.fused`; :func:`default_layout` picks all three), or submitted through submitit (``--executor submitit``:
   Slurm when the machine has it, otherwise submitit's local executor; ``--cluster``
   forces one). A failed run does not stop the others; it is listed at the end with
   its log, and the sweep exits with status 1. A run that diverged (non-finite loss) is
   recorded as such and listed. Deterministic CPU runs use one thread each whatever the
   layout (:data:`residual_lib.run.runtime.DETERMINISTIC_CPU_THREADS`), so a record's bits do
   not depend on ``--jobs`` or on how many runs were left.
   Each run is claimed before it is submitted (:func:`residual_lib.storage.locks.claim`):
   two sweeps on one results folder split the work, and a run claimed by another live
   sweep is waited for rather than trained twice. Workers exit when the sweep's process
   dies (kill -9 included); SIGTERM stops a sweep as Ctrl-C does, keeping finished records.
   A stopped submitit sweep cancels the jobs it submitted that have not finished.
3. The notebooks (jupytext percent files) are converted in memory and executed by
   papermill with the parameters injected and ``train_missing=False``, so they only
   read records. Executed notebooks are kept under ``<results>/<profile>/notebooks/``
   (``<name>.failed.ipynb`` when one raised, ``<name>.interrupted.ipynb`` when stopped).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..core.paths import results_folder
from ..core.stop import check, deferred
from ..pages.execute import execute_notebook
from ..run.runs import PAPER_SEEDS, Run, fuse_groups
from ..storage.locks import OURS, RECORDED, claim, clean_stale_files, release_claim
from ..storage.records import read_record
from ..study.sections import DEFAULT_PROFILE, missing, plan, section_name
from ..training.checkpoint import clear_killed_saves, default_every
from ..training.store import obtain


@dataclass
class SweepReport:
    trained: list[str] = field(default_factory=list)
    cached: int = 0
    failed_runs: list[tuple[str, str]] = field(default_factory=list)  # (run label, error and log path)
    notebooks: list[str] = field(default_factory=list)
    failed_notebooks: list[tuple[str, str]] = field(default_factory=list)
    wall_seconds: float = 0.0

    diverged: list[str] = field(default_factory=list)  # labels of runs whose loss became non-finite

    @property
    def ok(self) -> bool:
        return not (self.failed_runs or self.failed_notebooks)


#: Models fused per process on a GPU: a paper-10m model keeps well under a tenth of an
#: H200 busy, and eight of them fit its memory many times over.
GPU_FUSE = 8


def default_layout(n_runs: int, device: str) -> tuple[int, int, int]:
    """(jobs, threads per job, models fused per job) for ``n_runs`` runs of one fuse key.

    On CUDA one process owns the GPU and trains up to :data:`GPU_FUSE` models at once.
    On CPU, single-threaded processes, one per core, beat one process using every core
    (small matrices scale poorly across threads), and fusing models adds nothing there
    (a batched matrix multiply of K small models costs what K small ones do; see
    ``python -m residual_lib bench``). With fewer runs than cores the spare cores go to
    threads, which only non-deterministic runs use: a deterministic CPU run always uses
    one thread, so that its bits do not depend on the layout."""
    if device.startswith("cuda") or (device == "auto" and _cuda_available()):
        return 1, max(1, os.cpu_count() or 1), max(1, min(n_runs, GPU_FUSE))
    cores = max(1, os.cpu_count() or 1)
    jobs = max(1, min(n_runs, cores))
    return jobs, max(1, cores // jobs), 1


def _cuda_available() -> bool:
    return torch.cuda.is_available()


def _exit_with_parent(parent: int) -> None:
    """Worker initializer: exit as soon as the sweep's process is gone (kill -9 included),
    instead of idling for good."""
    def watch():
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _worker(runs: list[Run], results_dir: str, device: str, threads: int, log_path: str,
                 compile: bool = False, checkpoint_every: int | None = None) -> list[str]:
    """Worker: train a group of runs of one fuse key with ``threads`` torch threads -- one run
    alone, several fused (:mod:`residual_lib.training.fused`) -- progress lines to ``log_path``,
    a checkpoint every ``checkpoint_every`` steps (0: none; None: the worker's own default).
    Returns the written record paths."""
    torch.set_num_threads(threads)
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        saved, sys.stderr = sys.stderr, log
        try:  # the sweep holds the claims
            done = obtain(runs, results_dir, claim=False, fuse=len(runs), device=device, compile=compile,
                          checkpoint_every=checkpoint_every)
            return [str(path) for path, _ in done]
        except BaseException:
            traceback.print_exc(file=log)
            raise
        finally:
            sys.stderr = saved


class _LocalPool:
    def __init__(self, jobs: int):
        self.pool = ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn"),
                                        initializer=_exit_with_parent, initargs=(os.getpid(),))
        self.poll = 0.2

    def submit(self, *args):
        # a worker starts with Ctrl-C blocked, and keeps it so: a terminal's or a kernel's SIGINT
        # goes to the whole process group, and a worker stops by terminate() when the sweep stops
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            return self.pool.submit(_worker, *args)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def close(self, interrupted: bool = False):
        if interrupted:  # stop the runs in flight now; their records were never written
            for process in list((self.pool._processes or {}).values()):
                process.terminate()
        self.pool.shutdown(wait=True, cancel_futures=True)


class _Submitit:
    def __init__(self, folder: Path, threads: int, device: str, cluster: str | None):
        import submitit

        self.executor = submitit.AutoExecutor(folder=str(folder), cluster=cluster)
        gpus = 1 if device.startswith("cuda") else 0
        self.executor.update_parameters(timeout_min=24 * 60, cpus_per_task=threads, gpus_per_node=gpus,
                                        name="residual_lib")
        self.poll = 0.5 if self.executor.cluster in ("local", "debug") else 10.0
        self.jobs = []

    def submit(self, *args):
        job = self.executor.submit(_worker, *args)
        self.jobs.append(job)
        return job

    def close(self, interrupted: bool = False):
        if interrupted:  # the sweep gives its claims back: a job left running would be trained twice
            for job in self.jobs:
                if not job.done():
                    job.cancel(check=False)


def train_runs(
    specs: list[Run],
    results_dir: str | os.PathLike,
    jobs: int | None = None,
    threads: int | None = None,
    executor: str = "local",
    device: str = "auto",
    cluster: str | None = None,
    progress: bool | None = None,
    fuse: int | None = None,
    compile: bool = False,
) -> tuple[list[str], list[tuple[str, str]]]:
    """Train ``specs`` (all assumed missing), at most ``jobs`` processes at a time, each
    training a group of up to ``fuse`` runs of one fuse key together. Returns the written
    record paths and the failures as ``(label, message)``. A group's records are written
    when the group finishes; a killed sweep loses at most the groups in flight."""
    if not specs:
        return [], []
    results = Path(results_dir)
    default_jobs, _, default_fuse = default_layout(len(specs), device)
    fuse = fuse or default_fuse
    groups = fuse_groups(list(specs), fuse)
    if jobs is None:
        jobs = min(default_jobs, len(groups))
    threads = threads or max(1, (os.cpu_count() or 1) // jobs)
    # resolved here, where RESIDUAL_CHECKPOINT_EVERY is set: a cluster job may start without the
    # sweep's environment (Slurm's --export=NONE), and a bad value is refused before any job starts
    every = {spec.profile.name: default_every(spec.profile.name) or 0 for spec in specs}
    # SIGTERM and Ctrl-C are recorded while the local pool runs and raised at the loop's check():
    # an interrupt inside ProcessPoolExecutor's own code can leave it unable to shut down
    with deferred() if executor == "local" else contextlib.nullcontext():
        if executor == "local":
            backend = _LocalPool(jobs)
        elif executor == "submitit":
            backend = _Submitit(results / specs[0].profile.name / "submitit", threads, device, cluster)
        else:
            raise ValueError(f"unknown executor {executor!r}: choose local or submitit")

        from tqdm.auto import tqdm

        interactive = sys.stderr.isatty() if progress is None else progress
        bar = tqdm(total=len(specs), desc="runs", unit="run", disable=not interactive)
        written, failures = [], []
        pending, running = list(groups), {}
        elsewhere: list[Run] = []  # claimed by another live process: waited for, not trained twice
        held: list[Run] = []  # claimed by this sweep

        def target(spec: Run) -> Path:
            return spec.path(results)

        def release(group) -> None:
            for spec in group:
                release_claim(target(spec))
                if spec in held:
                    held.remove(spec)

        interrupted, checked = False, 0.0
        try:
            while pending or running or elsewhere:
                check()  # a stop is raised here and before each submit, never inside the pool's own code
                while pending and len(running) < jobs:
                    check()  # no more groups submitted once a stop is asked for
                    group, mine = pending.pop(0), []
                    for spec in group:
                        state = claim(target(spec))
                        if state == RECORDED:
                            bar.update(1)  # made meanwhile by another process
                        elif state == OURS:
                            mine.append(spec)
                            held.append(spec)
                        else:
                            elsewhere.append(spec)
                    if not mine:
                        continue
                    name = target(mine[0]).stem + (f"_fused{len(mine)}" if len(mine) > 1 else "")
                    log = results / mine[0].profile.name / "logs" / f"{name}.log"
                    future = backend.submit(mine, str(results), device, threads, str(log), compile,
                                            every[mine[0].profile.name])
                    running[future] = (mine, log)
                if elsewhere and time.monotonic() - checked > 2.0:
                    checked = time.monotonic()
                    for spec in list(elsewhere):
                        state = claim(target(spec))
                        if state == RECORDED:
                            elsewhere.remove(spec)
                            bar.update(1)
                        elif state == OURS:  # its owner died: this sweep trains it
                            elsewhere.remove(spec)
                            release_claim(target(spec))
                            pending.append([spec])
                done = [f for f in running if f.done()]
                if not done:
                    time.sleep(backend.poll)
                    continue
                for future in done:
                    group, log = running.pop(future)
                    try:
                        written += future.result()
                        status = "done"
                    except Exception as exc:  # a failed group is reported, the others go on
                        message = str(exc).strip().splitlines()[-1] if str(exc).strip() else exc.__class__.__name__
                        failures += [(spec.label(), f"{message} (log: {log})") for spec in group]
                        status = "FAILED"
                    release(group)
                    bar.update(len(group))
                    if not interactive:
                        finished = len(written) + len(failures)
                        labels = "; ".join(spec.label() for spec in group)
                        print(f"[sweep] {status}: {labels} ({finished}/{len(specs)})", file=sys.stderr, flush=True)
        except BaseException:
            interrupted = True
            raise
        finally:
            try:
                bar.close()
                backend.close(interrupted)
            except Exception as exc:
                if not interrupted:
                    raise
                print(f"[sweep] stopping the workers: {exc}", file=sys.stderr)  # the stop stays the story
            finally:
                release(list(held))  # claims are given back whatever the pool's shutdown does
        return written, failures


def sweep(
    notebooks: list[str | os.PathLike],
    profile: str = DEFAULT_PROFILE,
    seeds=PAPER_SEEDS,
    variants=None,
    results_dir: str | os.PathLike | None = None,
    jobs: int | None = None,
    threads: int | None = None,
    executor: str = "local",
    device: str = "auto",
    cluster: str | None = None,
    run_notebooks: bool = True,
    progress: bool | None = None,
    fuse: int | None = None,
    compile: bool = False,
) -> SweepReport:
    started = time.perf_counter()
    results = results_folder(results_dir).resolve()
    paths = [Path(n).resolve() for n in notebooks]
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"notebook {path} not found: pass a file from notebooks/ or --all")
        section_name(path)
    params = {"profile": profile, "seeds": [int(s) for s in seeds]}
    if variants:
        params["variants"] = list(variants)
    specs = list(dict.fromkeys(s for p in paths for s in plan(p.stem, **params)))
    # seed by seed: a sweep stopped half-way leaves whole seeds (every run the sections need
    # for them), which the notebooks and the book can already show
    order = {seed: i for i, seed in enumerate(params["seeds"])}
    for folder in dict.fromkeys(results / s.profile.name for s in specs):
        clean_stale_files(folder)
        clear_killed_saves(folder)
    todo = sorted(missing(specs, results), key=lambda s: order.get(s.seed, len(order)))
    report = SweepReport()
    report.trained, report.failed_runs = train_runs(todo, results, jobs, threads, executor, device, cluster, progress,
                                                     fuse, compile)
    report.cached = len(specs) - len(report.trained) - len(report.failed_runs)
    for path in report.trained:
        rec = read_record(path)
        if rec.get("status") == "diverged":
            report.diverged.append(f"{rec['profile']} {rec['variant']} seed {rec['seed']} (key {rec['key']}) "
                                   f"diverged at step {rec['diverged_at_step']}")
    if run_notebooks:
        for path in paths:
            check()  # a stop that a finaliser swallowed does not run the remaining notebooks
            injected = {**params, "results_dir": str(results), "device": device, "train_missing": False}
            try:
                report.notebooks.append(str(execute_notebook(path, injected, results / profile / "notebooks")))
            except Exception as exc:
                lines = [line for line in str(exc).strip().splitlines() if line.strip()]
                report.failed_notebooks.append((path.name, lines[-1] if lines else exc.__class__.__name__))
    report.wall_seconds = time.perf_counter() - started
    return report
