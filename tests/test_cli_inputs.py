"""Bad input on the command line is refused before any work: one line on stderr naming the fix,
exit status 2, nothing written (run in this process, through ``residual_lib.__main__.main``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from residual_lib.__main__ import main
from residual_lib.commands import inputs


def refused(capsys, *argv: str) -> str:
    """The one line ``argv`` is refused with (exit status 2, nothing on stdout)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1, (code, out, err)
    return lines[0]


@pytest.mark.parametrize("argv, flag", [
    (["train", "--variant", "full", "--profile", "smoke", "--results", ""], "--results"),
    (["train", "--variant", "full", "--profile", "smoke", "--data-dir", " "], "--data-dir"),
    (["summary", "--profile", ""], "--profile"),
    (["sweep", "notebooks/03_setup.py", "--profile", "smoke", "--variants", "full", ""], "--variants"),
])
def test_an_empty_value_is_refused_rather_than_read_as_the_default(capsys, tmp_path, monkeypatch, argv, flag):
    monkeypatch.chdir(tmp_path)
    assert f"{flag} is empty: give it a value, or leave it out for its default" in refused(capsys, *argv)
    assert list(tmp_path.iterdir()) == []


def test_a_results_folder_that_is_missing_or_a_file_or_given_twice_is_named(capsys, tmp_path):
    missing, afile = tmp_path / "nowhere", tmp_path / "afile"
    afile.write_text("x")
    for command in (["summary", "--results"], ["book", "--profile", "cpu", "--results"]):
        assert f"--results {missing} does not exist: pass --results the folder" in refused(capsys, *command, str(missing))
    assert f"--results {afile} is a file, not a folder" in refused(capsys, "book", "--results", str(afile))
    assert f"bad run record {afile}: not valid JSON" in refused(capsys, "summary", str(afile))  # one record, read as one
    assert "pass RESULTS or --results, not both" in refused(capsys, "summary", str(tmp_path), "--results", str(afile))
    assert f"RESULTS {missing} does not exist" in refused(capsys, "summary", str(missing))  # as it was given
    assert "no run records" in refused(capsys, "summary", str(tmp_path), "--results", f"{tmp_path}/.")  # one folder
    assert not missing.exists()


def test_the_book_names_the_results_folder_in_the_command_that_fills_it(capsys, tmp_path):
    line = refused(capsys, "book", "--profile", "cpu", "--results", str(tmp_path))
    assert f"python -m residual_lib sweep --all --profile cpu --results {tmp_path.resolve()}` first" in line


def test_the_sweep_refuses_a_file_that_is_not_a_notebook_and_a_results_folder_it_cannot_write(capsys, tmp_path):
    text = tmp_path / "04_joint_collapse.txt"  # a section's name, another kind of file
    text.write_text("")
    assert f"{text} is not a notebook: pass notebooks/NN_section.py" in refused(capsys, "sweep", str(text), "--profile", "smoke")
    afile = tmp_path / "afile"
    afile.write_text("x")
    line = refused(capsys, "sweep", "notebooks/03_setup.py", "--profile", "smoke", "--results", str(afile / "sub"))
    assert "cannot write run records" in line and "pass --results a writable folder" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["04_joint_collapse.txt", "afile"]


def test_bench_refuses_a_json_folder_and_more_threads_than_cores_before_it_measures(capsys, tmp_path, monkeypatch):
    line = refused(capsys, "bench", "--profile", "smoke", "--json", str(tmp_path))
    assert f"--json {tmp_path} is a folder: pass a file path" in line
    monkeypatch.setattr(inputs.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)  # two cores to run on
    assert inputs.available_cores() == 2
    assert "--threads 3 is more than the 2 cores this process may use: pass at most 2" in refused(
        capsys, "bench", "--profile", "smoke", "--threads", "3")
    assert list(tmp_path.iterdir()) == []


def test_a_plan_refuses_checks_it_would_ignore_and_a_report_of_another_profile(capsys, tmp_path):
    report = tmp_path / "bench.json"
    report.write_text(json.dumps({"profile": "smoke", "single_tokens_per_s": 1e6}))
    plan = ["device-check", "--plan", str(report), "--seconds", "300"]
    assert "leave out --checks and --json" in refused(capsys, *plan, "--checks", "loss")
    assert "leave out --checks and --json" in refused(capsys, *plan, "--json", str(tmp_path / "x.json"))
    line = refused(capsys, *plan, "--profile", "paper-10m")
    assert "the bench report measures smoke, not paper-10m: pass --profile smoke" in line
    assert main([*plan, "--profile", "smoke"]) == 0 and "fuse=" in capsys.readouterr().out
    assert "add --plan BENCH_JSON" in refused(capsys, "device-check", "--seconds", "300")  # else ignored


def test_verify_refuses_a_record_whose_folder_cannot_take_its_certificate_before_retraining(
        capsys, tmp_path, monkeypatch):
    assert main(["train", "--variant", "full", "--profile", "smoke", "--seed", "1", "--quiet",
                 "--results", str(tmp_path)]) == 0
    capsys.readouterr()
    record = next(Path(tmp_path, "smoke").glob("full_seed1_*.json"))
    (record.parent / "verified").write_text("")  # a file where the certificates' folder would be
    monkeypatch.setattr("residual_lib.__main__.verify_record", lambda *a, **k: pytest.fail("retrained"))
    line = refused(capsys, "verify", str(record))
    assert line.endswith(": copy the record into a writable <results>/<profile>/ folder and verify it there")
    assert "cannot write a certificate to" in line and "pass " not in line


def test_a_summary_with_no_controlled_run_says_so_and_names_the_flag_that_lists_them(capsys, tmp_path):
    random = next(p for p in sorted((Path(__file__).resolve().parents[1] / "results" / "cpu").glob("full_seed1337_*.json"))
                  if json.loads(p.read_text())["eval_mode"] == "random")  # a committed run on random batches
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / random.name).write_bytes(random.read_bytes())
    assert main(["summary", str(tmp_path)]) == 0
    assert capsys.readouterr().out == ("the one record is not a controlled run (fixed evaluation batches, gain 1, "
                                       "deterministic, first replicate): pass --all-conditions to list them\n")
    assert main(["summary", str(tmp_path), "--all-conditions"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("1 record, ")  # not "1 records"
    controlled = next(p for p in sorted((Path(__file__).resolve().parents[1] / "results" / "cpu").glob("full_seed1337_*.json"))
                      if json.loads(p.read_text())["eval_mode"] == "fixed")
    (tmp_path / "cpu" / controlled.name).write_bytes(controlled.read_bytes())
    assert main(["summary", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("(1 controlled run shown)")  # not "1 controlled runs"


def test_verify_checks_every_record_for_a_run_resumed_on_other_kernels_before_retraining_any(capsys, tmp_path,
                                                                                           monkeypatch):
    import residual_lib.training.verify as verify_module

    committed = Path(__file__).resolve().parents[1] / "results" / "cpu"
    (tmp_path / "cpu").mkdir()
    first, mixed = (tmp_path / "cpu" / next(committed.glob(f"{v}_seed1337_*.json")).name for v in ("full", "attn_only"))
    for copy in (first, mixed):
        copy.write_bytes((committed / copy.name).read_bytes())
    read = verify_module.read_record
    amx = {"device": "cpu", "cpu_capability": "AVX512", "precision": "bf16 autocast"}
    processes = [{**amx, "amx": True, "from_step": 0}, {**amx, "amx": False, "from_step": 950}]
    monkeypatch.setattr(verify_module, "read_record", lambda path: {**read(path), "provenance": {
        **read(path)["provenance"], "processes": processes}} if Path(path) == mixed else read(path))
    monkeypatch.setattr("residual_lib.__main__.verify_record", lambda *a, **k: pytest.fail("retrained"))
    line = refused(capsys, "verify", str(first), str(mixed))
    assert line.startswith(f"python -m residual_lib: error: {mixed.name}: its run was resumed on kernels of another kind")
    assert line.endswith("train it afresh into another results folder and compare")
