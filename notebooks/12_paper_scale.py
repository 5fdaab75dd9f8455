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
# # 12 · The paper's own 10M setting, at its full budget
#
# **What it finds.** {glue:md}`paper_scale_finding`
#
# **Why.** Every other chapter's verdict at 10M rests on the stand-in, a smaller model trained
# on far fewer tokens ([chapter 3](03_setup) sets the profiles side by side). The ladder's top
# rung has the paper's width and depth but the stand-in's context and budget
# ([chapter 9](09_scale_ladder)). Here the paper's setting itself is trained,
# {glue:md}`paper_scale_recipe` {glue:md}`paper_scale_platform`
#
# **Registered before the data.** {glue:md}`paper_scale_registration`

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = None  # None: the section's default, parameters.defaults(section)
variants = None
device = "auto"
results_dir = None
train_missing = True

# %%
from IPython.display import Markdown, display

from residual_lib import load_records
from residual_lib.core.paths import results_folder
from residual_lib.pages import plots
from residual_lib.pages.book import Prose, glue
from residual_lib.pages.chapters import paper_scale as chapter
from residual_lib.pages.notebook import notebook_records
from residual_lib.pages.platforms import trained_on
from residual_lib.pages.scorecard import preregistration
from residual_lib.pages.tables import table
from residual_lib.study.sections import central_sweep

records = notebook_records("12_paper_scale", globals(), skip_missing=True)
absent = records.attrs["missing"]
study, stand_in_profile = chapter.profiles(profile)
every_run = load_records(results_folder(results_dir))
stand_in = central_sweep(every_run[every_run.profile == stand_in_profile])
glue("paper_scale_finding", Prose(chapter.finding(records, absent, study)))
glue("paper_scale_recipe", Prose(chapter.recipe(study)))
glue("paper_scale_cost", Prose(chapter.cost(records, study)))
glue("paper_scale_platform", Prose(trained_on(records)))
registration = preregistration.statement(every_run, brief=True)
glue("paper_scale_registration", Prose(registration))
full_shown = bool((records.variant == "full").any()) if len(records) else False
glue("paper_scale_about", Prose(chapter.comparison_note(stand_in_profile, full_shown)))
glue("paper_scale_layer0_about", Prose(chapter.layer0_note()))
box = chapter.verdict_box(records, study, stand_in_profile, every_run)
display(Markdown(box) if isinstance(box, str) else box)
no_run = Markdown("No run of the paper's setting is recorded yet.")
none = no_run if not len(records) else Markdown(
    "No seed of the paper's setting has a run of every variant recorded yet."
)

# %% [markdown]
# ## Each variant beside the paper
#
# {glue:md}`paper_scale_about`

# %%
sweep, outside = chapter.split(records)
if len(sweep):
    compared = chapter.comparison(records, stand_in, stand_in_profile)
    display(table(compared, anchor="tab-paper-scale"))
    if len(outside):  # seeds without every variant: said, not averaged
        display(Markdown(chapter.beyond_sweep(outside, table=True)))
    display(Markdown(chapter.overfit_text(records)))
else:
    display(none)

# %% [markdown]
# ## The curves, beside the stand-in's

# %%
if len(sweep):
    plots.show(
        chapter.curves_figure(
            chapter.mean_curves(records, stand_in), records.eval_floor.iloc[0]
        ),
        "fig-paper-scale-curves",
        chapter.CURVES_CAPTION,
        chapter.CURVES_ALT,
    )
else:
    display(none)

# %% [markdown]
# ## Block 0's gradient
#
# {glue:md}`paper_scale_layer0_about`

# %%
layer0 = chapter.layer0(records)
if len(layer0):
    display(table(layer0, decimals={"share at 0.000": 2}))
display(Markdown(chapter.layer0_text(layer0, records)) if len(layer0) else no_run)

# %% [markdown]
# ## Attention to a position's own token
#
# The paper proposes that AttnOnly recovers because attention learns to route each position
# to itself, α_tt ≈ 1, standing in for the missing feed-forward identity path.

# %%
if len(sweep):
    alpha = chapter.alpha(records)
    display(table(alpha, headers=chapter.ALPHA_HEADERS))
    display(Markdown(chapter.alpha_text(alpha, chapter.uniform_alpha(records))))
else:
    display(none)

# %% [markdown]
# ## Runs not recorded yet

# %%
(
    table(chapter.missing_runs(absent))
    if absent
    else Markdown(chapter.nothing_missing(study))
)
