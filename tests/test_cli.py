"""The command line: a good run prints its record's path; bad input exits 2 with one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, env: dict | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "residual_lib", *args], cwd=cwd, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, timeout=300,
    )


def test_train_prints_the_record_path_last_and_beats_the_floor(tmp_path):
    out = tmp_path / "results"
    result = cli("train", "--variant", "full", "--profile", "smoke", "--seed", "1", "--out", str(out))
    assert result.returncode == 0, result.stderr
    path = Path(result.stdout.strip().splitlines()[-1])
    assert path.is_file() and path.parent == out / "smoke"
    record = json.loads(path.read_text())
    assert (record["variant"], record["seed"], record["profile"]) == ("full", 1, "smoke")
    assert record["final_val_loss"] < record["unigram_floor"]
    # the same command again reuses the record
    again = cli("train", "--variant", "full", "--profile", "smoke", "--seed", "1", "--out", str(out))
    assert again.returncode == 0 and again.stdout.strip().splitlines()[-1] == str(path)
    assert "cached record" in again.stdout
    table = cli("summary", str(out))
    assert table.returncode == 0 and "full" in table.stdout and "mean" in table.stdout
    assert table.stdout.strip().splitlines()[-1].startswith("1 record, ")
    assert "eval_mode" not in table.stdout
    every = cli("summary", str(out), "--all-conditions")
    assert every.returncode == 0 and "eval_mode" in every.stdout and "fixed" in every.stdout


@pytest.mark.parametrize(
    "args, env, message",
    [
        (["train", "--variant", "nonsense"], {}, "unknown variant 'nonsense': choose one of full"),
        (["train", "--variant", "full", "--profile", "huge"], {}, "unknown profile 'huge': choose one of smoke"),
        (["train", "--variant", "full", "--profile", "smoke", "--max-iters", "0"], {}, "pass a positive --max-iters"),
        (["train", "--variant", "full", "--profile", "smoke", "--max-iters", "-5"], {}, "pass a positive --max-iters"),
        (["train", "--variant", "full", "--eval-mode", "sometimes"], {}, "choose one of fixed, random"),
        (["train", "--variant", "full", "--gain", "0"], {}, "gain must be a positive number"),
        (["train", "--variant", "full", "--profile", "smoke"], "missing-data", "RESIDUAL_DATA_DIR"),
        (["train", "--profile", "smoke"], {}, "arguments are required: --variant"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path, args, env, message):
    if env == "missing-data":  # an empty data folder and no network path taken
        env = {"RESIDUAL_DATA_DIR": str(tmp_path / "empty")}
    out = tmp_path / "results"
    result = cli(*args, "--out", str(out), env=env, cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == []


def test_book_without_records_names_the_sweep_that_makes_them(tmp_path):
    result = cli("book", "--profile", "cpu", "--results", str(tmp_path))  # an empty results folder
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "python -m residual_lib sweep --all --profile cpu" in lines[0]


def test_results_is_the_flag_everywhere_and_out_stays_an_alias(tmp_path):
    from residual_lib.__main__ import _build_parser

    parser = _build_parser()
    for command in (["train", "--variant", "full"], ["sweep", "--all"]):
        assert parser.parse_args([*command, "--results", "r1"]).out == "r1"
        assert parser.parse_args([*command, "--out", "r2"]).out == "r2"
    assert parser.parse_args(["summary", "--results", "r3"]).results == "r3"
    assert parser.parse_args(["summary", "r4"]).results_dir == "r4"
    assert parser.parse_args(["book", "--results", "r5"]).results == "r5"
    result = cli("train", "--variant", "full", "--profile", "smoke", "--seed", "2", "--results", str(tmp_path))
    assert result.returncode == 0 and Path(result.stdout.strip().splitlines()[-1]).parent == tmp_path / "smoke"
    table = cli("summary", "--results", str(tmp_path))
    assert table.returncode == 0 and table.stdout.strip().splitlines()[-1].startswith("1 record, ")
