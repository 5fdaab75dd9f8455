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
# {glue:md}`paper_scale_recipe`
#
# **Fixed before the data.** {glue:md}`paper_scale_registration`

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = None  # None: the section's default, parameters.defaults(section)
variants = None
device = "auto"
results_dir = None
train_missing = True

# %%
from IPython.display import Markdown, display

from residual_lib.core.paths import results_folder
from residual_lib.pages import plots, scorecard
from residual_lib.pages.book import Prose, glue
from residual_lib.pages.chapters import paper_scale as chapter
from residual_lib.pages.notebook import notebook_records
from residual_lib.pages.scorecard import preregistration
from residual_lib.pages.tables import table
from residual_lib.study.frames import load_records
from residual_lib.study.sections import central_sweep

records = notebook_records("12_paper_scale", globals(), skip_missing=True)
absent = records.attrs["missing"]
study, stand_in_profile = chapter.profiles(profile)
every_run = load_records(results_folder(results_dir))
stand_in = central_sweep(every_run[every_run.profile == stand_in_profile])
finding = chapter.finding(records, absent, scorecard.FLOOR_TOL)
glue("paper_scale_finding", Prose(finding))
glue("paper_scale_recipe", Prose(chapter.recipe(study)))
glue("paper_scale_registration", Prose(preregistration.statement(every_run, brief=True)))
box = chapter.verdict_box(records, study, stand_in_profile, every_run)
display(Markdown(box) if isinstance(box, str) else box)

# %% [markdown]
# ## Each variant beside the paper
#
# Final and best validation loss on the fixed batches, beside the paper's value and the
# stand-in's (`stand-in`: its central sweep, mean ± std over seeds). The paper gives Full no
# value at 10M, only that the partial variants' 3.35 is 2.27 times Full's; nanoGPT's README
# gives 1.4697 as this configuration's best validation loss.

# %%
if len(records):
    display(table(chapter.comparison(records, stand_in), anchor="tab-paper-scale"))
    display(Markdown(chapter.overfit_text(records)))
else:
    display(Markdown("No run of the paper's setting is recorded yet."))

# %% [markdown]
# ## The curves, beside the stand-in's

# %%
if len(records):
    plots.show(
        chapter.curves_figure(
            chapter.mean_curves(records, stand_in), records.eval_floor.iloc[0]
        ),
        "fig-paper-scale-curves",
        chapter.CURVES_CAPTION,
        chapter.CURVES_ALT,
    )

# %% [markdown]
# ## Block 0's gradient
#
# The paper reports block 0's gradient norm at exactly 0.000 from step 300 on for every
# partial variant, and about 0.114 for Full. Step 300 is 6% of the paper's 5,000 steps, so the
# table reads each run from 6% of its steps on; a norm below 0.0005 rounds to 0.000.

# %%
if len(records):
    display(table(chapter.layer0(records), decimals={"median norm": 4, "share at 0.000": 2}))

# %% [markdown]
# ## Attention to a position's own token
#
# The paper proposes that AttnOnly recovers because attention learns to route each position
# to itself, α_tt ≈ 1, standing in for the missing feed-forward identity path. Spread evenly
# over the causal window, attention would give α_tt the value quoted below the table.

# %%
if len(records):
    display(table(chapter.alpha(records), headers=chapter.ALPHA_HEADERS))
    display(Markdown(f"Uniform attention: α_tt = {chapter.uniform_alpha(records):.3f}."))

# %% [markdown]
# ## Runs not recorded yet

# %%
(
    table(chapter.missing_runs(absent))
    if absent
    else Markdown("None: every run of the paper's setting is recorded.")
)
