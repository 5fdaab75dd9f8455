"""Name, in each verification certificate made before certificates named it, the digest of the
record it verified, in place.

    python scripts/certificate_digests.py [RESULTS_DIR ...]   (default: results/ of this checkout)

A certificate (:mod:`residual_lib.training.verify`) now stores ``record_digest``, so that a page can
tell when the record it vouches for has changed since (a stale certificate). For one made
before, the digest is taken from the record as the repository held it in the last commit that
wrote the certificate: the record that commit published beside the verdict. A certificate
whose record that commit does not hold, or holds unsealed, is left alone and reported. Nothing
else changes; each file is resealed and rewritten atomically. Running it again changes nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from residual_lib.storage.records import seal, write_record  # noqa: E402
from residual_lib.training.verify import VERIFIED  # noqa: E402


def _git(*args: str) -> str | None:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else None


def migrate(path: Path) -> str:
    """``migrated``, ``current`` or the reason the file was left alone."""
    cert = json.loads(path.read_text(encoding="utf-8"))
    if "record_digest" in cert:
        return "current"
    relative = path.resolve().relative_to(ROOT)
    commit = (_git("log", "-1", "--format=%H", "--", str(relative)) or "").strip()
    if not commit:
        return "left alone: no commit holds this certificate (commit it first)"
    record = relative.parent.parent / cert["record"]
    text = _git("show", f"{commit}:{record.as_posix()}")
    if text is None:
        return f"left alone: commit {commit[:7]} does not hold its record {record}"
    digest = json.loads(text).get("digest")
    if digest is None:
        return f"left alone: its record at commit {commit[:7]} is unsealed"
    cert.pop("digest", None)
    write_record(seal({**cert, "record_digest": digest}), path)
    return "migrated"


def main(argv: list[str]) -> int:
    roots = [Path(a) for a in argv] or [ROOT / "results"]
    for root in roots:
        for path in sorted(root.glob(f"*/{VERIFIED}/*.json")):
            print(f"{path}: {migrate(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
