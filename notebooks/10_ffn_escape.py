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

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = None  # None: the section's default, parameters.defaults(section)
variants = None
device = "auto"
results_dir = None
train_missing = True
escape_gains = None
perturbations = None

# %%
from IPython.display import Markdown

from residual_lib.pages import plots, scorecard
from residual_lib.pages.book import Prose, glue
from residual_lib.pages.chapters import escape
from residual_lib.pages.notebook import notebook_records
from residual_lib.pages.tables import table
from residual_lib.study import analysis, escapes, frames, sections
from residual_lib.training import verify

records = notebook_records("10_ffn_escape", globals(), skip_missing=True)
runs = escape.label_conditions(escapes.escapes(records, scorecard.FLOOR_TOL), profile)
order = escape.condition_order(runs, profile)
# the constants the prose quotes, as Markdown for {glue:md}: {glue:text} would read
# "6,000" as the tuple (6, 0)
for name, text in escape.prose_constants(escape_gains).items():
    glue(name, Markdown(text))
scorecard.verdict_box(["ffn_collapse_10m"], records)

# %% [markdown]
# **What the central sweep found.** At the `cpu` profile some FFNOnly seeds do not stay at
# the floor: they sink below it in the second half of training and are still falling at the
# final evaluation ([chapter 6](06_central)). The `cpu` profile differs from the paper's 10M setting in size,
# in dropout and in its step budget, so this chapter asks what the escapes depend on:
#
# * **dropout {glue:md}`escape_dropout`** (profile `cpu-dropout`): the setting of nanoGPT's `shakespeare_char`
#   config, which the `paper-10m` profile follows (the summary does not state the paper's
#   dropout); `cpu` trains without dropout;
# * **three times the budget**, {glue:md}`escape_long_steps` steps (profile `cpu-long`): the whole schedule
#   stretches with it, so these runs follow another trajectory from the first steps on,
#   not the same runs continued;
# * **a runtime gain** on every sublayer ({glue:md}`escape_gains`; first seed), the paper's own idea for
#   rescuing a partial configuration, so far tried on AttnOnly only ([chapter 5](05_confounds));
# * **a perturbation at the level of rounding**: every seed again with its initial weights
#   multiplied by {glue:md}`escape_nudge_formula`, a relative change of a few float32 roundings (machine
#   epsilon 1.2×10⁻⁷) and nothing else: the same data order, hyper-parameters and code path
#   (with no perturbation the trainer reproduces the recorded runs bit for bit). If a seed's
#   outcome changes, escapes are not a property of the seed, and "collapse in every seed" is
#   a probability.
#
# A run *escapes* when it ends more than {glue:md}`escape_line` nats below the floor of its evaluation batches
# (chapter 3); its *escape step* is the first evaluation from which it stays there. Runs not
# recorded yet are listed, not drawn.

# %% [markdown]
# ## How often FFNOnly escapes
#
# FFNOnly is trained at up to twenty seeds without dropout (the `cpu` profile) and twenty with
# dropout {glue:md}`escape_dropout` (`cpu-dropout`). The seeds were fixed before any of their runs was trained:
# the central sweep's five, then the first fifteen positive integers not among them
# (`sections.ESCAPE_RATE_SEEDS`). Each run's distance below the floor at the end of
# training is a continuous quantity; an escape is counted at three lines, so that no
# conclusion rests on one of them, and at a fourth that the data justify: the most a model
# that ignores its input can end below the floor.

# %%
rate_runs = escape.rate_runs(runs, profile)
blind = frames.profile_input_blind_line(profile)
lines = (blind, *sections.ESCAPE_THRESHOLDS)
rates = escapes.escape_rates(rate_runs, lines, confidence=0.95)
if len(rate_runs):
    plots.show(
        plots.escape_distances(
            rate_runs,
            sections.ESCAPE_THRESHOLDS,
            escape.rate_settings(profile),
            input_blind=blind,
        ),
        "fig-escape-distances",
        escape.DISTANCES_CAPTION,
        escape.distances_alt(),
    )

# %%
table(
    escape.rate_table(rates, names={blind: "input-blind"}),
    headers=escape.RATE_HEADERS,
    caption="FFNOnly's escape rate per setting and line",
)

# %% tags=["hide-input"]
fixed_lines = rates[rates.threshold.isin(sections.ESCAPE_THRESHOLDS)]
rate_finding = escapes.escape_rate_text(fixed_lines, scorecard.FLOOR_TOL)
# Markdown on this page, inline HTML where the introduction pastes it
glue("escape_rate_finding", Prose(rate_finding))
Markdown(escape.rate_sentences(rate_finding, rate_runs, blind))

# %% [markdown]
# ## Escapes per condition

# %%
counts = escape.condition_counts(runs, order)
table(counts, headers={"seeds_escaping": "seeds that escape"})

# %%
if len(runs):
    curves = escape.label_curves(analysis.curves(runs, "val"), runs)
    floor = records.eval_floor.iloc[0]
    figure = plots.escape_curves(curves, floor, scorecard.FLOOR_TOL, order)
    plots.show(figure, "fig-escape-curves", escape.CURVES_CAPTION, escape.CURVES_ALT)

# %% [markdown]
# ## Seed or rounding?
#
# Each seed as recorded beside the same seed with its initial weights nudged: the same
# data order, the same hyper-parameters, a difference of about {glue:md}`escape_nudge` in every weight.

# %% tags=["hide-input"]
finding = escape.finding(runs, profile, order)
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
Markdown(escape.verification_text(runs, certificates, profile))

# %% [markdown]
# ## Block 0 during an escape
#
# Records made since block 0's gradient is logged by sub-module show where the gradient that
# an escaping run regains flows: the attention weights, the MLP or the LayerNorms (median
# over the logged steps from {glue:md}`escape_layer0_from` of training on).

# %%
layer0 = escape.layer0_by_outcome(analysis.layer0_after(runs), runs)
(
    table(layer0, headers={"median": "median, whole block"})
    if len(layer0)
    else Markdown("No records yet.")
)


# %% [markdown]
# ## Every run

# %%
escape.every_run(runs, order)

# %% [markdown]
# ## Runs not recorded yet
#
# Runs this chapter would show that have no record yet (make them with
# `python -m residual_lib sweep notebooks/10_ffn_escape.py --profile <profile> --seeds ...`):

# %%
absent = records.attrs["missing"]
(
    table(escape.missing_runs(absent))
    if absent
    else Markdown("None: every run of this chapter is recorded.")
)
