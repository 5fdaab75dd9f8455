"""Bring run records written before the current schema version up to it, in place.

    python scripts/migrate_records.py [RESULTS_DIR ...]   (default: results/ of this checkout)

Version 2 added ``schema_version``, ``status`` and ``diverged_at_step``. Every record made
before it trained to its last step with finite losses (the records of those runs say so:
their final losses are numbers), so each gets ``status: "ok"`` and ``diverged_at_step:
null``. Version 3 added ``digest``, the sha256 of the record's own content
(:func:`residual_lib.storage.records.seal`): a record is sealed only if its numbers agree with its
curves (the checks :func:`residual_lib.storage.records.validate_record` makes), so the seal vouches
for what the run wrote. Nothing else changes: the key (a hash of the run's configuration,
which is not touched) stays the same, each file is rewritten atomically, and a file that is
not a valid record, or that does not read back byte for byte in the canonical format first,
is left alone and reported. Running it again changes nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from residual_lib.core.files import atomic_write  # noqa: E402
from residual_lib.storage.records import SCHEMA_VERSION, RecordError, validate_record, write_record  # noqa: E402


def canonical(record: dict) -> str:
    return json.dumps(record, sort_keys=True, indent=1, allow_nan=False) + "\n"


def migrate(path: Path) -> str:
    """``migrated``, ``current`` or the reason the file was left alone."""
    original = path.read_text()
    try:
        record = dict(validate_record(path))  # a copy: validate_record's result is shared
        if record.get("schema_version", 1) >= SCHEMA_VERSION:
            return "current"
    except RecordError as exc:
        if not exc.reason.startswith("no digest"):
            return f"left alone: {exc.reason}"
        record = json.loads(original)
    if original != canonical(record):
        return "left alone: not in the canonical format, so a rewrite would change more than the new fields"
    if record.get("schema_version", 1) < 2:
        record.update(status="ok", diverged_at_step=None)
    record["schema_version"] = SCHEMA_VERSION
    write_record(record, path)  # sealed: write_record adds the digest
    try:
        assert validate_record(path)["key"] == record["key"]
    except RecordError as exc:  # its numbers disagree with its curves: not sealed
        atomic_write(path, original.encode())
        return f"left alone: {exc.reason}"
    return "migrated"


def main(folders: list[str]) -> int:
    counts: dict[str, int] = {}
    for folder in [Path(f) for f in folders] or [ROOT / "results"]:
        for path in sorted(folder.rglob("*.json")):
            if path.name.startswith(".") or {"notebooks", "verified"} & set(path.relative_to(folder).parts):
                continue
            outcome = migrate(path)
            counts[outcome] = counts.get(outcome, 0) + 1
            if outcome.startswith("left alone"):
                print(f"{path}: {outcome}", file=sys.stderr)
    print(", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())) or "no records found")
    return 1 if any(outcome.startswith("left alone") for outcome in counts) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
