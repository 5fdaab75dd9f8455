"""The paper's claims as the pages name them, each with the rule that judges it."""

from __future__ import annotations

from dataclasses import dataclass

from ...study import paper

_PAPER_ANOMALY = paper.claims().query("claim == 'intermediate_reproduction'").iloc[0]


@dataclass(frozen=True)
class Claim:
    """A claim of the paper as the pages name it, and the rule that judges it."""

    title: str
    rule: str
    #: Shown under the title in the grid: what the paper itself later made of the claim.
    note: str = ""


#: Every claim of ``paper_claims.csv``: its short name (the chapters' and the verdict lists')
#: and its rule in :data:`residual_lib.pages.scorecard.rule.RULES`.
CLAIMS: dict[str, Claim] = {
    "joint_collapse_10m": Claim("Joint collapse of the partial variants (10M)", "joint_collapse",
                                "the paper's initial observation, replaced by its controlled runs"),
    "joint_collapse_124m": Claim("Joint collapse of the partial variants (124M)", "joint_collapse"),
    "layer0_starved_attn_only": Claim("Block-0 gradient starvation: AttnOnly", "layer0_starved",
                                      "measured in the paper's runs in which AttnOnly had collapsed"),
    "layer0_starved_ffn_only": Claim("Block-0 gradient starvation: FFNOnly", "layer0_starved"),
    "layer0_starved_no_residual": Claim("Block-0 gradient starvation: NoResidual", "layer0_starved"),
    "layer0_full": Claim("Full keeps a block-0 gradient", "layer0_full"),
    "hidden_norm_growth": Claim("Hidden-norm growth / drift: AttnOnly > FFNOnly > Full", "hidden_norm_growth"),
    "gain_confound": Claim("Runtime gain is a confound", "gain_confound"),
    "asymmetry_10m": Claim("The asymmetry: AttnOnly recovers, FFNOnly does not", "asymmetry"),
    "ffn_collapse_10m": Claim("FFNOnly collapses in every seed", "ffn_collapse"),
    "ffn_vs_no_residual": Claim("FFNOnly ≈ NoResidual", "ffn_vs_no_residual"),
    "ratio_10m": Claim(f"FFNOnly/AttnOnly ratio {paper.value('ratio_10m', 'ffn_only/attn_only', 'ratio'):.2f}×",
                       "absolute"),
    "seeds_124m": Claim("AttnOnly's seed spread at 124M", "absolute"),
    "alpha_routing": Claim("Routing: AttnOnly learns α_tt ≈ 1", "alpha_routing"),
    "asymmetry_by_scale": Claim(
        "Asymmetry +{:.1f}% (124M) vs +{:.1f}% (10M)".format(
            *(paper.value("asymmetry_by_scale", "ffn_only-attn_only", f"relative_gap_percent_{scale}")
              for scale in ("124m", "10m"))), "undefined"),
    "mixer_test": Claim("The mixer test", "mixer_test"),
    "intermediate_reproduction": Claim(
        f"The intermediate reproduction ({_PAPER_ANOMALY.value:.3f} ± {_PAPER_ANOMALY['std']:.3f})",
        "intermediate_reproduction"),
    "nondeterministic_repeats": Claim("Non-deterministic repeats differ", "nondeterministic_repeats"),
    "original_record": Claim("The originally recorded values", "absolute"),
    "eval_noise_explains": Claim("Fixed batches explain the nanoGPT discrepancy", "eval_noise_explains"),
}
TITLES = {name: claim.title for name, claim in CLAIMS.items()}
