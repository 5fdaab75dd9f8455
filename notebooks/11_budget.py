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
# # 11 · Beyond the paper: how long does FFNOnly's collapse last?
#
# **The question.** {glue:md}`budget_question`
#
# **Here.** {glue:md}`budget_here` {glue:md}`budget_carry_over`
#
# **Fixed before the data.** The seeds, the line and the decision rule are the constants and
# functions of `residual_lib/study/budget.py` (`residual_lib/budget.py` when they were committed,
# before the study's first run), which reads escape times as `residual_lib/study/escapes.py`
# defines them. {glue:md}`budget_registered`

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = None  # None: the section's default, parameters.defaults(section)
variants = None
device = "auto"
results_dir = None
train_missing = True

# %%
from IPython.display import Markdown

from residual_lib import load_records
from residual_lib.core.paths import results_folder
from residual_lib.pages import plots
from residual_lib.pages.book import Prose, glue
from residual_lib.pages.chapters import budget as chapter
from residual_lib.pages.notebook import notebook_records
from residual_lib.pages.tables import table
from residual_lib.study import budget, dips
from residual_lib.study.analysis import curves
from residual_lib.study.sections import plan

records = notebook_records("11_budget", globals(), skip_missing=True)
absent = records.attrs["missing"]
study = chapter.scope(profile, plan("11_budget", profile, seeds))
glue("budget_here", Prose(study["here"]))
glue("budget_intro", Prose(study["intro"]))  # the introduction's paragraph on the study
glue("budget_registered", Prose(chapter.registration_text(records)))
every_run = load_records(results_folder(results_dir))  # the stand-in's runs too
times = budget.escape_times(records)
glue("budget_question", Prose(chapter.question_text(every_run, profile)))
glue("budget_carry_over", Prose(chapter.carry_over_text(every_run, profile, times)))
ffn_runs = int((records.variant == "ffn_only").sum())
planned = ffn_runs + sum(r.variant == "ffn_only" for r in absent)
Markdown(f"{chapter.rule_text()} {chapter.reference_text(records)}")

# %%
Markdown(chapter.progress_text(records, absent))

# %% [markdown]
# ## The curves

# %%
if len(records):
    floor, bigram = records.eval_floor.iloc[0], records.eval_bigram.iloc[0]
    plots.show(
        plots.budget_curves(curves(records, "val"), floor, budget.LINE, bigram),
        "fig-budget-curves",
        chapter.CURVES_CAPTION,
        chapter.CURVES_ALT,
    )
else:
    Markdown("No run of the study is recorded yet.")

# %% [markdown]
# ## When FFNOnly leaves the floor

# %%
decision = budget.decide(times) if len(times) else {"runs": 0}
text = chapter.decision_text(decision, planned)
glue("budget_decision", Prose(text))
intro = chapter.intro_summary(decision, planned, times, records)
glue("budget_summary", Prose(intro))  # the rule's reading and where escapes ended
Markdown(text)

# %%
if len(times):
    steps = int(records.steps.max())
    line = chapter.km_line(planned, ffn_runs)
    km = budget.kaplan_meier(times)
    plots.show(
        plots.survival(km, steps, budget.FLAT_AFTER, line),
        "fig-budget-survival",
        chapter.km_caption(line, planned, km.on_floor.iloc[-1]),
        chapter.km_alt(line),
    )

# %%
attn = records.loc[records.variant == "attn_only", "final_val_loss"]
if len(times):  # each run's best loss beside its escape time: how deep it went
    times = times.merge(records[["key", "best_val_loss"]], on="key", how="left")
table(
    chapter.escape_table(times, attn.mean() if len(attn) else float("nan")),
    caption="Every FFNOnly run of the study (nats; a dash: it ends within the line)",
)

# %%
# Runs that crossed the line and came back, which the rule does not count as leaving
# the floor, and how far the NoResidual anchor, which ends on the floor, dips
found = dips.returns(records, budget.LINE) if len(records) else None
said = dips.returns_text(found, len(times), budget.LINE)
Markdown(f"{said}\n\n{dips.anchor_text(found, budget.LINE)}")

# %% [markdown]
# ## The anchors

# %%
table(
    chapter.anchor_table(records),
    headers={"mean": "mean"},  # the caption gives the unit
    index="variant",
    caption="Final validation loss (nats)",
)

# %% [markdown]
# ## Runs not recorded yet

# %%
(
    table(chapter.missing_runs(absent))
    if absent
    else Markdown("None: every run of the study is recorded.")
)
