"""Chapter 10's findings on hand-built runs: the conditions, the escape-rate table, the seed-or-rounding sentences
and the tables the page shows."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy import stats

from residual_lib.pages.chapters import escape
from residual_lib.run.profiles import get_profile
from residual_lib.run.runs import Run

BASE, NUDGED = "cpu recipe", "initial weights nudged by 1×10⁻⁶"


def runs_frame(rows) -> pd.DataFrame:
    """Rows of :func:`residual_lib.study.escapes.escapes` from ``(profile, seed, gain, init_noise, below_floor)``: a run escapes when it
    ends more than 0.05 nats below the floor, and does so from step 1,200."""
    frame = pd.DataFrame(rows, columns=["profile", "seed", "gain", "init_noise", "below_floor"])
    return frame.assign(key=[f"k{i}" for i in range(len(frame))], final_val_loss=3.3 - frame.below_floor,
                        escaped=frame.below_floor > 0.05,
                        escape_step=[1200 if b > 0.05 else None for b in frame.below_floor])


def labelled(rows, profile: str = "cpu") -> pd.DataFrame:
    return escape.label_conditions(runs_frame(rows), profile)


def test_prose_constants_are_the_codes_constants_as_the_prose_writes_them():
    assert escape.prose_constants([0.5, 2.0, 4.0]) == {
        "escape_line": "0.05", "escape_nudge": "1×10⁻⁶", "escape_nudge_formula": "1 + 1×10⁻⁶·N(0,1)",
        "escape_gains": "0.5, 2, 4", "escape_dropout": "0.2", "escape_long_steps": "6,000", "escape_layer0_from": "6%"}
    assert escape.distances_alt().endswith("vertical lines at 0.02, 0.05 and 0.1 nats and a red one at the input-blind line.")
    smoke = escape.prose_constants([1.0], "smoke")  # the conditions of the profile asked for
    assert smoke["escape_long_steps"] == f"{get_profile('smoke-long').max_iters:,}" != "6,000"


def test_conditions_are_named_and_ordered_gains_by_value():
    runs = labelled([("cpu", 1, 4.0, 0.0, 0), ("cpu", 1, 1.0, 0.0, 0), ("cpu-long", 1, 1.0, 0.0, 0),
                     ("cpu", 1, 10.0, 0.0, 0), ("cpu", 1, 1.0, 1e-6, 0), ("cpu-dropout", 1, 1.0, 0.0, 0),
                     ("cpu", 1, 0.5, 0.0, 0), ("cpu", 2, 4.0, 0.0, 0)])
    assert list(runs.condition) == ["gain 4", BASE, "6,000 steps", "gain 10", NUDGED, "dropout 0.2", "gain 0.5",
                                    "gain 4"]
    # the profiles' conditions are listed before any is recorded, so that a missing one is named
    assert escape.condition_order(runs.head(0), "cpu") == [BASE, NUDGED, "dropout 0.2", "6,000 steps"]
    assert escape.condition_order(runs, "cpu") == [BASE, NUDGED, "dropout 0.2", "6,000 steps", "gain 0.5", "gain 4",
                                                   "gain 10"]
    assert escape.condition_order(runs.head(0), "paper-10m")[2:] == []


def test_the_escape_rate_compares_the_base_profile_with_its_dropout_twin():
    runs = labelled([("cpu", 1, 1.0, 0.0, 0.1), ("cpu", 1, 1.0, 1e-6, 0.1), ("cpu-dropout", 1, 1.0, 0.0, 0),
                     ("cpu-long", 1, 1.0, 0.0, 0.1), ("cpu", 1, 2.0, 0.0, 0.1)])
    rate = escape.rate_runs(runs, "cpu")
    assert list(rate.setting) == ["cpu", "cpu-dropout"] and list(rate.condition) == [BASE, "dropout 0.2"]
    assert escape.rate_settings("cpu") == ["cpu", "cpu-dropout"] and escape.rate_settings("paper-10m") == ["paper-10m"]


def test_rate_table_writes_counts_and_percent_intervals_and_keeps_fishers_p_only_for_two_settings():
    rates = pd.DataFrame({"setting": ["cpu", "cpu-dropout"], "threshold": [0.05, 0.05], "escaped": [2, 0],
                          "runs": [5, 5], "rate": [0.4, 0.0], "low": [0.0527, 0.0], "high": [0.853, 0.522],
                          "fisher_p": [0.444, 0.444]})
    table = escape.rate_table(rates)
    assert list(table.columns) == ["setting", "threshold", "escapes", "rate", "interval", "fisher_p"]
    assert list(table.escapes) == ["2 of 5", "0 of 5"] and list(table.interval) == ["5% to 85%", "0% to 52%"]
    assert list(table.rate) == ["40%", "0%"] and list(table.threshold) == ["0.05", "0.05"]
    one = escape.rate_table(rates.head(1).drop(columns="fisher_p"))
    assert list(one.columns) == ["setting", "threshold", "escapes", "rate", "interval"]
    assert escape.rate_table(pd.DataFrame()).empty
    named = escape.rate_table(rates.assign(threshold=[0.0101930439, 0.05]), names={0.0101930439: "input-blind"})
    assert list(named.threshold) == ["0.0102 (input-blind)", "0.05"]


def test_condition_counts_follow_the_order_and_list_the_escaping_seeds_sorted():
    runs = labelled([("cpu", 42, 1.0, 0.0, 0.1), ("cpu", 7, 1.0, 0.0, 0.2), ("cpu", 8, 1.0, 0.0, 0.0),
                     ("cpu-dropout", 7, 1.0, 0.0, 0.0)])
    counts = escape.condition_counts(runs, ["dropout 0.2", BASE, "6,000 steps"])
    assert counts.to_dict("list") == {"condition": ["dropout 0.2", BASE], "runs": [1, 3], "escaped": [0, 2],
                                      "seeds_escaping": ["", "7, 42"]}


def test_label_curves_gives_every_logged_step_its_runs_condition_and_outcome():
    runs = labelled([("cpu", 1, 1.0, 0.0, 0.1), ("cpu-dropout", 1, 1.0, 0.0, 0.0)])
    curve = pd.DataFrame({"key": ["k0", "k0", "k1"], "step": [0, 100, 0], "loss": [4.0, 3.2, 4.0]})
    labelled_curve = escape.label_curves(curve, runs)
    assert list(labelled_curve.condition) == [BASE, BASE, "dropout 0.2"]
    assert list(labelled_curve.escaped) == [True, True, False]


def test_perturbation_sentences_need_both_runs_of_a_seed():
    assert escape.perturbation_sentences(labelled([("cpu", 1, 1.0, 0.0, 0.1)]), "cpu") == []
    assert escape.perturbation_sentences(labelled([]), "cpu") == []


def test_a_flipped_seed_makes_the_outcome_a_probability_with_its_clopper_pearson_interval():
    runs = labelled([("cpu", 42, 1.0, 0.0, 0.2), ("cpu", 42, 1.0, 1e-6, 0.0), ("cpu", 7, 1.0, 0.0, 0.0),
                     ("cpu", 7, 1.0, 1e-6, 0.0), ("cpu", 123, 1.0, 0.0, 0.0), ("cpu", 123, 1.0, 1e-6, 0.3),
                     ("cpu", 9, 1.0, 0.0, 0.0)])  # seed 9 has no nudged run: not counted
    said = escape.perturbation_sentences(runs, "cpu")
    assert said[0] == ("Of 3 seeds, 2 change their outcome when their initial weights are nudged by one part in a"
                       " million (seeds 42, 123).")
    ci = stats.binomtest(2, 6).proportion_ci(0.95, method="exact")
    assert f"FFNOnly escapes in 2 of 6 runs at cpu (33%; 95% Clopper-Pearson interval {ci.low:.0%} to {ci.high:.0%})." \
        in said[1]
    assert len(said) == 2  # no run ends between the lines


def test_stable_seeds_and_runs_between_the_lines_are_said_so():
    runs = labelled([("cpu", 8, 1.0, 0.0, 0.0), ("cpu", 8, 1.0, 1e-6, 0.03), ("cpu", 42, 1.0, 0.0, 0.2),
                     ("cpu", 42, 1.0, 1e-6, 0.2)])
    said = escape.perturbation_sentences(runs, "cpu")
    assert said[:2] == ["Of 2 seeds, 0 change their outcome when their initial weights are nudged by one part in a"
                        " million.", "Every seed keeps its outcome under the perturbation (2 of 4 runs escape)."]
    assert said[2] == ("1 of these runs ends between the 0.02- and 0.1-nat lines, so whether they count as escapes"
                       " depends on where the line is drawn: seed 8 with nudged weights ends 0.030 nats below the"
                       " floor.")
    runs.loc[runs.seed == 42, "below_floor"] = 0.08
    assert escape.perturbation_sentences(runs, "cpu")[2].startswith("3 of these runs end between")


def test_condition_sentence_counts_runs_in_the_singular_and_the_plural():
    one = labelled([("cpu", 1337, 2.0, 0.0, 0.1)])
    assert escape.condition_sentence("gain 2", one) == "With gain 2, its one run (seed 1337) escapes."
    three = labelled([("cpu-dropout", 42, 1.0, 0.0, 0.1), ("cpu-dropout", 7, 1.0, 0.0, 0.1),
                      ("cpu-dropout", 8, 1.0, 0.0, 0.0)])
    assert escape.condition_sentence("dropout 0.2", three) == "With dropout 0.2, 2 of 3 runs escape (seeds 7 and 42)."
    assert escape.condition_sentence("dropout 0.2", three[three.seed != 42]) == \
        "With dropout 0.2, 1 of 2 runs escapes (seed 7)."
    none = labelled([("cpu-dropout", 8, 1.0, 0.0, 0.0), ("cpu-dropout", 9, 1.0, 0.0, 0.0)])
    assert escape.condition_sentence("dropout 0.2", none) == "With dropout 0.2, none of 2 runs escapes."
    assert escape.condition_sentence("dropout 0.2", three[three.seed == 8]) == \
        "With dropout 0.2, its one run (seed 8) does not escape."


def test_the_finding_names_unrecorded_profiles_but_not_unrecorded_gains():
    runs = labelled([("cpu", 1, 1.0, 0.0, 0.1), ("cpu-dropout", 1, 1.0, 0.0, 0.0), ("cpu", 1, 2.0, 0.0, 0.0)])
    text = escape.finding(runs, "cpu", escape.condition_order(runs, "cpu") + ["gain 4"])
    assert text == ("With dropout 0.2, its one run (seed 1) does not escape. The 6,000 steps condition is not"
                    " recorded yet. With gain 2, its one run (seed 1) does not escape.")
    gains = labelled([("cpu", 1337, g, 0.0, 0.1 if g == 2.0 else 0.0) for g in (0.5, 2.0, 4.0)])
    assert escape.finding(gains, "cpu", escape.condition_order(gains, "cpu")).endswith(
        "Of the runtime gains 0.5, 2 and 4 (seed 1337), gain 2 lets it escape.")
    # beside the runs at gain 1, one escape in three is set against chance
    base = labelled([("cpu", s, 1.0, 0.0, 0.1 if s < 2 else 0.0) for s in range(20)])
    text = escape.finding(pd.concat([base, gains]), "cpu", escape.condition_order(gains, "cpu"))
    assert text.endswith("gain 2 lets it escape. With one run per gain that says little about the gain: at gain 1, 2 of"
                         " 20 runs escape, and at that rate at least 1 of 3 runs escapes by chance with probability 27%"
                         " (4% to 68% over the rate's 95% interval).")
    assert escape.gain_sentence(gains.assign(escaped=False)).endswith("none lets FFNOnly escape.")
    assert escape.gain_sentence(gains.assign(escaped=True)).endswith("every one lets FFNOnly escape.")
    assert escape.finding(labelled([]), "paper-10m", [BASE, NUDGED]) == "No escape-study records at this profile yet."


def test_verification_covers_the_runs_that_escape_as_recorded_only():
    runs = labelled([("cpu", 42, 1.0, 0.0, 0.1), ("cpu", 123, 1.0, 0.0, 0.1), ("cpu", 7, 1.0, 0.0, 0.0),
                     ("cpu", 1337, 2.0, 0.0, 0.1)])
    certificates = pd.DataFrame([{"key": key, "profile": "cpu", "variant": "ffn_only", "seed": seed,
                                  "record_commit": "8e2290fabc", "rerun_commit": "54b7525def", "equal": True,
                                  "final_val_loss": 3.253, "n_fields_compared": 18, "difference_field": None}
                                 for key, seed in (("k0", 42), ("k3", 1337))])
    text = escape.verification_text(runs, certificates, "cpu")
    assert text.startswith("FFNOnly seed 42 (`cpu`, final loss 3.253), recorded at commit 8e2290f and retrained at"
                           " commit 54b7525, was bitwise equal to its record in all 18 fields compared.")
    assert "Not retrained yet: seed 123 " in text and "1337" not in text
    assert escape.verification_text(runs[runs.seed == 7], certificates, "cpu").startswith("No run escapes")


def test_layer0_by_outcome_compares_only_runs_that_log_every_sub_module_shown():
    runs = labelled([("cpu", 1, 1.0, 0.0, 0.1), ("cpu", 2, 1.0, 0.0, 0.0), ("cpu", 3, 1.0, 0.0, 0.0),
                     ("cpu-dropout", 1, 1.0, 0.0, 0.0)])
    nan = math.nan
    layer0 = pd.DataFrame({"median": [1.0, 2.0, 4.0, 8.0], "median_attn": [0.1, 0.2, nan, 0.8],
                           "median_mlp": [0.3, 0.4, nan, 0.6], "median_ln": [nan] * 4})
    table = escape.layer0_by_outcome(layer0, runs)
    assert list(table.columns) == ["condition", "escaped", "median", "median_attn", "median_mlp"]
    assert table.values.tolist() == [[BASE, False, 2.0, 0.2, 0.4], [BASE, True, 1.0, 0.1, 0.3],
                                     ["dropout 0.2", False, 8.0, 0.8, 0.6]]  # seed 3 logs no sub-module
    bare = escape.layer0_by_outcome(layer0.assign(median_attn=nan, median_mlp=nan), runs)
    assert bare[bare.condition == BASE]["median"].tolist() == [3.0, 1.0]  # whole block only: every run counts
    assert escape.layer0_by_outcome(pd.DataFrame(), runs.head(0)).empty


def test_runs_table_sorts_by_condition_then_seed_and_writes_the_escape_step():
    runs = labelled([("cpu-dropout", 1, 1.0, 0.0, 0.0), ("cpu", 42, 1.0, 0.0, 0.1), ("cpu", 7, 1.0, 0.0, 0.0)])
    table = escape.runs_table(runs, [BASE, NUDGED, "dropout 0.2"])
    assert list(table.columns) == ["condition", "seed", "final_val_loss", "below_floor", "escaped", "escape_step"]
    assert list(zip(table.condition, table.seed, table.escape_step)) == [(BASE, 7, "—"), (BASE, 42, "1,200"),
                                                                         ("dropout 0.2", 1, "—")]


def test_missing_runs_lists_one_label_per_row():
    absent = [Run("cpu", "ffn_only", 1), Run("cpu-dropout", "ffn_only", 1)]
    assert escape.missing_runs(absent).to_dict("list") == {"run": ["cpu FFNOnly seed 1",
                                                                   "cpu-dropout FFNOnly seed 1"]}


@pytest.mark.parametrize("profile", ["cpu", "smoke"])
def test_base_conditions_are_the_recorded_and_the_nudged_runs_at_every_profile(profile):
    assert escape.base_conditions(profile) == (f"{profile} recipe", NUDGED)


def _rate_runs(below: dict[str, list[float]], started: dict[str, list[str]]) -> pd.DataFrame:
    return pd.DataFrame([{"setting": s, "seed": i, "below_floor": b, "started": pd.Timestamp(t)}
                         for s in below for i, (b, t) in enumerate(zip(below[s], started[s]))])


def test_the_input_blind_line_counts_escapes_per_setting_with_fishers_test():
    from residual_lib.study import escapes

    runs = _rate_runs({"cpu": [0.2, 0.03, 0.012, 0.0], "cpu-dropout": [0.0, -0.003, 0.009, 0.0]},
                      {s: ["2026-12-03T00:00:00+00:00"] * 4 for s in ("cpu", "cpu-dropout")})
    text = escapes.input_blind_text(runs, 0.0102)
    assert text.startswith("A model that ignores its input can end at most 0.0102 nats below the floor")
    assert "drawn after the runs, from that argument and not from their losses. At it: at `cpu`, 3 of 4; at" in text
    assert "`cpu-dropout`, 0 of 4 (Fisher's exact p = " in text and text.endswith("a test chosen after the data).")


def test_runs_started_after_the_lines_were_fixed_are_counted_apart():
    from residual_lib.study import escapes

    before, after = "2026-12-03T10:00:00+00:00", "2026-12-03T20:00:00+00:00"
    runs = _rate_runs({"cpu": [0.2, 0.08, 0.04, 0.0, 0.012], "cpu-dropout": [0.0, 0.0]},
                      {"cpu": [before, before, after, after, after], "cpu-dropout": [after, after]})
    text = escapes.after_lines_text(runs, ("54b7525", "2026-12-03T16:56:55+00:00"), 0.05)
    assert text.startswith("The lines were fixed in commit 54b7525 (2026-12-03 16:56 UTC).")
    assert ("at `cpu`, 0 of 3 end more than 0.05 nats below the floor; at `cpu-dropout`, 0 of 2 end more than 0.05"
            " nats below the floor.") in text
    early = runs.assign(started=pd.Timestamp(before))
    assert escapes.after_lines_text(early, ("54b7525", "2026-12-03T16:56:55+00:00"), 0.05).startswith(
        "No run shown here started after the lines were fixed")


def test_a_record_started_when_it_says_or_its_wall_time_before_it_finished():
    from residual_lib.study import escapes

    assert escapes.started({"provenance": {"started_at": "2026-12-05T01:00:00+00:00"}}) == \
        pd.Timestamp("2026-12-05T01:00:00+00:00")
    old = {"provenance": {"finished_at": "2026-12-05T01:00:00+00:00"}, "wall_seconds": 600.0}
    assert escapes.started(old) == pd.Timestamp("2026-12-05T00:50:00+00:00")
    assert pd.isna(escapes.started({"provenance": {}}))


def test_each_panel_of_the_escape_curves_counts_the_runs_that_escape():
    import matplotlib

    matplotlib.use("Agg")
    from residual_lib.pages import plots

    rows = [{"condition": condition, "key": key, "escaped": escaped, "step": step, "loss": loss}
            for condition, runs in (("cpu recipe", [(1, True), (2, False), (3, True)]), ("gain 2", [(4, True)]),
                                    ("gain 0.5", [(5, False)]), ("dropout 0.2", [(6, True), (7, False)]))
            for key, escaped in runs
            for step, loss in ((0, 4.0), (100, 3.33), (200, 3.2 if escaped else 3.33))]
    fig = plots.escape_curves(pd.DataFrame(rows), 3.33, 0.05, ["cpu recipe", "gain 0.5", "gain 2", "dropout 0.2"])
    assert [[t.get_text() for t in ax.texts] for ax in fig.axes[:4]] == [
        ["2 of 3 runs escape"], ["the one run stays"], ["the one run escapes"], ["1 of 2 runs escapes"]]
