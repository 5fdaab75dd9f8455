"""Verdicts registered before their data: the rules, thresholds and code that judge ``paper-10m``,
registered (by their sha256) in a commit that precedes every ``paper-10m`` record.

Every other verdict of the scorecard was judged by rules written while the stand-in records
already existed. The ``paper-10m`` column is different: its rules were committed, with the
digest of :data:`FILES` (:func:`digest`), in a commit whose message says "pre-registration",
before the first ``paper-10m`` run started. :func:`status` finds that commit in the history and
checks every ``paper-10m`` record's start time (``provenance.started_at``: a resumed run's first
process's) against it, and counts the records trained by code that already held the commit
(``provenance.git_sha``), which no clock can give. Code older than :data:`FIRST_START_KEPT` dated
a resumed run's start as its end less the time its processes ran, later than the true start:
such a start is no evidence either way, and the statement says so instead of quoting it.

A change to any of :data:`FILES` after the registration changes the digest; the test suite
fails until the change is listed in :data:`AMENDMENTS` (what changed, why, and whether any
``paper-10m`` record existed then), which the scorecard shows beside the registration.
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from ...core.text import in_words

PROFILE = "paper-10m"
_PACKAGE = Path(__file__).resolve().parents[2]
#: The code and data that decide a ``paper-10m`` verdict: the rules and their texts, the
#: thresholds, the claims and the paper's values, the numbers the rules compute, and which
#: records they read.
FILES = (
    "pages/scorecard/rule.py", "pages/scorecard/rules.py", "pages/scorecard/limits.py", "pages/scorecard/claims.py",
    "pages/scorecard/verdicts.py", "study/paper.py", "study/paper_claims.csv", "study/analysis.py", "study/escapes.py",
    "study/sections.py", "study/frames.py", "study/gains.py",
)
#: The digest registered in the pre-registration commit, over the files :data:`FILES` held then
#: (the first eleven: gains.py joined later, by an amendment), under the paths they had then:
#: ``scorecard/rule.py``, ``paper.py``, ... without the layer folders. The first seven amendments'
#: digests use those paths too; from the eighth (the move into folders) on, the paths of FILES.
REGISTERED_DIGEST = "7913eb25a25c072124b244f5ae7caefa518e02eeecd1e26aaf6447310990e461"
REGISTERED_FILES = 11
#: The commit from which a resumed run's checkpoints keep the time its first process began; code
#: before it wrote the end less the processes' running time, which leaves out the time between them.
FIRST_START_KEPT = "1c87c33c28e3b3403364fff9d5051f09171bc98a"


@dataclass(frozen=True)
class Amendment:
    """A change to the registered files after the registration: the digest it leads to, when
    (its commit's time, ``YYYY-MM-DD HH:MM UTC``), what and why, and whether ``paper-10m`` records
    existed then."""

    digest: str
    date: str
    change: str
    reason: str
    records_existed: bool

    @property
    def when(self) -> datetime:
        return datetime.strptime(self.date, "%Y-%m-%d %H:%M UTC").replace(tzinfo=timezone.utc)


#: Every change to :data:`FILES` since the registration, oldest first.
AMENDMENTS: tuple[Amendment, ...] = (
    Amendment("51c0e446fe417f0b341ecc7d61ae9c9935daa8c4e0ce369be071e7b29857f60a", "2026-12-05 04:44 UTC",
              "load_curves counts a run once when two record files share its key, as load_records does; the "
              "tables name the kernels of the records they show (frames.kernel_labels)",
              "a copied record doubled a run's curves; which kernels made a table's numbers was not said",
              records_existed=False),
    Amendment("fbb2c057f29c68fa72f891e713544e9ca9a5bfd5472ceb7bcf17d87384fe20f2", "2026-12-05 06:18 UTC",
              "a run's records are counted once in the reader both loaders share, not in each loader",
              "one mechanism instead of two; the same rows and curves", records_existed=False),
    Amendment("c86115572e13ccc84e9cadefb1cc190ddc4b49ed502b7d981f16b7b982638647", "2026-12-05 07:17 UTC",
              "the gain confound judged at each of three seeds, its timing read on runs that evaluate the first "
              "500 steps every 20 (gains.py joins the registered files); the escape study counts at the line an "
              "input-blind model can reach and apart for runs started after its lines were fixed; the mixer's "
              "shares also measured from the floor; the budget study's chapter in the plans; wording: a gap "
              "named with its sign, a statement cut short, a statement's section, the routing rule's best layer",
              "the timing rested on one seed and evaluations 100 steps apart, and several texts said more than "
              "their numbers", records_existed=False),
    Amendment("28c3ea241f877d43e69bd93fbe2119158b141ecf2ce5a339910630db4b9a8235", "2026-12-05 07:36 UTC",
              "a timing run is read only where it retraces its gain run to within 0.01 nats (limits.EARLY_AGREE); "
              "a seed is judged on the gain confound only when run at every gain; the timing also given at the "
              "paper's own 200 steps; the input-blind line marked as drawn after the runs; the paper's relative "
              "gaps named FFNOnly − AttnOnly; wording of the intermediate reproduction's agreement",
              "spliced curves were not checked, an incomplete seed could be judged, and the "
              "post-hoc line was counted among lines fixed before the data", records_existed=False),
    Amendment("d8693ff74effcc46e2b1f6a893f9db410a942a1c4075c38db560d0f9e9f85c72", "2026-12-05 09:41 UTC",
              "records filed outside `<results>/<profile>/` are left out; a record naming another corpus (its sha256) "
              "is off its profile's recipe; the central sweep is selected once (sections.central_sweep: usable "
              "controlled runs at the seeds every variant has) for the rules, the headline and chapter 6; a table "
              "keeps runs of other conditions in rows of their own",
              "a copied results folder would have been counted again, a record of a shuffled corpus "
              "trained under the profile's name accepted, and one missing record would have let two pages state two "
              "means for one claim",
              records_existed=False),
    Amendment("05844b1a41f4c95ea0401535610b280f67f76946a516b95deb4c70826a180502", "2026-12-05 10:05 UTC",
              "a record in a folder not named after its profile is left out; records of one profile that name "
              "different corpora are kept apart; the intermediate-reproduction rule reads AttnOnly over the central "
              "sweep's seeds",
              "copies filed beside the profile folders would have been read, OpenWebText "
              "records of other documents could have shared a profile, and AttnOnly's mean could have been quoted "
              "over two sets of seeds",
              records_existed=False),
    Amendment("584515f2bd431282d250082ab3088ffc777f7c47a90439ec7f4f92bc58473b38", "2026-12-05 13:12 UTC",
              "the plans gain chapter 12, the paper's setting beside the stand-in (sections._paper_scale: the four "
              "variants at the first seed, then AttnOnly and FFNOnly at two more, the runs already queued); no rule, "
              "threshold or selection changed",
              "the book had no page for the paper-10m runs; AttnOnly seed 1337 was training, its checkpoints unread",
              records_existed=False),
    Amendment("7ef39071927668af06c180f4f98698fbb627144564dfb721a502a1e3de9d25a1", "2026-12-05 13:38 UTC",
              "the package's modules moved into folders by layer: the registered files now sit under pages/scorecard/ "
              "and study/; their imports, and the module paths their docstrings and messages name, follow them. No "
              "other line changed",
              "a package whose folders show its layers", records_existed=False),
    Amendment("1b3e6fea98f9b1e5aebe7f6c69e09b2a4602015e3ec6b3551154c29b0078b61d", "2026-12-05 14:07 UTC",
              "chapter 12's plan keeps to the variants it is asked for; no rule, threshold or selection changed",
              "a sweep asked for one variant would have queued the paper setting's others, hours each",
              records_existed=False),
    Amendment("1817fa82b5ffea47437b449da60713a72857ccfc34a54c3c20c1a4b6a07435af", "2026-12-06 12:53 UTC",
              "wording only: the hidden-norm rule says chapter 7 shows how each other definition orders the "
              "variants, instead of saying they all order them alike; the mixer's share is given of the whole gap "
              "and of what the control leaves open; the paper's values name their quantities in words, losses to "
              "three decimals, the partial variants named as such, the notes as sentences with a true minus; seed "
              "counts agree in number; the repeats' losses, their spreads and the largest FFNOnly-NoResidual gap "
              "within tolerance are written to three decimals. No rule, "
              "threshold or selection changed: every verdict and seed count at every profile is the same before "
              "and after",
              "the rule text stated that every definition orders the variants alike, which chapter 7's table "
              "contradicts at cpu; the mixer's share read as a share of a share; the paper's values were printed "
              "as column names",
              records_existed=True),
    Amendment("8a61e54a1e6795ba03e9a37f0bb483ce8e0247da5a07d369deaa0c8b9650102f", "2026-12-06 13:05 UTC",
              "wording only: the repeats' spreads are written 0 when the repeats are equal and in scientific "
              "notation when tiny; the mixer sentence says when the control alone leaves none of the gap open. "
              "No rule, threshold or selection changed: every verdict and seed count at every profile is the same "
              "before and after",
              "at three decimals a deterministic spread of 3×10⁻⁴, which turns the verdict, would have read 0.000; "
              "a control that closed the whole gap would have been said to leave part of it open",
              records_existed=True),
    Amendment("5c31c53b4d2053b18f0b008581e1a4c2b92004224d2330e1d26d3505c1157ef2", "2026-12-07 06:47 UTC",
              "the hidden-norm rule is judged only once Full, the third variant of its ordering, is recorded: at "
              "paper-10m it had read AttnOnly > FFNOnly from the two variants recorded and reported reproduced, and "
              "now reads not run until Full's record lands. Wording: one seed's value is given without a spread or a "
              "range, block 0's median at one seed as that seed's, the absolute values beside the paper's, and the "
              "paper's statements and notes with ×, ± and α_tt ≈ 1. Every other verdict and seed count at every profile is the "
              "same before and after",
              "the rule's text orders three variants (AttnOnly > FFNOnly > Full) and its code left Full out when Full "
              "had no record, so a claim about three variants was judged on two; one seed read as “± —”, “seeds "
              "2.25 to 2.25” and “starved in 1 of 1 seed”. Full and NoResidual at seed 1337 were training",
              records_existed=True),
    Amendment("8319e80e73857eb21e42ac5c6e2134cd7d3209ecedeb5dc2476d79b9b881b6d7", "2026-12-07 06:58 UTC",
              "notes on the paper's values and one title only: how the 124M AttnOnly values are matched to their "
              "seeds (seed 42's by the summary's remark that it ended close to the floor, seed 1337's by the ratio "
              "the summary gives at that seed), both now marked inferred; that the summary calls the originally "
              "recorded asymmetry decreasing with scale while its numbers put the larger one at 124M; how the mixer "
              "is read, since the summary does not say how it mixes positions; the hidden-norm claim titled with its "
              "three variants (AttnOnly > FFNOnly > Full). No value, rule, threshold or selection changed",
              "seed 42's value was shown as stated though it is inferred; a contradiction of the summary and an "
              "interpretation the mixer's verdict rests on were left unsaid; the title named two of the rule's three "
              "variants",
              records_existed=True),
)


def digest(root: Path = _PACKAGE) -> str:
    """sha256 over :data:`FILES` (each file's path, then its bytes)."""
    h = hashlib.sha256()
    for name in FILES:
        h.update(name.encode() + b"\n" + (root / name).read_bytes() + b"\n")
    return h.hexdigest()


def current_digest_is_accounted_for() -> bool:
    """Whether today's files are the registered ones or the last amendment's."""
    expected = AMENDMENTS[-1].digest if AMENDMENTS else REGISTERED_DIGEST
    return digest() == expected


def registration_commit() -> tuple[str, datetime] | None:
    """The pre-registration commit (its message names the registered digest) and its commit
    time, from this checkout's history; None where the history is not available."""
    try:
        out = subprocess.run(["git", "log", "--fixed-strings", f"--grep={REGISTERED_DIGEST[:16]}", "--format=%H %cI"],
                             cwd=_PACKAGE, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = out.stdout.split("\n") if out.returncode == 0 else []
    lines = [line for line in lines if line.strip()]
    if not lines:
        return None
    sha, when = lines[-1].split()  # the oldest commit that names it
    return sha, datetime.fromisoformat(when)


def descends(commit: str, sha) -> bool | None:
    """Whether the code at ``sha`` already held ``commit`` (``commit`` is its ancestor, or it);
    None when ``sha`` is not a commit name or either is not in this checkout's history."""
    if not isinstance(sha, str) or not sha.strip():
        return None
    try:
        out = subprocess.run(["git", "merge-base", "--is-ancestor", commit, sha], cwd=_PACKAGE,
                             capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return {0: True, 1: False}.get(out.returncode)


def commit_time(sha) -> datetime | None:
    """When ``sha`` was committed, from this checkout's history; None where it is not there."""
    if not isinstance(sha, str) or not sha.strip():
        return None
    try:
        out = subprocess.run(["git", "show", "-s", "--format=%cI", sha], cwd=_PACKAGE, capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return datetime.fromisoformat(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


def provenance_field(own: pd.DataFrame, field: str) -> list:
    """One provenance field of each record of ``own``: its column of that name, or the field of
    the file at its ``path``; None where neither says."""
    if field in own:
        return [None if not isinstance(x, str) and pd.isna(x) else x for x in own[field]]
    if "path" not in own:
        return [None] * len(own)
    from ...storage.records import read_record

    return [(read_record(path).get("provenance") or {}).get(field) for path in own["path"]]


def status(records: pd.DataFrame) -> dict:
    """The registration against the ``paper-10m`` records of ``records``
    (:func:`residual_lib.study.frames.load_records` rows): ``commit`` and ``registered`` (None
    without the history), ``records``, ``descend`` (how many were trained by code that already
    held the commit, ``provenance.git_sha``: evidence no clock gives; None where no record's
    commit is in the history), ``started_after`` (how many began after the commit: by their
    code, or by their records' clocks), ``unknown`` (how many of the others record no start),
    ``first_start`` and ``holds`` (every record began after the commit), and ``late_dated`` (how many
    were resumed by code older than :data:`FIRST_START_KEPT`: their start times are left out)."""
    found = registration_commit()
    own = records[records.profile == PROFILE] if "profile" in records else records.head(0)
    starts = pd.to_datetime(own["started_at"] if "started_at" in own else pd.Series(None, index=own.index,
                                                                                   dtype=object), utc=True)
    codes = provenance_field(own, "git_sha")  # the commit of the code that trained each record
    late = pd.Series([step is not None and descends(FIRST_START_KEPT, code) is not True
                      for step, code in zip(provenance_field(own, "resumed_from_step"), codes)], index=own.index, dtype=bool)
    late_start = starts[late].min() if late.any() else None
    finished = pd.to_datetime(pd.Series(provenance_field(own, "finished_at"), index=own.index, dtype=object), utc=True)
    # an amendment between a record's start as recorded (later than or at the true one) and its end came while it trained
    during = sum(any(start < pd.Timestamp(a.when) < end for start, end in zip(starts, finished)
                     if pd.notna(start) and pd.notna(end)) for a in AMENDMENTS)
    starts = starts.where(~late)  # a start dated after the fact, later than the true one: no evidence
    known = [t for t in (commit_time(code) for code in dict.fromkeys(codes)) if t is not None] if len(own) else []
    code_from = min(known) if known else None  # no run of these records can have begun before its code existed
    # nor trained after the last of them ended (unbounded while one gives no end)
    last_end = finished.max() if len(own) and finished.notna().all() else None
    out = {"commit": None, "registered": None, "digest": REGISTERED_DIGEST, "records": len(own),
           "started_after": None, "unknown": None, "first_start": starts.min() if starts.notna().any() else None,
           "holds": None, "amendments": len(AMENDMENTS), "descend": None, "late_dated": int(late.sum()),
           "late_start": late_start, "code_from": code_from,
           "amended_after_code": sum(a.when > code_from and (last_end is None or pd.Timestamp(a.when) < last_end)
                                     for a in AMENDMENTS) if code_from else 0,
           "amended_while_training": during}
    if found is not None:
        sha, when = found
        held = pd.Series([descends(sha, code) for code in codes], index=own.index, dtype=object)
        # code that already held the commit cannot have run before it, whatever a clock says
        after = (held == True) | (starts > pd.Timestamp(when))  # noqa: E712 (None is neither)
        out.update(commit=sha, registered=when, started_after=int(after.sum()), holds=bool(after.all()),
                   unknown=int((~after & starts.isna()).sum()),
                   descend=int((held == True).sum()) if held.notna().any() else None)  # noqa: E712
    return out


def _descent(s: dict, which: bool = False) -> str:
    """The clause on the records' code, after their start (``which``: after the one record's
    name, with no start said): which held the registration commit."""
    n, k = s["records"], s["descend"]
    if k is None:
        return ""
    if n == 1:
        return (f", {'which' if which else 'and it'} was trained by code that already held that commit" if k else
                ", by its clock: its code did not hold that commit yet (a checkout of an older one)")
    if k == n:
        return ", and each was trained by code that already held that commit"
    if k == 0:
        return f", by their clocks: {'neither' if n == 2 else 'none'} was trained by code that held that commit yet"
    return (f", and {'one' if k == 1 else k} of them {'was' if k == 1 else 'were'} trained by code that already held that commit "
            f"({'the other by its clock' if n - k == 1 else 'the others by their clocks'})")


def _late_dated(s: dict) -> str:
    """A sentence on the records whose start is left out (:data:`FIRST_START_KEPT`), or none."""
    k, n = s["late_dated"], s["records"]
    if not k:
        return ""
    if n == 1:
        who = "Its record does not give the run's true start"
    elif k < n:
        who = (f"{_capital(in_words(k))} of them {'does' if k == 1 else 'do'} not give "
               + ("its run's true start" if k == 1 else "their runs' true starts"))
    else:
        who = f"{'Neither' if n == 2 else 'None of them'} gives its run's true start"
    recorded = s["late_start"].strftime("%Y-%m-%d %H:%M UTC")
    return (f" {who}: resumed from checkpoints in several processes, "
            f"{'it was' if k == 1 else 'they were'} dated by code that counted only the time "
            f"{'its' if k == 1 else 'their'} processes ran, so "
            + (f"the start it records ({recorded}) is later than the true one." if k == 1 else
               f"the starts they record (the first {recorded}) are later than the true ones."))


def _late_pointer(s: dict) -> str:
    """What the scorecard adds on the records whose start is left out (:func:`_late_dated`), for
    a chapter's brief statement, or nothing."""
    k, n = s["late_dated"], s["records"]
    if not k:
        return ""
    if n == 1:
        return ", and why the start its record gives is later than the true one"
    if k == 1:
        return ", and why the start one of the records gives is later than the true one"
    return f", and why the starts {'the' if k == n else f'{k} of the'} records give are later than the true ones"


def _while_training(s: dict) -> str:
    """Sentences on the amendments made after the code of a ``paper-10m`` record was committed (a
    run may have been training), and on those between a record's start as recorded and its end
    (a run was under way), each opening with ". "; or nothing."""
    k, during, one = s["amended_after_code"], s.get("amended_while_training", 0), s["records"] == 1

    def how_many(n: int) -> str:  # a count of amendments at the start of a sentence
        if n == len(AMENDMENTS):
            return {1: "It", 2: "Both"}.get(n, "All of them")
        return f"{_capital(in_words(n))} of them"

    text = ""
    if k:
        when = s["code_from"].astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        text = (f". {how_many(k)} came after the code that trained {'its record' if one else 'the first record'} was "
                f"committed ({when}) and before {'that run' if one else 'the last run'} ended, so possibly while "
                f"{'it' if one else 'a run'} was training")
    if during:
        which = (("; it" if k == 1 else "; all of those") if during == k else f"; {in_words(during)} of those") \
            if k else f". {how_many(during)}"
        text += (f"{which} came between the start {'its' if one else 'a'} record gives and its end, while "
                 f"{'the' if k else 'that'} run was certainly under way")
    return text


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def statement(records: pd.DataFrame, brief: bool = False) -> str:
    """The scorecard's sentences on the registration; ``brief``: for a chapter's opening, the
    amendments counted, not listed, and why a record's start is not its true one left to the
    scorecard, which says both."""
    s = status(records)
    if s["commit"] is None:
        return (f"The rules that judge `{PROFILE}` were registered by their digest (sha256 {s['digest'][:16]}…), "
                "but this copy has no git history to find the registration's commit in.")
    when = s["registered"].astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (f"The rules, thresholds and code that judge `{PROFILE}` were registered before its data: commit "
            f"{s['commit'][:7]} ({when}, pre-registration, sha256 {s['digest'][:16]}… of "
            f"{REGISTERED_FILES} files) precedes ")
    n = s["records"]
    first = s["first_start"].strftime("%Y-%m-%d %H:%M UTC") if s["first_start"] is not None else None
    if not n:
        text += f"every `{PROFILE}` record, since none is among these results."
    elif s["holds"]:
        if n == 1:
            text += f"the one `{PROFILE}` record" + (f": it started {first}" if first else "")
        else:
            text += ("both" if n == 2 else f"all {n}") + f" `{PROFILE}` records" + (
                "" if not first else f": the first of those that give a true start began {first}"
                if s["late_dated"] else f": the first of them started {first}")
        text += _descent(s, which=n == 1 and not first) + "." + ("" if brief else _late_dated(s))
    else:
        after, unknown = s["started_after"], s["unknown"]
        before = n - after - unknown
        some = f"only {after}" if after else "none"
        parts = ([f"{before} started before it"] if before else []) + (
            [f"{unknown} {'does' if unknown == 1 else 'do'} not record when {'it' if unknown == 1 else 'they'} "
             "started"] if unknown else [])
        text = text.replace("were registered before its data", "were registered") + (
            f"{some} of the {n} `{PROFILE}` records: {' and '.join(parts)}, so the verdicts that read "
            f"{'it' if n - after == 1 else 'them'} may rest on rules written with {'it' if n - after == 1 else 'them'}"
            " in view.") + ("" if brief else _late_dated(s))
    if AMENDMENTS and brief:
        times = {1: "once", 2: "twice"}.get(len(AMENDMENTS), f"{len(AMENDMENTS)} times")
        existed, made = sum(a.records_existed for a in AMENDMENTS), len(AMENDMENTS)
        when = ("before any `paper-10m` record existed" if not existed else "after a `paper-10m` record existed")
        when = (when if made == 1 else f"each {when}" if existed in (0, made) else
                f"{in_words(existed)} of them after a `paper-10m` record existed")
        text += (f" The files were amended {times} since, {when}" + _while_training(s) +
                 ". The [scorecard](../book/scorecard) lists what each changed and why" + _late_pointer(s) + ".")
    elif AMENDMENTS:
        times = {1: "once", 2: "twice"}.get(len(AMENDMENTS), f"{len(AMENDMENTS)} times")
        text += f" The files were amended {times} since{_while_training(s)}. Each change, oldest first:\n\n" + "\n".join(
            f"- {a.date}: {a.change}. Why: {a.reason}. {'A' if a.records_existed else 'No'} `paper-10m` record "
            "existed then." for a in AMENDMENTS)
    else:
        text += " They have not changed since."
    return text
