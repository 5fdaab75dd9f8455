"""Run records: one JSON file per training run, written atomically, read back as pandas.

A run is identified by its *key*, a hash of everything that determines its result
(:class:`residual_lib.runs.Run`: the profile's fields, variant, seed, evaluation mode,
gain, determinism, a replicate index and an initial-weight perturbation). The device is
recorded under ``provenance`` but is not part of the key, so records made on a GPU answer
the same request made on a CPU.

Records live at ``<results>/<profile>/<variant>_seed<seed>_<key>.json``.

**The schema.** A record is strict JSON (no ``NaN``: a non-finite number is written as
``null``) with every field of :data:`REQUIRED`; ``schema_version`` says which fields it
has (records without it are version 1 and have all of version 2 but ``status``, read as
``ok``). ``status`` is ``ok`` or ``diverged`` (a non-finite training loss, at
``diverged_at_step``; the trainer stops such a run and its losses are ``null``).

**Vouching.** Every record carries ``digest``, the sha256 of its own content without that
field (:func:`seal`, applied by :func:`write_record`), so a number edited after the run
wrote it is caught on read; and a run that trained to the end (status ``ok``) must agree
with itself: its final validation loss is the last point of its validation curve, its best
the smallest point (at ``best_step``), and every loss it logged is finite and positive.
``scripts/migrate_records.py`` seals records made before the field existed (keys unchanged).

**Reading.** :func:`validate_record` checks a record file: it parses as strict JSON, has
every required field with a value of the right kind, its digest matches its content, its
numbers agree with its curves, and its key, profile, variant and seed agree with its file
name and folder, the key being recomputed from the record's own configuration.

**Recipes.** A run whose profile fields were overridden (``train --max-iters 100``) keeps
the profile's name and folder but is not a run of that profile's recipe: :func:`load_records`
marks it (``on_recipe`` False, with the fields that differ in ``off_recipe``), and the
tables and verdicts, which read :func:`controlled` or :func:`recipe_runs`, leave it out and
name it (:func:`off_recipe`). Readers never trust a file that fails: :func:`find_record` (what the
trainer and the sweep use to decide what is cached) moves it aside to
``<name>.json.bad`` (never deleting it) and reports it in one line, so the run is
trained again; :func:`load_records` (what the chapters, the scorecard, ``summary`` and
``book`` read) raises :class:`BadRecordsError` naming every bad file, unless told to
skip them.

**Claims.** A process about to train a run first claims it (:func:`claim`: an exclusive
``.<name>.claim`` file holding its process id and host), so two sweeps on one results
folder split the work; a claim whose process has died is taken over.
"""

from __future__ import annotations

import functools
import json
import math
import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from .data import atomic_write_bytes
from .runs import RECORD_VERSION, record_key

#: The record content's format: 2 added ``status`` and ``diverged_at_step``, 3 ``digest``.
SCHEMA_VERSION = 3
#: The reason a record made before schema 3 fails validation.
UNSEALED = "no digest"
STATUSES = ("ok", "diverged")

#: Fields every record has, with the kind of value each holds.
REQUIRED = {
    "record_version": int, "key": str, "profile": str, "variant": str, "seed": int, "eval_mode": str,
    "gain": (int, float), "deterministic": bool, "replicate": int, "config": dict, "curves": dict,
    "final_val_loss": (int, float, type(None)), "best_val_loss": (int, float, type(None)), "n_params": int,
    "steps": int, "provenance": dict,
}

#: What the trainer measures for a record (besides the run's own fields, which
#: :func:`make_record` takes from its :class:`~residual_lib.runs.Run`).
MEASURED = (
    "diverged_at_step", "config", "final_val_loss", "best_val_loss", "best_step", "unigram_floor", "eval_floor",
    "n_params", "steps", "tokens", "curves", "diagnostics", "wall_seconds", "tokens_per_second", "provenance",
)

#: Scalar fields copied into :func:`load_records`' frame, in this order; then ``block_size``
#: (from the configuration), ``device`` and ``device_name`` (from the provenance), and
#: ``eval_bigram``, the bigram reference of the run's evaluation tokens (:func:`record_eval_bigram`).
SCALARS = (
    "key", "profile", "variant", "seed", "eval_mode", "gain", "deterministic", "replicate", "init_noise",
    "status", "final_val_loss", "best_val_loss", "unigram_floor", "eval_floor", "n_params", "steps",
    "wall_seconds", "tokens_per_second",
)
DERIVED = ("block_size", "device", "device_name", "eval_bigram", "on_recipe", "off_recipe")


def digest(record: dict) -> str:
    """The sha256 of ``record``'s content without its ``digest`` field, as strict JSON with
    sorted keys and no spaces (what a record written by :func:`write_record` reads back as)."""
    import hashlib

    body = {k: v for k, v in _strict(record).items() if k != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
                          ).hexdigest()


def seal(record: dict) -> dict:
    """``record`` with its ``digest`` (a new dict; the schema version it seals is 3 or later)."""
    sealed = {k: v for k, v in record.items() if k != "digest"}
    sealed["digest"] = digest(sealed)
    return sealed


def _consistent(rec: dict) -> str | None:
    """Why the numbers of a record whose run trained to the end disagree with its curves, or None."""
    val, train = rec["curves"].get("val") or {}, rec["curves"].get("train") or {}
    val_loss, steps = val.get("loss") or [], val.get("step") or []
    for name, series in (("curves.val.loss", val_loss), ("curves.train.loss", train.get("loss") or [])):
        for i, x in enumerate(series):
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x <= 0:
                return f"{name}[{i}] is {x!r}: a loss is a finite positive number"
    if not val_loss:
        return "no validation curve"
    if rec["final_val_loss"] != val_loss[-1]:
        return f"final_val_loss {rec['final_val_loss']!r} is not the last validation point {val_loss[-1]!r}"
    if rec["best_val_loss"] != min(val_loss):
        return f"best_val_loss {rec['best_val_loss']!r} is not the smallest validation point {min(val_loss)!r}"
    best_step = rec.get("best_step")
    if best_step is not None and len(steps) == len(val_loss) and steps[val_loss.index(min(val_loss))] != best_step:
        return f"best_step {best_step!r} is not the step of the smallest validation point"
    return None


def make_record(run, **measured) -> dict:
    """A record of the current schema: the run's identity and key, then every field of
    :data:`MEASURED` (no more, no less: a field added to the trainer is added here first)."""
    if set(measured) != set(MEASURED):
        raise TypeError(f"a record needs exactly {', '.join(MEASURED)}; got extra "
                        f"{sorted(set(measured) - set(MEASURED))}, missing {sorted(set(MEASURED) - set(measured))}")
    status = "diverged" if measured["diverged_at_step"] is not None else "ok"
    return {"record_version": RECORD_VERSION, "schema_version": SCHEMA_VERSION, "status": status, "key": run.key,
            **run.fields(), **measured}


class RecordError(ValueError):
    """A record file that cannot be trusted; the message names the file and the reason."""

    def __init__(self, path: str | os.PathLike, reason: str):
        self.path, self.reason = Path(path), reason
        super().__init__(f"bad run record {path}: {reason}")


class BadRecordsError(RecordError):
    """Several bad record files, one line each."""

    def __init__(self, errors: list[RecordError]):
        self.errors = errors
        ValueError.__init__(self, f"{len(errors)} bad run record(s):\n" + "\n".join(f"  {e}" for e in errors)
                            + "\nmove them aside (or delete them) and rerun the sweep to retrain them, or pass "
                              "--skip-bad to leave them out")


def _reject_constant(name: str):
    raise ValueError(f"{name} is not strict JSON")


#: Records already parsed and checked in this process, by file and version: the pages read
#: one record for several tables, and a ~100 kB JSON parse each time adds up.
_PARSED: dict[tuple, dict] = {}
_PARSED_MAX = 1024


def validate_record(path: str | os.PathLike) -> dict:
    """The record at ``path``, checked (see the module docstring); raises :class:`RecordError`.
    A file read before and unchanged since is not parsed again: the same dict is returned,
    so callers must not modify it."""
    path = Path(path)
    try:
        st = path.stat()
        stamp = (str(path.absolute()), st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
    except OSError:
        stamp = None
    if stamp in _PARSED:
        return _PARSED[stamp]
    rec = _check(path)
    if stamp is not None:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.pop(next(iter(_PARSED)))
        _PARSED[stamp] = rec
    return rec


def _check(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RecordError(path, "not valid JSON (not UTF-8 text)") from None
    except OSError as exc:
        raise RecordError(path, f"unreadable ({exc.strerror or exc.__class__.__name__})") from None
    if not text.strip():
        raise RecordError(path, "empty file")
    try:
        rec = json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        raise RecordError(path, f"not valid JSON ({str(exc).splitlines()[0]})") from None
    if not isinstance(rec, dict):
        raise RecordError(path, "not a JSON object")
    absent = [name for name in REQUIRED if name not in rec]
    if absent:
        raise RecordError(path, f"missing field(s) {', '.join(absent)}")
    for name, kind in REQUIRED.items():
        value = rec[name]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise RecordError(path, f"field {name} holds {type(value).__name__} {str(value)[:40]!r}")
    status = rec.get("status", "ok")
    if status not in STATUSES:
        raise RecordError(path, f"unknown status {status!r}")
    if status == "ok":
        for name in ("final_val_loss", "best_val_loss"):
            if rec[name] is None or not math.isfinite(rec[name]):
                raise RecordError(path, f"{name} is {rec[name]} in a run whose status is ok")
        problem = _consistent(rec)
        if problem:
            raise RecordError(path, problem)
    expected = f"{rec['variant']}_seed{rec['seed']}_{rec['key']}.json"
    if path.name != expected:
        raise RecordError(path, f"its content ({rec['profile']} {rec['variant']} seed {rec['seed']}, key "
                                f"{rec['key']}) belongs in {expected}")
    if path.parent.name != rec["profile"]:
        raise RecordError(path, f"a {rec['profile']} record in the folder {path.parent.name}/")
    try:
        key = record_key(rec)
    except (KeyError, TypeError, ValueError):
        raise RecordError(path, "config.profile is missing or malformed") from None
    if key != rec["key"]:
        raise RecordError(path, f"its configuration hashes to key {key}, not {rec['key']}")
    if "digest" not in rec:
        raise RecordError(path, f"{UNSEALED}: records made before schema 3 are sealed by "
                                "python scripts/migrate_records.py")
    if rec["digest"] != digest(rec):
        raise RecordError(path, "its content does not match its digest: the file was changed after the run wrote it")
    return rec


def quarantine(path: str | os.PathLike, reason: str) -> Path:
    """Move a bad record aside (``<name>.bad``, or ``<name>.bad.N``), reporting it in one line."""
    path = Path(path)
    target = path.with_name(path.name + ".bad")
    n = 1
    while target.exists():
        target, n = path.with_name(f"{path.name}.bad.{n}"), n + 1
    os.replace(path, target)
    print(f"residual_lib: bad run record {path}: {reason}; moved aside to {target.name}, the run will be trained "
          "again", file=sys.stderr, flush=True)
    return target


def find_record(results_dir: str | os.PathLike, profile: str, key: str) -> Path | None:
    """The valid record with ``key`` under ``results_dir/profile``, if there is one; a file
    with that key that fails :func:`validate_record` is quarantined and does not count. A
    record made before records carried a digest is not damaged, only unsealed: it stays in
    place and the error (:data:`UNSEALED`) names the script that seals it."""
    found = None
    for path in sorted((Path(results_dir) / profile).glob(f"*_{key}.json")):
        try:
            validate_record(path)
        except RecordError as exc:
            if exc.reason.startswith(UNSEALED):
                raise
            quarantine(path, exc.reason)
            continue
        found = found or path
    return found


# --------------------------------------------------------------------------- claims


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


class claim_run:
    """``with claim_run(record_path, wait=True) as mine:`` -- hold the run's claim for the
    block (``mine`` True), or, when another live process holds it, wait until its record
    appears (``mine`` False) or its claim goes stale (then take it over). With ``wait=False``
    a run held by another process is ``mine`` False at once. A valid record found on the
    way (made by the process that held the claim) means there is nothing left to train:
    ``mine`` False, unless ``reuse`` is False (a forced retraining). ``enabled=False`` holds
    nothing and yields True."""

    def __init__(self, record: str | os.PathLike, wait: bool = True, enabled: bool = True, poll: float = 2.0,
                 reuse: bool = True):
        self.record, self.wait, self.enabled, self.poll, self.reuse = Path(record), wait, enabled, poll, reuse
        self.held = False

    def _done(self) -> bool:
        if not (self.reuse and self.record.is_file()):
            return False
        try:
            validate_record(self.record)
            return True
        except RecordError:
            return False

    def __enter__(self) -> bool:
        if not self.enabled:
            return True
        announced = False
        while True:
            if try_claim(self.record):
                if self._done():  # the previous holder finished it and let go
                    release_claim(self.record)
                    return False
                self.held = True
                return True
            if self._done():
                return False
            if not self.wait:
                return False
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


def _strict(value):
    """``value`` with every non-finite float replaced by None (JSON null)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    return value


def write_record(record: dict, path: str | os.PathLike) -> Path:
    """Write ``record`` as strict JSON (non-finite numbers as null) to a temporary file
    beside ``path`` and rename it into place: readers see either no file or the whole
    record. Output is byte-stable (sorted keys), so rewriting the same record changes nothing."""
    path = Path(path)
    payload = json.dumps(_strict(seal(record)), sort_keys=True, indent=1, allow_nan=False) + "\n"
    atomic_write_bytes(path, payload.encode())
    return path


def read_record(path: str | os.PathLike) -> dict:
    """A record, validated (raises :class:`RecordError` naming the file and the reason)."""
    return validate_record(path)


def _record_files(path) -> list[Path]:
    """Record files under ``path`` (a file, a folder searched recursively, or a list of either)."""
    if isinstance(path, (list, tuple)):
        return [file for p in path for file in _record_files(p)]
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        return []
    # not records: executed notebooks, job logs, verification certificates (residual_lib.verify)
    skip = {"notebooks", "submitit", "verified"}
    return sorted(p for p in path.rglob("*.json") if not p.name.startswith(".")
                  and not skip.intersection(p.relative_to(path).parts[:-1]))


def _valid_records(path: str | os.PathLike, skip_bad: bool) -> list[tuple[Path, dict]]:
    """Every record file under ``path`` with its content; bad files raise together
    (:class:`BadRecordsError`) or, with ``skip_bad``, are reported and left out."""
    good, bad = [], []
    for file in _record_files(path):
        try:
            good.append((file, validate_record(file)))
        except RecordError as exc:
            bad.append(exc)
    if bad and not skip_bad:
        single = not isinstance(path, (list, tuple)) and Path(path).is_file()
        raise bad[0] if len(bad) == 1 and single else BadRecordsError(bad)
    for exc in bad:
        print(f"residual_lib: skipped {exc}", file=sys.stderr)
    return good


def load_records(path, skip_bad: bool = False) -> pd.DataFrame:
    """One row per record found under ``path`` (a file, a directory searched recursively,
    or a list of files): the scalar fields of :data:`SCALARS` and :data:`DERIVED`, the scalar
    diagnostics (prefixed ``diag_``), and ``path``. Curves stay in the files; see :func:`load_curves`.
    Every file is validated: a bad one raises :class:`BadRecordsError` naming each bad
    file, unless ``skip_bad`` (then they are reported on stderr and left out)."""
    rows = []
    for file, rec in _valid_records(path, skip_bad):
        row = {name: rec.get(name) for name in SCALARS}
        row["init_noise"] = row["init_noise"] or 0.0  # absent from records made before the field existed
        row["status"] = row["status"] or "ok"  # schema 1 records predate the field; all of them trained to the end
        if row["eval_floor"] is None:  # records made before the field existed
            row["eval_floor"] = record_eval_floor(rec)
        for name, value in (rec.get("diagnostics") or {}).items():
            if isinstance(value, (int, float)):
                row[f"diag_{name}"] = value
        row["block_size"] = rec["config"]["profile"].get("block_size")
        row["device"] = rec["provenance"].get("device")
        row["device_name"] = rec["provenance"].get("device_name")
        row["eval_bigram"] = record_eval_bigram(rec)
        row["off_recipe"] = recipe_difference(rec)
        row["on_recipe"] = not row["off_recipe"]
        row["path"] = str(file)
        rows.append(row)
    columns = [*SCALARS, *DERIVED, "path"]
    frame = pd.DataFrame(rows) if rows else pd.DataFrame(columns=columns)
    for name in ("final_val_loss", "best_val_loss"):  # null (a diverged run) reads as NaN
        frame[name] = pd.to_numeric(frame[name], errors="coerce")
    return frame.sort_values(["profile", "variant", "seed", "key"], ignore_index=True) if rows else frame


def load_curves(path: str | os.PathLike, split: str = "train", skip_bad: bool = False) -> pd.DataFrame:
    """Tidy frame of one curve family (``train`` or ``val``) across records: one row per
    (record, step) with the record's ``key``, ``variant``, ``seed``, ``gain``, ``eval_mode``
    and every scalar series logged at that step."""
    frames = []
    for _, rec in _valid_records(path, skip_bad):
        curve = rec["curves"][split]
        scalar = {k: v for k, v in curve.items() if v and not isinstance(v[0], (list, dict))}
        frame = pd.DataFrame(scalar)
        for name in ("key", "profile", "variant", "seed", "gain", "eval_mode", "replicate", "deterministic"):
            frame[name] = rec.get(name)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


@functools.lru_cache(maxsize=None)
def _eval_floor(dataset: str, block_size: int, batch_size: int, eval_iters: int, mode: str) -> float:
    from .data import eval_floor, load_corpus

    return eval_floor(load_corpus(dataset), block_size, batch_size, eval_iters, mode)


def record_eval_floor(rec: dict) -> float:
    """The unigram floor on the tokens ``rec``'s losses were measured on (its
    ``eval_floor``; computed from its configuration for records that predate the field)."""
    if rec.get("eval_floor") is not None:
        return float(rec["eval_floor"])
    config = rec.get("config") or {}
    prof = config.get("profile") or {}
    try:
        return _eval_floor(config["dataset"], prof["block_size"], prof["batch_size"], prof["eval_iters"],
                           rec.get("eval_mode", "fixed"))
    except KeyError:
        return float("nan")


@functools.lru_cache(maxsize=None)
def _eval_bigram(dataset: str, block_size: int, batch_size: int, eval_iters: int, mode: str) -> float:
    from .data import eval_bigram, load_corpus

    return eval_bigram(load_corpus(dataset), block_size, batch_size, eval_iters, mode)


#: The corpora whose bigram reference :func:`record_eval_bigram` computes (the others would
#: need their BPE corpus loaded, or downloaded, to read a record).
BIGRAM_DATASETS = ("shakespeare_char",)


def record_eval_bigram(rec: dict) -> float:
    """The bigram reference of the tokens ``rec``'s losses were measured on
    (:func:`residual_lib.data.eval_bigram`), computed from its configuration once per
    (dataset, block size, batch size, evaluation batches, evaluation mode) in a process;
    NaN for a corpus other than :data:`BIGRAM_DATASETS`, an incomplete configuration, or a
    corpus that cannot be read here (reading records never needs the corpus)."""
    from .data import DataError

    config = rec.get("config") or {}
    prof = config.get("profile") or {}
    try:
        if config["dataset"] not in BIGRAM_DATASETS:
            return float("nan")
        return _eval_bigram(config["dataset"], prof["block_size"], prof["batch_size"], prof["eval_iters"],
                            rec.get("eval_mode", "fixed"))
    except (KeyError, DataError):
        return float("nan")


def profile_eval_bigram(profile: str, mode: str = "fixed") -> float:
    """:func:`record_eval_bigram` of any run of ``profile`` (its variants and seeds share
    the evaluation batches), without a record: e.g. the paper's 10M setting."""
    from .profiles import get_profile

    prof = get_profile(profile)
    return record_eval_bigram({"eval_mode": mode, "config": {"dataset": prof.dataset, "profile": prof.to_dict()}})


def summarize(frame: pd.DataFrame, value: str = "final_val_loss", by=("profile", "variant")) -> pd.DataFrame:
    """Mean, standard deviation (ddof=1), min, max and count of ``value`` per group."""
    grouped = frame.groupby(list(by))[value]
    return grouped.agg(["mean", "std", "min", "max", "count"]).reset_index()


def recipe_difference(rec: dict) -> str:
    """The fields in which a record's profile differs from today's profile of its name, as
    ``"max_iters 100 (profile: 2000)"`` (several joined by ``"; "``); ``""`` for a run of
    the profile's recipe. A record of a profile this code does not define differs in all."""
    from .profiles import ProfileError, get_profile

    stored = (rec.get("config") or {}).get("profile") or {}
    try:
        named = get_profile(rec["profile"]).to_dict()
    except ProfileError:
        return f"profile {rec['profile']!r} is not defined here"
    return "; ".join(f"{k} {stored.get(k)!r} (profile: {named.get(k)!r})"
                     for k in sorted(set(stored) | set(named)) if stored.get(k) != named.get(k))


def recipe_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """The runs of ``frame`` made by their profile's recipe (no overridden field)."""
    return frame[frame.on_recipe.astype(bool)] if "on_recipe" in frame else frame


def off_recipe(frame: pd.DataFrame) -> pd.DataFrame:
    """The runs of ``frame`` whose profile fields were overridden: not part of their profile."""
    return frame[~frame.on_recipe.astype(bool)] if "on_recipe" in frame else frame.head(0)


def off_recipe_lines(frame: pd.DataFrame) -> list[str]:
    """One line per run of :func:`off_recipe`, naming it and what differs."""
    return [f"{r.profile} {r.variant} seed {r.seed} (key {r.key}): {r.off_recipe}" for r in off_recipe(frame).itertuples()]


def controlled(frame: pd.DataFrame) -> pd.DataFrame:
    """The runs of the controlled comparison: the profile's recipe, fixed validation
    batches, gain 1, deterministic, unperturbed initialisation, first replicate -- one run
    per (profile, variant, seed)."""
    frame = recipe_runs(frame)
    mask = ((frame.eval_mode == "fixed") & (frame.gain == 1.0) & frame.deterministic.astype(bool)
            & (frame.replicate == 0) & (frame.init_noise == 0))
    return frame[mask]


def usable(frame: pd.DataFrame) -> pd.DataFrame:
    """The runs whose numbers statistics may use: every run that trained to the end
    (``status`` ok); diverged runs are listed by the pages, never averaged."""
    return frame[frame.status == "ok"] if "status" in frame else frame


def diverged(frame: pd.DataFrame) -> pd.DataFrame:
    """The diverged runs of ``frame``."""
    return frame[frame.status == "diverged"] if "status" in frame else frame.head(0)


# --------------------------------------------------------------------------- provenance


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=Path(__file__).resolve().parent, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


@functools.lru_cache(maxsize=None)
def code_version() -> tuple[str | None, bool | None]:
    """(git commit, dirty flag) of this checkout, read once per process. The trainer calls
    it when a run starts, so a record names the code that was loaded, even if the files
    change while it trains. ``(None, None)`` outside a git checkout."""
    sha = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if sha else None
    return sha, (bool(status) if sha else None)


def provenance(device: str, deterministic: bool) -> dict:
    """Where and how a run was made, without host names or user names."""
    import torch

    sha, dirty = code_version()
    if device.startswith("cuda") and torch.cuda.is_available():
        device_name = torch.cuda.get_device_name(torch.device(device))
    else:
        device_name = platform.processor() or platform.machine() or "cpu"
    return {
        "git_sha": sha,
        "git_dirty": dirty,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "device": device,
        "device_name": device_name,
        "cpu_threads": torch.get_num_threads(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "deterministic": deterministic,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
    }
