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
# # 9 · Beyond the paper: a scale ladder up to the paper's width and depth
#
# **The open question.** The paper confirms the AttnOnly / FFNOnly asymmetry at 10M and
# leaves 124M unresolved (its three AttnOnly seeds there vary widely), so whether the
# asymmetry depends on scale stays open. Two points on the scale axis, with different data
# and tokenisers, could not say in any case.
#
# **What it finds.** {glue:md}`ladder_top_finding` {glue:md}`ladder_trend_summary`
# The sections below give every rung, seed and interval.
#
# **Here.** One training budget (context {glue:md}`ladder_context`, batch {glue:md}`ladder_batch`,
# {glue:md}`ladder_steps` steps, dropout {glue:md}`ladder_dropout`, fixed evaluation) at five model sizes on the
# character corpus: four layers at widths {glue:md}`ladder_widths`, then the `paper-10m` shape itself
# ({glue:md}`ladder_top_layers` layers, {glue:md}`ladder_top_heads` heads, width {glue:md}`ladder_top_width`),
# the four central variants at three seeds each up to 3.2M and one at the largest rung, whose
# runs take over an hour on one core. For every rung we plot two gaps against the parameter
# count:
#
# * AttnOnly − Full, paired by seed: what removing the feed-forward residual costs;
# * FFNOnly − floor: how far above (or below) the unigram floor of the evaluation batches
#   (chapter 3) the model without the attention residual ends, i.e. whether it collapses.
#
# Rungs without records are listed, not drawn: the chapter shows what has been run.

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = None  # None: the section's default, parameters.defaults(section)
variants = None
device = "auto"
results_dir = None
train_missing = True
ladder_seeds = None

# %%
from IPython.display import Markdown, display

from residual_lib import load_records
from residual_lib.core.paths import results_folder
from residual_lib.pages import plots, scorecard
from residual_lib.pages.book import Prose, glue
from residual_lib.pages.chapters import ladder
from residual_lib.pages.notebook import notebook_records
from residual_lib.pages.tables import table
from residual_lib.run import profiles
from residual_lib.study import scaling

records = notebook_records("09_scale_ladder", globals(), skip_missing=True)
display(scorecard.verdict_box(["asymmetry_by_scale"], records))
every_run = load_records(results_folder(results_dir))  # the rungs' other seeds, if any
rungs = profiles.ladder(profile)
absent = records.attrs["missing"]
glue("ladder_rungs", ", ".join(rungs))
# the recipe the prose quotes, as Markdown for {glue:md}: {glue:text} would read
# "2,000" as the tuple (2, 0)
for name, text in ladder.recipe(rungs).items():
    glue(name, Markdown(text))

# %% [markdown]
# ## The rungs
#
# The budget is fixed in tokens, not scaled with the model, so the larger rungs see fewer
# training tokens per parameter; the wall time per run is the records' own.

# %%
shape = scaling.ladder_rungs(records, rungs)
for name, text in ladder.token_budget(shape).items():
    glue(name, text)
glue("ladder_recorded", ladder.recorded(shape, records, absent))
table(
    shape,
    headers={"minutes per run": "minutes per run (median)"},
    decimals={"tokens per parameter": 1, "minutes per run": 0},
)

# %% [markdown]
# Every rung trains on {glue:text}`ladder_tokens` tokens, so the largest sees
# {glue:text}`ladder_top_tokens_per_param` tokens per parameter, against about
# {glue:text}`paper_tokens_per_param` for the paper's 10M run ({glue:md}`paper_steps` steps of
# {glue:md}`paper_batch` × {glue:md}`paper_context` tokens, as `paper-10m` reads it). The top rung is the
# paper's architecture, not the paper's training.
#
# Runs not recorded yet (make them with
# `python -m residual_lib sweep notebooks/09_scale_ladder.py --profile <profile>`):

# %%
(
    table(ladder.missing_runs(absent))
    if absent
    else Markdown("None: every rung is complete.")
)

# %% [markdown]
# ## Final validation loss per rung and variant (mean ± std over seeds)

# %%
summary = ladder.loss_summary(records)
table(summary) if len(summary) else Markdown("No ladder records yet.")

# %% [markdown]
# ## The two gaps against model size
#
# Each gap's mean over the rung's seeds, with the 95% t interval of that mean; a rung
# with a single seed has no spread to measure, so its interval reads —.

# %%
gaps = ladder.gaps(records)
(
    table(gaps, headers={"mean": "mean gap (nats)"})
    if len(gaps)
    else Markdown("No gap can be computed yet.")
)

# %%
if len(gaps):
    plots.show(
        plots.ladder_gaps(gaps, ladder.points(records)),
        "fig-ladder",
        ladder.GAPS_CAPTION,
        ladder.GAPS_ALT,
    )

# %% [markdown]
# ## The trend
#
# A straight line through every seed's gap against log10(parameters): its slope is the
# change of the gap per tenfold increase in model size, with a 95% t interval.

# %%
trend = ladder.trend(records)
table(trend, headers={"slope_per_decade": "slope (nats per tenfold size)"})


# %% tags=["hide-input"]
findings = ladder.findings(gaps, trend, ladder.points(records))
top = scaling.top_rung_text(records, rungs, scorecard.FLOOR_TOL)
seed_note = ladder.seed_note(records, every_run, scorecard.FLOOR_TOL)
glue("ladder_top_finding", Prose(top))  # Markdown here, inline HTML in the intro
glue("ladder_trend_summary", Prose(ladder.trend_summary(trend)))
notes = (seed_note, ladder.anchor_note(records, scorecard.FLOOR_TOL))
said = [*findings.values(), top, *(note for note in notes if note)]
Markdown(ladder.bullet_list(said))

# %% [markdown]
# ## The top rung at the paper's budget
#
# The ladder fixes the budget and varies the size. The paper's own setting
# ([chapter 12](12_paper_scale)) adds the other axis at the top rung's shape: the same
# model trained on many more tokens, by the paper's recipe.

# %%
budgets, budgets_text = ladder.two_budgets(every_run, rungs, profile)
glue("ladder_two_budgets", Prose(budgets_text))
display(Markdown(budgets_text))
if len(budgets):
    display(table(budgets, caption="Final validation loss at two budgets (nats)"))

# %% [markdown]
# **What this can and cannot tell.** Within the ladder, a trend in AttnOnly − Full
# (shrinking or growing with size) and whether FFNOnly stays at the floor at every rung
# are measured over the rungs that have records, with an interval wherever a rung has more
# than one seed.
# {glue:text}`ladder_recorded` What it cannot tell is the behaviour at 124M: the ladder
# trains on characters rather than BPE tokens, at one small token budget rather than the
# paper's, and its top rung is still an order of magnitude smaller than GPT-2 small. It
# narrows the question (does the asymmetry move between 0.1M and 10M at a fixed budget?)
# rather than answers it.
