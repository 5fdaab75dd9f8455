"""The scorecard table: for every claim of the paper and every profile of its scale, the
paper's values, ours, the seeds, the verdict and the rule applied; and the paragraph that
says what the stand-in rows are."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ...core.paths import results_folder
from ...run.profiles import BOOK_PROFILE, DROPOUT_TWIN, get_profile, ladder
from ...study import paper, scaling
from ...study.frames import diverged, load_records, off_recipe_lines, usable
from ...study.sections import controlled, plan
from . import limits, rules  # noqa: F401 (rules: registers every rule in RULES)
from .claims import CLAIMS
from .rule import PAPER_SCALE, RULES, VERDICTS, ProfileRecords, profiles_for_scale


#: How the scorecard names the paper's quantities (``paper_claims.csv``'s ``quantity``); others
#: read with their underscores as spaces, and ``_seed_N`` and ``_repeat_N`` as "at seed N", "of repeat N".
QUANTITY_NAMES = {
    "final_val_loss": "final validation loss", "best_val_loss_gain_2": "best validation loss at gain 2",
    "ratio_to_full": "ratio to Full", "ratio_to_full_low": "ratio to Full, low end",
    "ratio_to_full_high": "ratio to Full, high end", "layer0_grad_norm_from_step_300": "block-0 gradient norm from step 300",
    "hidden_norm_growth": "hidden-norm growth", "steps_to_equivalence": "steps until the gains are equivalent",
    "final_val_loss_conclusion": "final validation loss in the conclusion",
    "final_val_loss_std_conclusion": "seed std of the final validation loss in the conclusion",
    "alpha_tt": "α_tt", "relative_gap_percent_124m": "relative gap at 124M (%)",
    "relative_gap_percent_10m": "relative gap at 10M (%)",
    "final_val_loss_original_s5": "final validation loss as originally recorded (section 5)",
    "final_val_loss_original_s7": "final validation loss as originally recorded (section 7)",
    "nanogpt_minus_controlled": "nanoGPT runs' loss less the controlled runs'",
}


def _quantity(name: str) -> str:
    if name in QUANTITY_NAMES:
        return QUANTITY_NAMES[name]
    match = re.fullmatch(r"(.+)_(seed|repeat)_(\d+)", name)
    if match:
        base, kind, n = match.groups()
        return f"{_quantity(base)} {'at seed' if kind == 'seed' else 'of repeat'} {n}"
    return name.replace("_", " ")


def _paper_text(rows: pd.DataFrame) -> str:
    """The paper's values of a claim as the scorecard writes them: each quantity named in words, a loss
    to three decimals (the summary's own precision), anything else as the summary gives it."""
    parts = []
    for _, row in rows.iterrows():
        loss = row["quantity"].startswith(("final_val_loss", "best_val_loss")) and "_std" not in row["quantity"]
        form = ".3f" if loss else "g"
        value = f"{row['value']:{form}}" + (f" ± {row['std']:{form}}" if not pd.isna(row["std"]) else "")
        if not pd.isna(row.get("std_kind")) and not pd.isna(row["std"]):
            value += f" ({row['std_kind']} std)"
        variant = {"partial": "the partial variants'"}.get(row["variant"], row["variant"].replace("-", " - "))
        parts.append(f"{variant} {_quantity(row['quantity'])}: {value}")
    return "; ".join(parts)


def _paper_notes(rows: pd.DataFrame) -> str:
    notes = [str(n) for n in rows["note"] if not pd.isna(n)]
    if any(not pd.isna(i) and "seeds" in str(i) for i in rows["inferred"]):
        notes.append("The seed is inferred, not stated in the summary")
    return ". ".join(dict.fromkeys(notes))  # sentences, each begun with a capital; the page ends the last


def scale_note(results_dir: str | Path | None = None, stand_in: str = BOOK_PROFILE) -> str:
    """One paragraph saying what the ``stand_in`` rows are: the size of its model (from its
    records) against the paper's 10M, and which claims wait for paper-scale records."""
    records = load_records(results_folder(results_dir))
    sizes = records[(records.profile == stand_in) & (records.variant == "full")]["n_params"]
    size = f"a {sizes.max() / 1e6:.2g}M-parameter" if len(sizes) else "a small"
    missing = [p for p in PAPER_SCALE if not (records.profile == p).any()]
    waiting = (f"There are no {' or '.join(f'`{p}`' for p in missing)} records yet, so every row at "
               f"{'that profile' if len(missing) == 1 else 'those profiles'} that records could decide reads "
               "`not run at this scale`."
               if missing else "Records exist at both paper profiles.")
    twin = DROPOUT_TWIN.get(stand_in)
    dropout = ""
    if twin:
        variants = sorted(set(controlled(records[records.profile == twin]).variant))
        have = (f"its records so far cover {', '.join(variants)}" if variants else "it has no records yet")
        dropout = (f" The `{twin}` rows train the same model with dropout 0.2 ({have}). `{stand_in}` follows "
                   f"nanoGPT's CPU recipe, which has no dropout; `paper-10m` follows nanoGPT's shakespeare_char "
                   f"recipe, whose dropout is 0.2 (the summary does not state the paper's dropout). `{twin}` "
                   f"differs from `{stand_in}` in dropout alone, so it is the closer analogue of `paper-10m` "
                   f"wherever regularisation can matter (whether it matters for FFNOnly leaving the floor is "
                   f"what chapter 10 tests); claims "
                   f"that need runs other than the central sweep's (the gain, the mixer, random evaluation) are "
                   f"judged at `{stand_in}` only.")
    return (f"**Scale.** The `{stand_in}` rows come from {size} stand-in for the paper's 10M model, "
            f"trained on the same character corpus. They test the paper's qualitative claims (who collapses, "
            f"who recovers, which confound matters); its absolute 10M and 124M numbers are checked only at "
            f"`paper-10m` and `paper-124m`.{dropout} {waiting}" + _ladder_note(records, stand_in)
            + _diverged_note(records) + _off_recipe_note(records))


def _ladder_note(records: pd.DataFrame, stand_in: str) -> str:
    """What the scale ladder (chapter 9) adds above the stand-in: its top recorded rung in words and the trend
    of AttnOnly's cost across its rungs, from the ladder's own runs."""
    keys = {r.key for r in plan("09_scale_ladder", stand_in)}
    mine = usable(records[records.key.isin(keys)]) if len(records) else records
    if not len(mine):
        return ""
    rungs = ladder(stand_in)
    trend = scaling.trend_sentence(scaling.ladder_trend(scaling.ladder_gap_points(mine)), "attn_only - full",
                                   "What removing the feed-forward residual costs (AttnOnly minus Full)")
    top, paper_10m = get_profile(rungs[-1]), get_profile("paper-10m")
    return (" The scale ladder of chapter 9 trains the central variants at the stand-in's token budget on rungs up"
            " to the paper's own width and depth; no verdict here reads it. "
            + scaling.top_rung_text(mine, rungs, limits.FLOOR_TOL)
            + (f" {trend}" if trend else "")
            + f" The top rung has `paper-10m`'s width and depth but not its context ({top.block_size}, not"
            f" {paper_10m.block_size}) or its training ({_tokens(top)} training tokens, not {_tokens(paper_10m)}), so"
            " its losses are not comparable with the paper's 10M values.")


def _tokens(profile) -> str:
    return f"{profile.training_tokens / 1e6:.1f}M"


def _off_recipe_note(records: pd.DataFrame) -> str:
    lines = off_recipe_lines(records)
    if not lines:
        return ""
    return (f" {len(lines)} record{'s are' if len(lines) > 1 else ' is'} not part of {'their' if len(lines) > 1 else 'its'} "
            f"profile (a field was overridden when it was trained) and left out of every verdict: "
            + "; ".join(lines) + ".")


def _diverged_note(records: pd.DataFrame) -> str:
    bad = diverged(records)
    if not len(bad):
        return ""
    runs = "; ".join(f"{r.profile} {r.variant} seed {r.seed}" for r in bad.itertuples())
    return (f" {len(bad)} run{'s' if len(bad) > 1 else ''} diverged (non-finite loss) and "
            f"{'are' if len(bad) > 1 else 'is'} left out of every verdict: {runs}.")


def build(results_dir: str | Path | None = None, stand_in: str = BOOK_PROFILE, records: pd.DataFrame | None = None
          ) -> pd.DataFrame:
    """The scorecard: for every claim of :func:`residual_lib.study.paper.claims` and every profile
    of its scale (``stand_in`` being the small profile that stands in for 10M), the paper's
    values, ours, the seeds, the verdict and the rule applied. Rows come in the order of
    the claims file, then of :func:`profiles_for_scale`. ``records``: the frame of
    :func:`residual_lib.study.frames.load_records`, when the caller has it already."""
    if records is None:
        records = load_records(results_folder(results_dir))
    records = usable(records)  # a diverged run has no losses to judge (scale_note lists it)
    claims = paper.claims()
    rows = []
    for claim, group in claims.groupby("claim", sort=False):
        applied = RULES[CLAIMS[claim].rule]
        for scale in dict.fromkeys(group["scale"]):
            part = group[group.scale == scale]
            for profile in profiles_for_scale(scale, stand_in, applied.central):
                r = ProfileRecords(records, profile)
                result = applied.check(r, part) if len(r.all) or not applied.needs_records else None
                ours, seeds, verdict = result if result else ("—", "—", "not run at this scale")
                rows.append({"claim": claim, "scale": scale, "section": part["section"].iloc[0],
                             "statement": part["statement"].iloc[0], "paper": _paper_text(part),
                             "paper_note": _paper_notes(part), "profile": profile, "ours": ours, "seeds": seeds,
                             "verdict": verdict, "rule": applied.text if result else ""})
    table = pd.DataFrame(rows)
    assert set(table.verdict) <= set(VERDICTS)
    return table
