"""What chapter 10 finds: when FFNOnly leaves the unigram floor it collapses to in the paper (its escape rate with and
without dropout, whether a seed's outcome survives a rounding-sized nudge of its initial weights, and the other
conditions tried) as the tables and sentences ``notebooks/10_ffn_escape.py`` shows."""

from __future__ import annotations

import pandas as pd
from scipy import stats

from ...run.profiles import BOOK_PROFILE, get_profile
from ...study import analysis, escapes
from ...study.sections import DROPOUT_CONDITION as DROPOUT
from ...study.sections import (ESCAPE_INIT_NOISE, ESCAPE_LINES_FIXED, ESCAPE_PROFILES, ESCAPE_THRESHOLDS, LONG_CONDITION,
                               escape_condition)
from ...training import verify
from .. import scorecard
from ..tables import folded, listing, missing_runs, scientific, table  # noqa: F401 (missing_runs: the notebook's)


def prose_constants(escape_gains, profile: str = BOOK_PROFILE) -> dict[str, str]:
    """The constants the chapter's prose quotes, as Markdown to glue, so that the prose cannot drift from the code:
    the escape line, the nudge's size and formula, the gains tried, the dropout and step budget of ``profile``'s
    dropout and long-budget conditions (:data:`ESCAPE_PROFILES`) and where block 0's gradient is read from."""
    conditions = ESCAPE_PROFILES[profile]
    nudge = scientific(ESCAPE_INIT_NOISE, 1)
    return {"escape_line": f"{scorecard.FLOOR_TOL:g}", "escape_nudge": nudge,
            "escape_nudge_formula": f"1 + {nudge}·N(0,1)", "escape_gains": ", ".join(f"{g:g}" for g in escape_gains),
            "escape_dropout": f"{get_profile(conditions[DROPOUT]).dropout:g}",
            "escape_long_steps": f"{get_profile(conditions[LONG_CONDITION]).max_iters:,}",
            "escape_layer0_from": f"{analysis.LAYER0_FROM:.0%}"}


#: The caption of the escape-distance figure.
DISTANCES_CAPTION = ("How far below the floor of its evaluation batches every FFNOnly run ends, one point per seed,"
                     f" without dropout and with {DROPOUT}. The black vertical lines are the three thresholds an escape"
                     " is counted at, the red one the most a model that ignores its input can end below the floor;"
                     " points left of 0 end above the floor.")


def distances_alt() -> str:
    """The alt text of the escape-distance figure, which names the lines an escape is counted at."""
    return ("Strip chart of nats below the floor at the end of training, one row of points per dropout setting, with"
            f" vertical lines at {listing(f'{t:g}' for t in ESCAPE_THRESHOLDS)} nats and a red one at the input-blind"
            " line.")


def base_conditions(profile: str) -> tuple[str, str]:
    """The conditions of the central sweep's runs as recorded and of the same seeds with nudged initial weights: the
    pair that tells a property of the seed from one of rounding."""
    return (escape_condition(profile, profile, 1.0, 0.0), escape_condition(profile, profile, 1.0, ESCAPE_INIT_NOISE))


def label_conditions(runs: pd.DataFrame, profile: str) -> pd.DataFrame:
    """``runs`` (rows of :func:`escapes.escapes`) with the escape-study condition each belongs to as ``condition``."""
    return runs.assign(condition=[escape_condition(profile, p, g, n)
                                  for p, g, n in zip(runs.profile, runs.gain, runs.init_noise)])


def condition_order(runs: pd.DataFrame, profile: str) -> list[str]:
    """The conditions in the order the page shows them: as recorded, nudged, each condition of
    :data:`ESCAPE_PROFILES` (recorded or not, so that a missing one is named), then the gains, smallest first."""
    gains = sorted({(g, c) for g, c in zip(runs.gain, runs.condition) if c.startswith("gain")})
    return [*base_conditions(profile), *ESCAPE_PROFILES.get(profile, {}), *[c for _, c in gains]]


def rate_runs(runs: pd.DataFrame, profile: str) -> pd.DataFrame:
    """The escape rate's runs, the base profile's as recorded and with dropout, with the profile each trains at as
    ``setting`` (the column :func:`escapes.escape_rates` compares)."""
    base, _ = base_conditions(profile)
    return runs[runs.condition.isin([base, DROPOUT])].assign(setting=lambda f: f.profile)


def rate_settings(profile: str) -> list[str]:
    """The escape rate's settings in the order the page shows them: the base profile, then its dropout twin."""
    return [profile, *[p for c, p in ESCAPE_PROFILES.get(profile, {}).items() if c == DROPOUT]]


def rate_table(rates: pd.DataFrame, names: dict[float, str] | None = None) -> pd.DataFrame:
    """The escape rates (:func:`escapes.escape_rates`) as the page shows them: the line as the prose writes it (a
    line of ``names`` to four decimals with its name), the count as ``k of n``, the rate and its interval in
    percent, and Fisher's p when two settings are compared."""
    columns = ["setting", "threshold", "escapes", "rate", "interval"] + (["fisher_p"] if "fisher_p" in rates else [])
    if rates.empty:
        return pd.DataFrame(columns=columns)
    names = names or {}

    def line(t: float) -> str:
        named = [n for v, n in names.items() if abs(v - t) < 1e-12]
        return f"{t:.4f} ({named[0]})" if named else f"{t:g}"

    shown = rates.assign(threshold=[line(t) for t in rates.threshold],
                         escapes=[f"{k} of {n}" for k, n in zip(rates.escaped, rates.runs)],
                         rate=[f"{r:.0%}" for r in rates.rate],
                         interval=[f"{lo:.0%} to {hi:.0%}" for lo, hi in zip(rates.low, rates.high)])
    return shown[columns]


#: The headers of :func:`rate_table`'s line, interval and test columns.
RATE_HEADERS = {"threshold": "line (nats below the floor)", "interval": "95% Clopper-Pearson interval",
                "fisher_p": "Fisher's exact p, dropout vs none"}


def condition_counts(runs: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """Per condition of ``order`` that has runs: how many, how many escape and the seeds that do."""
    rows = []
    for condition in order:
        part = runs[runs.condition == condition]
        if len(part):
            rows.append({"condition": condition, "runs": len(part), "escaped": int(part.escaped.sum()),
                         "seeds_escaping": ", ".join(str(s) for s in sorted(part.seed[part.escaped]))})
    return pd.DataFrame(rows, columns=["condition", "runs", "escaped", "seeds_escaping"])


def label_curves(curve: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Validation curves (:func:`analysis.curves` of ``runs``) with each run's ``condition`` and ``escaped``, the
    panel and the colour of the per-condition figure."""
    return curve.assign(condition=curve["key"].map(dict(zip(runs.key, runs.condition))),
                        escaped=curve["key"].map(dict(zip(runs.key, runs.escaped))))


#: The caption and alt text of the per-condition figure of :func:`label_curves`.
CURVES_CAPTION = ("FFNOnly's validation loss on the fixed batches, every run, one panel per condition, coloured by"
                  " whether the run escapes; each panel counts its runs that escape. The dashed line is the floor of those batches; the grey band,"
                  f' ±{scorecard.FLOOR_TOL} nats around it, counts as "at the floor".')
CURVES_ALT = ("Small multiple line charts, one per condition, of validation loss in nats against training step for"
              " each run, with a dashed floor line inside a grey band.")


def perturbation_sentences(runs: pd.DataFrame, profile: str) -> list[str]:
    """Seed or rounding, in sentences: how many seeds change their outcome when their initial weights are nudged;
    if any does, the escape rate over the recorded and nudged runs taken as draws of one setting, with its
    Clopper-Pearson interval; and the runs that end between the lowest and highest line, whose outcome depends on
    where the line is drawn. Empty before a seed has both runs."""
    base, nudged = base_conditions(profile)
    both = runs[runs.condition.isin([base, nudged])]
    if not {base, nudged} <= set(both.condition):
        return []
    outcome = both.pivot_table(index="seed", columns="condition", values="escaped", aggfunc="first").dropna()
    flipped = outcome[outcome[base] != outcome[nudged]]
    said = [f"Of {len(outcome)} seeds, {len(flipped)} change their outcome when their initial weights are nudged by"
            " one part in a million" + (f" (seeds {', '.join(str(s) for s in flipped.index)})" if len(flipped) else "")
            + "."]
    paired = both[both.seed.isin(outcome.index)]
    k, n = int(paired.escaped.sum()), len(paired)
    if len(flipped):
        rate = escapes.escape_rate(k, n, confidence=0.95)
        said.append("A seed's outcome is not stable under a perturbation of the size of a few roundings, so whether"
                    " FFNOnly collapses is a probability, not a property of its seed: treating the recorded and the"
                    f" nudged runs as draws of one setting, FFNOnly escapes in {k} of {n} runs at {profile}"
                    f" ({rate['rate']:.0%}; 95% Clopper-Pearson interval {rate['low']:.0%} to {rate['high']:.0%}).")
    else:
        said.append(f"Every seed keeps its outcome under the perturbation ({k} of {n} runs escape{'s' if k == 1 else ''}).")
    low, high = min(ESCAPE_THRESHOLDS), max(ESCAPE_THRESHOLDS)
    edge = paired[paired.below_floor.between(low, high)]
    if len(edge):
        said.append(f"{len(edge)} of these runs end{'s' if len(edge) == 1 else ''} between the {low}- and {high}-nat"
                    " lines, so whether they count as escapes depends on where the line is drawn: "
                    + ", ".join(f"seed {r.seed}{' with nudged weights' if r.init_noise else ''} ends"
                                f" {r.below_floor:.3f} nats below the floor" for r in edge.itertuples()) + ".")
    return said


def _seeds(seeds) -> str:
    return f"seed{'' if len(seeds) == 1 else 's'} {listing(sorted(seeds))}"


def condition_sentence(condition: str, part: pd.DataFrame) -> str:
    """How many of one condition's runs (``part``) escape, and which seeds: ``With 6,000 steps, 1 of 5 runs escapes
    (seed 1337).``"""
    k, n, seeds = int(part.escaped.sum()), len(part), list(part.seed[part.escaped])
    if n == 1:
        said = f"its one run (seed {part.seed.iloc[0]}) {'escapes' if k else 'does not escape'}"
    elif k == 0:
        said = f"none of {n} runs escapes"
    else:
        said = f"{k} of {n} runs escape{'s' if k == 1 else ''} ({_seeds(seeds)})"
    return f"With {condition}, {said}."


def gain_sentence(part: pd.DataFrame, base: tuple[int, int] | None = None) -> str:
    """The runtime-gain conditions (one run per gain, ``part``) in one sentence: which gains let FFNOnly escape;
    with ``base`` (runs that escape, runs) at gain 1, how likely that many escapes among ``part``'s runs are by
    chance alone, at the base rate and over its Clopper-Pearson interval."""
    gains = sorted(part.gain.unique())
    escaping = sorted(part.gain[part.escaped].unique())
    tried = f"Of the runtime gains {listing(f'{g:g}' for g in gains)} ({_seeds(set(part.seed))})"
    if not escaping:
        return f"{tried}, none lets FFNOnly escape."
    if len(escaping) == len(gains):
        text = f"{tried}, every one lets FFNOnly escape."
    else:
        one = len(escaping) == 1
        text = f"{tried}, {'gain' if one else 'gains'} {listing(f'{g:g}' for g in escaping)} {'lets' if one else 'let'} it escape."
    if base and base[1]:
        k, n = base
        runs, escaped = len(part), int(part.escaped.sum())
        rate = escapes.escape_rate(k, n)

        def chance(p: float) -> float:
            return float(stats.binom.sf(escaped - 1, runs, p))

        text += (f" With one run per gain that says little about the gain: at gain 1, {k} of {n} runs "
                 f"escape{'s' if k == 1 else ''}, and at that rate at least {escaped} of {runs} runs "
                 f"escape{'s' if escaped == 1 else ''} by chance with probability {chance(k / n):.0%} "
                 f"({chance(rate['low']):.0%} to {chance(rate['high']):.0%} over the rate's 95% interval).")
    return text


def finding(runs: pd.DataFrame, profile: str, order: list[str]) -> str:
    """The chapter's finding: :func:`perturbation_sentences`, then one :func:`condition_sentence` per other condition
    of ``order`` (the gains in one :func:`gain_sentence` when each has one run), naming the conditions of
    :data:`ESCAPE_PROFILES` not recorded yet."""
    said = perturbation_sentences(runs, profile)
    others = [c for c in order if c not in base_conditions(profile)]
    gains = runs[runs.condition.isin([c for c in others if c.startswith("gain ")])]
    grouped = len(gains) > 1 and not gains.duplicated("gain").any()
    for condition in others:
        part = runs[runs.condition == condition]
        if grouped and condition.startswith("gain "):
            continue
        if len(part):
            said.append(condition_sentence(condition, part))
        elif condition in ESCAPE_PROFILES.get(profile, {}):
            said.append(f"The {condition} condition is not recorded yet.")
    if grouped:
        recorded = runs[runs.condition == base_conditions(profile)[0]]
        said.append(gain_sentence(gains, (int(recorded.escaped.sum()), len(recorded))))
    return " ".join(said) if said else "No escape-study records at this profile yet."


def verification_text(runs: pd.DataFrame, certificates: pd.DataFrame, profile: str) -> str:
    """Whether the runs that escape as recorded were retrained by the book's code and matched their records bit for
    bit (``certificates``: :func:`verify.load_certificates`): an escape that replays is not an artefact of the code
    version that trained it."""
    base, _ = base_conditions(profile)
    escaping = runs[runs.escaped & (runs.condition == base)]
    return verify.certificates_text(certificates[certificates.key.isin(escaping.key)], escaping)


def layer0_by_outcome(layer0: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Block 0's median gradient norm (``layer0``: :func:`analysis.layer0_after` of ``runs``, row for row) per
    condition and outcome, for the whole block and for each sub-module the records log: where the gradient an
    escaping run regains flows. Only runs that log every sub-module shown count, so that the columns compare alike."""
    if layer0.empty:
        return pd.DataFrame()
    layer0 = layer0.assign(condition=runs.condition.to_numpy(), escaped=runs.escaped.to_numpy())
    parts = [c for c in ("median_attn", "median_mlp", "median_ln") if layer0[c].notna().any()]
    by_outcome = (layer0.dropna(subset=parts) if parts else layer0).groupby(["condition", "escaped"])
    return by_outcome[["median", *parts]].median().reset_index()


def every_run(runs: pd.DataFrame, order: list[str]):
    """:func:`runs_table` as the page shows it: folded under a one-line summary (a table of a
    row per run is consulted, not read, and unfolded it is metres long on a phone)."""
    shown = runs_table(runs, order)
    return folded(table(shown, headers={"below_floor": "below the floor (nats)"}),
                  f"Show all {len(shown)} runs: condition, seed, final loss, distance below the floor and escape step")


def runs_table(runs: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """Every run, condition by condition in ``order`` and by seed, with its escape step written out (— when it never
    leaves the floor for good)."""
    shown = runs.assign(escape_step=runs.escape_step.map(lambda s: "—" if pd.isna(s) else f"{int(s):,}"),
                        order=runs.condition.map({c: i for i, c in enumerate(order)}))
    return shown.sort_values(["order", "seed"])[["condition", "seed", "final_val_loss", "below_floor", "escaped",
                                                  "escape_step"]]


def rate_sentences(rate_finding: str, rate_runs: pd.DataFrame, blind: float) -> str:
    """The escape rate's finding (``rate_finding``), what the input-blind line (``blind``) adds,
    and the runs started after the lines were fixed, as the paragraphs under the rate table."""
    return (rate_finding + " " + escapes.input_blind_text(rate_runs, blind) + "\n\n"
            + escapes.after_lines_text(rate_runs, ESCAPE_LINES_FIXED, scorecard.FLOOR_TOL))
