"""verify: a record's run retrained by the code of today is bitwise the record, or the first
difference is named; certificates sit beside the records without being read as records."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from residual_lib.run.runs import Run
from residual_lib.storage.records import read_record, write_record
from residual_lib.study.frames import load_records
from residual_lib.training.store import obtain
from residual_lib.training.verify import certificate_path, compare, load_certificates, verify_record

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "residual_lib", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)


@pytest.fixture(scope="module")
def smoke_record(tmp_path_factory) -> Path:
    path, trained = obtain([Run("smoke", "full", 3)], tmp_path_factory.mktemp("results"), progress=False)[0]
    assert trained
    return path


def tampered(record: Path, folder: Path) -> Path:
    """A copy of ``record`` under ``folder`` with one training loss one ulp off: still a valid record."""
    rec = json.loads(record.read_text())
    rec["curves"]["train"]["loss"][10] = math.nextafter(rec["curves"]["train"]["loss"][10], math.inf)
    copy = write_record(rec, folder / record.parent.name / record.name)
    assert read_record(copy)["key"] == rec["key"]  # the validator accepts it
    return copy


def test_a_rerun_is_bitwise_the_record_and_the_certificate_is_not_a_record(smoke_record, tmp_path):
    before = smoke_record.read_bytes()
    cert = verify_record(smoke_record, tmp_path / "scratch")
    assert cert["equal"] is True and cert["first_difference"] is None
    assert smoke_record.read_bytes() == before  # the record itself is untouched
    assert {"final_val_loss", "best_val_loss", "curves.train.loss", "curves.val.loss",
            "diagnostics.alpha_tt"} <= set(cert["fields_compared"])
    rec = read_record(smoke_record)
    assert cert["final_val_loss"] == rec["final_val_loss"]
    assert cert["record_commit"] == rec["provenance"]["git_sha"] and cert["rerun_commit"] == cert["record_commit"]
    written = certificate_path(smoke_record)
    assert written == smoke_record.parent / "verified" / f"{smoke_record.stem}.json"
    assert json.loads(written.read_text()) == cert
    results = smoke_record.parent.parent
    frame = load_records(results)  # a certificate read as a record would be a bad record and raise
    assert list(frame.path) == [str(smoke_record)]
    certificates = load_certificates(results, "smoke")
    assert len(certificates) == 1 and bool(certificates.equal[0]) and certificates.key[0] == rec["key"]
    assert certificates.difference_field[0] is None


def test_a_changed_value_is_reported_and_the_command_exits_1(smoke_record, tmp_path):
    copy = tampered(smoke_record, tmp_path / "copy")
    cert = verify_record(copy, tmp_path / "scratch")
    rec = read_record(smoke_record)
    assert cert["equal"] is False
    assert cert["first_difference"] == {"field": "curves.train.loss[10]", "rerun": rec["curves"]["train"]["loss"][10],
                                        "recorded": read_record(copy)["curves"]["train"]["loss"][10]}
    result = cli("verify", str(smoke_record), str(copy), "--quiet")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{smoke_record}: bitwise equal to the record (recorded at ")
    assert lines[0].endswith(f"final val {rec['final_val_loss']!r}")
    assert lines[1].startswith(f"{copy}: DIFFERS") and "curves.train.loss[10]" in lines[1]
    assert json.loads(certificate_path(copy).read_text())["equal"] is False


def test_compare_treats_a_field_missing_from_the_rerun_as_a_difference_and_new_fields_as_uncompared():
    old = {"final_val_loss": 1.0, "best_val_loss": 0.5, "curves": {"val": {"loss": [2.0, 1.0]}},
           "diagnostics": {"growth": 3.0}}
    new = json.loads(json.dumps(old))
    new["curves"]["val"]["extra"] = [1]
    assert compare(old, new) == (["final_val_loss", "best_val_loss", "curves.val.loss", "diagnostics.growth"],
                                 ["curves.val.extra"], None)
    del new["diagnostics"]["growth"]
    assert compare(old, new)[2] == {"field": "diagnostics.growth", "recorded": 3.0, "rerun": None}
    new["curves"]["val"]["loss"].append(0.5)
    assert compare(old, new)[2] == {"field": "curves.val.loss (length)", "recorded": 2, "rerun": 3}
    new["final_val_loss"] = -0.0 if old["final_val_loss"] == 0.0 else 1.0000000000000002
    assert compare(old, new)[2]["field"] == "final_val_loss"


def missing(folder: Path) -> Path:
    return folder / "smoke" / "nothing.json"


def not_json(folder: Path) -> Path:
    (folder / "smoke").mkdir()
    return Path(shutil.copy(__file__, folder / "smoke" / "full_seed1_0123456789abcdef.json"))


@pytest.mark.parametrize("make, message", [(missing, "is not a file: pass run record files"),
                                           (not_json, "not valid JSON")])
def test_a_bad_path_exits_2_with_one_line_and_writes_nothing(tmp_path, make, message):
    path = make(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    result = cli("verify", str(path))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr, result.stderr
    assert result.stdout == "" and sorted(tmp_path.rglob("*")) == before


def test_a_changed_floor_is_a_difference_and_a_certificate_goes_stale_when_its_record_changes(smoke_record, tmp_path):
    from residual_lib.training.verify import certificates_text

    rec = json.loads(smoke_record.read_text())
    rec["eval_floor"] += 1e-3  # a published number outside the curves, resealed
    copy = write_record(rec, tmp_path / "copy" / smoke_record.parent.name / smoke_record.name)
    cert = verify_record(copy, tmp_path / "scratch")
    assert cert["equal"] is False and cert["first_difference"]["field"] == "eval_floor"
    assert {"eval_floor", "unigram_floor", "n_params", "tokens", "best_step"} <= set(cert["fields_compared"])
    assert cert["record_digest"] == read_record(copy)["digest"]
    results = copy.parents[1]
    assert not load_certificates(results, "smoke").stale[0]
    rec["eval_floor"] -= 1e-3  # the record is put right, and its certificate no longer speaks for it
    write_record(rec, copy)
    certificates = load_certificates(results, "smoke")
    assert bool(certificates.stale[0])
    runs = load_records(results)
    assert "That certificate is stale" in certificates_text(certificates, runs)
