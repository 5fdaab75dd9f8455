"""Run records as pandas: one row per record, or one per logged step, and the slices the
pages and the scorecard read.

**Recipes.** A run whose profile fields were overridden (``train --max-iters 100``) keeps
the profile's name and folder but is not a run of that profile's recipe: :func:`load_records`
marks it (``on_recipe`` False, with the fields that differ in ``off_recipe``), and the
tables and verdicts, which read :func:`residual_lib.study.sections.controlled` or :func:`recipe_runs`, leave it out and
name it (:func:`off_recipe`).

Derived columns: the unigram floor of a record's evaluation tokens (for records made before
it was stored) and their bigram reference are computed from the record's configuration, once
per evaluation setting in a process; this reads the corpus (:mod:`residual_lib.run.data`).
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import pandas as pd

from ..core.text import plural
from ..run.data import CORPUS_SHA256, DataError, eval_bigram, eval_floor, eval_input_blind, load_corpus
from ..run.profiles import ProfileError, get_profile
from ..storage.records import BadRecordsError, MisfiledRecord, RecordError, validate_record

#: Scalar fields copied into :func:`load_records`' frame, in this order; then ``block_size``
#: (from the configuration), ``device`` and ``device_name`` (from the provenance), and
#: ``eval_bigram``, the bigram reference of the run's evaluation tokens (:func:`record_eval_bigram`).
SCALARS = (
    "key", "profile", "variant", "seed", "eval_mode", "gain", "deterministic", "replicate", "init_noise",
    "status", "final_val_loss", "best_val_loss", "unigram_floor", "eval_floor", "n_params", "steps",
    "wall_seconds", "tokens_per_second",
)
DERIVED = ("block_size", "device", "device_name", "cpu_capability", "precision", "started_at", "eval_bigram",
           "corpus_sha256", "on_recipe", "off_recipe")


def _record_files(path, quiet: bool = False) -> list[Path]:
    """Record files under ``path``: a file, a list of files or folders, a profile's folder
    (``<results>/<profile>/``, its own files only: a folder that holds records itself) or a
    results folder (each profile folder's own files). A record filed deeper, such as a copy of
    a profile's folder at ``results/cpu/old/``, is not a run of that results folder: it is left
    out, and unless ``quiet`` the folders left out are named in one line on stderr (a record
    in a folder not named after its profile, ``results/rerun/``, is left out the same way by
    :func:`_valid_records`)."""
    if isinstance(path, (list, tuple)):
        return [file for p in path for file in _record_files(p, quiet)]
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        return []
    # not records: executed notebooks, job logs, verification certificates (residual_lib.training.verify)
    skip = {"notebooks", "submitit", "verified"}
    files = sorted(p for p in path.rglob("*.json") if not p.name.startswith(".")
                   and not skip.intersection(p.relative_to(path).parts[:-1]))
    deepest = 1 if any(len(p.relative_to(path).parts) == 1 for p in files) else 2
    stray = [p for p in files if len(p.relative_to(path).parts) > deepest]
    if stray and not quiet:
        print(f"residual_lib: left out {len(stray)} {plural('record file', len(stray))} filed outside "
              f"<results>/<profile>/ (they are not runs of {path}): {by_folder(stray)}", file=sys.stderr)
    return [p for p in files if len(p.relative_to(path).parts) <= deepest]


def by_folder(files: list[Path]) -> str:
    """``results/rerun/cpu/ (20 files), results/x/ (1 file)``: files named by their folders, in one line."""
    counts: dict[str, int] = {}
    for file in files:
        counts[str(Path(file).parent)] = counts.get(str(Path(file).parent), 0) + 1
    return ", ".join(f"{folder}/ ({n} {plural('file', n)})" for folder, n in sorted(counts.items()))


def _valid_records(path: str | os.PathLike, skip_bad: bool, quiet: bool = False) -> list[tuple[Path, dict]]:
    """Every record file under ``path`` with its content, one per run key (:func:`once_per_key`);
    bad files raise together
    (:class:`BadRecordsError`) or, with ``skip_bad``, are reported and left out."""
    good, bad, misfiled = [], [], []
    for file in _record_files(path, quiet):
        try:
            good.append((file, validate_record(file)))
        except MisfiledRecord:
            misfiled.append(file)  # read as part of a folder: a copy elsewhere, not a bad record
        except RecordError as exc:
            bad.append(exc)
    single = not isinstance(path, (list, tuple)) and Path(path).is_file()
    if misfiled and single:
        validate_record(misfiled[0])  # asked for by name: say why it is not a run
    if misfiled and not quiet:
        print(f"residual_lib: left out {len(misfiled)} {plural('record file', len(misfiled))} in folders not named "
              f"after their profile (a record belongs in <results>/<profile>/): {by_folder(misfiled)}",
              file=sys.stderr)
    if bad and not skip_bad:
        raise bad[0] if len(bad) == 1 and single else BadRecordsError(bad)
    for exc in bad:
        print(f"residual_lib: skipped {exc}", file=sys.stderr)
    return once_per_key(good, quiet)


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
        # the kernels that made the record: its bits are a function of its key and these
        row["cpu_capability"] = rec["provenance"].get("cpu_capability") if row["device"] == "cpu" else None
        row["precision"] = rec["provenance"].get("precision") or "fp32"
        row["started_at"] = rec["provenance"].get("started_at")  # records made since the field existed
        row["eval_bigram"] = record_eval_bigram(rec)
        row["corpus_sha256"] = rec["config"].get("corpus_sha256")  # None: made before records named it
        row["off_recipe"] = recipe_difference(rec)
        row["on_recipe"] = not row["off_recipe"]
        row["path"] = str(file)
        rows.append(row)
    columns = [*SCALARS, *DERIVED, "path"]
    frame = _one_corpus_per_profile(pd.DataFrame(rows)) if rows else pd.DataFrame(columns=columns)
    for name in ("final_val_loss", "best_val_loss"):  # null (a diverged run) reads as NaN
        frame[name] = pd.to_numeric(frame[name], errors="coerce")
    return frame.sort_values(["profile", "variant", "seed", "key"], ignore_index=True) if rows else frame


def _one_corpus_per_profile(frame: pd.DataFrame) -> pd.DataFrame:
    """Records of one profile that name different corpora (OpenWebText prepared from other
    documents: its token files have no sha256 fixed in advance) are not runs of one recipe: the
    corpus most of them name is the profile's (the earliest run's on a tie), the others are
    marked off it."""
    for _, part in frame.groupby("profile"):
        named = part[part.corpus_sha256.notna()]
        if named.corpus_sha256.nunique() < 2:
            continue
        counts = named.corpus_sha256.value_counts()
        first = named.sort_values("started_at", na_position="last").corpus_sha256.iloc[0]
        main = first if counts[first] == counts.max() else counts.index[0]
        for index in named.index[named.corpus_sha256 != main]:
            note = f"corpus sha256 {frame.at[index, 'corpus_sha256'][:12]}… (the profile's other records: {main[:12]}…)"
            frame.at[index, "off_recipe"] = "; ".join(x for x in (frame.at[index, "off_recipe"], note) if x)
            frame.at[index, "on_recipe"] = False
    return frame


def kernel_labels(frame: pd.DataFrame) -> pd.Series:
    """What made each run's numbers, as the tables name it: the device, or on CPU the kernels'
    instruction set and the precision (``AVX2 fp32``, ``AVX512 bf16``); records that name no
    kernels predate the field (``unnamed fp32``)."""
    def label(row) -> str:
        if row.device != "cpu":
            return f"{row.device} {row.precision}"
        isa = row.cpu_capability if isinstance(row.cpu_capability, str) else "unnamed"
        return f"{isa} {row.precision.split()[0]}"

    return frame.apply(label, axis=1) if len(frame) else pd.Series(dtype=object)


def once_per_key(pairs: list[tuple[Path, dict]], quiet: bool = False) -> list[tuple[Path, dict]]:
    """One (file, record) pair per run key: two records of one key (made on other CPU kernels, or
    a copy of a record elsewhere under the folder read) are one run, not two. The one kept is the
    least deeply filed (``<results>/<profile>/``, where the trainer writes), then the first by
    path; unless ``quiet``, the others are named in one line on stderr."""
    kept: dict[str, Path] = {}
    for file, rec in sorted(pairs, key=lambda pair: (len(Path(pair[0]).parts), str(pair[0]))):
        kept.setdefault(rec["key"], file)
    dropped = [Path(file) for file, rec in pairs if kept[rec["key"]] != file]
    if dropped and not quiet:
        print(f"residual_lib: left out {len(dropped)} {plural('record file', len(dropped))} with the key of "
              f"another (one run counts once): {by_folder(dropped)}", file=sys.stderr)
    return [(file, rec) for file, rec in pairs if kept[rec["key"]] == file]


def load_curves(path: str | os.PathLike, split: str = "train", skip_bad: bool = False) -> pd.DataFrame:
    """Tidy frame of one curve family (``train`` or ``val``) across records: one row per
    (record, step) with the record's ``key``, ``variant``, ``seed``, ``gain``, ``eval_mode``
    and every scalar series logged at that step."""
    frames = []
    for _, rec in _valid_records(path, skip_bad, quiet=True):
        curve = rec["curves"][split]
        scalar = {k: v for k, v in curve.items() if v and not isinstance(v[0], (list, dict))}
        frame = pd.DataFrame(scalar)
        for name in ("key", "profile", "variant", "seed", "gain", "eval_mode", "replicate", "deterministic"):
            frame[name] = rec.get(name)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


@functools.lru_cache(maxsize=None)
def _eval_floor(dataset: str, block_size: int, batch_size: int, eval_iters: int, mode: str) -> float:
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
    return eval_bigram(load_corpus(dataset), block_size, batch_size, eval_iters, mode)


#: The corpora whose bigram reference :func:`record_eval_bigram` computes (the others would
#: need their BPE corpus loaded, or downloaded, to read a record).
BIGRAM_DATASETS = ("shakespeare_char",)


def record_eval_bigram(rec: dict) -> float:
    """The bigram reference of the tokens ``rec``'s losses were measured on
    (:func:`residual_lib.run.data.eval_bigram`), computed from its configuration once per
    (dataset, block size, batch size, evaluation batches, evaluation mode) in a process;
    NaN for a corpus other than :data:`BIGRAM_DATASETS`, an incomplete configuration, or a
    corpus that cannot be read here (reading records never needs the corpus)."""
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
    prof = get_profile(profile)
    return record_eval_bigram({"eval_mode": mode, "config": {"dataset": prof.dataset, "profile": prof.to_dict()}})


@functools.lru_cache(maxsize=None)
def profile_input_blind_line(profile: str, mode: str = "fixed") -> float:
    """How far below its floor (nats) a model of ``profile`` that ignores its input can end on the
    evaluation batches: ``eval_floor - eval_input_blind`` (:func:`residual_lib.run.data.eval_input_blind`).
    An FFNOnly run that ends further below has used its input."""
    prof = get_profile(profile)
    corpus = load_corpus(prof.dataset)
    return (eval_floor(corpus, prof.block_size, prof.batch_size, prof.eval_iters, mode)
            - eval_input_blind(corpus, prof.block_size, prof.batch_size, prof.eval_iters, mode))


def summarize(frame: pd.DataFrame, value: str = "final_val_loss", by=("profile", "variant")) -> pd.DataFrame:
    """Mean, standard deviation (ddof=1), min, max and count of ``value`` per group."""
    grouped = frame.groupby(list(by))[value]
    return grouped.agg(["mean", "std", "min", "max", "count"]).reset_index()


def recipe_difference(rec: dict) -> str:
    """The fields in which a record's profile differs from today's profile of its name, as
    ``"max_iters 100 (profile: 2000)"`` (several joined by ``"; "``); ``""`` for a run of
    the profile's recipe. A record of a profile this code does not define differs in all."""
    stored = (rec.get("config") or {}).get("profile") or {}
    try:
        named = get_profile(rec["profile"]).to_dict()
    except ProfileError:
        return f"profile {rec['profile']!r} is not defined here"
    differences = [f"{k} {stored.get(k)!r} (profile: {named.get(k)!r})"
                   for k in sorted(set(stored) | set(named)) if stored.get(k) != named.get(k)]
    # records made before the field existed trained on the packaged, verified text
    sha = rec["config"].get("corpus_sha256")
    expected = CORPUS_SHA256.get(rec["config"].get("dataset") or stored.get("dataset"))
    if sha is not None and expected is not None and sha != expected:
        differences.append(f"corpus sha256 {sha[:12]}… (profile: {expected[:12]}…)")
    return "; ".join(differences)


def recipe_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """The runs of ``frame`` made by their profile's recipe (no overridden field)."""
    return frame[frame.on_recipe.astype(bool)] if "on_recipe" in frame else frame


def off_recipe(frame: pd.DataFrame) -> pd.DataFrame:
    """The runs of ``frame`` whose profile fields were overridden: not part of their profile."""
    return frame[~frame.on_recipe.astype(bool)] if "on_recipe" in frame else frame.head(0)


def off_recipe_lines(frame: pd.DataFrame) -> list[str]:
    """One line per run of :func:`off_recipe`, naming it and what differs."""
    return [f"{r.profile} {r.variant} seed {r.seed} (key {r.key}): {r.off_recipe}" for r in off_recipe(frame).itertuples()]


def usable(frame: pd.DataFrame) -> pd.DataFrame:
    """The runs whose numbers statistics may use: every run that trained to the end
    (``status`` ok); diverged runs are listed by the pages, never averaged."""
    return frame[frame.status == "ok"] if "status" in frame else frame


def diverged(frame: pd.DataFrame) -> pd.DataFrame:
    """The diverged runs of ``frame``."""
    return frame[frame.status == "diverged"] if "status" in frame else frame.head(0)
