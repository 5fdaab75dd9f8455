"""Chapter 12, the paper's own 10M setting: its plan is the queue of paper-10m runs, its table sets each
variant beside the paper's value, and its sentences read the records."""

from __future__ import annotations

import pandas as pd
import pytest

from residual_lib.pages import scorecard
from residual_lib.pages.chapters import ladder
from residual_lib.pages.chapters import paper_scale as chapter
from residual_lib.pages.scorecard import preregistration
from residual_lib.pages.tables import signed
from residual_lib.run.profiles import ladder as ladder_rungs
from residual_lib.run.runs import Run
from residual_lib.study.frames import load_records
from residual_lib.study.sections import central_sweep, plan


def test_the_plan_is_seed_1337s_four_variants_then_attn_and_ffn_at_two_more_seeds():
    runs = plan("12_paper_scale", "cpu", seeds=[1337, 42, 123, 7, 8])
    assert [(r.profile.name, r.variant, r.seed) for r in runs] == [
        ("paper-10m", "attn_only", 1337), ("paper-10m", "ffn_only", 1337), ("paper-10m", "full", 1337),
        ("paper-10m", "no_residual", 1337), ("paper-10m", "attn_only", 42), ("paper-10m", "ffn_only", 42),
        ("paper-10m", "attn_only", 123), ("paper-10m", "ffn_only", 123)]
    # the runs trained by `train --profile paper-10m --variant attn_only --seed 1337` carry the same key
    assert runs[0].key == Run("paper-10m", "attn_only", 1337).key
    assert plan("12_paper_scale", "paper-10m", seeds=[1337]) == runs[:4]
    assert {r.profile.name for r in plan("12_paper_scale", "smoke", seeds=[1337, 42])} == {"smoke-paper"}
    assert plan("12_paper_scale", "ladder-3m") == []


def test_the_papers_values_come_from_the_claims_file_and_fulls_is_marked_as_inferred():
    values = chapter.paper_values()
    assert values.loc["attn_only", "text"] == "1.580 ± 0.003 (8 seeds)"
    assert values.loc["ffn_only", "value"] == pytest.approx(3.350)
    assert values.loc["no_residual", "text"] == "3.356"
    assert values.loc["full", "value"] == pytest.approx(3.35 / 2.27)
    assert values.loc["full", "text"] == "≈ 1.476 (3.35 ÷ 2.27)"


def _frame(**finals) -> pd.DataFrame:
    return pd.DataFrame({"profile": "paper-10m", "variant": list(finals), "final_val_loss": list(finals.values()),
                         "best_val_loss": [v - 0.02 for v in finals.values()], "eval_floor": 3.335, "device": "cpu",
                         "device_name": "x86_64", "precision": "bf16", "seed": 1337})


def test_the_finding_reads_collapse_recovery_and_fulls_best_from_the_records():
    text = chapter.finding(_frame(full=1.52, attn_only=1.61, ffn_only=3.333, no_residual=3.34), [],
                           scorecard.FLOOR_TOL)
    assert text.startswith("At the paper's own setting (`paper-10m`: 81.9M training tokens, trained here on CPU in "
                           "bf16), Full at 1.520, AttnOnly at 1.610, FFNOnly at 3.333 and NoResidual at 3.340")
    assert "FFNOnly stays at the floor (the paper: 3.350)" in text
    assert "AttnOnly recovers, ending +0.030 from the paper's 1.580" in text
    assert "Full's best loss is 1.500, +0.030 from nanoGPT's published 1.4697." in text
    escaped = chapter.finding(_frame(ffn_only=2.9), [Run("paper-10m", "full", 1337)], scorecard.FLOOR_TOL)
    assert "FFNOnly ends 0.435 below the floor" in escaped and escaped.endswith("1 more run of this setting is still to come.")
    stuck = chapter.finding(_frame(attn_only=3.33), [], scorecard.FLOOR_TOL)
    assert "AttnOnly does not recover" in stuck
    empty = chapter.finding(_frame().head(0), plan("12_paper_scale", "cpu"), scorecard.FLOOR_TOL)
    assert empty.startswith("No `paper-10m` run is recorded yet: 8 runs of the paper's own setting are training")


def test_how_a_run_was_trained_is_read_from_its_provenance():
    cpu = _frame(full=1.5)
    assert scorecard.how_trained(cpu) == "on CPU in bf16"
    gpu = cpu.assign(device="cuda", device_name="NVIDIA H200")
    assert scorecard.how_trained(gpu) == "on an NVIDIA H200 in bf16"
    assert scorecard.how_trained(pd.concat([cpu, gpu])) == "on CPU in bf16 and on an NVIDIA H200 in bf16"
    sentence = scorecard.profiles_sentence("cpu", cpu)
    assert sentence.endswith("The `paper-10m` runs shown were trained here on CPU in bf16.")
    assert "trained here on" not in scorecard.profiles_sentence("cpu", cpu.head(0))


def test_the_chapter_reads_the_smoke_records(smoke_results):
    every = load_records(smoke_results)
    records = every[every.profile == "smoke-paper"]
    stand_in = central_sweep(every[every.profile == "smoke"])
    table = chapter.comparison(records, stand_in).set_index("variant")
    attn = records[records.variant == "attn_only"].final_val_loss
    assert table.loc["AttnOnly", "seeds"] == len(attn) == 2
    assert table.loc["AttnOnly", "final"] == f"{attn.mean():.3f} ± {attn.std():.3f}"
    assert table.loc["AttnOnly", "final − the paper"] == signed(attn.mean() - 1.580)
    full = stand_in[stand_in.variant == "full"].final_val_loss
    assert table.loc["Full", "stand-in"] == f"{full.mean():.3f} ± {full.std():.3f}"
    curves = chapter.mean_curves(records, stand_in)
    assert set(curves.profile) == {"smoke-paper", "smoke"}
    last = curves[(curves.profile == "smoke-paper") & (curves.variant == "full")].tokens.max()
    assert last == 200 * 16 * 32  # steps × batch × context
    assert set(chapter.layer0(records).variant) == {"Full", "AttnOnly", "FFNOnly", "NoResidual"}


def test_the_ladder_sets_its_top_rung_beside_the_papers_setting(smoke_results):
    every = load_records(smoke_results)
    table, text = ladder.two_budgets(every, ladder_rungs("smoke"), "smoke")
    assert list(table.columns) == ["variant", "smoke (0.0768M tokens)", "smoke-paper (0.102M tokens)"]
    ffn = every[(every.profile == "smoke-paper") & (every.variant == "ffn_only")].final_val_loss
    assert table.set_index("variant").loc["FFNOnly", "smoke-paper (0.102M tokens)"] == (
        f"{ffn.mean():.3f} ± {ffn.std():.3f} (2 seeds)")
    assert "(1.33 times as many)" in text and "dropout 0 against 0.2 and steps 150 against 200" in text
    none, said = ladder.two_budgets(every, ladder_rungs("ladder-3m"), "ladder-3m")  # no paper setting beside it
    assert none.empty and said == ""


def test_the_chapters_registration_sentence_counts_the_amendments_instead_of_listing_them():
    text = preregistration.statement(pd.DataFrame(), brief=True)
    n = len(preregistration.AMENDMENTS)
    assert f"amended {n} times since, each before any `paper-10m` record existed" in text
    assert preregistration.AMENDMENTS[0].change not in text
    assert preregistration.AMENDMENTS[0].change in preregistration.statement(pd.DataFrame())
