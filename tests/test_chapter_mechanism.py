"""Chapter 7's findings (residual_lib.pages.chapters.mechanism) on small hand-built frames: every
branch of each sentence, and the tables' shape."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from residual_lib.pages import scorecard
from residual_lib.pages.chapters import mechanism
from residual_lib.run.profiles import get_profile
from residual_lib.run.runs import Run
from residual_lib.study import analysis

NAN = math.nan
FLOOR = 3.3


def finals(**losses) -> pd.DataFrame:
    """Records with one row per seed: variant=[final losses], at the floor FLOOR."""
    rows = [{"variant": v, "seed": s, "final_val_loss": x, "eval_floor": FLOOR}
            for v, xs in losses.items() for s, x in enumerate(xs)]
    return pd.DataFrame(rows)


def test_alpha_table_averages_seeds_in_variant_order_and_adds_uniform_attention():
    summary = pd.DataFrame({"variant": ["attn_only", "attn_only", "full"], "seed": [1, 2, 1],
                            "mean": [0.2, 0.4, 0.5], "max_head": [0.6, 0.8, 0.9], "max_layer": [0.3, 0.5, 0.7]})
    alpha = mechanism.alpha_table(summary, 8)
    assert list(alpha.index) == ["full", "attn_only", "uniform causal attention"]
    assert list(alpha.columns) == ["mean α_tt", mechanism.BEST_LAYER, "best head"]
    assert alpha.loc["attn_only", mechanism.BEST_LAYER] == pytest.approx(0.4)
    assert alpha.loc["attn_only", "best head"] == pytest.approx(0.7)
    assert (alpha.loc["uniform causal attention"] == analysis.uniform_causal_alpha(8)).all()


def test_alpha_caption_names_the_seed_shown():
    assert mechanism.alpha_caption(7).startswith("Attention diagonal mass α_tt of AttnOnly (seed 7), per layer")


def growth_long(attn: list[float], ffn: list[float] | None = None) -> pd.DataFrame:
    """analysis.growth_definitions' frame: one value per definition for each variant (two seeds of full)."""
    definitions = [f"def {i}" for i in reversed(range(len(attn)))]  # not in sorted order
    rows = [{"variant": "attn_only", "seed": 1, "definition": d, "value": x} for d, x in zip(definitions, attn)]
    rows += [{"variant": "ffn_only", "seed": 1, "definition": d, "value": x} for d, x in zip(definitions, ffn or [])]
    rows += [{"variant": "full", "seed": s, "definition": d, "value": s} for d in definitions for s in (1, 3)]
    return pd.DataFrame(rows)


def test_growth_table_marks_the_papers_ordering_per_definition():
    wide = mechanism.growth_table(growth_long([5.0, 1.0], [2.0, 4.0]))
    assert list(wide.columns) == ["attn_only", "ffn_only", "full", mechanism.ORDERING]
    assert list(wide.index) == ["def 1", "def 0"]  # the definitions' own order, not sorted
    assert list(wide[mechanism.ORDERING]) == [True, False]
    assert (wide["full"] == 2.0).all()  # mean over seeds


def test_growth_table_has_no_ordering_without_ffn_only():
    assert list(mechanism.growth_table(growth_long([5.0, 1.0]))) == ["attn_only", "full"]


def agreement(**drifts) -> pd.DataFrame:
    """growth_vs_paper's frame: variant=(ours, paper, agrees) under the drift definition, plus a growth row."""
    rows = [{"variant": v, "definition": analysis.DRIFT_DEFINITION, "ours": ours, "paper": paper, "agrees": ok}
            for v, (ours, paper, ok) in drifts.items()]
    rows.append({"variant": "attn_only", "definition": "|h_L| / |h_1|, end", "ours": 14.1, "paper": 14.03,
                 "agrees": True})  # a growth definition
    return pd.DataFrame(rows)


def ordering(*larger: bool) -> pd.DataFrame:
    return pd.DataFrame({mechanism.ORDERING: list(larger)})


def test_drift_finding_reversed_ordering_and_a_recovered_attn_only():
    drifts = agreement(full=(1.486, 1.4, True), ffn_only=(5.591, 5.4, True), attn_only=(1.175, 14.0, False))
    text = mechanism.drift_finding(drifts, ordering(False, False), finals(attn_only=[1.7, 1.9]))
    assert text.startswith("Under the drift definition, Full (1.486 against 1.4) and FFNOnly (5.591 against 5.4) agree"
                           f" with the paper within {scorecard.DRIFT_REL:.0%}; AttnOnly (1.175 against 14.0) does"
                           " not. ")
    # an agreeing growth definition is named too
    assert ("Under the growth definitions, AttnOnly's `|h_L| / |h_1|, end` (14.100 against 14.03) agrees with the"
            " paper's hidden-norm growth within") in text
    assert "the paper's ordering is reversed" in text
    assert f"it recovered, ending {FLOOR - 1.8:.3f} nats below the floor" in text
    assert text.endswith("That is a possible reason its drift differs from the paper's, not one these records can test.")


def test_drift_finding_gives_each_seed_range_and_says_when_only_the_mean_agrees():
    drifts = agreement(full=(1.486, 1.4, True), ffn_only=(5.591, 5.4, True))
    values = pd.DataFrame([{"variant": v, "seed": s, "definition": analysis.DRIFT_DEFINITION, "value": x}
                           for v, xs in {"full": [1.45, 1.53], "ffn_only": [2.08, 11.45]}.items()
                           for s, x in enumerate(xs)])
    growth = pd.DataFrame([{"variant": "attn_only", "seed": s, "definition": "|h_L| / |h_1|, end", "value": x}
                           for s, x in enumerate([11.0, 17.2])])
    text = mechanism.drift_finding(drifts, ordering(False), finals(attn_only=[1.8]), pd.concat([values, growth]))
    assert "Full (1.486 against 1.4; seeds 1.45 to 1.53) and FFNOnly (5.591 against 5.4; seeds 2.08 to 11.45)" in text
    assert ("AttnOnly's `|h_L| / |h_1|, end` (14.100 against 14.03; seeds 11.00 to 17.20) agrees with the paper's "
            "hidden-norm growth within 10% in its mean only: its seeds spread beyond it. ") in text
    assert "For FFNOnly that is the mean's agreement only: its seeds spread beyond" in text  # Full's stay within


def test_drift_finding_agreement_in_the_papers_order_says_nothing_of_recovery():
    text = mechanism.drift_finding(agreement(attn_only=(14.1, 14.0, True)), ordering(True, True),
                                   finals(attn_only=[1.8]))
    assert "AttnOnly (14.100 against 14.0) agrees with the paper" in text  # one variant: singular
    assert "; no variant does not. " in text
    assert text.endswith("AttnOnly's figure exceeds FFNOnly's under every definition, as in the paper. ")


def test_drift_finding_partial_ordering_and_a_collapsed_attn_only():
    text = mechanism.drift_finding(agreement(attn_only=(3.0, 14.0, False), ffn_only=(9.0, 5.4, False)),
                                   ordering(True, False, True), finals(attn_only=[FLOOR - 0.1]))
    assert "no variant agrees with the paper" in text
    assert "AttnOnly (3.000 against 14.0) and FFNOnly (9.000 against 5.4) do not. " in text  # plural
    assert "under 2 of the 3 definitions: the ordering depends on the definition." in text
    assert "recovered" not in text  # differs, but collapsed: the paper's state


def test_drift_finding_without_both_variants_states_no_ordering():
    text = mechanism.drift_finding(agreement(full=(1.4, 1.4, True)), pd.DataFrame({"full": [1.0]}),
                                   finals(full=[1.7]))
    assert "exceeds" not in text and "recovered" not in text


def test_layer0_by_seed_puts_seeds_in_rows():
    layer0 = pd.DataFrame({"variant": ["attn_only", "ffn_only", "attn_only", "ffn_only"], "seed": [1, 1, 2, 2],
                           "median": [0.7, 1e-7, 0.8, 2e-7]})
    wide = mechanism.layer0_by_seed(layer0)
    assert list(wide.index) == [1, 2] and wide.loc[2, "attn_only"] == 0.8


def medians(attn: float, ffn: float) -> pd.DataFrame:
    return pd.DataFrame({"variant": ["attn_only", "ffn_only"], "seed": [1, 1], "median": [attn, ffn]})


@pytest.mark.parametrize("attn, ffn, verdict", [
    (1e-7, 2e-7, "The premise holds here: both are starved."),
    (0.74, 4.5e-7, "The premise does not hold here: the variant that recovers is not starved."),
    (0.74, 0.9, "The premise does not hold here: the variant that recovers is not starved."),
    (1e-7, 0.9, "Only AttnOnly is starved here."),
])
def test_starvation_premise_each_case(attn, ffn, verdict):
    text = mechanism.starvation_premise(medians(attn, ffn))
    assert text.endswith(" " + verdict)


def test_starvation_premise_quotes_the_medians_as_the_tables_do():
    text = mechanism.starvation_premise(medians(0.74, 4.5e-7))
    assert text.startswith("AttnOnly's block 0 keeps a median gradient of 0.740; FFNOnly's is 4.5×10⁻⁷. ")


def test_loss_summary_measures_from_the_floor_and_the_bigram():
    summary = mechanism.loss_summary(finals(attn_only=[1.8, 2.0], mixer=[2.5]), FLOOR, 2.4)
    assert summary.loc["attn_only", "below the floor"] == pytest.approx(FLOOR - 1.9)
    assert summary.loc["mixer", "above the bigram"] == pytest.approx(0.1)


def test_missing_runs_lists_labels_and_the_command_or_nothing():
    assert mechanism.missing_runs([], "cpu") == ""
    text = mechanism.missing_runs([Run("smoke", "pointwise", 1), Run("smoke", "pointwise", 2)], "smoke")
    assert text == ("Runs not recorded yet, left out (`python -m residual_lib sweep notebooks/07_mechanism.py"
                    " --profile smoke` makes them): smoke pointwise seed 1, smoke pointwise seed 2.")


def test_mixer_references_and_caption_follow_the_control():
    without = finals(attn_only=[1.8], mixer=[2.0])
    lines = mechanism.mixer_references(without, 2.4)
    assert list(lines) == ["no-mixing control (mean of 0 seeds)", "bigram reference"]
    assert math.isnan(lines["no-mixing control (mean of 0 seeds)"]) and lines["bigram reference"] == 2.4
    assert mechanism.mixer_caption(without).endswith("once its runs are recorded, the mean of the no-mixing control.")
    with_control = finals(attn_only=[1.8], mixer=[2.0], pointwise=[2.5, 2.7])
    assert mechanism.mixer_references(with_control, 2.4)["no-mixing control (mean of 2 seeds)"] == 2.6
    assert mechanism.mixer_caption(with_control).endswith("dash-dotted, the mean of the no-mixing control (the mixer's"
                                                          " layers without the average).")


def shares(pointwise: int = 0, mixing_low: float = NAN, mixer: float = 0.83) -> dict:
    """analysis.mixer_shares' dict for a 1.468-nat gap."""
    return {"gap": 1.468, "n_pointwise": pointwise,
            "mixer": mixer, "mixer_low": 0.77, "mixer_high": 0.9,
            "pointwise": 0.5, "pointwise_low": 0.4, "pointwise_high": 0.6,
            "mixing": 0.33, "mixing_low": mixing_low, "mixing_high": 0.4}


def test_share_text_gives_the_interval_when_there_is_one_with_a_true_minus():
    assert mechanism.share_text(shares(), "mixer") == "83% (95% bootstrap interval 77% to 90%)"
    assert mechanism.share_text({"mixing": -0.05, "mixing_low": NAN, "mixing_high": NAN}, "mixing") == "−5%"
    assert mechanism.share_text({"mixing": 0.1, "mixing_low": -0.2, "mixing_high": 0.3}, "mixing") == (
        "10% (95% bootstrap interval −20% to 30%)")


def test_mixer_finding_before_the_control_is_recorded():
    text = mechanism.mixer_finding(shares(), finals(mixer=[2.0, 2.1]), 2.472, 0.28)
    assert ("The position-blind mixer closes 83% (95% bootstrap interval 77% to 90%) of the 1.468-nat gap between"
            " FFNOnly and AttnOnly, ending 0.422 nats below the bigram reference: it uses more than the current"
            " character. ") in text
    assert text.endswith("so this share cannot yet be split into what the mixer's extra layers add and what mixing"
                         " adds.")


def test_mixer_finding_above_the_bigram():
    text = mechanism.mixer_finding(shares(), finals(mixer=[2.6]), 2.5, 0.28)
    assert "ending 0.100 nats above the bigram reference. " in text
    assert "uses more than the current character" not in text


def test_mixer_finding_mixing_closes_part_of_the_gap():
    text = mechanism.mixer_finding(shares(pointwise=5, mixing_low=0.2), finals(mixer=[2.0], pointwise=[2.401, 2.404]),
                                   2.4, 0.28)
    assert "Its no-mixing control closes 50% (95% bootstrap interval 40% to 60%) on its own" in text
    assert "closes 33% (95% bootstrap interval 20% to 40%) of the gap beyond the control, an interval that excludes" \
           " zero" in text
    assert "cannot separate." in text  # the mixer closes less than all of it
    assert text.endswith(" AttnOnly's α_tt, far from 1 (above), points the same way.")


def test_mixer_finding_a_mixer_that_closes_the_whole_gap_and_self_routing_attention():
    text = mechanism.mixer_finding(shares(pointwise=5, mixing_low=0.2, mixer=1.02), finals(mixer=[1.7], pointwise=[2.41]),
                                   2.4, 0.95)
    assert "excludes zero" in text
    assert "cannot separate" not in text and "points the same way" not in text


@pytest.mark.parametrize("mixing_low", [-0.1, NAN])
def test_mixer_finding_mixing_not_shown(mixing_low):
    text = mechanism.mixer_finding(shares(pointwise=5, mixing_low=mixing_low), finals(mixer=[2.0], pointwise=[2.4]),
                                   2.4, 0.28)
    assert text.endswith("; its interval does not exclude zero, so this test does not show that mixing itself closes"
                         " any of the gap.")
    assert "points the same way" not in text  # α_tt only supports a mixing result


def test_a_control_on_the_bigram_line_is_read_as_the_current_token_path():
    on = mechanism.mixer_finding(shares(pointwise=2, mixing_low=0.2), finals(mixer=[2.0], pointwise=[2.401, 2.404]),
                                 2.4, 0.28)
    assert ("on its own and ends on the bigram reference (+0.001 to +0.004 nats per seed), the best a model that sees"
            " only the current character can do. That share is what an identity path carrying the current token") in on
    assert "not anything the extra per-position layers add" in on
    off = mechanism.mixer_finding(shares(pointwise=2, mixing_low=0.2), finals(mixer=[2.0], pointwise=[2.45, 2.47]),
                                  2.4, 0.28)
    assert "on its own, ending +0.060 nats from the bigram reference: that part is not mixing." in off
    assert "identity path carrying the current token" not in off


def test_the_mixer_finding_gives_the_shares_from_the_floor_as_well():
    floor = {**shares(pointwise=2), "gap": 1.525, "mixer": 0.84, "mixer_low": 0.835, "mixer_high": 0.847,
             "pointwise": 0.562, "pointwise_low": 0.558, "pointwise_high": 0.566, "mixing": 0.278,
             "mixing_low": 0.276, "mixing_high": 0.281}
    text = mechanism.mixer_finding(shares(pointwise=2, mixing_low=0.2), finals(mixer=[2.0], pointwise=[2.401]), 2.4,
                                   0.28, from_floor=floor)
    assert text.endswith("Measured from the unigram floor instead of FFNOnly's mean (which FFNOnly's escaped seeds pull"
                         " down), the gap is 1.525 nats, and the mixer closes 84% (95% bootstrap interval 84% to 85%) of"
                         " it, the control 56% (95% bootstrap interval 56% to 57%) and mixing 28% (95% bootstrap"
                         " interval 28% to 28%).")


def test_paper_mixer_text_at_and_away_from_the_bigram_level():
    setting = get_profile("paper-10m")
    at = mechanism.paper_mixer_text(2.487, 2.480, setting)
    assert at.startswith("The paper's mixer ended at 2.487, 0.007 nats above the bigram reference of the 10M setting"
                         f" (2.480: context {setting.block_size}, {setting.eval_iters} batches of"
                         f" {setting.batch_size}). It sits at about the bigram level")
    away = mechanism.paper_mixer_text(2.3, 2.480, setting)
    assert "0.180 nats below the bigram reference" in away and away.endswith("It is not at the bigram level.")


def test_the_growth_sentence_says_whose_agreement_is_the_means_only():
    drifts = agreement(full=(1.486, 1.4, True))
    drifts.loc[len(drifts)] = {"variant": "ffn_only", "definition": "|h_L| / |h_1|, end", "ours": 5.45, "paper": 5.37,
                               "agrees": True}
    spread = [("attn_only", [11.0, 17.2]), ("ffn_only", [1.8, 11.4])]  # both beyond 10% of the paper's figures
    values = pd.DataFrame([{"variant": v, "seed": s, "definition": "|h_L| / |h_1|, end", "value": x}
                           for v, xs in spread for s, x in enumerate(xs)])
    both = mechanism.drift_finding(drifts, ordering(False), finals(attn_only=[1.8]), values)
    assert ("FFNOnly's `|h_L| / |h_1|, end` (5.450 against 5.37; seeds 1.80 to 11.40) agree with the paper's "
            "hidden-norm growth within 10% in their means only: their seeds spread beyond it. ") in both
    tight = values.assign(value=values.value.where(values.variant == "attn_only", 5.4))  # FFNOnly's seeds agree
    one = mechanism.drift_finding(drifts, ordering(False), finals(attn_only=[1.8]), tight)
    assert ("agree with the paper's hidden-norm growth within 10%; AttnOnly's `|h_L| / |h_1|, end` only in its mean, "
            "its seeds spreading beyond it. ") in one
    close = values.assign(value=values.variant.map({"attn_only": 14.1, "ffn_only": 5.4}))  # every seed within 10%
    none = mechanism.drift_finding(drifts, ordering(False), finals(attn_only=[1.8]), close)
    assert "within 10%. " in none and "mean only" not in none and "means only" not in none
