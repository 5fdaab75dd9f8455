"""Chapter 12, the paper's own 10M setting: its plan is the queue of paper-10m runs, its table sets each
variant beside the paper's value, and its sentences read the records seed by seed."""

from __future__ import annotations

import pandas as pd
import pytest

from residual_lib.core.text import in_words
from residual_lib.pages import scorecard
from residual_lib.pages.chapters import ladder
from residual_lib.pages.chapters import paper_scale as chapter
from residual_lib.pages.scorecard import preregistration
from residual_lib.run.architecture import CENTRAL_VARIANTS
from residual_lib.run.profiles import ladder as ladder_rungs
from residual_lib.storage.records import read_record
from residual_lib.study.frames import load_records
from residual_lib.study.sections import central_sweep, plan


def test_the_plan_is_seed_1337s_four_variants_then_attn_and_ffn_at_two_more_seeds():
    runs = plan("12_paper_scale", "cpu", seeds=[1337, 42, 123, 7, 8])
    assert [(r.profile.name, r.variant, r.seed) for r in runs] == [
        ("paper-10m", "attn_only", 1337), ("paper-10m", "ffn_only", 1337), ("paper-10m", "full", 1337),
        ("paper-10m", "no_residual", 1337), ("paper-10m", "attn_only", 42), ("paper-10m", "ffn_only", 42),
        ("paper-10m", "attn_only", 123), ("paper-10m", "ffn_only", 123)]
    # the key of the run `train --profile paper-10m --variant attn_only --seed 1337` trains, as its checkpoint names it
    assert runs[0].key == "4d08d5616d26ec27"
    assert plan("12_paper_scale", "paper-10m", seeds=[1337]) == runs[:4]
    assert [(r.variant, r.seed) for r in plan("12_paper_scale", "cpu", seeds=[1337, 42], variants=["full"])] == [
        ("full", 1337)]
    assert {r.profile.name for r in plan("12_paper_scale", "smoke", seeds=[1337, 42])} == {"smoke-paper"}
    assert plan("12_paper_scale", "ladder-3m") == []


def test_the_papers_values_come_from_the_claims_file_and_fulls_is_marked_as_inferred():
    values = chapter.paper_values()
    assert values.loc["attn_only", "text"] == "1.580 ± 0.003 (8 seeds)"
    assert values.loc["ffn_only", "value"] == pytest.approx(3.350)
    assert values.loc["no_residual", "text"] == "3.356"
    assert values.loc["full", "value"] == pytest.approx(3.35 / 2.27)
    assert values.loc["full", "text"] == "≈ 1.48 (3.35 ÷ 2.27)"
    note = chapter.comparison_note("cpu")
    assert "from 1.470 to 1.481 given the rounding of its inputs" in note and "gives 1.4697" in note
    assert "Full's value here is that quotient" in note  # a Full row to point at, or one to come
    assert "Full's row, once its run is recorded, takes that quotient" in chapter.comparison_note("cpu", False)
    recipe = chapter.recipe("paper-10m")
    assert recipe.startswith("`paper-10m`: 6 layers, 6 heads, width 384, context 256, batch 64, dropout 0.2, 5,000 steps")
    assert ("One difference: its linear and LayerNorm layers carry biases, as GPT-2's do and as every profile of this "
            "book's does, where nanoGPT's default has none; the summary does not say which the paper's models had."
            ) in recipe
    # how a CPU computes the same recipe is said, from the profile's fields
    assert recipe.endswith(" On a CPU it runs each batch of 64 as four slices of 16 whose gradients are averaged and "
                           "draws its dropout masks from 32-bit integers: the same batch and dropout rate, computed in "
                           "another order and from another random stream than nanoGPT's.")
    from dataclasses import replace  # one of the two: only its own clause
    from residual_lib.pages.chapters.paper_scale_setting import _cpu_note
    from residual_lib.run.profiles import get_profile
    whole = replace(get_profile("paper-10m"), cpu_micro_batch=None)
    assert _cpu_note(whole) == (" On a CPU it draws its dropout masks from 32-bit integers: the same dropout rate, "
                                "computed from another random stream than nanoGPT's.")


def _frame(seeds=(1337,), **finals) -> pd.DataFrame:
    rows = [{"variant": v, "seed": s, "final_val_loss": x} for v, xs in finals.items()
            for s, x in zip(seeds, xs if isinstance(xs, (list, tuple)) else [xs])]
    frame = pd.DataFrame(rows, columns=["variant", "seed", "final_val_loss"])
    return frame.assign(profile="paper-10m", best_val_loss=frame.final_val_loss - 0.02, eval_floor=3.335,
                        device="cpu", device_name="x86_64", precision="bf16", status="ok", eval_mode="fixed",
                        gain=1.0, deterministic=True, replicate=0, init_noise=0.0, best_step=1750)


def test_the_finding_reads_collapse_recovery_and_fulls_best_from_the_records():
    text = chapter.finding(_frame(full=1.52, attn_only=1.61, ffn_only=3.333, no_residual=3.34), [])
    assert text.startswith("At the paper's own setting (`paper-10m`: 81.9M training tokens, trained here on CPU in "
                           "bf16), the runs end with Full at 1.520, AttnOnly at 1.610, FFNOnly at 3.333 and NoResidual "
                           "at 3.340, against a floor of 3.335.")
    # one sentence a variant, in the order of the opening's list
    assert text.split("3.335. ")[1] == (
        "Full's best loss is 1.5000, 0.030 above the best of 1.4697 that nanoGPT publishes for its `shakespeare_char` "
        "run, the recipe this setting follows; its validation loss then rises as it overfits, ending 0.020 nats above "
        "its best. "
        "AttnOnly's one seed recovers, ending 0.030 above the paper's 1.580 (1.9% of it, within the 2% the "
        "scorecard counts as agreeing, but 10 times the 0.003 standard deviation of the paper's 8 seeds; its "
        "conclusion gives 1.600 ± 0.015 instead, from which this lies 0.7 standard deviations). "
        "FFNOnly stays at the floor, as in the paper's collapse, ending 0.017 below the paper's 3.350 ± 0.002 (8 seeds). "
        "NoResidual ends at the floor, 0.016 below the paper's 3.356.")
    near = chapter.finding(_frame(attn_only=1.584), [])  # within two of the paper's standard deviations: not said
    assert "(0.3% of it, within the 2% the scorecard counts as agreeing)." in near
    far = chapter.finding(_frame(attn_only=1.522), [])  # 3.7% off: said to lie outside the agreement band
    assert "3.335. It recovers, ending 0.058 below the paper's 1.580 (3.7% of it, outside the 2%" in far  # one run: named once
    level = chapter.finding(_frame(attn_only=1.5802, ffn_only=3.3503), [])  # equal at three decimals
    assert "ending level with the paper's 1.580." in level  # no share of it
    assert "as in the paper's collapse, ending level with the paper's 3.350 ± 0.002 (8 seeds)." in level
    assert "ending 0.001 above the paper's 1.580" in chapter.finding(_frame(attn_only=1.5805), [])  # prints 1.581
    # nanoGPT's 1.4697 is compared as printed, with four decimals: 1.4663 is 0.0034 below it, not 1.470 - 1.466
    full = chapter.finding(_frame(full=1.7251).assign(best_val_loss=1.4663), [])
    assert ("Full's best loss is 1.4663, 0.003 below the best of 1.4697" in full
            and "; its validation loss then rises as it overfits, ending 0.259 nats above its best." in full)
    assert "overfits" not in chapter.finding(_frame(full=1.475).assign(best_val_loss=1.4697), [])
    assert "1.4697, level with the best of 1.4697" in chapter.finding(_frame(full=1.475).assign(best_val_loss=1.4697), [])
    empty = chapter.finding(_frame().head(0), plan("12_paper_scale", "cpu"))
    assert empty == ("No `paper-10m` run is recorded yet: the 8 runs of the paper's own setting this chapter plans "
                     "are still to come.")
    assert chapter.finding(_frame().head(0), [], None).startswith("No profile runs the paper's setting")


def test_one_run_is_named_and_the_runs_still_to_come_are_said_by_seed():
    planned = plan("12_paper_scale", "cpu")
    text = chapter.finding(_frame(attn_only=1.522), planned[1:])
    assert "bf16), the one run recorded so far, AttnOnly seed 1337, ends at 1.522, against a floor of 3.335." in text
    assert text.endswith("Still to come: FFNOnly, Full and NoResidual at seed 1337, then AttnOnly and FFNOnly at "
                         "seeds 42 and 123. Chapter 12 does not queue Full and NoResidual at seeds 42 and 123 "
                         "(chapter 6 plans them). Until they are recorded there, those seeds count for the claims "
                         "that read every seed of one variant, such as whether FFNOnly collapses in every seed and "
                         "whether block 0 is starved, and for no comparison between variants: the scorecard compares "
                         "variants only over the seeds at which every variant has a run.")
    # once every variant is planned (or recorded) at a seed, nothing is said
    assert chapter.outside_sweep(_frame(attn_only=1.522), planned[1:4]) == ""
    assert chapter.still_to_come(planned[-1:]) == "FFNOnly at seed 123"
    assert chapter.still_to_come([planned[i] for i in (1, 4, 6)]) == \
        "FFNOnly at seed 1337, then AttnOnly at seeds 42 and 123"


def test_seeds_without_every_variant_join_no_comparison_and_are_said_on_their_own():
    frame = pd.concat([_frame(full=1.7251, attn_only=1.5217, ffn_only=3.3488, no_residual=3.3479),
                       _frame((42,), attn_only=1.60, ffn_only=3.34)], ignore_index=True)
    text = chapter.finding(frame, [])
    assert ("bf16), the runs of the central sweep (seed 1337, at which every variant has a run) end with Full at 1.725, "
            "AttnOnly at 1.522, FFNOnly at 3.349 and NoResidual at 3.348, against a floor of 3.335; at seed 42, which "
            "lacks Full and NoResidual, AttnOnly ends at 1.600 and FFNOnly at 3.340. ") in text
    assert "mean of" not in text  # AttnOnly's two seeds are not averaged against Full's one
    # recovery and collapse are claims about every seed; AttnOnly's distance from the paper is read as the scorecard does
    assert ("AttnOnly recovers in every seed (1337 and 42); over the central sweep (seed 1337) it ends 0.058 below the "
            "paper's 1.580 (3.7% of it,") in text
    assert ("FFNOnly stays at the floor in every seed (1337 and 42), as in the paper's collapse; over the central sweep "
            "(seed 1337) it ends 0.001 below the paper's 3.350") in text  # 3.349, as the opening and the table have it
    assert "NoResidual ends at the floor, 0.008 below the paper's 3.356." in text and "Full's best loss is 1.7051" in text
    assert ("Chapter 12 does not queue Full and NoResidual at seed 42 (chapter 6 plans them). Until they are recorded "
            "there, that seed counts for the claims that read every seed of one variant, such as whether FFNOnly "
            "collapses in every seed and whether block 0 is starved, and for no comparison") in text  # nothing to come
    alone = frame[frame.seed == 1337]
    later = frame.assign(best_val_loss=frame.best_val_loss.where(frame.seed == 1337, frame.final_val_loss - 0.3))
    assert chapter.overfit_text(later) == chapter.overfit_text(alone)  # over the same seeds as the table above it
    assert chapter.comparison(frame, _frame().head(0), "cpu").equals(chapter.comparison(alone, _frame().head(0), "cpu"))
    # a run outside the sweep that escapes the floor is said, and the collapse no longer holds in every seed
    more = pd.concat([frame, _frame((123,), attn_only=1.61, ffn_only=2.5)], ignore_index=True)
    text = chapter.finding(more, [])
    assert ("FFNOnly at 3.340; at seed 123, which lacks Full and NoResidual, AttnOnly ends at 1.610 and FFNOnly at "
            "2.500. ") in text
    assert "FFNOnly stays at the floor in 2 of 3 seeds; seed 123 ends 0.835 below the floor, so the paper's collapse" in text
    assert ("Chapter 12 does not queue Full and NoResidual at seeds 42 and 123 (chapter 6 plans them). Until they are "
            "recorded there, those seeds count") in text
    every = {"full", "attn_only", "ffn_only", "no_residual"}
    assert chapter.beyond_sweep(chapter.split(more)[1], every, table=True) == (
        "The table leaves out seeds 42 and 123, outside the central sweep (the seeds at which every variant has a run), "
        "so that every row reads the same seeds, as the scorecard's comparisons do. AttnOnly seed 42 ends at 1.600, "
        "1.735 below the floor (best 1.580), FFNOnly seed 42 at 3.340, at the floor (best 3.320), AttnOnly seed 123 at "
        "1.610, 1.725 below the floor (best 1.590) and FFNOnly seed 123 at 2.500, 0.835 below the floor (best 2.480).")
    assert "(best" not in chapter.beyond_sweep(chapter.split(more.assign(best_val_loss=more.final_val_loss))[1],
                                               table=True)  # a run whose last evaluation is its best
    # each seed with the variants it lacks, in the finding and in what is not queued
    uneven = pd.concat([frame, _frame((42,), full=1.70), _frame((123,), attn_only=1.61, ffn_only=3.34, no_residual=3.36)],
                       ignore_index=True)
    text = chapter.finding(uneven, [])
    assert ("; at seed 42, which lacks NoResidual, Full ends at 1.700, AttnOnly at 1.600 and FFNOnly at 3.340; at seed "
            "123, which lacks Full, AttnOnly ends at 1.610, FFNOnly at 3.340 and NoResidual at 3.360. ") in text
    assert "Chapter 12 does not queue NoResidual at seed 42, nor Full at seed 123 (chapter 6 plans them)." in text
    # Full's and NoResidual's figures against the paper and nanoGPT are the sweep's, and said to be
    assert "Full's best loss over the central sweep (seed 1337) is 1.7051, 0.235 above the best of 1.4697" in text
    assert ("NoResidual ends at the floor in every seed (1337 and 123); over the central sweep (seed 1337) it ends "
            "0.008 below the paper's 3.356.") in text
    # FFNOnly at seed 123 still to come: Full and NoResidual are the ones not queued
    assert "Still to come: FFNOnly at seed 123. Chapter 12 does not queue Full and NoResidual at seeds 42 and 123" in \
        chapter.finding(more[more.index != more.index[-1]],
                        [r for r in plan("12_paper_scale", "cpu") if (r.variant, r.seed) == ("ffn_only", 123)])
    # once every variant has seed 42, it joins the sweep and the means
    whole = pd.concat([frame, _frame((42,), full=1.70, no_residual=3.35)], ignore_index=True)
    text = chapter.finding(whole, [])
    assert "lacks" not in text and "the runs end with Full at 1.713 (mean of 2 seeds), AttnOnly at 1.561" in text
    # no seed shared by the variants leaves no sweep: none is set beside another, each is still said; a diverged run named
    apart = pd.concat([_frame(attn_only=1.52), _frame((42,), ffn_only=3.34)], ignore_index=True)
    text = chapter.finding(apart, [])
    assert ("no seed has a run of every variant recorded yet, so no variant is set beside another. The floor is 3.335; "
            "at seed 1337, which lacks FFNOnly, AttnOnly ends at 1.520; at seed 42, which lacks AttnOnly, FFNOnly ends "
            "at 3.340. AttnOnly's one seed recovers") in text
    assert "FFNOnly stays at the floor, as in the paper's collapse" in text


def test_a_diverged_run_is_named_and_still_counts_as_queued():
    frame = pd.concat([_frame(full=1.7251, attn_only=1.5217, ffn_only=3.3488, no_residual=3.3479),
                       _frame((42,), attn_only=1.60, ffn_only=3.34), _frame((123,), attn_only=1.61)], ignore_index=True)
    frame.attrs["diverged_runs"] = [("ffn_only", 123)]
    text = chapter.finding(frame, [])
    assert ("FFNOnly stays at the floor in every seed (1337 and 42), as in the paper's collapse; over the central sweep "
            "(seed 1337) it ends 0.001 below the paper's 3.350") in text  # the seeds that finished
    assert " FFNOnly seed 123 diverged (a non-finite loss) and is left out of every number here." in text
    assert "Chapter 12 does not queue Full and NoResidual at seeds 42 and 123 (chapter 6 plans them)." in text
    # a variant whose only run diverged is one the other seeds lack, and the sweep is said of the variants that finished
    lost = pd.concat([_frame(attn_only=1.52, ffn_only=3.35, no_residual=3.35), _frame((42,), attn_only=1.6, ffn_only=3.34)],
                     ignore_index=True)
    lost.attrs["diverged_runs"] = [("full", 1337)]
    text = chapter.finding(lost, [])
    assert "(seed 1337, at which every variant that finished a run has one)" in text
    assert "; at seed 42, which lacks Full and NoResidual, AttnOnly ends at 1.600" in text
    one = _frame(full=1.72)
    one.attrs["diverged_runs"] = [("attn_only", 1337)]
    assert "the one run finished so far, Full seed 1337, ends at 1.720" in chapter.finding(one, [])
    none = _frame().head(0)
    none.attrs["diverged_runs"] = [("attn_only", 1337)]
    assert chapter.finding(none, plan("12_paper_scale", "cpu")[1:]) == (
        "No `paper-10m` run has finished yet: the 8 runs of the paper's own setting this chapter plans are still to come "
        "or diverged. AttnOnly seed 1337 diverged (a non-finite loss) and is left out of every number here.")


def test_the_ladder_says_which_seeds_a_column_leaves_out():
    frame = pd.concat([_frame(attn_only=1.52, full=1.7), _frame((42,), attn_only=1.6), _frame((123,), attn_only=1.61)],
                      ignore_index=True)
    assert ladder._left_out(frame, {"paper-10m": central_sweep(frame)}) == (
        " The `paper-10m` column reads its central sweep (seed 1337), the seeds at which every variant has a run, and "
        "leaves out seeds 42 and 123, at which not every variant has one.")  # in the order the plans queue them
    apart = pd.concat([_frame(attn_only=1.52), _frame((42,), ffn_only=3.34)], ignore_index=True)
    assert ladder._left_out(apart, {"paper-10m": central_sweep(apart)}) == (
        " The `paper-10m` column is empty: no seed has a run of every variant there yet (its runs are at seeds 1337 "
        "and 42).")
    assert ladder._left_out(frame[frame.seed == 1337], {"paper-10m": frame[frame.seed == 1337]}) == ""
    # Full at two seeds and no sweep: its best is said to be a mean
    two = pd.concat([_frame(full=1.72), _frame((42,), full=1.70), _frame((42,), attn_only=1.5).assign(seed=7)],
                    ignore_index=True)
    assert "Full's best loss (mean of its 2 seeds) is 1.6900" in chapter.finding(two, [])


def test_a_collapse_or_a_recovery_that_holds_in_some_seeds_only_is_named_seed_by_seed():
    seeds = (1337, 42, 123)
    mixed = chapter.finding(_frame(seeds, ffn_only=[3.330, 3.331, 2.5], attn_only=[1.60, 1.61, 3.30]), [])
    assert ("FFNOnly stays at the floor in 2 of 3 seeds; seed 123 ends 0.835 below the floor, so the paper's "
            "collapse at 3.350 ± 0.002 (8 seeds) does not hold here") in mixed
    assert "AttnOnly recovers in 2 of 3 seeds (seed 123 does not come 0.5 nats below the floor)" in mixed
    above = chapter.finding(_frame(ffn_only=3.40), [])
    assert above.endswith("FFNOnly does not learn: seed 1337 ends 0.065 above the floor, worse than the paper's "
                          "collapse at 3.350.")  # above the floor is no escape from it
    loose = chapter.finding(_frame(seeds, no_residual=[3.34, 3.20, 3.33]), [])
    assert ("NoResidual ends at the floor in 2 of 3 seeds; seed 42 ends 0.135 below the floor, where the paper's "
            "NoResidual ends at 3.356.") in loose
    above = chapter.finding(_frame(no_residual=3.43), [])
    assert above.endswith("NoResidual does not end at the floor: seed 1337 ends 0.095 above the floor, where the "
                          "paper's NoResidual ends at 3.356.")
    held = chapter.finding(_frame(seeds, no_residual=[3.34, 3.33, 3.335]), [])
    assert "NoResidual ends at the floor in every seed (1337, 42 and 123), 0.021 below the paper's 3.356." in held
    between = chapter.finding(_frame(attn_only=3.20), [])  # below the floor, short of the recovery margin
    assert "AttnOnly does not recover: it ends 0.135 below the floor, not the 0.5 nats below it" in between
    assert [chapter.status(x, 3.335) for x in (3.30, 3.40, 3.0, 2.8)] == ["floor", "above", "between", "recovered"]


def test_how_a_run_was_trained_is_read_from_its_provenance():
    cpu = _frame(full=1.5)
    assert scorecard.how_trained(cpu) == "on CPU in bf16"
    assert scorecard.how_trained(pd.concat([cpu, cpu.assign(device_name="other host")])) == "on CPU in bf16"
    gpu = cpu.assign(device="cuda", device_name="NVIDIA H200")
    assert scorecard.how_trained(gpu) == "on a GPU (NVIDIA H200) in bf16"
    assert scorecard.how_trained(pd.concat([cpu, gpu])) == "on CPU in bf16 and on a GPU (NVIDIA H200) in bf16"
    assert scorecard.how_trained(cpu.assign(precision=float("nan"))) == "on CPU"
    sentence = scorecard.profiles_sentence("cpu", cpu.assign(on_recipe=True))
    assert sentence.endswith("The `paper-10m` run shown was trained here on CPU in bf16.")  # one run, said as one
    two = scorecard.profiles_sentence("cpu", pd.concat([cpu, cpu.assign(seed=42)]).assign(on_recipe=True))
    assert two.endswith("The two `paper-10m` runs shown were trained here on CPU in bf16.")
    assert "trained here on" not in scorecard.profiles_sentence("cpu", cpu.assign(on_recipe=False))


def test_the_chapter_reads_the_smoke_records(smoke_results):
    every = load_records(smoke_results)
    records = every[every.profile == "smoke-paper"]
    stand_in = central_sweep(every[every.profile == "smoke"])
    assert {"mixer", "pointwise"} & set(stand_in.variant)  # the stand-in's sweep holds the mixer controls
    attn = records[records.variant == "attn_only"].sort_values("seed", ascending=False)  # 1337 first, then 42
    assert len(attn) == 2 and set(records[records.variant == "full"].seed) == {1337}
    # seed 42 has AttnOnly and FFNOnly alone: every row reads seed 1337, and seed 42 is said under the table
    table = chapter.comparison(records, stand_in, "smoke").set_index("variant")
    assert list(table.seeds) == [1, 1, 1, 1] and list(table["best at step"].str.contains("seed")) == [False] * 4
    assert table.loc["AttnOnly", "final"] == f"{attn.final_val_loss.iloc[0]:.3f}"
    sweep, rest = chapter.split(records)
    assert set(sweep.seed) == {1337} and sorted(rest.variant) == ["attn_only", "ffn_only"] and set(rest.seed) == {42}
    assert chapter.beyond_sweep(rest, set(sweep.variant), table=True).startswith(
        "The table leaves out seed 42, outside the central sweep (the seeds at which every variant has a run), so that "
        f"every row reads the same seeds, as the scorecard's comparisons do. There AttnOnly ends at "
        f"{attn.final_val_loss.iloc[1]:.3f}")
    both = records[records.variant == "attn_only"]  # one variant alone: every seed is its sweep
    two = chapter.comparison(both, stand_in, "smoke").set_index("variant")
    # no line break inside "mean ± std" in a cell
    assert two.loc["AttnOnly", "final"] == f"{attn.final_val_loss.mean():.3f}\u00a0±\u00a0{attn.final_val_loss.std():.3f}"
    steps = [read_record(p)["best_step"] for p in attn.path]
    assert two.loc["AttnOnly", "best at step"] == f"{steps[0]:,} (seed 1337); {steps[1]:,} (seed 42)"
    assert not any("nanoGPT" in c for c in table.columns)  # a column for one row: said in the note instead
    assert "nanoGPT's README gives 1.4697" in chapter.comparison_note("smoke")
    full = stand_in[stand_in.variant == "full"].final_val_loss
    # every variant's stand-in has two seeds: said once, in the header
    assert table.loc["Full", "stand-in (smoke, 2 seeds)"] == f"{full.mean():.3f}\u00a0±\u00a0{full.std():.3f}"
    assert "≈\u00a0" in table.loc["Full", "the paper"]
    uneven = chapter.comparison(records, stand_in[(stand_in.variant != "full") | (stand_in.seed == stand_in.seed.min())],
                                "smoke").set_index("variant")  # Full's stand-in at one seed, the others at two
    assert uneven.loc["Full", "stand-in (smoke)"].endswith("(1 seed)")
    curves = chapter.mean_curves(records, stand_in)
    assert set(curves.profile) == {"smoke-paper", "smoke"} and set(curves.variant) == set(CENTRAL_VARIANTS)
    # AttnOnly's curve at the paper's setting is seed 1337's alone, the sweep's, not a mean with seed 42's
    own = read_record(attn.path.iloc[0])["curves"]
    drawn = curves[(curves.profile == "smoke-paper") & (curves.variant == "attn_only")]
    assert drawn.loss.tolist() == pytest.approx([x for t, x in zip(own["val"]["step"], own["val"]["loss"]) if t > 0])
    assert curves[curves.profile == "smoke-paper"].tokens.max() == 200 * 16 * 32  # steps × batch × context
    chapter.curves_figure(curves, records.eval_floor.iloc[0])  # every variant it draws has a colour
    alpha = chapter.alpha(records).set_index("variant")
    assert list(alpha.columns) == ["seeds", "mean", "best layer", "largest head"]
    # a layer's mean lies between the mean over every layer and its largest head, seed by seed and so on average
    assert (alpha["best layer"] >= alpha["mean"] - 1e-12).all()
    assert (alpha["largest head"] >= alpha["best layer"] - 1e-12).all()
    assert alpha.loc["AttnOnly", "seeds"] == 1  # the central sweep, as the routing rule reads it
    assert chapter.alpha(both).set_index("variant").loc["AttnOnly", "seeds"] == 2
    layer0 = chapter.layer0(records)
    assert list(layer0.variant) == ["Full", "AttnOnly", "FFNOnly", "NoResidual"]
    assert list(layer0.seeds) == [1, 2, 2, 1]  # every seed of a variant, as the scorecard's block-0 claims read them
    assert list(layer0["from step"]) == [12] * 4 and list(layer0["the paper"]) == ["0.114", "0.000", "0.000", "0.000"]
    assert chapter.layer0_text(layer0).startswith("From step 12 on, block 0's median gradient norm is ")
    shares = layer0.assign(**{"share at 0.000": [0.0, 0.0, 1.0, 0.997]})
    assert ("It rounds to 0.000 in none of AttnOnly's, all of FFNOnly's and over 99% of NoResidual's logged steps, "
            "where the paper reports 0.000 throughout.") in chapter.layer0_text(shares)
    assert ("The summary is not consistent about where the paper measured AttnOnly's 0.000: its sections 4 and 8 "
            "place it in the nanoGPT runs, in which AttnOnly had collapsed ([chapter 4](../notebooks/04_joint_collapse.html)), while its"
            " section 7 sets it beside the sweep in which AttnOnly recovers") in chapter.layer0_text(shares)
    attn = records.variant == "attn_only"
    learned = records.assign(final_val_loss=records.final_val_loss.where(~attn, records.eval_floor - 1.0))
    assert chapter.layer0_text(shares, learned).endswith(
        "Here AttnOnly recovers with its block 0 keeping a gradient at every logged step from step 12 on, so that "
        "premise does not hold at this setting.")
    stuck = records.assign(final_val_loss=records.final_val_loss.where(~attn, records.eval_floor))
    for unsaid in (chapter.layer0_text(shares, stuck), chapter.layer0_text(shares),  # no recovery, or none known
                   chapter.layer0_text(shares.assign(**{"share at 0.000": [0.0, 0.4, 1.0, 1.0]}), learned)):  # starved
        assert unsaid.endswith("despite a starved block 0.")
    assert "collapsed" not in chapter.layer0_text(shares[shares.variant != "AttnOnly"])
    # a Full that ends 0.05 above its best overfits, from the step its record names
    worse = records.assign(final_val_loss=records.final_val_loss.where(records.variant != "full",
                                                                       records.best_val_loss + 0.05))
    best_step = read_record(records[records.variant == "full"].path.iloc[0])["best_step"]
    text = chapter.overfit_text(worse)
    assert text.startswith("Each variant's final loss lies ") and "above its best, by 0.050 nats for Full, " in text
    assert text.endswith(f"Full overfits: its validation loss is lowest at step {best_step:,} and rises after it.")
    alone = worse[worse.variant == "full"]  # one variant: said of it
    assert chapter.overfit_text(alone).startswith("Full's final loss lies 0.050 nats above its best. Full overfits: ")
    two = records[records.variant == "attn_only"].assign(final_val_loss=lambda f: f.best_val_loss + 0.05)
    assert chapter.overfit_text(two).endswith(f"lowest at step {steps[0]:,} in seed 1337 and {steps[1]:,} in seed 42"
                                              " and rises after each.")  # each seed's own best step
    one = two.assign(final_val_loss=two.final_val_loss.where(two.seed == 1337, two.best_val_loss))
    assert chapter.overfit_text(one).endswith(f"lowest at step {steps[0]:,} in seed 1337 and rises after it.")


def test_the_block_0_and_alpha_sentences_read_their_tables():
    note = chapter.layer0_note()
    assert note.startswith("The paper reports block 0's gradient norm at exactly 0.000 from step 300 on")
    assert note.endswith("Each row reads every seed of its variant, as the scorecard's block-0 claims (each about one "
                         "variant) do, so a row may count seeds that the comparisons between variants leave out.")
    assert ("about 0.114 for Full. Step 300 is 6% of the 5,000 steps of `paper-10m`, which takes nanoGPT's schedule "
            "(the summary gives none), so the table reads each run from 6% of its steps on") in note
    table = pd.DataFrame({"variant": ["Full", "AttnOnly"], "seeds": [1, 1], "mean": [0.1, 0.42],
                          "best layer": [0.15, 0.91], "largest head": [0.2, 0.97]})
    text = chapter.alpha_text(table, 0.02)
    assert text.startswith("AttnOnly's α_tt averages 0.420 over its layers and heads; its most self-attending layer "
                           "averages 0.910 and its largest head 0.970, against 0.020 for attention spread evenly")
    assert "the 0.9 the scorecard asks of a layer's mean before it counts α_tt as ≈ 1: a layer reaches" in text
    assert text.endswith("Full, the control, averages 0.100, less than AttnOnly's 0.420; the scorecard counts the "
                         "proposal as supported only where both hold: a layer at the line, and AttnOnly above Full.")
    # a head past the line in a layer that is not: the rule reads layers, and so does the sentence
    assert "no layer reaches" in chapter.alpha_text(table.assign(**{"best layer": [0.15, 0.5]}), 0.02)
    assert "averages 0.500, no less than AttnOnly's 0.420" in chapter.alpha_text(table.assign(mean=[0.5, 0.42]), 0.02)
    assert chapter.alpha_text(table.tail(1), 0.02).endswith("The scorecard's verdict waits for Full, its control.")
    several = chapter.alpha_text(table.assign(seeds=[3, 3]), 0.02)
    assert ("its largest head 0.970 (each seed's own, averaged over the 3 seeds of the central sweep, as the scorecard "
            "reads them),") in several
    assert "averaged over" not in text


def test_one_run_that_does_not_overfit_is_said_as_one_and_the_cost_of_a_run_is_read_from_the_records():
    one = _frame(attn_only=1.522).assign(best_val_loss=1.518)
    assert chapter.overfit_text(one) == ("AttnOnly's final loss lies 0.004 nats above its best. That does not exceed"
                                         " the 0.01 nats beyond which this chapter counts a run as overfitting.")
    pair = _frame(attn_only=1.522, ffn_only=3.34877).assign(best_val_loss=[1.518, 3.34871])
    assert chapter.overfit_text(pair).startswith("Each variant's final loss lies above its best, by 0.004 nats for "
                                                 "AttnOnly and less than 0.001 for FFNOnly. ")  # not "0.000"
    assert chapter.overfit_text(pair.assign(best_val_loss=[1.518, 3.34877])).startswith(
        "Each variant's final loss lies at or above its best, by 0.004 nats for AttnOnly and 0 for FFNOnly. ")
    assert chapter.overfit_text(pair.tail(1).assign(best_val_loss=3.34877)).startswith("FFNOnly's final loss is its best. ")
    assert "FFNOnly" not in chapter.overfit_text(pair.assign(best_val_loss=[1.518, float("nan")]))  # no gap: unsaid
    # of two variants one learned (FFNOnly is at the floor): the sentence names it, not "no variant that learned"
    assert chapter.overfit_text(pair).endswith("AttnOnly, the one variant that learned, does not overfit by more than "
                                               "0.01 nats at this budget.")
    both = _frame(attn_only=1.522, full=1.47).assign(best_val_loss=[1.518, 1.469])
    assert chapter.overfit_text(both).endswith("No variant that learned overfits by more than 0.01 nats at this budget.")
    # Full overfits past AttnOnly: its final loss is the higher, its best the lower, and the page says which sets the order
    crossed = _frame(attn_only=1.522, full=1.609).assign(best_val_loss=[1.518, 1.478], best_step=[4500, 1500])
    assert chapter.overfit_text(crossed).endswith(
        "Full overfits: its validation loss is lowest at step 1,500 and rises after it. So AttnOnly ends below Full, "
        "1.522 against 1.609, although at their best Full is the lower by 0.040 nats: AttnOnly's lower final loss "
        "comes from Full's overfitting, not from AttnOnly learning more.")
    assert "So " not in chapter.overfit_text(crossed.assign(best_val_loss=[1.518, 1.530]))  # best in the same order
    # only a variant that overfits is said to, and only by a difference three decimals show
    slight = _frame(attn_only=1.52, full=1.5204, ffn_only=2.0).assign(
        best_val_loss=[1.518, 1.5124, 1.9], best_step=[4500, 4500, 1000])
    assert "FFNOnly overfits" in chapter.overfit_text(slight) and "So " not in chapter.overfit_text(slight)
    # a variant with a seed at the floor is not set beside the others' means
    floored = _frame((1337, 42), attn_only=[1.52, 3.34], full=[1.609, 1.61]).assign(
        best_val_loss=[1.518, 3.33, 1.478, 1.48], best_step=[4500, 100, 1500, 1500])
    assert "So " not in chapter.overfit_text(floored)
    seeds = _frame((1337, 42), attn_only=[1.52, 1.53], full=[1.60, 1.62]).assign(
        best_val_loss=[1.51, 1.52, 1.47, 1.48], best_step=[4500, 4500, 1500, 1750])
    assert "AttnOnly ends below Full, 1.525 against 1.610 (means over seeds), although" in chapter.overfit_text(seeds)
    stuck = _frame(ffn_only=3.349, no_residual=3.35).assign(best_val_loss=[3.348, 3.349])
    assert chapter.overfit_text(stuck).endswith("Each ends at or above the floor, so none is judged for overfitting.")
    floor = _frame(ffn_only=3.40).assign(best_val_loss=3.33)  # at the floor: not judged, however far above its best
    assert chapter.overfit_text(floor).endswith("It ends at or above the floor, so it is not judged for overfitting.")
    timed = one.assign(wall_seconds=62_657.0, tokens_per_second=1_569.0)
    assert chapter.cost(timed) == ("`paper-10m` trains on a CPU, one core a run (its one run on record ran 17 hours "
                                   "with its evaluations, counting only the time its processes ran, and trained at "
                                   "1,569 tokens/s)")
    assert "ran 1 hour with" in chapter.cost(timed.assign(wall_seconds=3_700.0))
    short = chapter.cost(timed.assign(wall_seconds=600.0), "smoke-paper")
    assert short.startswith("`smoke-paper` trains on a CPU, one core a run (its one run on record ran 10 minutes")
    two = pd.concat([timed, timed.assign(seed=42, wall_seconds=55_457.0)])
    assert "its two runs on record ran, on average, 16 hours with their evaluations, counting only the time their" in chapter.cost(two)
    assert chapter.cost(one.head(0)) == "`paper-10m` trains on a CPU, one core a run"


def test_the_ladder_sets_its_top_rung_beside_the_papers_setting(smoke_results):
    every = load_records(smoke_results)
    table, text = ladder.two_budgets(every, ladder_rungs("smoke"), "smoke")
    assert list(table.columns) == ["variant", "smoke (0.0768M tokens)", "smoke-paper (0.102M tokens)"]
    ffn = every[(every.profile == "smoke-paper") & (every.variant == "ffn_only")]
    assert sorted(ffn.seed) == [42, 1337]  # seed 42, without Full and NoResidual, is outside the sweep: not averaged
    assert table.set_index("variant").loc["FFNOnly", "smoke-paper (0.102M tokens)"] == (
        f"{ffn[ffn.seed == 1337].final_val_loss.iloc[0]:.3f} (1 seed)")
    assert "(1.33 times as many)" in text and "dropout 0 against 0.2 and steps 150 against 200" in text
    assert text.endswith(" The `smoke-paper` column reads its central sweep (seed 1337), the seeds at which every "
                         "variant has a run, and leaves out seed 42, at which not every variant has one.")
    full = [every[(every.profile == p) & (every.variant == "full") & (every.seed.isin([1337, 42]))
                  & (every.eval_mode == "fixed") & (every.gain == 1)].final_val_loss.mean()
            for p in ("smoke", "smoke-paper")]
    assert f"Full ends {abs(full[1] - full[0]):.3f} {'lower' if full[1] < full[0] else 'higher'}" in text
    none, said = ladder.two_budgets(every, ladder_rungs("ladder-3m"), "ladder-3m")  # no paper setting beside it
    assert none.empty and said == ""


def test_the_chapters_registration_sentence_counts_the_amendments_instead_of_listing_them(monkeypatch):
    text = preregistration.statement(pd.DataFrame(), brief=True)
    n, existed = len(preregistration.AMENDMENTS), sum(a.records_existed for a in preregistration.AMENDMENTS)
    assert f"amended {n} times since, {in_words(existed)} of them after a `paper-10m` record existed" in text
    assert preregistration.AMENDMENTS[0].change not in text
    assert preregistration.AMENDMENTS[0].change in preregistration.statement(pd.DataFrame())
    late = preregistration.AMENDMENTS[-1].__class__("0" * 64, "2026-12-06", "a change", "a reason", True)
    monkeypatch.setattr(preregistration, "AMENDMENTS", (*preregistration.AMENDMENTS, late))
    assert f"amended {n + 1} times since, {in_words(existed + 1)} of them after a `paper-10m` record existed" in (
        preregistration.statement(pd.DataFrame(), brief=True))
