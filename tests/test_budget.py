"""The budget study's pre-registered pieces: its runs, the Kaplan-Meier curve of escape times
and the decision rule, on constructed cases whose answers are known."""

from __future__ import annotations

import pandas as pd
import pytest

from residual_lib.run.profiles import get_profile
from residual_lib.study.budget import ANCHOR_SEEDS, BUDGET_SEEDS, FLAT_AFTER, LINE, budget_runs, decide, kaplan_meier
from residual_lib.training.step import lr_at


def test_the_registered_seeds_line_and_runs():
    assert BUDGET_SEEDS == (1337, 42, 123, 7, 8, 1, 2, 3, 4, 5, 6, 9, 10, 11, 12, 13)
    assert ANCHOR_SEEDS == (1337, 42, 123, 7) and LINE == 0.05
    runs = budget_runs()
    assert len(runs) == 16 + 2 * 4 and len({r.key for r in runs}) == 24
    assert [r.variant for r in runs[:4]] == ["ffn_only", "attn_only", "no_residual", "ffn_only"]
    profile = get_profile("cpu-budget")
    assert profile.training_tokens == 20_000 * 32 * 64 and profile.eval_interval == 250
    # a constant learning rate after warm-up: the first steps do not depend on the budget
    assert lr_at(99, profile) < lr_at(100, profile) == lr_at(5_000, profile) == lr_at(19_999, profile) == 1e-3


def _times(escaped: list[int | None], below_bigram: int = 0) -> pd.DataFrame:
    rows = [{"time": t if t is not None else 20_000, "escaped": t is not None, "below_bigram": i < below_bigram}
            for i, t in enumerate(escaped)]
    return pd.DataFrame(rows)


def test_kaplan_meier_of_a_case_worked_by_hand():
    curve = kaplan_meier(_times([1_000, 2_000, None]))
    assert curve.step.tolist() == [0, 1_000, 2_000, 20_000]  # to the last censored step
    assert curve.on_floor.tolist() == pytest.approx([1.0, 2 / 3, 1 / 3, 1 / 3])


@pytest.mark.parametrize("escaped, below, outcome", [
    ([1_000] * 9 + [None] * 7, 9, "speed"),
    ([1_000] * 9 + [None] * 7, 8, "undecided"),  # most escape, but not all of them below the bigram line
    ([1_000] * 3 + [None] * 13, 0, "structural"),
    ([1_000] * 2 + [FLAT_AFTER + 250] + [None] * 13, 0, "undecided"),  # a late escape: not flat yet
    ([1_000] * 4 + [None] * 12, 0, "undecided"),  # 12 of 16 within the line is under 80%
])
def test_the_decision_rule(escaped, below, outcome):
    assert decide(_times(escaped, below))["outcome"] == outcome
