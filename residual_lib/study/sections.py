"""What each section of the book needs trained: its plan (the list of
:class:`residual_lib.run.runs.Run` for a profile, seeds and variants) and which of those runs its
chapter cannot be shown without. A notebook asks for its records through
:func:`residual_lib.pages.notebook.notebook_records`; the sweep command calls the same
:func:`plan` to train everything up front, in parallel, before it executes the notebooks.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import pandas as pd

from ..core.paths import results_folder
from ..core.text import plural, scientific
from ..run.architecture import CENTRAL_VARIANTS
from ..run.profiles import DROPOUT_TWIN, GAIN_TIMING, LADDER_SEEDS, PAPER_SCALE, get_profile, ladder
from ..run.runs import PAPER_SEEDS, Run
from ..storage.records import find_record
from .frames import recipe_runs, usable

#: The profile a notebook run as it is, or a sweep without --profile, trains: seconds a run.
DEFAULT_PROFILE = "smoke"


def _central(profile, seeds, variants):
    return [Run(profile, v, s) for v in variants for s in seeds]


def _central_twinned(profile, seeds, variants, dropout_twin=True):
    """The central sweep, and with ``dropout_twin`` the same runs at the profile's dropout
    twin (:data:`residual_lib.run.profiles.DROPOUT_TWIN`), the second stand-in the scorecard judges."""
    twin = DROPOUT_TWIN.get(profile) if dropout_twin else None
    return _central(profile, seeds, variants) + (_central(twin, seeds, variants) if twin else [])


def _joint_collapse(profile, seeds, variants):
    # nanoGPT-style evaluation (fresh random validation batches), one seed as in the paper;
    # the block-0 gradients are read from every seed of the controlled runs as well
    return [Run(profile, v, s, eval_mode="random") for v in variants for s in seeds[:1]] + \
        _central(profile, seeds, variants)


def _confounds(profile, seeds, variants, gains=(0.5, 1.0, 2.0, 4.0), gain_variant="attn_only", gain_seeds=3):
    # each gain at the first gain_seeds seeds, and the first steps of those runs evaluated more
    # often at the profile's timing profile (GAIN_TIMING) where it has one
    timing = GAIN_TIMING.get(profile)
    gain_runs = [Run(p, gain_variant, s, gain=float(g)) for p in (profile, timing) if p
                 for s in seeds[:gain_seeds] for g in gains]
    # evaluation noise and drift are read from the fixed-batch runs of the central sweep
    return gain_runs + _central(profile, seeds, variants)


def _mechanism(profile, seeds, variants):
    # the mixer, its no-mixing control (pointwise) and the variants they sit between; full is
    # the control of the growth, drift and alpha_tt tables
    return [Run(profile, v, s) for v in ("attn_only", "ffn_only", "mixer", "pointwise", "full") for s in seeds]


def _reproduction(profile, seeds, variants, repeats=3, repro_variant="attn_only"):
    first = seeds[0]
    deterministic = [Run(profile, repro_variant, first, replicate=r) for r in range(2)]
    nondeterministic = [Run(profile, repro_variant, first, deterministic=False, replicate=r) for r in range(repeats)]
    return deterministic + nondeterministic + _central(profile, seeds, variants)


def _scale_ladder(profile, seeds, variants, ladder_seeds=3):
    # every rung of the ladder, the central variants, the first ladder_seeds seeds (fewer at
    # the rungs of LADDER_SEEDS); rung by rung, so the smaller rungs finish first
    return [Run(rung, v, s) for rung in ladder(profile) for v in variants
            for s in seeds[:min(ladder_seeds, LADDER_SEEDS.get(rung, ladder_seeds))]]


#: The FFNOnly escape study's conditions beside the base profile, by name.
DROPOUT_CONDITION, LONG_CONDITION = "dropout 0.2", "6,000 steps"
#: The FFNOnly escape study's conditions: the profile each one trains at, per base profile.
ESCAPE_PROFILES: dict[str, dict[str, str]] = {
    "cpu": {DROPOUT_CONDITION: DROPOUT_TWIN["cpu"], LONG_CONDITION: "cpu-long"},
    "smoke": {DROPOUT_CONDITION: DROPOUT_TWIN["smoke"], LONG_CONDITION: "smoke-long"},
}
#: The FFNOnly escape rate's seeds, fixed before any of their runs was trained: the five
#: seeds of the central sweep, then the first fifteen positive integers not among them.
ESCAPE_RATE_SEEDS = (1337, 42, 123, 7, 8, *[s for s in range(1, 18) if s not in (7, 8)])
assert len(ESCAPE_RATE_SEEDS) == 20 and len(set(ESCAPE_RATE_SEEDS)) == 20
#: How many of :data:`ESCAPE_RATE_SEEDS` the escape rate trains at a base profile and its
#: dropout twin (profiles not named here: the section's seeds only, as the tests' smoke).
ESCAPE_RATE_RUNS: dict[str, int] = {"cpu": 20}
#: The lines the escape rate is counted at: nats below the floor that count as an escape.
ESCAPE_THRESHOLDS = (0.02, 0.05, 0.10)
#: The commit that fixed :data:`ESCAPE_THRESHOLDS`, and its time: runs that started later were
#: counted at lines set before their data.
ESCAPE_LINES_FIXED = ("54b7525", "2026-12-03T16:56:55+00:00")
#: The relative size of the initial-weight perturbation that asks whether an escape is a
#: property of the seed or of rounding (:func:`residual_lib.training.state.perturb_init`).
ESCAPE_INIT_NOISE = 1e-6


def _ffn_escape(profile, seeds, variants, escape_gains=(0.5, 2.0, 4.0), perturbations=1):
    """ffn_only at every seed: under each condition of :data:`ESCAPE_PROFILES`, with the
    initial weights nudged by :data:`ESCAPE_INIT_NOISE` (``perturbations`` draws), and at
    runtime gains ``escape_gains`` for the first seed; plus the central ffn_only runs, and
    the escape rate's seeds (:data:`ESCAPE_RATE_RUNS`) at the base profile and with dropout."""
    rate = [s for s in ESCAPE_RATE_SEEDS[:ESCAPE_RATE_RUNS.get(profile, 0)] if s not in seeds]
    runs = [Run(profile, "ffn_only", s) for s in seeds]
    runs += [Run(profile, "ffn_only", s, init_noise=ESCAPE_INIT_NOISE, replicate=r)
             for r in range(perturbations) for s in seeds]
    for condition_profile in ESCAPE_PROFILES.get(profile, {}).values():
        runs += [Run(condition_profile, "ffn_only", s) for s in seeds]
    runs += [Run(profile, "ffn_only", seeds[0], gain=float(g)) for g in escape_gains]
    dropout = ESCAPE_PROFILES.get(profile, {}).get(DROPOUT_CONDITION)
    runs += [Run(p, "ffn_only", s) for s in rate for p in (profile, dropout) if p]
    return runs


#: The budget study (:mod:`residual_lib.study.budget`): the profile each base profile runs it at, and
#: how many of :data:`ESCAPE_RATE_SEEDS` FFNOnly trains there (profiles not named: the section's
#: first three seeds, as the tests' smoke). The first four of those seeds add the anchors.
BUDGET_PROFILES: dict[str, str] = {"cpu": "cpu-budget", "smoke": "smoke-budget"}
BUDGET_RUNS: dict[str, int] = {"cpu": 16}
BUDGET_ANCHORS = 4


def _budget(profile, seeds, variants):
    """The budget study at ``profile``'s budget twin (:data:`BUDGET_PROFILES`), in the order it
    trains: seed by seed, ffn_only first, then attn_only and no_residual at the anchor seeds.
    At ``cpu`` this is :func:`residual_lib.study.budget.budget_runs`, the pre-registered study."""
    study = BUDGET_PROFILES.get(profile)
    if study is None:
        return []
    chosen = list(ESCAPE_RATE_SEEDS[:BUDGET_RUNS[profile]]) if profile in BUDGET_RUNS else list(seeds[:3])
    runs = []
    for seed in chosen:
        runs.append(Run(study, "ffn_only", seed))
        if seed in chosen[:BUDGET_ANCHORS]:
            runs += [Run(study, "attn_only", seed), Run(study, "no_residual", seed)]
    return runs


#: The paper's own 10M setting (chapter 12): the four central variants at the first seed, then
#: the two the paper's asymmetry compares at the next two (as machine time allows).
PAPER_SCALE_SEEDS = 3


def _paper_scale(profile, seeds, variants):
    """The paper's 10M setting beside ``profile`` (:data:`residual_lib.run.profiles.PAPER_SCALE`),
    in the order it trains: AttnOnly, FFNOnly, Full and NoResidual at the first seed, then
    AttnOnly and FFNOnly at the next two (those of ``variants``); none at a profile without one."""
    study = PAPER_SCALE.get(profile)
    if study is None:
        return []
    first, *more = seeds[:PAPER_SCALE_SEEDS]
    return ([Run(study, v, first) for v in ("attn_only", "ffn_only", "full", "no_residual") if v in variants]
            + [Run(study, v, s) for s in more for v in ("attn_only", "ffn_only") if v in variants])


def escape_condition(profile: str, run_profile: str, gain: float, init_noise: float) -> str:
    """The escape-study condition a run of :func:`_ffn_escape` belongs to, by its fields."""
    named = {p: c for c, p in ESCAPE_PROFILES.get(profile, {}).items()}
    if run_profile in named:
        return named[run_profile]
    if init_noise:
        return f"initial weights nudged by {scientific(init_noise, 1)}"
    if gain != 1.0:
        return f"gain {gain:g}"
    return f"{profile} recipe"  # the base profile's runs, unchanged: the central sweep's and the escape rate's


PLANS = {
    "03_setup": lambda profile, seeds, variants: [],
    "04_joint_collapse": _joint_collapse,
    "05_confounds": _confounds,
    "06_central": _central_twinned,
    "07_mechanism": _mechanism,
    "08_reproduction": _reproduction,
    "09_scale_ladder": _scale_ladder,
    "10_ffn_escape": _ffn_escape,
    "11_budget": _budget,
    "12_paper_scale": _paper_scale,
}


#: Sections whose chapter shows whatever part of the study has records (the others need all).
PARTIAL_OK = frozenset({"09_scale_ladder", "10_ffn_escape", "11_budget", "12_paper_scale"})
#: Runs a section plans but shows in whatever part has records (the rest of its runs are
#: required): chapter 6's runs at the dropout twin, chapter 7's no-mixing control. A
#: predicate of the run and the section's profile.
SHOWN_IN_PART = {
    "06_central": lambda run, profile: run.profile.name != profile,
    "07_mechanism": lambda run, profile: run.variant == "pointwise",
}


def required(section: str, runs: list[Run], profile: str, partial_ok: bool = True) -> list[Run]:
    """The runs of ``runs`` that ``section``'s chapter cannot be shown without: none for a
    section of :data:`PARTIAL_OK` (unless ``partial_ok`` is False), else all but those of
    :data:`SHOWN_IN_PART`."""
    name = section_name(section)
    if partial_ok and name in PARTIAL_OK:
        return []
    optional = SHOWN_IN_PART.get(name)
    return [r for r in runs if not (optional and optional(r, profile))]


def section_name(notebook: str | os.PathLike) -> str:
    name = Path(notebook).stem
    if name not in PLANS:
        raise ValueError(f"no section named {name!r}: notebooks are {', '.join(PLANS)}")
    return name


def plan(section: str, profile: str = DEFAULT_PROFILE, seeds=PAPER_SEEDS, variants=CENTRAL_VARIANTS,
         **params) -> list[Run]:
    """The runs ``section`` needs for these parameters, without duplicates, in order."""
    get_profile(profile)  # fail early on an unknown profile
    build = PLANS[section_name(section)]
    known = [n for n in inspect.signature(build).parameters if n not in ("profile", "seeds", "variants")]
    unknown = sorted(set(params) - set(known))
    if unknown:  # a misspelt parameter would otherwise plan runs nobody asked for
        raise ValueError(f"unknown {plural('parameter', len(unknown))} {', '.join(unknown)} for section {section_name(section)}: "
                         f"it takes {', '.join(known) or 'none besides profile, seeds and variants'}")
    specs = build(profile=profile, seeds=[int(s) for s in seeds], variants=list(variants), **params)
    return list(dict.fromkeys(specs))


def missing(specs: list[Run], results_dir: str | os.PathLike | None = None) -> list[Run]:
    results = results_folder(results_dir)
    return [s for s in specs if find_record(results, s.profile.name, s.key) is None]


# --------------------------------------------------------------------------- membership
# Which records belong to which study, as filters of frames.load_records rows: the counterpart
# of the plans above, read by the chapters, the scorecard and the book alike. Each keeps only
# runs of their profile's recipe (frames.recipe_runs).


def controlled(frame: pd.DataFrame) -> pd.DataFrame:
    """The central sweep's runs (:func:`_central`), the controlled comparison: fixed validation
    batches, gain 1, deterministic, unperturbed initialisation, first replicate -- one run per
    (profile, variant, seed)."""
    frame = recipe_runs(frame)
    return frame[(frame.eval_mode == "fixed") & (frame.gain == 1.0) & frame.deterministic.astype(bool)
                 & (frame.replicate == 0) & (frame.init_noise == 0)]


def sweep_seeds(central: pd.DataFrame) -> list[int]:
    """The seeds of the central sweep in ``central`` (:func:`controlled` runs): those at which
    every central variant recorded at all has a run. A seed trained for one variant alone (the
    FFNOnly escape rate's) is not one of them, so that a comparison between variants averages
    each over the same seeds."""
    variants = set(central.variant) & set(CENTRAL_VARIANTS)
    seeds = central[central.variant.isin(variants)].groupby("seed")["variant"].nunique()
    return sorted(int(s) for s in seeds[seeds == len(variants)].index)


def central_sweep(frame: pd.DataFrame) -> pd.DataFrame:
    """The one selection every page and the scorecard quote the central sweep from: the
    usable :func:`controlled` runs at :func:`sweep_seeds`, so a mean quoted on one page is the
    mean quoted on every other. ``attrs["left_out"]`` names the controlled runs left out (a
    seed some central variant lacks a usable run at), one string each."""
    central = controlled(usable(frame))
    seeds = sweep_seeds(central)
    out = central[central.seed.isin(seeds)]
    left = central[~central.seed.isin(seeds)]
    out.attrs = {**frame.attrs, "left_out": [f"{r.profile} {r.variant} seed {r.seed}" for r in left.itertuples()]}
    return out


def random_evaluation(frame: pd.DataFrame) -> pd.DataFrame:
    """The joint-collapse study's nanoGPT-style runs (:func:`_joint_collapse`): as the central
    sweep's, but evaluated on fresh random batches."""
    frame = recipe_runs(frame)
    return frame[(frame.eval_mode == "random") & (frame.gain == 1.0) & frame.deterministic.astype(bool)
                 & (frame.replicate == 0) & (frame.init_noise == 0)]


def gain_study(frame: pd.DataFrame, variant: str = "attn_only") -> pd.DataFrame:
    """The gain confound's runs (:func:`_confounds`): ``variant`` on fixed batches, deterministic,
    first replicate, unperturbed, at every gain (gain 1 included)."""
    frame = recipe_runs(frame)
    return frame[(frame.variant == variant) & (frame.eval_mode == "fixed") & (frame.replicate == 0)
                 & (frame.init_noise == 0) & frame.deterministic.astype(bool)]


def repeat_study(frame: pd.DataFrame, variant: str = "attn_only") -> pd.DataFrame:
    """The reproduction study's runs (:func:`_reproduction`): ``variant`` on fixed batches at
    gain 1, unperturbed, deterministic or not, every replicate."""
    frame = recipe_runs(frame)
    return frame[(frame.variant == variant) & (frame.eval_mode == "fixed") & (frame.gain == 1.0)
                 & (frame.init_noise == 0)]
