"""Run records: one JSON file per training run, its schema, and writing, reading and checking one.

A run is identified by its *key*, a hash of everything that determines its result
(:class:`residual_lib.run.runs.Run`: the profile's fields, variant, seed, evaluation mode,
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

**Trust.** Readers never trust a file that fails: :func:`find_record` (what the
trainer and the sweep use to decide what is cached) moves it aside to
``<name>.json.bad`` (never deleting it) and reports it in one line, so the run is
trained again; :func:`residual_lib.study.frames.load_records` (what the chapters, the scorecard, ``summary`` and
``book`` read) raises :class:`BadRecordsError` naming every bad file, unless told to
skip them.

Loading records into pandas, and the slices the pages read, is :mod:`residual_lib.study.frames`;
the claims that keep two processes from training one run are :mod:`residual_lib.storage.locks`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
from pathlib import Path

from ..core.files import atomic_write
from ..core.text import plural
from ..run.runs import RECORD_NAME, RECORD_VERSION, record_key

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
#: :func:`make_record` takes from its :class:`~residual_lib.run.runs.Run`).
MEASURED = (
    "diverged_at_step", "config", "final_val_loss", "best_val_loss", "best_step", "unigram_floor", "eval_floor",
    "n_params", "steps", "tokens", "curves", "diagnostics", "wall_seconds", "tokens_per_second", "provenance",
)


def digest(record: dict) -> str:
    """The sha256 of ``record``'s content without its ``digest`` field, as strict JSON with
    sorted keys and no spaces (what a record written by :func:`write_record` reads back as)."""
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


class MisfiledRecord(RecordError):
    """A valid record filed outside its profile's folder (a copy of a folder, a record moved by
    hand): not a run of the results folder it sits in."""


class BadRecordsError(RecordError):
    """Several bad record files, one line each."""

    def __init__(self, errors: list[RecordError]):
        self.errors = errors
        ValueError.__init__(self, f"{len(errors)} bad run {plural('record', len(errors))}:\n" + "\n".join(f"  {e}" for e in errors)
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
        raise RecordError(path, f"missing {plural('field', len(absent))} {', '.join(absent)}")
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
    expected = RECORD_NAME.format(variant=rec["variant"], seed=rec["seed"], key=rec["key"])
    if path.name != expected:
        raise RecordError(path, f"its content ({rec['profile']} {rec['variant']} seed {rec['seed']}, key "
                                f"{rec['key']}) belongs in {expected}")
    if path.parent.name != rec["profile"]:
        raise MisfiledRecord(path, f"a {rec['profile']} record in the folder {path.parent.name}/")
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
    print(f"residual_lib: bad run record {path}: {reason}; moved aside to {target.name}, so its run "
          "counts as not recorded", file=sys.stderr, flush=True)
    return target


def find_record(results_dir: str | os.PathLike, profile: str, key: str) -> Path | None:
    """The valid record with ``key`` under ``results_dir/profile``, if there is one; a file
    with that key that fails :func:`validate_record` is quarantined and does not count. A
    record made before records carried a digest is not damaged, only unsealed: it stays in
    place and the error (:data:`UNSEALED`) names the script that seals it."""
    found = None
    for path in sorted((Path(results_dir) / profile).glob(RECORD_NAME.format(variant="*", seed="*", key=key))):
        try:
            validate_record(path)
        except RecordError as exc:
            if exc.reason.startswith(UNSEALED):
                raise
            quarantine(path, exc.reason)
            continue
        found = found or path
    return found


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
    atomic_write(path, payload)
    return path


def read_record(path: str | os.PathLike) -> dict:
    """A record, validated (raises :class:`RecordError` naming the file and the reason)."""
    return validate_record(path)
