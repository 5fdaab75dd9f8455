"""The accelerator code paths (residual_lib.commands.devicecheck) and the device script, rehearsed on
CPU; the CUDA checks run where CUDA exists."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import torch

from residual_lib.commands import devicecheck
from residual_lib.storage.records import validate_record

ROOT = Path(__file__).resolve().parents[1]
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def test_gradient_accumulation_of_four_micro_batches_equals_one_batch_of_four_times_the_size():
    result = devicecheck.grad_accum("cpu")
    assert result["max_relative_gradient_difference"]["single"] <= 1e-5
    assert result["max_relative_gradient_difference"]["fused"] <= 1e-5


def test_gradient_accumulation_check_catches_a_trainer_that_ignores_it(monkeypatch):
    import residual_lib.training.train as train_module

    original = train_module.take_step

    def unscaled(trainer, step, log):  # sums the micro-batch losses instead of averaging them
        state, profile = trainer.states[0], trainer.profile
        monkeypatch.setattr(trainer, "profile", profile.override(grad_accum=1))
        for _ in range(profile.grad_accum - 1):
            x, y = state.next_batch()
            state.net(x, y)[1].backward()
        return original(trainer, step, log)

    monkeypatch.setattr(train_module, "take_step", unscaled)
    with pytest.raises(devicecheck.CheckFailed, match="micro-batches"):
        devicecheck.grad_accum("cpu")


def test_dropout_in_a_fused_group_draws_each_members_own_masks():
    result = devicecheck.dropout_fused("cpu")
    a, b = result["final_val_losses"]
    assert a != b and max(a, b) < result["eval_floor"] - 0.1


@cuda
@pytest.mark.parametrize("name", list(devicecheck.CHECKS))
def test_every_check_passes_on_cuda(name):
    result = devicecheck.CHECKS[name][0]("cuda")
    assert result


def test_the_cli_reports_a_line_per_check_and_a_json_report(tmp_path):
    out = tmp_path / "checks.json"
    result = subprocess.run([sys.executable, "-m", "residual_lib", "device-check", "--device", "cpu", "--checks",
                             "grad_accum", "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("ok     grad_accum (")
    report = json.loads(out.read_text())
    assert report["ok"] and report["environment"]["device"] == "cpu"
    bad = subprocess.run([sys.executable, "-m", "residual_lib", "device-check", "--checks", "nonsense"], cwd=ROOT,
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert bad.returncode == 2 and "unknown check nonsense" in bad.stderr


def test_the_device_script_runs_end_to_end_on_cpu_without_settings(tmp_path):
    """The script the GPU machine runs, at smoke on CPU, with no RESIDUAL_DATA_DIR: the
    packaged corpus is all it needs. At most 8 files come back, none in a folder."""
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ("RESIDUAL_DATA_DIR", "SECONDS")}
    # a budget wide enough that the plan (the benchmark's rate, which a busy machine lowers) fits
    # the 4 runs of seed 1 on any machine; the script ends when they are trained
    env.update(DEVICE="cpu", PROFILE="smoke", SECONDS="900", SEEDS="1", OUT=str(out), WORK=str(tmp_path / "work"),
               PYTHON=sys.executable, PYTHONPATH=str(ROOT))
    result = subprocess.run(["bash", str(ROOT / "scripts" / "device_check.sh")], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=1000)  # past the script's own deadline
    assert result.returncode == 0, result.stderr + result.stdout
    files = sorted(p.name for p in out.iterdir())
    assert files == ["bench.json", "bench.log", "checks.json", "checks.log", "env.txt", "records.tar.gz",
                     "summary.txt", "sweep.log"]
    assert all(p.is_file() for p in out.iterdir())
    checks = json.loads((out / "checks.json").read_text())
    assert checks["ok"] and "compile" not in checks["checks"]  # the sweep does not compile: nor do the checks
    assert set(checks["checks"]) == {"smoke_bf16", "fused_matches_single", "dropout_fused", "grad_accum"}
    assert json.loads((out / "bench.json").read_text())["single_tokens_per_s"] > 0
    unpacked = tmp_path / "unpacked"
    with tarfile.open(out / "records.tar.gz") as archive:
        names = archive.getnames()
        archive.extractall(unpacked, filter="data")
    assert len(names) == 4 and all(n.startswith("results/smoke/") for n in names)
    for name in names:
        assert validate_record(unpacked / name)["status"] == "ok"
    summary = (out / "summary.txt").read_text()
    assert all(v in summary for v in ("full", "attn_only", "ffn_only", "no_residual"))
    env_txt = (out / "env.txt").read_text()
    assert "4 records in records.tar.gz" in env_txt
    assert "plan: fuse=1 " in env_txt and "training seeds 1 (1 runs at a time" in env_txt  # no group rates on CPU


def test_the_device_script_trains_a_fused_group_of_eight_on_cpu(tmp_path):
    """The rehearsal of a lease's layout: FUSE=8 trains the four central variants of two seeds
    as one group, and every record says so."""
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ("RESIDUAL_DATA_DIR", "SECONDS")}
    env.update(DEVICE="cpu", PROFILE="smoke", SECONDS="400", SEEDS="1 2", FUSE="8", OUT=str(out),
               WORK=str(tmp_path / "work"), PYTHON=sys.executable, PYTHONPATH=str(ROOT))
    result = subprocess.run(["bash", str(ROOT / "scripts" / "device_check.sh")], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr + result.stdout
    with tarfile.open(out / "records.tar.gz") as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
        names = archive.getnames()
    records = [validate_record(tmp_path / "unpacked" / name) for name in names]
    assert len(records) == 8 and {r["provenance"]["fused_models"] for r in records} == {8}
    assert "plan:" not in (out / "env.txt").read_text()  # FUSE given: nothing planned


def test_the_device_script_refuses_a_short_commit_or_an_unknown_skip_before_doing_anything(tmp_path):
    for bad, message in (({"COMMIT": "1b69e63"}, "COMMIT must be the full 40-character sha: pass "
                                                 "COMMIT=$(git rev-parse HEAD)"),
                         ({"SKIP": "checks,bench"}, "SKIP takes checks and/or bench, separated by spaces, not "
                                                    "checks,bench")):
        env = {**os.environ, "OUT": str(tmp_path / "out"), "PYTHON": sys.executable, **bad}
        done = subprocess.run(["bash", str(ROOT / "scripts" / "device_check.sh")], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and done.stderr.strip() == message
        assert not (tmp_path / "out").exists()


def _kill_session(sid: int) -> None:
    """SIGKILL every process of session ``sid``: ``timeout`` puts the sweep in a process group
    of its own, which killing the script's group would leave training."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid:  # after the name: state, ppid, pgrp, session
                os.kill(int(stat.parent.name), 9)
        except (OSError, IndexError, ValueError):
            pass  # a process that ended meanwhile


def test_a_device_script_killed_mid_sweep_still_brings_back_the_records_finished_by_then(tmp_path):
    """Without a benchmark there is no plan: the first seed trains a run at a time. The records
    are packed while the sweep runs, so a call killed at its timeout keeps the finished ones."""
    import time

    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ("RESIDUAL_DATA_DIR", "SECONDS")}
    env.update(DEVICE="cpu", PROFILE="smoke", SECONDS="900", SEEDS="1 2", SKIP="checks bench", PACK_EVERY="1", OUT=str(out),
               WORK=str(tmp_path / "work"), PYTHON=sys.executable, PYTHONPATH=str(ROOT))
    script = subprocess.Popen(["bash", str(ROOT / "scripts" / "device_check.sh")], cwd=tmp_path, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    archive, names, ended = out / "records.tar.gz", [], ""
    try:
        give_up = time.monotonic() + 600
        while not names and time.monotonic() < give_up and script.poll() is None:
            time.sleep(0.1)
            if archive.exists():
                with tarfile.open(archive) as packed:
                    names = packed.getnames()
        ended = (out / "env.txt").read_text()
    finally:
        _kill_session(script.pid)  # as a call's timeout ends it: no clean-up runs
        script.wait()
    assert names, "no record was packed while the sweep ran"
    assert "done in" not in ended  # packed while the sweep ran, not by the script's last step
    with tarfile.open(archive) as packed:
        packed.extractall(tmp_path / "unpacked", filter="data")
        names = packed.getnames()
    assert 1 <= len(names) < 4 and all(n.startswith("results/smoke/") and "_seed1_" in n for n in names)
    assert all(validate_record(tmp_path / "unpacked" / n)["status"] == "ok" for n in names)
    env_txt = (out / "env.txt").read_text()
    assert "checks skipped" in env_txt and "bench skipped" in env_txt
    assert "training seed 1 one run at a time, without a plan" in env_txt


def test_a_group_size_that_fails_is_kept_as_none_and_the_rates_so_far_are_reported_as_they_come(monkeypatch):
    from residual_lib.commands import bench as bench_module

    real = bench_module._Loop

    def loop(profile, corpus, n_models, fused, device, **kw):
        if n_models == 8 and fused:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(profile, corpus, n_models, fused, device, **kw)

    monkeypatch.setattr(bench_module, "_Loop", loop)
    monkeypatch.setattr(bench_module, "_sweep_throughput", lambda *a, **k: 1.0)  # not what this test is about
    seen = []
    result = bench_module.bench("smoke", fuse=2, steps=1, warmup=0, repeats=1, device="cpu", threads=1,
                                fuse_sizes=(4, 8, 16), progress=seen.append)
    assert list(result["fused_sizes"]) == ["4", "8"] and result["fused_sizes"]["8"] is None  # 16 not tried
    assert result["fused_sizes"]["4"] > 0 and "out of memory" in result["fused_size_errors"]["8"]
    assert seen[0]["single_tokens_per_s"] > 0 and "fused_sizes" not in seen[0]  # the plan's rate comes first
    assert [list(s.get("fused_sizes", {})) for s in seen] == [[], ["4"], ["4", "8"]]
    line = next(x for x in bench_module.report(result).splitlines() if x.startswith("  fused8 "))
    assert line.split()[1] == "failed" and "OutOfMemoryError: CUDA out of memory" in line


def test_a_plan_fills_the_time_left_with_whole_groups():
    from residual_lib.commands.devicecheck import PLAN_MARGIN, finish_seconds, plan_groups, run_seconds
    from residual_lib.run.profiles import get_profile

    profile = get_profile("paper-10m")
    alone = run_seconds(profile, 1e6)
    assert alone == pytest.approx((16_384 * 5_000 + 21 * 200 * 16_384 / 3) / 1e6)  # 82M tokens and 21 evaluations
    finish = finish_seconds(profile, 1e6)  # the final evaluations, at the group's rate per model
    assert finish == pytest.approx(9 * 200 * 16_384 / 3 / 1e6)  # the fixed batches and 8 random draws
    bench = {"single_tokens_per_s": 1e6, "fused_sizes": {"8": 3e6, "16": 5e6, "32": 5.5e6}}
    plan = plan_groups(bench, seconds=10 * alone, profile=profile)
    # 80% of ten runs' time: alone 7 runs; 8 at 3x take 8/3 runs' time (two groups, 16 runs);
    # 16 at 5x 16/5 (two groups, 32 runs); 32 at 5.5x 32/5.5 (one group, 32 runs): as many runs,
    # so the smaller groups, though the one group of 32 would end first (667 s against 734 s)
    assert (plan["fuse"], plan["runs"], plan["groups"]) == (16, 32, 2)
    assert plan["seconds_per_group"] == pytest.approx(16 / 5 * (alone + finish))
    assert plan["seconds_per_group"] * plan["groups"] <= PLAN_MARGIN * 10 * alone
    # more runs: the larger group (at 7x, 32 runs in one group; 16 at 5x fit only once in 80% of 7.5 runs)
    larger = plan_groups({**bench, "fused_sizes": {"16": 5e6, "32": 7e6}}, seconds=7.5 * alone, profile=profile)
    assert (larger["fuse"], larger["runs"], larger["groups"]) == (32, 32, 1)
    # too little time for any run: nothing; a little more: one run alone
    assert plan_groups(bench, seconds=1.1 * alone, profile=profile)["runs"] == 0
    assert plan_groups(bench, seconds=1.5 * alone, profile=profile) == {
        "fuse": 1, "runs": 1, "groups": 1, "seconds_per_group": pytest.approx(alone + finish)}


def test_the_plan_command_reads_a_bench_report_and_refuses_bad_input(tmp_path):
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"single_tokens_per_s": 1e6, "fused_sizes": {"8": 4e6}}))
    cli = [sys.executable, "-m", "residual_lib", "device-check", "--plan", str(bench)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(cli + ["--seconds", "900"], capture_output=True, text=True, env=env, timeout=120)
    # a group of 8 at 4x takes 210 s and its final evaluations 20 s more; 80% of 900 s holds three
    assert done.returncode == 0 and done.stdout.strip() == "fuse=8 runs=24 groups=3", done.stderr
    for bad, message in ((["--seconds", "0"], "positive number of seconds"), (["--seconds", "nan"], "not nan"),
                         (["--seconds", "inf"], "not inf"), ([], "--plan needs --seconds")):
        refused = subprocess.run(cli + bad, capture_output=True, text=True, env=env, timeout=120)
        assert refused.returncode == 2 and message in refused.stderr and refused.stderr.count("\n") == 1
    missing = subprocess.run([*cli[:-1], str(tmp_path / "nope.json"), "--seconds", "60"], capture_output=True,
                             text=True, env=env, timeout=120)
    assert missing.returncode == 2 and "cannot read the bench report" in missing.stderr


def test_a_plan_refuses_a_report_without_a_usable_rate_and_ignores_sizes_it_cannot_use():
    from residual_lib.commands.devicecheck import plan_groups
    from residual_lib.run.profiles import get_profile

    profile = get_profile("paper-10m")
    for report in ({}, {"single_tokens_per_s": 0}, {"single_tokens_per_s": float("nan")}):
        with pytest.raises(ValueError, match="single_tokens_per_s"):
            plan_groups(report, 600, profile)
    # sizes that are not whole seeds, negative, too large or with no rate are left out
    report = {"single_tokens_per_s": 1e6, "fused_sizes": {"-4": 9e9, "6": 9e9, "64": 9e9, "8": 0, "16": None}}
    assert plan_groups(report, 1e9, profile)["fuse"] == 1
