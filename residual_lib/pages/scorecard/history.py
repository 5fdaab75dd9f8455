"""How the rules changed: every change to what a verdict rule decides since the first committed
rules (commit 8008129, 2026-12-02 11:41 UTC), with its reason and whether the records it judges
existed then, and each claim's verdict at the stand-in under those first rules beside today's.

Most of the scorecard's rules were rewritten after the stand-in records they judge existed
(the first rules were committed 34 minutes before the first record). A reader should see that,
and see which verdicts it moved. :data:`CHANGES` lists the changes (read from the history:
``git log -p`` of the rule code); :func:`first_verdicts` applies the first rules, re-implemented
from commit 8008129, to the records they would have read then; :data:`RULE_DIGESTS` pins each
rule's code today, and a test fails when a rule's code changes without a new entry here.
"""

from __future__ import annotations

import hashlib
import inspect
import math
from dataclasses import dataclass

import pandas as pd
from scipy import stats

from ...study import analysis
from ...study.sections import controlled, sweep_seeds
from .claims import CLAIMS
from .rule import RULES

#: The commit of the first committed rules, and when.
FIRST_COMMIT, FIRST_DATE = "8008129", "2026-12-02T11:41"


@dataclass(frozen=True)
class Change:
    """One change to what rules decide: the commit and its time, the rules, what changed, why
    (from the commit message) and which of the records they judge existed then."""

    commit: str
    date: str
    rules: tuple[str, ...]
    change: str
    reason: str
    records_then: str


#: Every change to a rule's decision since :data:`FIRST_COMMIT`, oldest first (refactors,
#: moved code and wording that decides nothing are left out).
CHANGES: tuple[Change, ...] = (
    Change("5380c9f", "2026-12-03T04:48", ("joint_collapse", "asymmetry", "ffn_collapse", "layer0_starved"),
           "“at the floor” compared with the floor of the tokens a loss is measured on (3.3350 on the fixed "
           "batches), not of the whole validation split (3.3473)",
           "floors on the evaluation tokens", "every cpu record these rules read, FFNOnly seeds 42 and 123 "
           "(which left the floor) included"),
    Change("5380c9f", "2026-12-03T04:48", ("asymmetry", "ffn_collapse"),
           "one claim on the means (AttnOnly recovers, FFNOnly's mean within 0.05 of the floor) split into the "
           "asymmetry, judged seed by seed, and FFNOnly's collapse, which needs every seed at the floor",
           "the asymmetry and FFNOnly's collapse as separate claims", "all 20 cpu sweep records"),
    Change("5380c9f", "2026-12-03T04:48", ("layer0_starved", "layer0_full"),
           "one claim on the largest block-0 norm of all partial runs split into one per variant, judged on "
           "each seed's median", "block-0 starvation per variant", "all 20 cpu sweep records"),
    Change("5380c9f", "2026-12-03T04:48", ("hidden_norm_growth",),
           "two orderings of the means (drift AttnOnly > FFNOnly > Full; growth AttnOnly > FFNOnly) merged into "
           "one claim under five definitions", "one growth claim with every definition", "all 20 cpu sweep records"),
    Change("5380c9f", "2026-12-03T04:48", ("ffn_vs_no_residual",),
           "FFNOnly and NoResidual compared seed by seed instead of by their means",
           "not named in the commit message", "all 20 cpu sweep records"),
    Change("5380c9f", "2026-12-03T04:48", ("mixer_test",),
           "the mixer no longer reproduced by lying between AttnOnly and FFNOnly: new evidence instead",
           "the mixer as new evidence", "all 5 cpu mixer records"),
    Change("5380c9f", "2026-12-03T04:48", ("intermediate_reproduction",),
           "a small seed spread reads “agrees with the paper's confirmed result”, not “not reproduced”",
           "the paper itself set the anomaly aside", "all 5 cpu AttnOnly seeds"),
    Change("5380c9f", "2026-12-03T04:48", ("nondeterministic_repeats",),
           "bitwise-equal repeats on CPU read “not testable here”, not “not reproduced”",
           "verdicts for platform effects", "all cpu repeats"),
    Change("911fe41", "2026-12-03T05:00", ("gain_confound",),
           "the 200-step timing added: reproduced only if the curves also meet within the paper's ~200 steps, "
           "partly if only the final losses agree",
           "the gain confound partly reproduced", "all 4 cpu gain runs"),
    Change("54b7525", "2026-12-03T16:56", ("asymmetry", "ffn_collapse", "ffn_vs_no_residual", "layer0_starved",
                                           "layer0_full", "hidden_norm_growth", "intermediate_reproduction"),
           "the central claims judged at cpu-dropout as well", "central claims judged at cpu and cpu-dropout",
           "7 of the 20 cpu-dropout sweep records"),
    Change("54b7525", "2026-12-03T16:56", ("hidden_norm_growth",),
           "each variant's mean drift compared with the paper's figure within 10%",
           "drift scored per variant", "all cpu sweep records; 7 of 20 at cpu-dropout"),
    Change("54b7525", "2026-12-03T16:56", ("gain_confound",),
           "the timing read on the validation curves, not one-batch training losses",
           "training losses cross 0.05 nats by chance", "all 4 cpu gain runs"),
    Change("901d062", "2026-12-04T15:14", ("hidden_norm_growth", "eval_noise_explains", "mixer_test"),
           "comparisons between variants average each over the central sweep's seeds only",
           "FFNOnly's escape-rate seeds count only for its own claims", "every cpu and cpu-dropout record"),
    Change("4cc3fa7", "2026-12-05T04:05", ("hidden_norm_growth",),
           "judged on the paper's ordering AttnOnly > FFNOnly > Full, seed by seed, not by closeness to its figures",
           "the paper's claim is an ordering; FFNOnly's noisy mean agreed with 5.4 by chance",
           "every cpu and cpu-dropout sweep record"),
    Change("4cc3fa7", "2026-12-05T04:05", ("alpha_routing", "mixer_test"),
           "new evidence split into for and against, each rule stating which way counts as which",
           "new evidence has a direction", "every cpu record these rules read"),
    Change("6108734", "2026-12-05T07:17", ("gain_confound",),
           "judged at each of three seeds (1337, 42, 123) instead of one, the timing read on runs that evaluate the "
           "first 500 steps every 20 (cpu-gain-early) instead of every 100",
           "the timing rested on one seed, and the paper's ~200 steps are step 80 here, between two evaluations",
           "the 4 cpu gain runs at seed 1337, and its timing runs: a first set, made with other kernels than the "
           "cpu records and set aside, had been looked at, and the set used started at 07:08; the 8 timing runs "
           "and 6 gain runs at seeds 42 and 123 started after the change"),
    Change("5d5fc5f", "2026-12-05T07:36", ("gain_confound",),
           "a timing run read only where it retraces its gain run to within 0.01 nats; a seed judged only when run "
           "at every gain; the timing at the paper's own 200 steps reported beside the verdict",
           "spliced curves were not checked against each other, and a seed part-way through its gains "
           "could be judged", "the 12 timing runs and the 4 gain runs at seed 1337; the gain runs at seeds 42 and "
           "123 were training"),
    Change("fab7f42", "2026-12-05T09:41", ("joint_collapse", "hidden_norm_growth", "asymmetry", "ffn_vs_no_residual",
                                           "absolute", "alpha_routing", "mixer_test", "eval_noise_explains"),
           "the central sweep's seeds counted only where every variant has a run that trained to the end: a seed "
           "at which one variant diverged is left out of every comparison, on every page alike",
           "a diverged run would have let two pages state two means for one claim",
           "every cpu and cpu-dropout record; none diverged, so no verdict moved"),
    Change("a76ab55", "2026-12-05T10:05", ("intermediate_reproduction",),
           "AttnOnly's seed spread read over the central sweep's seeds, the seeds every page quotes its mean over",
           "the scorecard would have quoted AttnOnly's mean over two sets of seeds once a run diverged",
           "every cpu and cpu-dropout record; at both the same five seeds, so no verdict moved"),
    Change("a7cdad5", "2026-12-07T06:47", ("hidden_norm_growth",),
           "judged only once all three variants of its ordering (AttnOnly > FFNOnly > Full) are recorded; before, "
           "a profile without Full was judged on AttnOnly > FFNOnly",
           "the rule's text orders three variants, and a claim about three was judged on two",
           "AttnOnly and FFNOnly at paper-10m seed 1337, whose verdict moves from reproduced to not run at this "
           "scale; every other profile has Full, so nothing else moved"),
)

#: sha256 (16 hex digits) of each rule's check and text as of its last change: a change to what
#: a rule decides adds an entry to :data:`CHANGES`, one of wording only updates the digest alone
#: (for the registered files, :mod:`.preregistration` lists it as an amendment). A rule whose code
#: differs from its digest today has changed without either (``tests/test_history.py``).
RULE_DIGESTS = {
    "joint_collapse": "7371e0eacba7e47a",
    "layer0_starved": "58e00a8a228299db",
    "layer0_full": "2064ef502903bd20",
    "hidden_norm_growth": "351e0d7bf855ecce",
    "gain_confound": "881a7644b439197c",
    "asymmetry": "3fa921a5be4b68e9",
    "ffn_collapse": "d62b8e188357591e",
    "ffn_vs_no_residual": "2f08c0de0b01ce83",
    "absolute": "8f49af0d7b42805b",
    "alpha_routing": "bb3b0291f6bcc743",
    "undefined": "95233eadb01e0498",
    "mixer_test": "0cb4e97773e7d4ee",
    "intermediate_reproduction": "d816e180439d8892",
    "nondeterministic_repeats": "5b7e3bc85da26f46",
    "eval_noise_explains": "b4b880fc1ebc2da8",
}


def rule_digest(name: str) -> str:
    """sha256 (16 hex digits) of rule ``name``'s check and text."""
    rule = RULES[name]
    return hashlib.sha256((inspect.getsource(rule.check) + rule.text).encode()).hexdigest()[:16]


# --- the first rules (8008129), re-implemented -------------------------------------------------
# Thresholds as they were then (none has changed value since).
_FLOOR_TOL, _RECOVERY, _ZERO, _FROM, _GAIN_TOL, _SPREAD, _SEED_SPREAD = 0.05, 0.5, 5e-4, 0.06, 0.05, 0.01, 0.1


def _yes(ok: bool) -> str:
    return "reproduced" if ok else "not reproduced"


def first_verdicts(records: pd.DataFrame, profile: str = "cpu") -> dict[str, str]:
    """Each claim's verdict at ``profile`` under the first rules, applied to the records they
    would have read when they were written: the central sweep's seeds (the nudged runs and
    FFNOnly's escape-rate seeds came later), with the floor of the whole validation split, as
    those rules had it. A claim those rules did not have is absent."""
    own = records[records.profile == profile]
    if own.empty:
        return {}
    central = controlled(own)
    central = central[central.seed.isin(sweep_seeds(central))]
    floor = float(own.unigram_floor.iloc[0])
    means = central.groupby("variant").final_val_loss.mean()
    out: dict[str, str] = {}
    random = own[(own.eval_mode == "random") & (own.gain == 1.0) & own.deterministic.astype(bool)]
    if {"full", "attn_only", "ffn_only", "no_residual"} <= set(random.variant):
        first = random[random.seed == random.seed.min()].groupby("variant").final_val_loss.mean()
        out["joint_collapse_10m"] = _yes(all(abs(first[v] - floor) <= _FLOOR_TOL
                                             for v in ("attn_only", "ffn_only", "no_residual")))
    source = random if {"full", "attn_only", "ffn_only", "no_residual"} <= set(random.variant) else central
    late = analysis.layer0_after(source, _FROM, _ZERO)
    if len(late):
        partial = late[late.variant != "full"]["max"].max()
        full = late[late.variant == "full"]["mean"].mean()
        for claim in ("layer0_starved_attn_only", "layer0_starved_ffn_only", "layer0_starved_no_residual",
                      "layer0_full"):
            out[claim] = _yes(partial < _ZERO and full > _ZERO)
    drift = central.groupby("variant").diag_representation_drift.mean()
    growth = central.groupby("variant").diag_hidden_norm_growth.mean()
    if {"attn_only", "ffn_only", "full"} <= set(drift.index):
        out["hidden_norm_growth"] = _yes(drift.attn_only > drift.ffn_only > drift.full
                                         and growth.attn_only > growth.ffn_only)
    gains = own[(own.variant == "attn_only") & (own.eval_mode == "fixed") & (own.replicate == 0)
                & (own.init_noise == 0)]
    if gains.gain.nunique() >= 2:
        gains = gains[gains.seed == gains.groupby("seed").gain.nunique().idxmax()]
        by_gain = gains.groupby("gain").final_val_loss.mean()
        out["gain_confound"] = _yes(by_gain.max() - by_gain.min() <= _GAIN_TOL)
    if {"attn_only", "ffn_only"} <= set(means.index):
        a = central[central.variant == "attn_only"].final_val_loss
        f = central[central.variant == "ffn_only"].final_val_loss
        ok = (means.attn_only < floor - _RECOVERY and abs(means.ffn_only - floor) <= _FLOOR_TOL
              and len(a) > 1 and len(f) > 1
              and stats.ttest_ind(f, a, equal_var=False).confidence_interval(0.95).low > 0)
        out["asymmetry_10m"] = out["ffn_collapse_10m"] = _yes(ok)
        out["ratio_10m"] = out["original_record"] = "inconclusive"
    if {"ffn_only", "no_residual"} <= set(means.index):
        out["ffn_vs_no_residual"] = _yes(abs(means.ffn_only - means.no_residual) <= _FLOOR_TOL)
    if {"attn_only", "ffn_only", "mixer"} <= set(means.index):
        m = central[central.variant == "mixer"].final_val_loss
        a = central[central.variant == "attn_only"].final_val_loss
        f = central[central.variant == "ffn_only"].final_val_loss
        above = stats.ttest_ind(m, a, equal_var=False).confidence_interval(0.95).low
        below = stats.ttest_ind(f, m, equal_var=False).confidence_interval(0.95).low
        out["mixer_test"] = _yes(above > 0 and below > 0)
    attn = central[central.variant == "attn_only"].final_val_loss
    if len(attn) >= 2:
        out["intermediate_reproduction"] = _yes(attn.std() >= _SEED_SPREAD)
    repeats = own[(own.variant == "attn_only") & (own.eval_mode == "fixed") & (own.gain == 1.0)
                  & (own.init_noise == 0)]
    nondet = repeats[~repeats.deterministic.astype(bool)]
    if len(nondet) >= 2:
        seed = nondet.seed.iloc[0]
        nd = nondet[nondet.seed == seed].final_val_loss
        det = repeats[repeats.deterministic.astype(bool) & (repeats.seed == seed)].final_val_loss
        d_spread = det.max() - det.min() if len(det) >= 2 else math.nan
        out["nondeterministic_repeats"] = _yes(nd.max() - nd.min() > _SPREAD and not d_spread > 0)
    return out


def changes_for(rule: str) -> list[Change]:
    """The changes that touched ``rule``, oldest first."""
    return [c for c in CHANGES if rule in c.rules]


def history_table(table: pd.DataFrame, records: pd.DataFrame, profile: str = "cpu") -> pd.DataFrame:
    """One row per claim checked at ``profile``: its verdict under the first rules and today,
    and the changes to its rule (commit, date, what changed, why, which records existed)."""
    first = first_verdicts(records, profile)
    rows = []
    for claim in dict.fromkeys(table.claim):
        today = table[(table.claim == claim) & (table.profile == profile)]
        if today.empty:
            continue
        rule = CLAIMS[claim].rule
        changes = changes_for(rule)
        rows.append({
            "claim": CLAIMS[claim].title,
            "first rules": first.get(claim, "not in the first rules"),
            "today": today.verdict.iloc[0],
            "changes": "; ".join(f"{c.commit} ({c.date[:10]}): {c.change} — {c.reason}; records then: "
                                 f"{c.records_then}" for c in changes) or "none",
        })
    return pd.DataFrame(rows)


def moved(history: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`history_table` whose verdict differs between the first rules and today."""
    known = history[history["first rules"] != "not in the first rules"]
    return known[known["first rules"] != known["today"]]


def summary_sentence(history: pd.DataFrame, profile: str) -> str:
    """:func:`history_table` in a sentence: how many verdicts the first rules gave at
    ``profile``, how many stand today, and which moved."""
    judged = int((history["first rules"] != "not in the first rules").sum())
    shift = moved(history)
    if not len(shift):
        return f"None of the {judged} claims the first rules judged at `{profile}` changed verdict."
    return (f"Of the {judged} claims the first rules judged at `{profile}`, {judged - len(shift)} have the same "
            f"verdict today and {len(shift)} moved: "
            + "; ".join(f"{r['claim']} ({r['first rules']} → {r['today']})" for _, r in shift.iterrows()) + ".")


__all__ = ["CHANGES", "Change", "FIRST_COMMIT", "RULE_DIGESTS", "changes_for", "first_verdicts", "history_table",
           "moved", "rule_digest", "summary_sentence"]
