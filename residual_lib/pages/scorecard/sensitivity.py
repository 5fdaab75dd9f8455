"""How much each verdict depends on its thresholds: every verdict recomputed at each plausible
alternative of every threshold (:data:`residual_lib.pages.scorecard.limits.THRESHOLDS`), and the
table the scorecard page shows."""

from __future__ import annotations

import getpass
import hashlib
import inspect
import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import scipy

from ...core.files import atomic_write
from ...core.paths import results_folder
from ...run.profiles import BOOK_PROFILE
from ...storage.records import read_record
from ...study.frames import load_records
from . import limits
from .claims import TITLES
from .history import changes_for
from .limits import thresholds
from .rule import RULES, stand_ins
from .verdicts import build

#: The package whose every file a kept sensitivity table is fingerprinted by.
_PACKAGE = Path(__file__).resolve().parents[2]


def sensitivity(results_dir: str | Path | None = None, stand_in: str = BOOK_PROFILE, records: pd.DataFrame | None = None,
                table: pd.DataFrame | None = None, remember: bool = False) -> pd.DataFrame:
    """Every verdict recomputed at each alternative of every threshold: one row per
    threshold and alternative, with the verdicts that change (``changes``: a list of
    ``(claim, profile, before, after)``). ``remember``: kept in this user's temporary folder under a
    name made from everything the table depends on (:func:`_fingerprint`), so that the book's pages,
    each of which marks its fragile verdicts, compute it once between them; a kept file that cannot
    be read is computed again, and one that cannot be written is not kept."""
    if records is None:
        records = load_records(results_folder(results_dir))
    if not remember:
        return _sensitivity(stand_in, records, table)
    table = build(stand_in=stand_in, records=records) if table is None else table
    kept = _kept_folder() / f"sensitivity-{_fingerprint(stand_in, records, table)}.json"
    try:
        rows = json.loads(kept.read_text())
        return pd.DataFrame([{**r, "changes": [tuple(c) for c in r["changes"]]} for r in rows])
    except (OSError, ValueError, KeyError, TypeError):  # none kept yet, or a damaged file
        pass
    out = _sensitivity(stand_in, records, table)
    try:
        atomic_write(kept, out.to_json(orient="records", double_precision=15))
    except OSError:
        pass
    return out


def _kept_folder() -> Path:
    """This user's folder for kept tables in the temporary folder (no one else can write to it)."""
    folder = Path(tempfile.gettempdir()) / f"residual-lib-{getpass.getuser()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def _fingerprint(stand_in: str, records: pd.DataFrame, table: pd.DataFrame) -> str:
    """What a sensitivity table depends on: the stand-in, the verdicts it starts from, every
    record's bytes, the thresholds and their alternatives, the package's code and data (profiles,
    rules, analysis: every file of it) and the versions of the libraries that compute them."""
    h = hashlib.sha256(f"{stand_in}\n{pd.__version__}\n{np.__version__}\n{scipy.__version__}\n".encode())
    h.update(table[["claim", "profile", "verdict"]].to_csv(index=False).encode())
    h.update(repr([(t.name, getattr(limits, t.name), t.value, t.alternatives) for t in limits.THRESHOLDS]).encode())
    for path in sorted(p for p in _PACKAGE.rglob("*") if p.suffix in (".py", ".csv")):
        h.update(str(path.relative_to(_PACKAGE)).encode() + b"\n" + path.read_bytes())
    for path in sorted(map(str, records.path)):
        h.update(path.encode() + b"\n" + Path(path).read_bytes())
    return h.hexdigest()[:32]


def _sensitivity(stand_in: str, records: pd.DataFrame, table: pd.DataFrame | None) -> pd.DataFrame:
    base = build(stand_in=stand_in, records=records) if table is None else table
    base = base.set_index(["claim", "profile"])["verdict"]
    rows = []
    for t in limits.THRESHOLDS:
        for alt in t.alternatives:
            with thresholds(**{t.name: alt}):
                other = build(stand_in=stand_in, records=records).set_index(["claim", "profile"])["verdict"]
            changed = [(c, p, base[(c, p)], other[(c, p)]) for c, p in base.index if base[(c, p)] != other[(c, p)]]
            rows.append({"threshold": t.name, "meaning": t.meaning, "value": t.value, "alternative": alt,
                         "set_on": t.set_on, "commit": t.commit, "changes": changed})
    return pd.DataFrame(rows)


def threshold_table(sensitivity_table: pd.DataFrame, records: pd.DataFrame, stand_in: str = BOOK_PROFILE) -> pd.DataFrame:
    """One row per threshold for the scorecard page: its value, meaning, the alternatives
    tried and what each changes, and when it was set against when the stand-in records it
    judges were made (their ``provenance.finished_at``)."""
    judged = records[records.profile.isin(stand_ins(stand_in))]
    made = pd.to_datetime(pd.Series([read_record(p)["provenance"].get("finished_at") for p in judged.path],
                                    dtype=object), utc=True)
    rows = []
    for name, group in sensitivity_table.groupby("threshold", sort=False):
        first = group.iloc[0]
        effects = []
        for alt, changes in zip(group.alternative, group.changes):
            said = "; ".join(f"{TITLES.get(c, c)} at {p}: {a} → {b}" for c, p, a, b in changes)
            effects.append(f"{alt:g}: {said or 'no verdict changes'}")
        set_on = pd.Timestamp(first.set_on)
        before = int((made < set_on).sum())
        when = f"{_day(set_on)} {set_on:%H:%M} UTC, commit {first.commit}"
        if len(made):
            after = int((made >= set_on).sum())
            when += (f": before all {len(made)} stand-in records it judges" if not before else
                     f": after {before} of the {len(made)} stand-in records it judges" + (
                         f" (the other {after} were made later)" if after else ""))
        logic = _logic_changes(name)
        rows.append({"threshold": name, "meaning": first.meaning, "value": f"{first.value:g}",
                     "at the alternatives": "; ".join(effects), "value set": when,
                     "logic of the rules that use it last changed": logic})
    return pd.DataFrame(rows)


def _logic_changes(threshold: str) -> str:
    """When the logic of the rules that compare with ``threshold`` last changed (from
    :data:`residual_lib.pages.scorecard.history.CHANGES`), and the commit: a value fixed early says
    little if the rule around it was rewritten later."""
    users = [name for name, rule in RULES.items() if f"limits.{threshold}" in inspect.getsource(rule.check)]
    changes = sorted((c for name in users for c in changes_for(name)), key=lambda c: c.date)
    if not users:
        return "no rule compares with it directly"
    if not changes:
        return f"unchanged since the first rules ({', '.join(users)})"
    last = changes[-1]
    day, time = last.date.split("T")
    return f"{_day(pd.Timestamp(day))} {time} UTC, commit {last.commit} ({', '.join(sorted(set(users)))})"


def _day(when: pd.Timestamp) -> str:
    """A date whose hyphens do not break (U+2011), so that a narrow column never splits it."""
    return f"{when:%Y-%m-%d}".replace("-", "\u2011")


def fragile(sensitivity_table: pd.DataFrame) -> set[tuple[str, str]]:
    """The ``(claim, profile)`` cells whose verdict changes at some plausible threshold."""
    return {(c, p) for changes in sensitivity_table["changes"] for c, p, *_ in changes}
