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
# # 7 · The mechanism: the cross-position routing hypothesis
#
# **The paper's hypothesis.** AttnOnly recovers although its first block is as starved of
# gradient as FFNOnly's, because attention provides cross-position routing: the paper
# proposes that attention can learn α_tt ≈ 1 (the attention weight of a position on
# itself; it reports no measurement of it), a learnable substitute for the missing FFN
# identity path. The FFN, applied position by position, cannot route. Evidence offered: a
# larger hidden-norm growth for AttnOnly than for FFNOnly, and a position-blind MLP mixer
# run that the paper itself calls inconclusive because that environment's AttnOnly baseline
# did not recover. The paper asks for the mixer test to be rerun under clean sweep
# conditions: that is what this page does. The paper's numbers are in the folded block
# below the verdicts, read from `residual_lib/study/paper_claims.csv`.
#
# The `mixer` variant keeps AttnOnly's layout but replaces attention by a causal running
# mean of a per-token MLP: it moves information across positions with fixed weights 1/t,
# so it cannot single out the current token (its α_tt is 1/t by construction). Its control,
# `pointwise`, has the mixer's exact layers without the running mean: no path between
# positions at all, so the best it can reach is the bigram reference: it carries the current
# token straight to the output, as the identity path around attention that FFNOnly lacks would.
# What the control closes of the FFNOnly–AttnOnly gap is what that path buys; what the mixer
# closes beyond it is what mixing adds.

# %% tags=["parameters", "remove-cell"]
profile = "smoke"
seeds = None  # None: the section's default, parameters.defaults(section)
variants = None
device = "auto"
results_dir = None
train_missing = True

# %%
from IPython.display import Markdown

from residual_lib import get_profile
from residual_lib.pages import plots, scorecard
from residual_lib.pages.book import glue
from residual_lib.pages.chapters import mechanism
from residual_lib.pages.notebook import notebook_records
from residual_lib.pages.tables import table
from residual_lib.study import analysis, paper
from residual_lib.study.frames import profile_eval_bigram

records = notebook_records("07_mechanism", globals())
absent = records.attrs["missing"]  # the control's runs not recorded yet, listed below
floor = records["eval_floor"].iloc[0]
bigram = records["eval_bigram"].iloc[0]  # P(next | current) of the training split
attention = records[records.variant.isin(["attn_only", "ffn_only", "full"])]
scorecard.verdict_box(mechanism.CLAIMS, records)

# %%
scorecard.section_view(7)

# %% [markdown]
# ## Attention diagonal mass α_tt: the routing proposal
#
# The attention weight each position puts on itself, per layer and head, averaged over the
# first fixed validation batch (positions t ≥ 1). The paper proposes that attention can
# learn α_tt ≈ 1 (it reports no measurement); AttnOnly is where that would show. Full,
# which keeps both identity paths and needs no such routing, is the control, and attention
# spread evenly over the causal window gives the uniform value. The mixer's and the
# control's α_tt are fixed by construction (1/t, whose mean is the uniform value, and 1),
# so only the variants with attention are listed. AttnOnly, first seed:

# %%
attn = records[records.variant == "attn_only"].sort_values("seed")
seed, matrix = attn.seed.iloc[0], analysis.alpha_matrix(attn.path.iloc[0])
figure = plots.alpha_heatmap(matrix, title=f"AttnOnly, seed {seed}")
plots.show(
    figure, "fig-alpha-heatmap", mechanism.alpha_caption(seed), mechanism.ALPHA_ALT
)

# %%
alpha = mechanism.alpha_table(
    analysis.alpha_summary(attention), attn.block_size.iloc[0]
)
table(alpha, index="variant")

# %% [markdown]
# ## Hidden-norm growth: which definition?
#
# The paper reports AttnOnly's hidden norm growing 14.03× against 5.37× for FFNOnly (and a
# "representation drift" of 14.0× / 5.4× / 1.4× for AttnOnly, FFNOnly and Full in section
# 5, apparently the same numbers rounded), without saying what is divided by what. The
# records hold the residual stream's norm at every block, `h_0` (the embeddings) to `h_L`,
# for the final model and at every logged training step, so every plausible definition can
# be computed: means over the seeds below, with Full, which keeps both identity paths, as
# the control.

# %%
definitions = analysis.growth_definitions(attention)
growth = mechanism.growth_table(definitions)
table(growth, index="definition", decimals=2, anchor="tab-growth")

# %% [markdown]
# Each variant beside the paper's figure for it: the drift definition against the paper's
# drift, every growth definition against its growth (the paper gives Full a drift only).

# %%
agreement = analysis.growth_vs_paper(attention, tolerance=scorecard.DRIFT_REL)
table(agreement, headers=mechanism.AGREEMENT_HEADERS)

# %% tags=["hide-input"]
text = mechanism.drift_finding(agreement, growth, records, definitions)
glue("drift_agreement", text)
Markdown(text)

# %% [markdown]
# ## Gradient starvation tracks collapse
#
# The hypothesis starts from the premise that AttnOnly's first block is as starved as
# FFNOnly's. Block 0's gradient norm, median over the logged steps from {glue:md}`layer0_from`
# of training on (the paper's step 300, read as a share of an assumed
# {glue:md}`paper_10m_steps`-step run), per variant and seed:

# %%
layer0 = analysis.layer0_after(records[records.variant.isin(["attn_only", "ffn_only"])])
glue("layer0_from", Markdown(f"{analysis.LAYER0_FROM:.0%}"))
glue("paper_10m_steps", Markdown(f"{analysis.PAPER_10M_STEPS:,}"))
table(mechanism.layer0_by_seed(layer0), index="seed", caption=mechanism.LAYER0_CAPTION)

# %% tags=["hide-input"]
Markdown(mechanism.starvation_premise(layer0))

# %% [markdown]
# ## The mixer test under clean sweep conditions
#
# AttnOnly, FFNOnly, the mixer and its no-mixing control, the same seeds, fixed batches,
# deterministic mode (Full for reference). If recovery needs attention's ability to route
# the current token, the mixer should sit with FFNOnly near the floor; if any
# cross-position mixing suffices, it should sit with AttnOnly. Besides the unigram floor,
# one more reference: the bigram reference, the cross-entropy on the same evaluation
# targets of the training split's next-character frequencies given the current character
# (`residual_lib.run.data.eval_bigram`). A model that reads only the current character, as the
# control does, can do no better up to the difference between training and validation
# frequencies; a loss below it uses more than one character of context.

# %%
summary = mechanism.loss_summary(records, floor, bigram)
table(summary, index="variant", headers=mechanism.LOSS_HEADERS)

# %%
listing = mechanism.missing_runs(absent, profile)
Markdown(listing) if listing else None

# %%
shown = records[records.variant.isin(["attn_only", "ffn_only", "mixer"])]
references = mechanism.mixer_references(records, bigram)
figure = plots.final_losses(
    shown, floor=floor, title="The position-blind mixer", references=references
)
plots.show(figure, "fig-mixer", mechanism.mixer_caption(records), mechanism.MIXER_ALT)

# %%
headers = {"gap": "gap (nats)", "n_a": "seeds (a)", "n_b": "seeds (b)"}
gaps = analysis.gap_table(records, mechanism.MIXER_GAPS)
table(gaps, index="difference", headers=headers)

# %% tags=["hide-input"]
shares = analysis.mixer_shares(records)
# mixer, pointwise, mixing: quoted in the book's prose
for name in analysis.MIXER_SHARES:
    glue(f"{name}_closed", mechanism.share_text(shares, name))
glue("bigram_reference", f"{bigram:.3f}")
text = mechanism.mixer_finding(
    shares, records, bigram, alpha.loc["attn_only", mechanism.BEST_LAYER],
    from_floor=analysis.mixer_shares(records, baseline=floor),
)
glue("mixer_finding", text)
Markdown(text)

# %% [markdown]
# The paper's own mixer run, read beside the bigram reference: an observation of this
# book, not a statement of the paper. The reference is computed at the paper's 10M
# evaluation setting, its batches drawn as this book draws them.

# %% tags=["hide-input"]
paper_mixer = paper.value("mixer_test", "mixer", "final_val_loss")
reference = profile_eval_bigram("paper-10m")
Markdown(mechanism.paper_mixer_text(paper_mixer, reference, get_profile("paper-10m")))
