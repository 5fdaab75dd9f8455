# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 10 · Beyond the paper: when does FFNOnly escape the floor?
#
# **The paper's claim.** Removing the attention residual (FFNOnly) causes "complete,
# deterministic collapse across every seed and tested environment" (over eight 10M seeds;
# its values are in the folded block of [chapter 6](06_central)).
#
# **What the central sweep found.** At the `cpu` profile some FFNOnly seeds do not stay at
# the floor: they leave it slowly, part-way through training ([chapter 6](06_central)). The
# `cpu` profile differs from the paper's 10M setting in size, in dropout and in its step
# budget, so this chapter asks what the escapes depend on:
#
# * **dropout 0.2** (profile `cpu-dropout`): the setting of nanoGPT's `shakespeare_char`
#   config, which the `paper-10m` profile follows (the summary does not state the paper's
#   dropout); `cpu` trains without dropout;
# * **three times the budget**, 6,000 steps (profile `cpu-long`): the whole schedule
#   stretches with it, so these runs follow another trajectory from the first steps on,
#   not the same runs continued;
# * **a runtime gain** on every sublayer (0.5, 2, 4; first seed), the paper's own idea for
#   rescuing a partial configuration, so far tried on AttnOnly only ([chapter 5](05_confounds));
# * **a perturbation at the level of rounding**: every seed again with its initial weights
#   multiplied by `1 + 1e-6·N(0,1)`, a relative change of a few float32 roundings (machine
#   epsilon 1.2e-7) and nothing else: the same data order, hyper-parameters and code path
#   (with no perturbation the trainer reproduces the recorded runs bit for bit). If a seed's
#   outcome changes, escapes are not a property of the seed, and "collapse in every seed" is
#   a probability.
#
# A run *escapes* when it ends more than 0.05 nats below the floor of its evaluation batches
# (chapter 3); its *escape step* is the first evaluation from which it stays there. Runs not
# recorded yet are listed, not drawn.

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = None  # None: the section's default, sections.defaults(section)
variants = None
device = "auto"
results_dir = None
train_missing = True
escape_gains = None
perturbations = None

# %%
import pandas as pd
from IPython.display import Markdown
from scipy import stats

from residual_lib import analysis, plots, scorecard, verify
from residual_lib.book import glue
from residual_lib.sections import (
    ESCAPE_INIT_NOISE,
    ESCAPE_PROFILES,
    ESCAPE_THRESHOLDS,
    escape_condition,
    notebook_records,
)
from residual_lib.tables import table

records = notebook_records("10_ffn_escape", globals(), skip_missing=True)
absent = records.attrs["missing"]
runs = analysis.escapes(
    records if len(records) else records.head(0), scorecard.FLOOR_TOL
)
runs["condition"] = [
    escape_condition(profile, p, g, n)
    for p, g, n in zip(runs.profile, runs.gain, runs.init_noise)
]
BASE, NUDGED = (
    escape_condition(profile, profile, 1.0, 0.0),
    escape_condition(profile, profile, 1.0, ESCAPE_INIT_NOISE),
)
ORDER = [
    BASE,
    NUDGED,
    *ESCAPE_PROFILES.get(profile, {}),
    *sorted({c for c in runs.condition if c.startswith("gain")}),
]
floor = float(records["eval_floor"].iloc[0]) if len(records) else float("nan")
scorecard.verdict_box(["ffn_collapse_10m"], records)

# %% [markdown]
# ## How often FFNOnly escapes
#
# FFNOnly is trained at up to twenty seeds without dropout (the `cpu` profile) and twenty with
# dropout 0.2 (`cpu-dropout`). The seeds were fixed before any of their runs was trained:
# the central sweep's five, then the first fifteen positive integers not among them
# (`sections.ESCAPE_RATE_SEEDS`). Each run's distance below the floor at the end of
# training is a continuous quantity; an escape is counted at three lines, so that no
# conclusion rests on one of them.

# %%
rate_runs = runs[runs.condition.isin([BASE, "dropout 0.2"])].assign(
    setting=lambda f: f.profile
)
settings = list(dict.fromkeys([profile, *rate_runs.setting]))
rates = analysis.escape_rates(rate_runs, ESCAPE_THRESHOLDS, confidence=0.95)
if len(rate_runs):
    plots.show(
        plots.escape_distances(rate_runs, ESCAPE_THRESHOLDS, settings),
        "fig-escape-distances",
        "How far below the floor of its evaluation batches every FFNOnly run ends, one"
        " point per seed, without dropout and with dropout 0.2. The vertical lines are"
        " the three thresholds an escape is counted at; points left of 0 end above the"
        " floor.",
        "Strip chart of nats below the floor at the end of training, one row of points"
        " per dropout setting, with vertical lines at 0.02, 0.05 and 0.1 nats.",
    )

# %%
shown_rates = rates.assign(
    escapes=lambda f: [f"{k} of {n}" for k, n in zip(f.escaped, f.runs)],
    interval=lambda f: [f"{lo:.0%} to {hi:.0%}" for lo, hi in zip(f.low, f.high)],
)
table(
    shown_rates[
        ["setting", "threshold", "escapes", "rate", "interval"]
        + (["fisher_p"] if "fisher_p" in rates else [])
    ],
    headers={
        "threshold": "line (nats below the floor)",
        "interval": "95% Clopper-Pearson interval",
        "fisher_p": "Fisher's exact p, dropout vs none",
    },
    caption="FFNOnly's escape rate per setting and line",
)

# %% tags=["hide-input"]
glue("escape_rate_finding", analysis.escape_rate_text(rates, scorecard.FLOOR_TOL))
Markdown(analysis.escape_rate_text(rates, scorecard.FLOOR_TOL))

# %% [markdown]
# ## Escapes per condition

# %%
counts = runs.groupby("condition").agg(
    runs=("escaped", "size"),
    escaped=("escaped", "sum"),
    seeds_escaping=(
        "seed",
        lambda s: ", ".join(str(x) for x in sorted(s[runs.loc[s.index, "escaped"]])),
    ),
)
counts = counts.reindex([c for c in ORDER if c in counts.index])
table(counts, index="condition", headers={"seeds_escaping": "seeds that escape"})

# %%
if len(runs):
    curve = analysis.curves(runs, "val")
    curve["condition"] = curve["key"].map(dict(zip(runs.key, runs.condition)))
    curve["escaped"] = curve["key"].map(dict(zip(runs.key, runs.escaped)))
    plots.show(
        plots.escape_curves(curve, floor, scorecard.FLOOR_TOL, ORDER),
        "fig-escape-curves",
        "FFNOnly's validation loss on the fixed batches, every run, one panel per "
        "condition, coloured by whether the run escapes. The dashed line is the floor "
        "of those batches; the grey band,"
        f" ±{scorecard.FLOOR_TOL} nats around it, counts as"
        ' "at the floor".',
        "Small multiple line charts, one per condition, of validation loss in nats"
        " against training step for each run, with a dashed floor line inside a grey"
        " band.",
    )

# %% [markdown]
# ## Seed or rounding?
#
# Each seed as recorded beside the same seed with its initial weights nudged: the same
# data order, the same hyper-parameters, a difference of about 1e-6 in every weight.

# %% tags=["hide-input"]
base, nudged = BASE, NUDGED
pair = runs[runs.condition.isin([base, nudged])].pivot_table(
    index="seed", columns="condition", values="escaped", aggfunc="first"
)
findings = []
if {base, nudged} <= set(pair.columns):
    pair = pair.dropna()
    flipped = pair[pair[base] != pair[nudged]]
    findings.append(
        f"Of {len(pair)} seeds, {len(flipped)} change their outcome when their initial"
        " weights are nudged by one part in a million"
        + (
            f" (seeds {', '.join(str(s) for s in flipped.index)})"
            if len(flipped)
            else ""
        )
        + "."
    )
    same_setting = runs[
        runs.condition.isin([base, nudged]) & runs.seed.isin(pair.index)
    ]
    k, n = int(same_setting.escaped.sum()), len(same_setting)
    if len(flipped):
        ci = stats.binomtest(k, n).proportion_ci(0.95)
        findings.append(
            "A seed's outcome is not stable under a perturbation of the size of a few"
            " roundings, so whether FFNOnly collapses is a probability, not a property"
            " of its seed: treating the recorded and the nudged runs as draws of one"
            f" setting, FFNOnly escapes in {k} of {n} runs at {profile} ({k / n:.0%};"
            f" 95% Clopper-Pearson interval {ci.low:.0%} to {ci.high:.0%})."
        )
    else:
        findings.append(
            f"Every seed keeps its outcome under the perturbation ({k} of {n} runs"
            " escape)."
        )
    low, high = min(ESCAPE_THRESHOLDS), max(ESCAPE_THRESHOLDS)
    edge = same_setting[same_setting.below_floor.between(low, high)]
    if len(edge):
        findings.append(
            f"{len(edge)} of these runs end{'s' if len(edge) == 1 else ''} between the"
            f" {low}- and {high}-nat lines, so"
            " whether they count as escapes depends on where the line is drawn: "
            + ", ".join(
                f"seed {r.seed}{' with nudged weights' if r.init_noise else ''} ends"
                f" {r.below_floor:.3f} nats below the floor"
                for r in edge.itertuples()
            )
            + "."
        )
for condition in [c for c in ORDER if c not in (base, nudged)]:
    part = runs[runs.condition == condition]
    if len(part):
        seeds_out = sorted(part[part.escaped].seed)
        findings.append(
            f"{condition.capitalize()}: {int(part.escaped.sum())} of {len(part)} "
            f"run{'' if len(part) == 1 else 's'} escape{'s' if len(part) == 1 else ''}"
            + (
                f" (seed{'' if len(seeds_out) == 1 else 's'}"
                f" {', '.join(map(str, seeds_out))})"
                if seeds_out
                else ""
            )
            + "."
        )
    elif condition in ESCAPE_PROFILES.get(profile, {}):
        findings.append(f"{condition.capitalize()}: not recorded yet.")
finding = (
    " ".join(findings) if findings else "No escape-study records at this profile yet."
)
glue("escape_finding", finding)
Markdown(finding)

# %% [markdown]
# ## Not an artefact of the code version
#
# A record names the commit that trained it; this book is built by later code. An escaping
# run is trained again with the code of the book's build, by
# `python -m residual_lib verify <record>`, and compared with its record bit for bit: every
# validation and training curve, the diagnostics and the final losses.

# %% tags=["hide-input"]
certificates = verify.load_certificates(results_dir, profile)
escaping = runs[runs.escaped & (runs.condition == BASE)]
checked = certificates[certificates.key.isin(escaping.key)]
Markdown(verify.certificates_text(checked, escaping))

# %% [markdown]
# ## Block 0 during an escape
#
# Records made since block 0's gradient is logged by sub-module show where the gradient that
# an escaping run regains flows: the attention weights, the MLP or the LayerNorms (median
# over the logged steps from 6% of training on).

# %%
layer0 = analysis.layer0_after(runs)
layer0["condition"], layer0["escaped"] = (
    runs.condition.to_numpy(),
    runs.escaped.to_numpy(),
)
parts = [
    c for c in ("median_attn", "median_mlp", "median_ln") if layer0[c].notna().any()
]
by_outcome = (layer0.dropna(subset=parts) if parts else layer0).groupby(
    ["condition", "escaped"]
)
(
    table(
        by_outcome[["median", *parts]].median().reset_index(),
        headers={"median": "median, whole block"},
    )
    if len(layer0)
    else Markdown("No records yet.")
)


# %% [markdown]
# ## Every run

# %%
shown = runs.assign(
    escape_step=runs.escape_step.map(lambda s: "—" if pd.isna(s) else f"{int(s):,}"),
    order=runs.condition.map({c: i for i, c in enumerate(ORDER)}),
)
shown = shown.sort_values(["order", "seed"])
table(
    shown[
        ["condition", "seed", "final_val_loss", "below_floor", "escaped", "escape_step"]
    ],
    headers={"below_floor": "below the floor (nats)"},
)

# %% [markdown]
# ## Runs not recorded yet
#
# Runs this chapter would show that have no record yet (make them with
# `python -m residual_lib sweep notebooks/10_ffn_escape.py --profile <profile> --seeds ...`):

# %%
(
    table(pd.DataFrame([{"run": s.label()} for s in absent]))
    if absent
    else Markdown("None: every run of this chapter is recorded.")
)
