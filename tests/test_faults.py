"""Nothing lost, nothing silently wrong: damaged records, diverged runs, killed and
concurrent sweeps, layout-independent bits, and the command line's smaller failure modes."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
import torch

from residual_lib.commands.sweep import train_runs
from residual_lib.pages.execute import execute_notebook
from residual_lib.run.profiles import get_profile
from residual_lib.run.runs import Run, RunError, record_path
from residual_lib.storage.locks import clean_stale_files, try_claim
from residual_lib.storage.records import BadRecordsError, RecordError, find_record, read_record, seal
from residual_lib.study.frames import load_records
from residual_lib.training.checkpoint import read_checkpoint
from residual_lib.training.store import obtain

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, cwd: Path = ROOT, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "residual_lib", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, timeout=600, **kwargs)


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    """One valid smoke record, in a results folder of its own (copy it before damaging it)."""
    results = tmp_path_factory.mktemp("good")
    path, trained = obtain([Run("smoke", "full", 11)], results, progress=False)[0]
    assert trained
    return path


def _copy(good: Path, tmp_path: Path) -> Path:
    target = tmp_path / "results" / "smoke" / good.name
    target.parent.mkdir(parents=True)
    shutil.copy(good, target)
    return target


def _damage(path: Path, how: str) -> str:
    text = path.read_text()
    rec = json.loads(text)
    if how == "truncated":
        path.write_text(text[: len(text) // 2])
        return "not valid JSON"
    if how == "empty":
        path.write_text("")
        return "empty file"
    if how == "garbage":
        path.write_bytes(os.urandom(300))
        return "not valid JSON"
    if how == "nan":
        path.write_text(text.replace(f'"final_val_loss": {rec["final_val_loss"]!r}', '"final_val_loss": NaN'))
        return "not strict JSON"
    if how == "missing-field":
        del rec["final_val_loss"]
        path.write_text(json.dumps(rec))
        return "missing field final_val_loss"
    if how == "other-run":  # another run's content under this file name
        rec["seed"], rec["key"] = 12, "0123456789abcdef"
        path.write_text(json.dumps(rec))
        return "belongs in full_seed12_0123456789abcdef.json"
    if how == "edited-number":  # a number changed by hand: the content no longer hashes to the key
        rec["config"]["profile"]["max_iters"] = 1
        path.write_text(json.dumps(rec))
        return "hashes to key"
    if how.startswith("edited-loss") and how != "edited-loss-bool":  # a published number changed by hand
        value = {"edited-loss": 1.0, "edited-loss-negative": -1.0, "edited-loss-huge": 1e9}[how]
        path.write_text(json.dumps({**rec, "final_val_loss": value}))
        return f"final_val_loss {value!r} is not the last validation point"
    if how == "edited-consistently":  # the final loss and the curve's last point changed together
        rec["curves"]["val"]["loss"][-1] = rec["final_val_loss"] = rec["best_val_loss"] = 1.0
        rec["best_step"] = rec["curves"]["val"]["step"][-1]
        path.write_text(json.dumps(rec))
        return "does not match its digest"
    if how == "edited-loss-bool":
        path.write_text(json.dumps({**rec, "final_val_loss": True}))
        return "field final_val_loss holds bool"
    if how == "edited-curve":  # a point that is neither the last nor the smallest: only the digest sees it
        rec["curves"]["val"]["loss"][1] += 0.01
        path.write_text(json.dumps(rec))
        return "does not match its digest"
    if how == "resealed-final":  # edited, and the digest recomputed to match: the curves still disagree
        path.write_text(json.dumps(seal({**rec, "final_val_loss": 1.0})))
        return "final_val_loss 1.0 is not the last validation point"
    if how == "resealed-best":
        path.write_text(json.dumps(seal({**rec, "best_val_loss": rec["best_val_loss"] + 0.5})))
        return "is not the smallest validation point"
    if how == "resealed-train-loss":
        rec["curves"]["train"]["loss"][2] = -3.0
        path.write_text(json.dumps(seal(rec)))
        return "curves.train.loss[2] is -3.0"
    if how == "unsealed":  # a record without a digest: made before schema 3 and never migrated
        del rec["digest"]
        path.write_text(json.dumps(rec))
        return "no digest"
    raise ValueError(how)


DAMAGES = ["truncated", "empty", "garbage", "nan", "missing-field", "other-run", "edited-number", "edited-loss",
           "edited-loss-negative", "edited-loss-huge", "edited-loss-bool", "edited-curve", "resealed-final",
           "edited-consistently", "resealed-best", "resealed-train-loss"]


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_record_is_named_by_readers_and_retrained_by_the_trainer(good, tmp_path, how, capsys):
    path = _copy(good, tmp_path)
    reason = _damage(path, how)
    results = tmp_path / "results"
    with pytest.raises(RecordError, match=re.escape(reason)):
        read_record(path)
    with pytest.raises(BadRecordsError) as info:
        load_records(results)
    assert [e.path for e in info.value.errors] == [path] and reason in str(info.value)
    assert load_records(results, skip_bad=True).empty
    # the trainer does not count it as cached: it is moved aside (never deleted) and trained again
    key = good.name.rsplit("_", 1)[1].removesuffix(".json")
    assert find_record(results, "smoke", key) is None
    assert not path.exists() and (path.parent / f"{path.name}.bad").is_file()
    assert "moved aside" in capsys.readouterr().err
    again, trained = obtain([Run("smoke", "full", 11)], results, progress=False)[0]
    assert trained and again == path and read_record(again)["final_val_loss"] == read_record(good)["final_val_loss"]


def test_summary_and_book_name_every_bad_record_and_stop(good, tmp_path):
    path = _copy(good, tmp_path)
    _damage(path, "other-run")
    summary = cli("summary", str(tmp_path / "results"))
    assert summary.returncode == 2 and str(path) in summary.stderr and "Traceback" not in summary.stderr
    assert "--skip-bad" in summary.stderr
    skipped = cli("summary", str(tmp_path / "results"), "--skip-bad")
    assert skipped.returncode == 2 and "no run records" in skipped.stderr and str(path) in skipped.stderr
    book = cli("book", "--profile", "smoke", "--results", str(tmp_path / "results"))
    assert book.returncode == 2 and str(path) in book.stderr and "Traceback" not in book.stderr
    assert path.is_file()  # reading never moves anything


def test_a_diverging_run_is_stopped_recorded_as_diverged_in_strict_json_and_left_out(tmp_path):
    result = cli("train", "--variant", "attn_only", "--profile", "smoke", "--seed", "1", "--gain", "1e30",
                 "--out", str(tmp_path))
    assert result.returncode == 1, result.stderr
    assert "DIVERGED at step" in result.stdout
    path = Path(result.stdout.strip().splitlines()[-1])
    rec = json.loads(path.read_text(), parse_constant=lambda name: pytest.fail(f"{name} in a record"))
    assert rec["status"] == "diverged" and rec["diverged_at_step"] < 20
    assert rec["final_val_loss"] is None and rec["best_val_loss"] is None
    assert len(rec["curves"]["train"]["step"]) <= 3  # stopped, not trained to the end
    frame = load_records(tmp_path)
    assert list(frame.status) == ["diverged"]
    from residual_lib.study.frames import usable

    assert usable(frame).empty
    summary = cli("summary", str(tmp_path))
    assert summary.returncode == 2 and "left out: smoke attn_only seed 1 diverged" in summary.stdout


def test_the_sweep_reports_a_diverged_run(tmp_path, monkeypatch):
    from residual_lib.commands.sweep import sweep

    monkeypatch.setattr("residual_lib.commands.sweep.plan", lambda section, **kw: [Run("smoke", "attn_only", 2, gain=1e30)])
    report = sweep([str(ROOT / "notebooks" / "06_central.py")], profile="smoke", seeds=[2], results_dir=tmp_path,
                   run_notebooks=False, progress=False, jobs=1)
    assert report.ok and len(report.trained) == 1
    assert len(report.diverged) == 1 and "diverged at step" in report.diverged[0]


def _bits(path) -> dict:
    rec = read_record(path)
    return {"final": rec["final_val_loss"], "curves": rec["curves"], "diagnostics": rec["diagnostics"]}


def test_a_records_bits_depend_on_its_key_not_on_the_layout(tmp_path):
    """train with two threads, a sweep with one job, one with two jobs and a resumed one."""
    specs = [Run("smoke", "ffn_only", 42), Run("smoke", "attn_only", 42)]
    saved = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        direct = [obtain([s], tmp_path / "direct", progress=False)[0][0] for s in specs]
        assert torch.get_num_threads() == 2  # the pin is undone after the run
    finally:
        torch.set_num_threads(saved)
    one_job, failed = train_runs(specs, tmp_path / "one", jobs=1, threads=2, progress=False)
    assert not failed
    two_jobs, failed = train_runs(specs, tmp_path / "two", jobs=2, threads=1, progress=False)
    assert not failed
    resumed, failed = train_runs(specs[1:], tmp_path / "direct-resumed", jobs=1, threads=2, progress=False)
    assert not failed
    by_name = {}
    for path in [*direct, *one_job, *two_jobs, *resumed]:
        by_name.setdefault(Path(path).name, []).append(_bits(path))
    assert len(by_name) == 2
    for name, versions in by_name.items():
        assert all(v == versions[0] for v in versions[1:]), name
    assert read_record(direct[0])["provenance"]["cpu_threads"] == 1


def _sweep_args(tmp_path: Path, profile: str, seed: int, jobs: int) -> list[str]:
    """A sweep of chapter 6's runs (four, and their four dropout twins), without notebooks."""
    return [sys.executable, "-m", "residual_lib", "sweep", str(ROOT / "notebooks" / "06_central.py"), "--profile",
            profile, "--seeds", str(seed), "--no-notebooks", "--jobs", str(jobs), "--out", str(tmp_path)]


@contextlib.contextmanager
def _running_sweep(tmp_path: Path, seed: int, jobs: int, children: int, **popen):
    """A smoke-long sweep in its own session, once it has ``children`` processes (workers
    and the resource tracker): yields the process and those children; kills what is left."""
    proc = subprocess.Popen(_sweep_args(tmp_path, "smoke-long", seed, jobs), cwd=ROOT, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, **popen)
    try:
        deadline, workers = time.monotonic() + 120, []
        while time.monotonic() < deadline and len(workers) < children:
            time.sleep(0.5)
            workers = _children(proc.pid)
        assert len(workers) >= children, workers
        yield proc, workers
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _alive(pids: list[int]) -> list[int]:
    import psutil

    return [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]


def _children(pid: int) -> list[int]:
    import psutil

    return [p.pid for p in psutil.Process(pid).children(recursive=True)]


def test_killing_the_sweep_leaves_no_worker_behind(tmp_path):
    with _running_sweep(tmp_path, 5, 2, 3, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as (proc, workers):
        os.kill(proc.pid, signal.SIGKILL)  # two workers and the resource tracker are left without a parent
        proc.wait(timeout=10)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and _alive(workers):
            time.sleep(0.5)
        assert not _alive(workers)


def test_sigterm_stops_a_sweep_like_ctrl_c_and_keeps_finished_records(tmp_path):
    with _running_sweep(tmp_path, 6, 1, 2, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as (proc, workers):
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and "interrupted; finished records are kept" in err, err
        assert "Traceback" not in err, err
        time.sleep(1)
        assert not _alive(workers)
        assert not list((tmp_path / "smoke-long").glob(".*.claim"))  # claims given back


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_sigterm_that_a_finaliser_swallows_still_stops_the_command(monkeypatch, capsys):
    """The handler raises where the main thread is; inside a ``__del__`` Python reports that
    exception and carries on, so the command returns normally, and must still count as stopped."""
    import residual_lib.__main__ as cli
    from residual_lib.core import stop

    reached = []

    class Finalised:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10_000):  # the Python-level handler runs in here
                pass

    def command(args):
        Finalised()  # collected at once, its KeyboardInterrupt reported and dropped
        reached.append(stop.requested())
        return 0

    monkeypatch.setattr(cli, "summary", command)
    before = signal.getsignal(signal.SIGTERM)
    assert cli.main(["summary"]) == 130
    assert reached == [True]  # the command ran to its end: only the remembered request stopped it
    assert capsys.readouterr().err == "python -m residual_lib: interrupted\n"  # summary keeps no records
    assert signal.getsignal(signal.SIGTERM) == before and not stop.requested()


def test_a_sigterm_inside_the_pools_own_start_up_stops_the_sweep_cleanly(tmp_path, monkeypatch):
    """An interrupt raised between the pool creating its manager thread and starting it left
    the pool unable to shut down ("cannot join thread before it is started", exit 1, claims
    left behind). The sweep records the stop there and raises it at its own check."""
    import concurrent.futures.process as cfp

    from residual_lib.core import stop

    original = cfp._ExecutorManagerThread.start

    def start(self):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10_000):  # where the handler ran, and raised, before the pool was deferred to
            pass
        return original(self)

    monkeypatch.setattr(cfp._ExecutorManagerThread, "start", start)
    run = Run(get_profile("smoke", max_iters=20, eval_interval=10), "full", 3)
    with stop.sigterm_stops(), pytest.raises(KeyboardInterrupt):
        train_runs([run], tmp_path, jobs=1, progress=False)
    assert not list(tmp_path.rglob(".*.claim")) and not list(tmp_path.rglob("*.json"))
    assert not _spawned_workers()


def _spawned_workers() -> list:
    import psutil

    return [p for p in psutil.Process().children(recursive=True)
            if "spawn_main" in " ".join(p.cmdline()) and p.status() != "zombie"]


def test_a_stop_during_a_submit_submits_nothing_more(tmp_path, monkeypatch):
    from residual_lib.commands import sweep
    from residual_lib.core import stop

    submitted, original = [], sweep._LocalPool.submit

    def submit(self, *args):
        submitted.append(args[0])
        if len(submitted) == 1:
            os.kill(os.getpid(), signal.SIGTERM)  # recorded while the pool starts its first worker
        return original(self, *args)

    monkeypatch.setattr(sweep._LocalPool, "submit", submit)
    profile = get_profile("smoke", max_iters=20, eval_interval=10)
    runs = [Run(profile, variant, 3) for variant in ("full", "attn_only", "ffn_only")]
    with stop.sigterm_stops(), pytest.raises(KeyboardInterrupt):
        train_runs(runs, tmp_path, jobs=3, progress=False)
    assert len(submitted) == 1 and not list(tmp_path.rglob(".*.claim")) and not _spawned_workers()


def test_an_error_in_a_stopped_commands_clean_up_still_reads_as_the_stop(monkeypatch, capsys):
    import residual_lib.__main__ as cli
    from residual_lib.core import stop

    def command(args):
        monkeypatch.setattr(stop, "_requested", True)  # as the handler does
        raise RuntimeError("cannot join thread before it is started")

    monkeypatch.setattr(cli, "_train", command)
    assert cli.main(["train", "--variant", "full"]) == 130
    assert "interrupted; finished records are kept" in capsys.readouterr().err  # a command that writes records


def test_a_deferred_stop_is_raised_once_and_a_second_signal_at_once():
    from residual_lib.core import stop

    reached = []
    with pytest.raises(KeyboardInterrupt):
        with stop.deferred():
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C: recorded, not raised here
            for _ in range(10_000):
                pass
            reached.append(stop.requested())
    assert reached == [True]  # raised as the block ended
    assert not stop.requested()  # outside a command the stop is spent, so the next sweep runs
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt), stop.deferred():
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10_000):
            pass
        os.kill(os.getpid(), signal.SIGINT)  # a second one breaks a stuck shutdown
        for _ in range(10_000):
            pass
        reached.append("not reached")
    assert reached == [True] and not stop._deferring
    with stop.sigterm_stops():  # after the block a SIGTERM raises again where it lands
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10_000):
                pass
        with stop.deferred():  # a command's stop recorded inside an inner block is kept for the command
            with stop.sigterm_stops():
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(10_000):
                    pass
            assert stop.requested()
            stop._requested = False  # taken as handled here, so the block ends quietly


def test_a_signal_the_process_ignores_stays_ignored_inside_both_blocks():
    """A script's background job (``train ... &``) starts with Ctrl-C ignored; neither block
    may turn it back on, and each leaves it ignored."""
    from residual_lib.core import stop

    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with stop.sigterm_stops(), stop.deferred():
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10_000):
                pass
            assert not stop.requested()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with stop.sigterm_stops(), stop.deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10_000):
                pass
            assert not stop.requested() and signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def test_off_the_main_thread_deferring_changes_nothing():
    import threading

    from residual_lib.core import stop

    seen = []

    def other():
        with stop.deferred():
            seen.append((stop._deferring, signal.getsignal(signal.SIGINT)))

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert seen == [(False, signal.default_int_handler)]


def test_a_stop_asked_for_is_honoured_by_the_sweep_and_the_trainer(tmp_path, monkeypatch):
    from residual_lib.core import stop
    from residual_lib.training.train import train

    run = Run(get_profile("smoke", max_iters=20, eval_interval=10), "full", 3)
    with stop.sigterm_stops():  # as in a command: a request stays until the command ends
        monkeypatch.setattr(stop, "_requested", True)
        with pytest.raises(KeyboardInterrupt):
            train_runs([run], tmp_path, jobs=1, progress=False)
        assert not list(tmp_path.rglob("*.json")) and not list(tmp_path.rglob(".*.claim"))
        with pytest.raises(KeyboardInterrupt):
            train(run)
    assert not stop.requested()


def test_two_sweeps_on_one_folder_split_the_work(tmp_path):
    args = _sweep_args(tmp_path, "smoke", 21, 1)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    trained = [int(re.search(r"runs (\d+) trained", out).group(1)) for out, _ in outs]
    assert sum(trained) == 8, outs  # four runs and their dropout twins, each trained once
    assert len(list((tmp_path / "smoke").glob("*.json"))) == 4
    assert len(list((tmp_path / "smoke-dropout").glob("*.json"))) == 4


def test_a_group_trains_what_it_could_claim_then_waits_for_the_rest_holding_nothing(tmp_path):
    """Claims of a group are taken without waiting: a run held by another process is waited
    for only after the group's other runs are trained and their claims given back, so two
    processes asking for the same runs in another order cannot wait on each other."""
    import socket
    import threading

    from residual_lib.training.store import obtain

    profile = get_profile("smoke", max_iters=20, eval_interval=10)
    free, held = Run(profile, "full", 1), Run(profile, "ffn_only", 1)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # a live process...
    claim = held.path(tmp_path).with_name(f".{held.path(tmp_path).stem}.claim")
    claim.parent.mkdir(parents=True)
    claim.write_text(json.dumps({"pid": other.pid, "host": socket.gethostname()}))  # ... that holds this run

    def other_process():  # ... and finishes it a little later
        time.sleep(1.0)
        obtain([held], tmp_path, claim=False, progress=False)[0]
        claim.unlink()

    worker = threading.Thread(target=other_process)
    worker.start()
    try:
        out = obtain([free, held], tmp_path, fuse=2, progress=False)
    finally:
        worker.join()
        other.kill()
    assert [trained for _, trained in out] == [True, False] and out[1][0] == held.path(tmp_path)
    assert "fused_models" not in read_record(out[0][0])["provenance"]  # trained alone: it was the only one claimed
    assert not list((tmp_path / "smoke").glob(".*.claim"))


def test_a_claim_of_a_dead_process_is_taken_over(tmp_path):
    target = record_path(tmp_path, "smoke", "full", 1, "0" * 16)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    claim = target.with_name(f".{target.stem}.claim")
    claim.parent.mkdir(parents=True)
    import socket

    claim.write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname()}))
    assert try_claim(target)
    assert json.loads(claim.read_text())["pid"] == os.getpid()


def test_an_unwritable_output_fails_before_training(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = cli("train", "--variant", "full", "--profile", "smoke", "--out", str(blocker / "results"))
    assert result.returncode == 2 and "cannot write run records" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "step" not in result.stderr
    bench = cli("bench", "--profile", "smoke", "--json", str(blocker / "bench.json"))
    assert bench.returncode == 2 and "cannot write" in bench.stderr and bench.stdout == ""

    import residual_lib.training.store as store_module
    from residual_lib.core.files import NotWritableError

    monkeypatch.setattr("shutil.disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 10**9, 2**20))
    monkeypatch.setattr(store_module, "train_group", lambda *a, **k: pytest.fail("trained into a full disk"))
    with pytest.raises(NotWritableError, match="MB free"):
        obtain([Run("smoke", "full", 1)], tmp_path / "full-disk")[0]


@pytest.mark.parametrize("args, message", [
    (["train", "--variant", "full", "--profile", "smoke", "--seed", "-1"], "seed must be an integer from 0"),
    (["train", "--variant", "full", "--profile", "smoke", "--seed", str(2**64)], "seed must be an integer from 0"),
    (["summary", "README.md"], "bad run record README.md: not valid JSON"),
    (["summary", "results", "--profile", "bogus"], "unknown profile 'bogus'"),
    (["sweep", "--all", "--profile", "smoke", "--executor", "submitit", "--cluster", "bogus"], "unknown cluster"),
])
def test_more_bad_input_gets_one_line_and_exit_2(args, message):
    result = cli(*args)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_quiet_is_silent_and_a_closed_stderr_does_not_stop_a_run(tmp_path):
    quiet = cli("train", "--variant", "full", "--profile", "smoke", "--seed", "3", "--quiet", "--out", str(tmp_path))
    assert quiet.returncode == 0 and quiet.stderr == ""
    proc = subprocess.Popen([sys.executable, "-m", "residual_lib", "train", "--variant", "full", "--profile", "smoke",
                             "--seed", "4", "--out", str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    proc.stderr.close()  # nobody reads the progress lines any more
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0
    assert Path(out.decode().strip().splitlines()[-1]).is_file()


def test_stale_temporary_files_are_cleaned_and_records_are_world_readable(good, tmp_path):
    folder = tmp_path / "smoke"
    folder.mkdir()
    stale, fresh = folder / ".x.json.abc.tmp", folder / ".y.json.def.tmp"
    stale.write_text("{")
    fresh.write_text("{")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    assert clean_stale_files(folder) == [stale] and fresh.exists()
    mask = os.umask(0o022)
    os.umask(mask)
    assert good.stat().st_mode & 0o777 == 0o666 & ~mask


def test_an_interrupted_notebook_is_labelled_interrupted(tmp_path, monkeypatch):
    import papermill

    def interrupted(nb, out, **kwargs):
        Path(out).write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(papermill, "execute_notebook", interrupted)
    with pytest.raises(KeyboardInterrupt):
        execute_notebook(ROOT / "notebooks" / "03_setup.py", {"profile": "smoke"}, tmp_path)
    assert (tmp_path / "03_setup.interrupted.ipynb").is_file()
    assert not (tmp_path / "03_setup.failed.ipynb").exists()


def test_every_committed_record_passes_validation():
    frame = load_records(ROOT / "results")
    assert len(frame) >= 78 and set(frame.status) == {"ok"}
    assert all(read_record(p)["schema_version"] == 3 for p in frame.path)  # migrated: scripts/migrate_records.py


class _Killed(BaseException):
    """Stands for a kill: raised in the middle of training, caught by nothing."""


def _kill_at(monkeypatch, module, name, step_to_die):
    original = getattr(module, name)

    def dying(*args, **kwargs):
        step = args[1] if name == "take_step" else args[0]
        if step == step_to_die:
            raise _Killed
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, dying)


def _whole_and_killed(tmp_path: Path, monkeypatch, every: int, at: int, eval_mode: str = "fixed"
                      ) -> tuple[Path, list[Path]]:
    """A smoke run trained whole, and the same run checkpointed every ``every`` steps and
    killed at step ``at`` under ``tmp_path/killed``: the whole record and the checkpoints left."""
    import residual_lib.training.train as train_module

    run = Run("smoke", "attn_only", 8, eval_mode=eval_mode)
    whole, _ = obtain([run], tmp_path / "whole", progress=False, checkpoint_every=every)[0]
    with monkeypatch.context() as patch:
        _kill_at(patch, train_module, "take_step", at)
        with pytest.raises(_Killed):
            obtain([run], tmp_path / "killed", progress=False, checkpoint_every=every)[0]
    return whole, list((tmp_path / "killed" / "smoke" / ".checkpoints").glob("*.pt"))


def test_a_killed_run_resumes_from_its_checkpoint_bitwise_identical(tmp_path, monkeypatch):
    whole, saved = _whole_and_killed(tmp_path, monkeypatch, every=50, at=100)
    assert len(saved) == 1 and read_checkpoint(saved[0])["step"] == 100
    assert not list((tmp_path / "killed" / "smoke").glob("*.json"))
    # saves killed before their rename: this run's, and a fused group's that will not form again, an
    # hour old, are removed; one written a minute ago may be a save still finishing, and stays
    partial, group, recent = (saved[0].parent / f".{saved[0].name}.k1ll3d.tmp",
                              saved[0].parent / ".fused2_0123456789abcdef.pt.x.tmp", saved[0].parent / ".f.pt.y.tmp")
    for path, age in ((partial, 3700), (group, 3700), (recent, 60)):
        path.write_bytes(b"half a checkpoint")
        os.utime(path, (time.time() - age, time.time() - age))
    resumed, trained = obtain([Run("smoke", "attn_only", 8)], tmp_path / "killed", progress=False, checkpoint_every=50)[0]
    assert trained and read_record(resumed)["provenance"]["resumed_from_step"] == 100
    assert _bits(resumed) == _bits(whole)
    assert not saved[0].exists()  # the checkpoint goes once the record is written
    assert not partial.exists() and not group.exists() and recent.exists()


@pytest.mark.parametrize("eval_mode", ["fixed", "random"])
def test_a_run_killed_after_an_evaluation_resumes_without_evaluating_that_step_again(tmp_path, monkeypatch, eval_mode):
    from residual_lib.training.state import RunState

    # step 100 evaluated, then killed (random evaluation: the validation batches' generator as it is after it)
    whole, saved = _whole_and_killed(tmp_path, monkeypatch, every=50, at=100, eval_mode=eval_mode)
    assert read_checkpoint(saved[0])["runs"][0]["val_curve"]["step"] == [0, 50, 100]
    evaluated, evaluate = [], RunState.record_eval
    monkeypatch.setattr(RunState, "record_eval", lambda self, step, loss=None: (
        evaluated.append(step), evaluate(self, step, loss))[1])
    run = Run("smoke", "attn_only", 8, eval_mode=eval_mode)
    resumed, trained = obtain([run], tmp_path / "killed", progress=False, checkpoint_every=50)[0]
    assert trained and evaluated == [get_profile("smoke").max_iters]  # 100 not again; 150 is the final one
    assert _bits(resumed) == _bits(whole)
    # killed during step 100's evaluation: the checkpoint of step 100 does not hold it (nor did any
    # that older code wrote), so the resumed run evaluates step 100 first, then saves it again
    with monkeypatch.context() as patch:
        patch.setattr(RunState, "record_eval", lambda self, step, loss=None: (
            (_ for _ in ()).throw(_Killed) if step == 100 else evaluate(self, step, loss)))
        with pytest.raises(_Killed):
            obtain([run], tmp_path / "during", progress=False, checkpoint_every=50)
    (saved,) = (tmp_path / "during" / "smoke" / ".checkpoints").glob("*.pt")
    assert read_checkpoint(saved)["step"] == 100 and read_checkpoint(saved)["runs"][0]["val_curve"]["step"] == [0, 50]
    evaluated.clear()
    with monkeypatch.context() as patch:
        import residual_lib.training.train as train_module

        _kill_at(patch, train_module, "take_step", 120)
        with pytest.raises(_Killed):
            obtain([run], tmp_path / "during", progress=False, checkpoint_every=50)
    assert evaluated == [100] and read_checkpoint(saved)["runs"][0]["val_curve"]["step"] == [0, 50, 100]
    resumed, _ = obtain([run], tmp_path / "during", progress=False, checkpoint_every=50)[0]
    assert evaluated == [100, 150] and _bits(resumed) == _bits(whole)


def test_a_checkpoint_a_stop_saved_at_an_evaluation_step_is_saved_again_with_it_when_resumed(tmp_path, monkeypatch):
    """Stopped during step 49: the stop's checkpoint is step 50, an evaluation step but not one of
    the every-30 checkpoints; the resumed run evaluates step 50 and saves that checkpoint again."""
    from residual_lib.core.stop import sigterm_stops
    from residual_lib.training.state import RunState

    import residual_lib.training.train as train_module

    run, original = Run("smoke", "attn_only", 8), train_module.take_step
    whole, _ = obtain([run], tmp_path / "whole", progress=False, checkpoint_every=30)[0]
    with monkeypatch.context() as patch:
        patch.setattr(train_module, "take_step", lambda trainer, step, log: (
            step == 49 and os.kill(os.getpid(), signal.SIGTERM), original(trainer, step, log))[1])
        with pytest.raises(KeyboardInterrupt), sigterm_stops():
            obtain([run], tmp_path / "stopped", progress=False, checkpoint_every=30)
    (saved,) = (tmp_path / "stopped" / "smoke" / ".checkpoints").glob("*.pt")
    assert read_checkpoint(saved)["step"] == 50 and read_checkpoint(saved)["runs"][0]["val_curve"]["step"] == [0]
    with monkeypatch.context() as patch:
        _kill_at(patch, train_module, "take_step", 55)
        with pytest.raises(_Killed):
            obtain([run], tmp_path / "stopped", progress=False, checkpoint_every=30)
    assert read_checkpoint(saved)["step"] == 50 and read_checkpoint(saved)["runs"][0]["val_curve"]["step"] == [0, 50]
    evaluated, evaluate = [], RunState.record_eval
    monkeypatch.setattr(RunState, "record_eval", lambda self, step, loss=None: (
        evaluated.append(step), evaluate(self, step, loss))[1])
    resumed, _ = obtain([run], tmp_path / "stopped", progress=False, checkpoint_every=30)[0]
    assert evaluated == [100, 150] and _bits(resumed) == _bits(whole)


def test_a_run_killed_in_its_final_evaluations_resumes_after_its_last_step_bitwise_identical(tmp_path, monkeypatch):
    from residual_lib.training.state import RunState

    whole, _ = obtain([Run("smoke", "attn_only", 8)], tmp_path / "whole", progress=False, checkpoint_every=70)[0]
    with monkeypatch.context() as patch:
        patch.setattr(RunState, "final_estimates", lambda *a, **k: (_ for _ in ()).throw(_Killed))
        with pytest.raises(_Killed):
            obtain([Run("smoke", "attn_only", 8)], tmp_path / "killed", progress=False, checkpoint_every=70)
    (saved,) = (tmp_path / "killed" / "smoke" / ".checkpoints").glob("*.pt")
    assert read_checkpoint(saved)["step"] == get_profile("smoke").max_iters  # not 140, the last regular one
    import residual_lib.training.train as train_module

    monkeypatch.setattr(train_module, "take_step", lambda *a: pytest.fail("a step trained again"))
    resumed, trained = obtain([Run("smoke", "attn_only", 8)], tmp_path / "killed", progress=False,
                              checkpoint_every=70)[0]
    assert trained and _bits(resumed) == _bits(whole)
    assert read_record(resumed)["provenance"]["resumed_from_step"] == 150 and not saved.exists()


@pytest.mark.parametrize("every, saved_at", [("50", 50), ("0", None)])
def test_a_sweep_wide_checkpoint_interval_comes_from_the_environment(tmp_path, monkeypatch, every, saved_at):
    """RESIDUAL_CHECKPOINT_EVERY reaches every run that names no interval (a sweep's workers
    inherit it); 0 saves none, as on a lent GPU, whose checkpoints cannot outlive the lease."""
    import residual_lib.training.checkpoint as checkpoint_module
    import residual_lib.training.train as train_module

    monkeypatch.setitem(checkpoint_module.CHECKPOINT_EVERY, "smoke", 25)  # a default for the variable to override
    monkeypatch.setenv("RESIDUAL_CHECKPOINT_EVERY", every)
    with monkeypatch.context() as patch:
        _kill_at(patch, train_module, "take_step", 90)  # the profile's 25 would have saved step 75
        with pytest.raises(_Killed):
            obtain([Run("smoke", "attn_only", 8)], tmp_path, progress=False)
    saved = list((tmp_path / "smoke" / ".checkpoints").glob("*.pt"))
    assert [read_checkpoint(p)["step"] for p in saved] == ([saved_at] if saved_at else [])


def test_a_checkpoint_interval_that_is_not_a_whole_number_is_refused_in_one_line(tmp_path, monkeypatch):
    for bad in ("-5", "²", "ten"):
        monkeypatch.setenv("RESIDUAL_CHECKPOINT_EVERY", bad)
        with pytest.raises(RunError, match=r"^RESIDUAL_CHECKPOINT_EVERY must be a whole number of steps \(0 for none\), "
                                            f"not '{bad}'$"):
            obtain([Run("smoke", "attn_only", 8)], tmp_path, progress=False)
    assert not list((tmp_path / "smoke").glob("*.json"))


def test_a_resumed_runs_record_starts_when_its_first_process_did_the_time_between_included(tmp_path, monkeypatch):
    """A pre-registration is checked against records' start times: a run killed, left for a
    while and resumed starts when its first process did, not its training time before the end."""
    import residual_lib.training.train as train_module

    before = datetime.now(timezone.utc).replace(microsecond=0)
    with monkeypatch.context() as patch:
        _kill_at(patch, train_module, "take_step", 100)
        with pytest.raises(_Killed):
            obtain([Run("smoke", "attn_only", 8)], tmp_path, progress=False, checkpoint_every=50)
    (saved,) = (tmp_path / "smoke" / ".checkpoints").glob("*.pt")
    first = datetime.fromisoformat(read_checkpoint(saved)["started_at"])
    assert before <= first <= datetime.now(timezone.utc)
    time.sleep(2.5)  # the time between the two processes, which no process's clock counts
    resumed, trained = obtain([Run("smoke", "attn_only", 8)], tmp_path, progress=False, checkpoint_every=50)[0]
    prov = read_record(resumed)["provenance"]
    assert trained and prov["resumed_from_step"] == 100 and datetime.fromisoformat(prov["started_at"]) == first


def test_a_resumed_runs_record_names_the_machine_and_kernels_of_each_process(tmp_path, monkeypatch):
    """A run resumed on another machine sums in another order from there on: its record names
    each process's platform and the step it began at, kept through the checkpoints; from a
    checkpoint that kept none, the list starts at the resume, so the earlier steps read as unknown."""
    import residual_lib.training.state as state_module
    import residual_lib.training.train as train_module
    from residual_lib.training.checkpoint import HEADER

    real = state_module.provenance
    with monkeypatch.context() as patch:  # the first process on a machine of another model, without AMX
        patch.setattr(state_module, "provenance", lambda *a: {**real(*a), "device_name": "Machine A", "amx": False})
        _kill_at(patch, train_module, "take_step", 100)
        with pytest.raises(_Killed):
            obtain([Run("smoke", "attn_only", 8)], tmp_path, progress=False, checkpoint_every=50)
    (saved,) = (tmp_path / "smoke" / ".checkpoints").glob("*.pt")
    kept = read_checkpoint(saved)["processes"]
    assert [(p["from_step"], p["device_name"], p["amx"]) for p in kept] == [(0, "Machine A", False)]
    shutil.copytree(tmp_path, tmp_path.with_name(tmp_path.name + "-old"))
    resumed, _ = obtain([Run("smoke", "attn_only", 8)], tmp_path, progress=False, checkpoint_every=50)[0]
    prov = read_record(resumed)["provenance"]
    first, last = prov["processes"]
    assert (first["from_step"], first["device_name"], last["from_step"]) == (0, "Machine A", 100)
    assert {k: last[k] for k in ("device_name", "amx", "cpu_capability", "precision")} == \
        {k: prov[k] for k in ("device_name", "amx", "cpu_capability", "precision")}  # the last is the record's own

    old = tmp_path.with_name(tmp_path.name + "-old")  # the same checkpoint, as code that kept no processes wrote it
    (path,) = (old / "smoke" / ".checkpoints").glob("*.pt")
    payload = read_checkpoint(path)
    del payload["processes"]
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    path.write_bytes(HEADER + hashlib.sha256(buffer.getvalue()).hexdigest().encode() + b"\n" + buffer.getvalue())
    resumed, _ = obtain([Run("smoke", "attn_only", 8)], old, progress=False, checkpoint_every=50)[0]
    assert [p["from_step"] for p in read_record(resumed)["provenance"]["processes"]] == [100]


def test_a_checkpoint_with_overwritten_bytes_starts_the_run_over(tmp_path, monkeypatch, capsys):
    """16 bytes overwritten in the middle of a step-80 checkpoint (tensor data, which torch.load
    reads without complaint): the run starts over, says so in one line, and ends bitwise
    identical to an uninterrupted run."""
    whole, saved = _whole_and_killed(tmp_path, monkeypatch, every=40, at=80)
    assert len(saved) == 1
    data = bytearray(saved[0].read_bytes())
    middle = len(data) // 2
    data[middle:middle + 16] = bytes(b ^ 0xFF for b in data[middle:middle + 16])
    saved[0].write_bytes(bytes(data))
    capsys.readouterr()
    resumed, trained = obtain([Run("smoke", "attn_only", 8)], tmp_path / "killed", progress=False, checkpoint_every=40)[0]
    lines = [line for line in capsys.readouterr().err.splitlines() if "checkpoint" in line]
    assert len(lines) == 1 and "checksum" in lines[0] and lines[0].endswith("starting over"), lines
    assert trained and "resumed_from_step" not in read_record(resumed)["provenance"]
    assert _bits(resumed) == _bits(whole)
    assert not saved[0].exists()


def test_a_checkpoint_of_other_code_starts_over_unless_asked_and_then_the_record_names_both(tmp_path, monkeypatch,
                                                                                           capsys):
    import residual_lib.training.checkpoint as checkpoint_module

    whole, saved = _whole_and_killed(tmp_path, monkeypatch, every=50, at=100)
    payload = read_checkpoint(saved[0])
    assert payload["code"]["digest"] == checkpoint_module.code_digest()  # the checkpoint names its code
    killed = tmp_path / "killed"
    shutil.copytree(killed, tmp_path / "again")
    monkeypatch.setattr(checkpoint_module, "code_digest", lambda: "f" * 64)  # the code changed since
    capsys.readouterr()
    over, trained = obtain([Run("smoke", "attn_only", 8)], killed, progress=False, checkpoint_every=50)[0]
    lines = [line for line in capsys.readouterr().err.splitlines() if "checkpoint" in line]
    assert len(lines) == 1 and "other code" in lines[0] and "starting over" in lines[0], lines
    assert trained and "resumed_from_step" not in read_record(over)["provenance"]
    import residual_lib.training.train as train_module

    with monkeypatch.context() as patch:  # continued as asked, checkpointed at 125, then killed again at step 140
        _kill_at(patch, train_module, "take_step", 140)
        with pytest.raises(_Killed):
            obtain([Run("smoke", "attn_only", 8)], tmp_path / "again", progress=False, checkpoint_every=25,
                   resume_other_code=True)
    asked, trained = obtain([Run("smoke", "attn_only", 8)], tmp_path / "again", progress=False, checkpoint_every=25)[0]
    prov = read_record(asked)["provenance"]
    assert prov["resumed_from_step"] == 125  # the last resume was by the same code ...
    # ... and the other code that trained the first 100 steps is still named
    assert prov["resumed_code"] == [{**payload["code"], "step": 100}] and prov["git_sha"] is not None


def test_a_killed_fused_group_resumes_bitwise_identical(tmp_path, monkeypatch):
    import residual_lib.training.fused as fused_module
    from residual_lib.training.store import obtain

    runs = [Run("smoke", "full", 1), Run("smoke", "ffn_only", 2)]
    whole = obtain(runs, tmp_path / "whole", fuse=2, progress=False, checkpoint_every=50)
    original = fused_module.FusedTrainer.step

    def dying(self, step, log):
        if step == 100:
            raise _Killed
        return original(self, step, log)

    with monkeypatch.context() as patch:
        patch.setattr(fused_module.FusedTrainer, "step", dying)
        with pytest.raises(_Killed):
            obtain(runs, tmp_path / "killed", fuse=2, progress=False, checkpoint_every=50)
    resumed = obtain(runs, tmp_path / "killed", fuse=2, progress=False, checkpoint_every=50)
    for (a, _), (b, trained) in zip(whole, resumed):
        assert trained and _bits(a) == _bits(b)
        assert read_record(b)["provenance"]["resumed_from_step"] == 100
    assert not list((tmp_path / "killed" / "smoke" / ".checkpoints").glob("*.pt"))


def test_an_unsealed_record_is_left_in_place_and_named_with_the_script_that_seals_it(good, tmp_path):
    path = _copy(good, tmp_path)
    reason = _damage(path, "unsealed")
    before = path.read_bytes()
    key = good.name.rsplit("_", 1)[1].removesuffix(".json")
    with pytest.raises(RecordError, match=f"{reason}.*migrate_records.py"):
        find_record(tmp_path / "results", "smoke", key)  # not quarantined, not retrained: only unsealed
    assert path.read_bytes() == before and not list(path.parent.glob("*.bad*"))


def test_old_records_migrate_to_the_current_schema_keeping_their_keys(good, tmp_path):
    sys.path.insert(0, str(ROOT / "scripts"))
    from migrate_records import canonical, main

    path = _copy(good, tmp_path)
    old = json.loads(path.read_text())
    for name in ("schema_version", "status", "diverged_at_step", "digest"):
        del old[name]
    path.write_text(canonical(old))
    with pytest.raises(BadRecordsError, match="no digest"):  # unsealed: not trusted until migrated
        load_records(tmp_path / "results")
    assert main([str(tmp_path / "results")]) == 0
    new = read_record(path)
    assert (new["schema_version"], new["status"], new["key"]) == (3, "ok", old["key"]) and len(new["digest"]) == 64
    assert {k: v for k, v in new.items() if k not in ("schema_version", "status", "diverged_at_step", "digest")} == old
    assert load_records(tmp_path / "results").status.tolist() == ["ok"]
    before = path.read_bytes()
    assert main([str(tmp_path / "results")]) == 0 and path.read_bytes() == before


def test_ctrl_c_during_a_notebook_prints_one_line(tmp_path):
    """The kernel's dying-socket tracebacks go to <name>.kernel.log, not to the terminal."""
    notebook = tmp_path / "slow.py"
    notebook.write_text("# %%\nimport time\n\n# %%\ntime.sleep(60)\n")
    script = tmp_path / "run.py"
    script.write_text(
        "import sys\nfrom pathlib import Path\nfrom residual_lib.pages.execute import execute_notebook\n"
        "try:\n"
        f"    execute_notebook(Path({str(notebook)!r}), {{}}, Path({str(tmp_path / 'out')!r}))\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', file=sys.stderr)\n    sys.exit(130)\n")
    # a shell's background job inherits SIGINT ignored: restore the default, as a terminal has it
    proc = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    log = tmp_path / "out" / "slow.kernel.log"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (log.exists() and (tmp_path / "out" / ".slow.running.ipynb").exists()):
        time.sleep(0.2)
    time.sleep(4)  # the kernel is up and inside time.sleep
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.strip().splitlines() == ["interrupted"], err
    assert (tmp_path / "out" / "slow.interrupted.ipynb").is_file()


def test_equal_settings_in_other_number_types_give_the_profiles_own_key():
    from residual_lib import Run
    from residual_lib.run.profiles import ProfileError, get_profile

    own = Run("smoke", "full", 1337).key
    assert Run(get_profile("smoke", dropout=0), "full", 1337).key == own  # 0, not 0.0
    assert Run(get_profile("smoke", max_iters=150.0), "full", 1337).key == own
    assert get_profile("smoke", dropout=0).to_dict()["dropout"] == 0.0
    assert Run(get_profile("smoke", dropout=0.1), "full", 1337).key != own
    with pytest.raises(ProfileError, match=r"max_iters must be a whole number, got 150.5: pass e.g. --max-iters 150"):
        get_profile("smoke", max_iters=150.5)


def test_a_copy_of_a_results_folder_inside_results_is_left_out_and_named(good, tmp_path):
    path = _copy(good, tmp_path)
    results = path.parents[1]
    for copy in (results / "rerun" / "smoke", results / "smoke" / "again"):
        copy.mkdir(parents=True)
        shutil.copy(path, copy / path.name)
    for where in (results, results / "smoke"):
        frame = load_records(where)
        assert list(frame["path"]) == [str(path)]  # one run, read from where the trainer files it
    for flat in (results / "smoke-old", results / "rerun"):  # a copy in a folder not named after its profile
        flat.mkdir(exist_ok=True)
        shutil.copy(path, flat / path.name)
    done = cli("summary", "--profile", "smoke", "--results", str(results))
    assert done.returncode == 0, done.stderr
    assert re.search(r"^\s*smoke\s+full\s.*\s1\s", done.stdout, re.M)  # counted once
    line = [l for l in done.stderr.splitlines() if "left out 2 record files filed outside" in l]
    assert len(line) == 1 and "rerun/smoke/ (1 file)" in line[0] and "smoke/again/ (1 file)" in line[0]
    line = [l for l in done.stderr.splitlines() if "not named after their profile" in l]
    assert len(line) == 1 and "rerun/ (1 file)" in line[0] and "smoke-old/ (1 file)" in line[0], done.stderr
    # a results folder that happens to carry a profile's name is still read as a results folder
    named = tmp_path / "cpu"
    (named / "smoke").mkdir(parents=True)
    shutil.copy(path, named / "smoke" / path.name)
    assert len(load_records(named)) == 1


def test_summary_prints_the_floor_the_verdicts_use_and_stops_quietly_at_a_closed_pipe(good, tmp_path):
    results = _copy(good, tmp_path).parents[1]
    done = cli("summary", "--profile", "smoke", "--results", str(results))
    header = done.stdout.splitlines()[0].split()
    assert "eval_floor" in header and "unigram_floor" not in header
    floor = float(done.stdout.splitlines()[1].split()[header.index("eval_floor")])
    assert floor == pytest.approx(read_record(good)["eval_floor"], abs=5e-5)
    # a reader that closes the pipe at once (`summary | head -0`)
    script = ("import sys, residual_lib.__main__ as m\n"
              "class Closed:\n"
              "    def write(self, text): raise BrokenPipeError(32, 'Broken pipe')\n"
              "    def flush(self): pass\n"
              "    def fileno(self): return sys.__stdout__.fileno()\n"
              f"sys.stdout = Closed()\nsys.exit(m.main(['summary', '--results', {str(results)!r}]))\n")
    closed = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert closed.returncode == 141 and "Traceback" not in closed.stderr, closed.stderr


def test_another_text_under_tinyshakespeares_name_is_refused_and_a_record_of_one_is_not_a_run(good, tmp_path):
    from residual_lib.run.data import PACKAGED_SHAKESPEARE

    text = PACKAGED_SHAKESPEARE.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    (tmp_path / "data" / "tinyshakespeare").mkdir(parents=True)
    (tmp_path / "data" / "tinyshakespeare" / "input.txt").write_text("".join(reversed(lines)), encoding="utf-8")
    done = cli("train", "--profile", "smoke", "--variant", "full", "--seed", "3", "--results", str(tmp_path / "r"),
               env={"RESIDUAL_DATA_DIR": str(tmp_path / "data")})
    assert done.returncode == 2 and "is not TinyShakespeare" in done.stderr and "RESIDUAL_DATA_DIR" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "r").exists()
    # the record names its corpus; one that names another is left out of its profile, and named
    rec = read_record(good)
    assert rec["config"]["corpus_sha256"] == "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
    path = _copy(good, tmp_path)
    rec["config"]["corpus_sha256"] = "0" * 64
    path.write_text(json.dumps(seal(rec)))
    frame = load_records(path.parent)
    assert not frame.on_recipe.iloc[0] and "corpus sha256 000000000000" in frame.off_recipe.iloc[0]
    summary = cli("summary", "--profile", "smoke", "--results", str(path.parents[1]))
    assert "left out, not part of this profile" in summary.stdout and "corpus sha256" in summary.stdout


def test_a_second_book_build_on_one_folder_stops_with_one_line_naming_the_first(smoke_results, tmp_path):
    from residual_lib.pages import book
    from residual_lib.run.runs import RunError
    from residual_lib.storage.locks import _start_time, claim_path

    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        claim = claim_path(tmp_path / "_build" / "book")
        claim.parent.mkdir(parents=True)
        claim.write_text(json.dumps({"pid": other.pid, "host": __import__("socket").gethostname(),
                                     "started": _start_time(other.pid), "since": "2026-12-05T10:00:00"}))
        (tmp_path / "_build" / "source").mkdir()
        with pytest.raises(RunError, match=f"another book build \\(process {other.pid}, since 2026-12-05T10:00:00\\)"):
            book.build("smoke", smoke_results, root=tmp_path)
        assert (tmp_path / "_build" / "source").is_dir()  # the first build's staging folder is left alone
    finally:
        other.kill()
        other.wait()
