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
# One row per claim of the paper and per profile at which it can be checked. The paper's
# values come from `residual_lib/paper_claims.csv`, labelled as the paper's; *ours* and the
# *verdict* are computed from this repository's run records by the rules listed below the
# table. A claim of the 10M model is checked at `paper-10m` (the paper's setting) and at the
# small stand-in profile; a 124M claim only at `paper-124m`. Where no records exist at a
# profile the verdict says so.

# %% tags=["remove-cell"]
# In Colab: fetch this repository (code and run records) and install it, keeping Colab's torch.
import sys

if "google.colab" in sys.modules:
    import subprocess

    REPOSITORY, CHECKOUT = "https://github.com/residual-lib/partial-residual-ablations", "/content/residual-ablations"
    subprocess.run(["git", "clone", "--quiet", "--depth", "1", REPOSITORY, CHECKOUT], check=False)
    subprocess.run([sys.executable, f"{CHECKOUT}/scripts/colab_install.py"], check=True)
    sys.path.insert(0, CHECKOUT)

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = [1337, 42, 123]  # unused here: the scorecard reads every record
results_dir = None
train_missing = False

# %% tags=["hide-input"]
from pathlib import Path

import pandas as pd
from IPython.display import HTML, Markdown

from residual_lib import scorecard
from residual_lib.book import glue
from residual_lib.sections import default_results_dir

results = Path(results_dir) if results_dir else default_results_dir()
table = scorecard.build(results, stand_in=profile)
counts = table.verdict.value_counts().reindex(scorecard.VERDICTS).dropna().astype(int)
glue("verdict_counts", ", ".join(f"{n} {verdict}" for verdict, n in counts.items()))
checked = table[table.verdict != "not run at this scale"]
glue("verdict_counts_here", ", ".join(f"{n} {verdict}" for verdict, n in
                                      checked.verdict.value_counts().reindex(scorecard.VERDICTS).dropna()
                                      .astype(int).items()))
glue("n_rows", len(table))
glue("n_rows_here", len(checked))
glue("stand_in", profile)
Markdown(scorecard.scale_note(results, stand_in=profile))

# %% [markdown]
# ## The verdicts at a glance
#
# One row per claim, one column per profile: ✓ reproduced (or agrees with the paper's
# confirmed result), ◐ partly reproduced, ✗ not reproduced, ★ new evidence on a question the
# paper left open, ∅ not testable with these records, ? inconclusive at this scale, · not run
# yet; — where the claim is not about that scale. The full rows, with the numbers and rules,
# follow.

# %% tags=["hide-input"]
grid_html = scorecard.grid_html(scorecard.grid(table, stand_in=profile))
glue("verdict_grid", HTML(grid_html), display=False)  # also shown on the introduction
Markdown(f"**{len(checked)} rows checked at `{profile}`:** "
         + ", ".join(f"{n} {verdict}" for verdict, n in checked.verdict.value_counts()
                     .reindex(scorecard.VERDICTS).dropna().astype(int).items()) + ".")

# %% tags=["hide-input"]
HTML(grid_html)

# %% [markdown]
# ## Every row

# %% tags=["hide-input"]
shown = table.assign(claim=table.claim.map(lambda c: scorecard.TITLES.get(c, c)))[
    ["claim", "profile", "verdict", "ours", "paper", "seeds", "section"]].rename(columns={"paper": "paper's value(s)"})
rows_html = shown.to_html(index=False, escape=True, table_id="scorecard-table", classes="scorecard")
import html

for verdict in scorecard.VERDICTS:  # colours from _static/verdicts.css, legible in light and dark mode
    rows_html = rows_html.replace(f"<td>{html.escape(verdict, quote=False)}</td>",
                                  f'<td class="verdict {scorecard.verdict_slug(verdict)}">{verdict}</td>')
HTML(rows_html)

# %% [markdown]
# ## The paper's claims
#
# Each claim as the paper's summary states it, with what the summary leaves unstated or
# contradicts (from `residual_lib/paper_claims.csv`).

# %% tags=["hide-input"]
claims_text = table.drop_duplicates("claim").assign(claim=lambda t: t.claim.map(lambda c: scorecard.TITLES.get(c, c)))
claims_text[["claim", "section", "statement", "paper_note"]].rename(
    columns={"paper_note": "about the paper's values"}).style.hide(axis="index")

# %% [markdown]
# ## Verdict counts

# %% tags=["hide-input"]
counts.rename("rows").to_frame()

# %% [markdown]
# ## Verdicts
#
# - **reproduced**: the records show what the claim says.
# - **partly reproduced**: it holds in some seeds and fails in others; the row gives the counts.
# - **agrees with the paper's confirmed result**: for a result the paper itself set aside as an
#   anomaly, ours agrees with the paper's controlled result instead.
# - **not reproduced**: the records contradict the claim.
# - **new evidence**: a test the paper could not decide, decided here; evidence on the paper's
#   hypothesis, not a reproduction of a result.
# - **not testable here**: the records exist but cannot test the claim (a platform effect, or a
#   quantity the paper does not define).
# - **inconclusive**: an absolute number of the paper's model, against a smaller stand-in.
# - **not run at this scale**: no records at this profile yet.

# %% [markdown]
# ## Rules

# %% tags=["hide-input"]
Markdown("\n".join(f"- **{name}**: {text}" for name, text in scorecard.RULES.items()))
