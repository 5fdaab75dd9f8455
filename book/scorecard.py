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
# # Scorecard
#
# Every claim of the paper, judged at every profile where it can be checked: the verdicts at
# a glance first, then each claim with the paper's values, ours and the rule that decided.
# Everything on this page is computed from the run records. {glue:md}`profiles_sentence`
#
# {glue:md}`legend`

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = None  # unused here: the scorecard reads every record
results_dir = None
train_missing = False

# %% tags=["hide-input"]
import pandas as pd
from IPython.display import HTML, Markdown, display

from residual_lib import load_records
from residual_lib.core.paths import results_folder
from residual_lib.pages import scorecard
from residual_lib.pages.book import Prose, glue
from residual_lib.pages.tables import table as show_table

records = load_records(results_folder(results_dir))
table = scorecard.build(stand_in=profile, records=records)
# kept (remember) for the chapters' verdict boxes, which mark the same fragile verdicts
sensitivity = scorecard.sensitivity(stand_in=profile, records=records, table=table,
                                    remember=True)
fragile = scorecard.fragile(sensitivity)
glue("n_fragile", len(fragile))
counts = table.verdict.value_counts().reindex(scorecard.VERDICTS).dropna().astype(int)
glue("verdict_counts", ", ".join(f"{n} {verdict}" for verdict, n in counts.items()))
checked = table[(table.profile == profile) & (table.verdict != "not run at this scale")]
counts_here = checked.verdict.value_counts().reindex(scorecard.VERDICTS).dropna()
counts_text = ", ".join(f"{int(n)} {verdict}" for verdict, n in counts_here.items())
glue("verdict_counts_here", counts_text)
glue("n_rows", len(table))
glue("n_rows_here", len(checked))
glue("stand_in", profile)
# the introduction's "What was run"
glue("stand_in_scope", Prose(scorecard.stand_in_scope(profile)))
# also on the introduction
glue("profiles_sentence", Prose(scorecard.profiles_sentence(profile, records)))
glue("legend", Prose(scorecard.legend()))  # the same words on the introduction
verdicts = scorecard.grid(table, stand_in=profile)
grid_html = scorecard.grid_html(verdicts, fragile_cells=fragile)
glue("verdict_grid", HTML(grid_html), display=False)  # also shown on the introduction
glue("grid_note", Prose(scorecard.grid_note(verdicts)))
# the introduction's paragraph on the paper's own scale
compared = scorecard.compared_seeds(records, "paper-10m")
glue("scale_shift", Prose(scorecard.scale_shift(verdicts, profile, seeds=compared)))
glue("headline", scorecard.headline(table, records, stand_in=profile))
count_text = scorecard.count_sentence(table, profile)
glue("verdict_sentence", Prose(count_text))  # Markdown here, inline HTML in the intro
display(Markdown(count_text))
display(HTML(grid_html))
note = scorecard.grid_note(verdicts)
Markdown(note) if note else None

# %% [markdown]
# ## Verdicts registered before their data

# %% tags=["hide-input"]
from residual_lib.pages.scorecard import preregistration

Markdown(preregistration.statement(records))

# %% [markdown]
# ## How the rules changed
#
# The first rules were committed (8008129, 2026-12-02 11:41 UTC) before any record existed,
# but most were rewritten after the stand-in records they judge were made, some after FFNOnly
# seeds 42 and 123 had left the floor. The table gives each claim's verdict at the stand-in
# under those first rules (re-implemented, applied to the records they would have read then)
# beside today's, and every change to its rule with the commit's reason and the records that
# existed when it was made.

# %% tags=["hide-input"]
from residual_lib.pages.scorecard import history

changed = history.history_table(table, records, profile)
Markdown(history.summary_sentence(changed, profile))

# %% tags=["hide-input"]
show_table(changed)

# %% [markdown]
# ## Scale

# %% tags=["hide-input"]
Markdown(scorecard.scale_note(results_dir, stand_in=profile) + "\n\n"
         + scorecard.scale_shift(verdicts, profile, seeds=compared, link=False))

# %% [markdown]
# ## Every claim
#
# Each claim with its verdict at every profile; open one for the paper's statement and
# values, what the records show at each profile, and the rule that decided.

# %% tags=["hide-input"]
HTML(scorecard.claims_html(table))

# %% [markdown]
# ## How much the verdicts depend on the thresholds
#
# Every rule compares a number with a threshold. Each threshold below was tried at a lower
# and a higher plausible value, and every verdict recomputed from the same records; a cell
# of the grid marked *fragile* changes at one of them. The last column says when each
# threshold took its present value, against when the stand-in records it judges were made.

# %% tags=["hide-input"]
n_fragile = len(fragile)
several = n_fragile > 1
Markdown(
    "No verdict changes at any of the alternatives."
    if not n_fragile
    else f"{n_fragile} verdict{'s change' if several else ' changes'} at one of the"
    f" alternatives and {'are' if several else 'is'} marked fragile on the grid:"
    " the claim's outcome there rests on where the line is drawn."
)

# %% tags=["hide-input"]
thresholds = scorecard.threshold_table(sensitivity, records, stand_in=profile)
show_table(thresholds, blocks=True)

# %% [markdown]
# ## Verdict counts
#
# How many claims took each verdict at each profile: every column of the scorecard,
# including any the grid leaves out while it has no records.

# %% tags=["hide-input"]
# the grid's order: the stand-in, its twins, then the paper's settings
order = sorted(
    set(table.profile), key=lambda p: (p != profile, p.startswith("paper"), p)
)
per_profile = pd.crosstab(table.verdict, table.profile).reindex(
    index=counts.index, columns=order
)
show_table(per_profile.rename_axis(columns=None), index="verdict")

# %% [markdown]
# ## Verdicts
#
# - **reproduced**: the records show what the claim says.
# - **partly reproduced**: it holds in some seeds and fails in others; the row gives the counts.
# - **agrees with the paper's confirmed result**: for a result the paper itself set aside as an
#   anomaly, ours agrees with the paper's controlled result instead.
# - **not reproduced**: the records contradict the claim.
# - **new evidence for** / **against**: a test the paper could not decide, decided here; evidence
#   for or against the paper's proposal (each rule states which way counts as which), not a
#   reproduction of a result.
# - **not testable here**: the records exist but cannot test the claim (a platform effect, or a
#   quantity the paper does not define).
# - **inconclusive**: the records do not decide the claim: an absolute number of the paper's
#   model, against a smaller stand-in; a comparison whose rule needs an interval between seeds,
#   while each variant has only one; a value that falls between a rule's two lines; or a
#   test whose control is not yet recorded.
# - **not run at this scale**: the runs the claim needs at this profile are not all recorded
#   yet.

# %% [markdown]
# ## Rules

# %% tags=["hide-input"]
Markdown(
    "\n".join(
        f"- **{name.replace('_', ' ')}**: {rule.text}"
        for name, rule in scorecard.RULES.items()
    )
)
