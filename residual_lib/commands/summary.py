"""``python -m residual_lib summary``: the records under a results folder, one row per profile
and variant (per condition with ``--all-conditions``), with what was left out and why."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core.text import plural
from ..run.architecture import VARIANTS
from ..run.profiles import get_profile
from ..run.runs import RunError
from ..study.analysis import CONDITIONS
from ..study.frames import diverged, kernel_labels, load_records, off_recipe_lines, recipe_runs, summarize, usable
from ..study.sections import controlled
from . import inputs


def summary(args) -> int:
    """`python -m residual_lib summary`: one row per profile and variant of the records' final losses."""
    if args.results and args.results_dir and Path(args.results).resolve() != Path(args.results_dir).resolve():
        raise RunError("two results folders given: pass RESULTS or --results, not both")
    option = "--results" if args.results else "RESULTS"
    args.results = str(inputs.results_dir(args.results or args.results_dir, option, record_file=True))

    if args.profile:
        get_profile(args.profile)
    every = load_records(args.results, skip_bad=args.skip_bad)
    if args.profile:
        every = every[every.profile == args.profile]
    if every.empty:
        where = f"{args.results} for profile {args.profile}" if args.profile else args.results
        raise RunError(f"no run records under {where}: train some first (python -m residual_lib train ...)")
    for row in diverged(every).itertuples():
        print(f"left out: {row.profile} {row.variant} seed {row.seed} diverged ({row.path})")
    for line in off_recipe_lines(every):
        print(f"left out, not part of this profile: {line}")
    if recipe_runs(every).empty:
        raise RunError(f"every run record under {args.results} is off its profile's recipe (listed above): train "
                       "at a profile's own settings (no --max-iters or --precision) to summarise it")
    every = recipe_runs(every)
    if usable(every).empty:
        raise RunError(f"every run record under {args.results} is of a diverged run: nothing to summarise")
    every = usable(every)
    # the same seeds under other conditions (gains, random batches, repeats) would blur the
    # seed-to-seed spread, so by default only the controlled runs are summarised
    frame = every if args.all_conditions else controlled(every)
    if frame.empty:  # every record is of another condition: say so, rather than print an empty table
        which = "the one record is not" if len(every) == 1 else f"none of the {len(every)} records is"
        print(f"{which} a controlled run (fixed evaluation batches, gain 1, deterministic, first replicate): pass "
              "--all-conditions to list them")
        return 0
    # every condition that sets runs apart (analysis.CONDITIONS) gets rows of its own
    by = ["profile", "variant"] + ([c for c in CONDITIONS if c != "profile"] if args.all_conditions else [])
    # the floor every page and verdict reads: the unigram loss on the run's own evaluation batches
    sizes = frame.groupby(by)[["eval_floor", "n_params"]].first().reset_index()
    frame = frame.assign(kernels=kernel_labels(frame))
    kernels = frame.groupby(by)["kernels"].agg(lambda k: " + ".join(sorted(set(k)))).reset_index()
    table = summarize(frame, by=by).merge(sizes, on=by).merge(kernels, on=by)
    table["variant"] = pd.Categorical(table["variant"], [v for v in VARIANTS if v in set(table["variant"])])
    table = table.sort_values(by).rename(columns={"count": "runs"})
    for name in {"gain", "init_noise"} & set(table):  # settings, not measurements: 1e-06, not 0.0000
        table[name] = table[name].map("{:g}".format)
    with pd.option_context("display.float_format", "{:.4f}".format, "display.width", 160):
        print(table.to_string(index=False))
    hours = every.wall_seconds.sum() / 3600
    shown = "every condition" if args.all_conditions else f"{len(frame)} controlled {plural('run', len(frame))} shown"
    print(f"{len(every)} {plural('record', len(every))}, {hours:.2f} h of training wall time in all ({shown})")
    return 0
