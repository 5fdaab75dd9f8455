"""The scorecard in sentences: the book's headline and the count of verdicts at a profile."""

from __future__ import annotations

import pandas as pd
from scipy import stats

from ...run.profiles import BOOK_PROFILE, DROPOUT_TWIN, get_profile
from ...study.frames import profile_input_blind_line, usable
from ...study.sections import central_sweep, controlled
from ...core.text import in_words, listing, plural
from . import limits
from .claims import CLAIMS
from .rule import PAPER_SCALE, VERDICTS, stand_ins

#: How the count sentence names each verdict (singular, plural).
_COUNTED = {
    "reproduced": ("is reproduced", "are reproduced"),
    "partly reproduced": ("holds in part", "hold in part"),
    "agrees with the paper's confirmed result": ("agrees with the paper's confirmed result instead of its anomaly",
                                                 "agree with the paper's confirmed results instead of its anomalies"),
    "not reproduced": ("is not reproduced", "are not reproduced"),
    "new evidence for": ("is new evidence for a proposal the paper left open",
                         "are new evidence for proposals the paper left open"),
    "new evidence against": ("is new evidence against a proposal the paper left open",
                             "are new evidence against proposals the paper left open"),
    "not testable here": ("cannot be tested with these records", "cannot be tested with these records"),
    "inconclusive": ("is an absolute number of the paper's model, which a smaller stand-in cannot check",
                     "are absolute numbers of the paper's model, which a smaller stand-in cannot check"),
    # an inconclusive verdict that is not an absolute number at a stand-in (at the paper's own setting,
    # or from another rule: one seed where an interval is needed, a value between two lines)
    "undecided": ("is not decided by these records", "are not decided by these records"),
}



def count_sentence(table: pd.DataFrame, profile: str) -> str:
    """The verdicts at ``profile`` in a sentence: how many claims it checks and what became of them."""
    checked = table[(table.profile == profile) & (table.verdict != "not run at this scale")]
    claims = table.claim.nunique()
    rows = checked.drop_duplicates("claim")
    kinds = ["undecided" if v == "inconclusive" and (profile in PAPER_SCALE or CLAIMS[c].rule != "absolute") else v
             for c, v in zip(rows.claim, rows.verdict)]
    counts = pd.Series(kinds, dtype=object).value_counts()
    parts = [f"{in_words(int(counts[v]))} {_COUNTED[v][int(counts[v]) > 1]}" for v in (*VERDICTS, "undecided")
             if v in counts]
    if not parts:
        return f"None of the {claims} claims has records at `{profile}` yet."
    listed = parts[0] if len(parts) == 1 else "; ".join(parts[:-1]) + "; and " + parts[-1]
    n = checked.claim.nunique()
    return (f"Of the paper's {claims} claims, {in_words(n)} {'has' if n == 1 else 'have'} a verdict at `{profile}`"
            + ((f" (the other {in_words(claims - n)} {'waits' if claims - n == 1 else 'wait'} for runs not yet "
                "recorded)" if profile in PAPER_SCALE else
                f" (the other {in_words(claims - n)} {'is about a model' if claims - n == 1 else 'are about models'} "
                "this profile does not train)") if claims > n else "")
            + f": {listed}.")


def headline(table: pd.DataFrame, records: pd.DataFrame, stand_in: str = BOOK_PROFILE) -> str:
    """The book's outcome in plain words, from the scorecard and the records: the paper's
    central claim, whether the asymmetry held at the stand-in (with its numbers), whether
    FFNOnly collapsed in every seed (with and without dropout), and what waits for a GPU."""
    rows = table.set_index(["claim", "profile"])
    central = controlled(usable(records[records.profile == stand_in]))
    sweep = central_sweep(records[records.profile == stand_in])  # the selection every page quotes
    seeds = sorted(set(sweep.seed))
    means = sweep.groupby("variant")["final_val_loss"].mean()
    sizes = central[central.variant == "full"]["n_params"]
    text = ("The paper's central claim is an asymmetry: without its attention residual (FFNOnly) a Pre-LN "
            "transformer collapses to the floor its no-residual model sits on, while without its feed-forward "
            "residual (AttnOnly) it still learns.")
    verdict = rows.verdict.get(("asymmetry_10m", stand_in))
    if verdict and verdict != "not run at this scale" and {"attn_only", "ffn_only"} <= set(means.index):
        size = f"a {sizes.max() / 1e6:.2g}M-parameter stand-in" if len(sizes) else "a small stand-in"
        floor = float(central.eval_floor.iloc[0])
        held = {"reproduced": "holds in every seed", "partly reproduced": "holds in some seeds only",
                "not reproduced": "does not hold"}.get(verdict, "cannot be decided yet")
        ffn = sweep[sweep.variant == "ffn_only"]
        off = int((ffn.eval_floor - ffn.final_val_loss > limits.FLOOR_TOL).sum())
        median = ffn.final_val_loss.median()
        pulled = (f"; FFNOnly's median is {median:.3f}, {in_words(off)} escaped seed{'' if off == 1 else 's'} "
                  f"{'pulls' if off == 1 else 'pull'} its mean down" if off and means["ffn_only"] < median - 0.0005
                  else "")
        text += (f" On {size} it {held}: AttnOnly ends at {means['attn_only']:.3f} nats "
                 f"and FFNOnly at {means['ffn_only']:.3f}, against a floor of {floor:.3f} (means over the central "
                 f"sweep's {in_words(len(seeds))} seed{'' if len(seeds) == 1 else 's'}{pulled}).")
    collapse, counts = [], []
    for profile in stand_ins(stand_in):
        row = rows.loc[("ffn_collapse_10m", profile)] if ("ffn_collapse_10m", profile) in rows.index else None
        if row is None or row.verdict == "not run at this scale":
            continue
        ffn = controlled(usable(records[records.profile == profile]))
        ffn = ffn[ffn.variant == "ffn_only"]
        below = ffn.eval_floor - ffn.final_val_loss
        blind = profile_input_blind_line(profile)
        setting = ("without dropout" if profile == stand_in
                   else f"with dropout {get_profile(profile).dropout:g} (nanoGPT's recipe, which paper-10m follows)")
        k = int((below > limits.FLOOR_TOL).sum())
        collapse.append((setting, k, int((below > blind).sum()), len(ffn), blind))
        counts.append((k, len(ffn)))
    if collapse:
        text += _collapse_sentences(collapse, counts)
    missing = [p for p in PAPER_SCALE if not (records.profile == p).any()]
    if missing:
        text += (" No paper-10m or paper-124m run is recorded yet." if len(missing) == 2 else
                 f" No {missing[0]} run is recorded yet.")
    return text


def _ends(k: int, n: int | None = None) -> str:
    """"2 of 20 seeds end", "1 of 4 seeds ends", or without ``n`` "5 end", "1 ends", "none does"."""
    if n is None:
        return "none does" if not k else f"{k} {'ends' if k == 1 else 'end'}"
    return f"{k} of {n} {plural('seed', n)} {'ends' if k == 1 else 'end'}"


def _blind(kb: int, blind: float, floor: str = "it") -> str:
    """How many seeds end further below the floor than a model that ignores its input can."""
    return (f"{_ends(kb)} more than {blind:.3f} nats below {floor}, further than a model that ignores its input "
            "can reach")


def _collapse_sentences(collapse: list, counts: list) -> str:
    """Whether FFNOnly collapsed in every seed, setting by setting (each a (setting, seeds past the
    escape line, seeds past the input-blind line, seeds, that line) tuple), as the scorecard
    judges it (at the escape line), with the seeds past the input-blind line beside it, and whether
    the settings differ."""
    held = [c for c in collapse if not c[1]]
    broken = [c for c in collapse if c[1]]
    if not any(c[1] or c[2] for c in collapse):
        return (" FFNOnly stays at the floor in every seed ("
                + " and ".join(f"{n} {plural('seed', n)} {setting}" for setting, _, _, n, _ in held) + ").")
    text = "".join(f" {setting[0].upper()}{setting[1:]}, FFNOnly collapses in every seed, as the paper says "
                   f"({n} of {n})" + (f", though {_blind(kb, blind, 'the floor')}" if kb else "") + "."
                   for setting, _, kb, n, blind in held)
    said = [f"{_ends(k, n)} more than {limits.FLOOR_TOL:g} nats below the floor, and {_blind(kb, blind)}"
            for _, k, kb, n, blind in broken]
    if held and broken:
        text += f" {broken[0][0][0].upper()}{broken[0][0][1:]} it does not: {said[0]}"
    elif broken:
        text += " FFNOnly does not collapse in every seed, as the paper says it does: " + "; ".join(
            f"{c[0]}, {s}" for c, s in zip(broken, said))
    else:
        text = text[:-1]  # the Fisher clause, if any, ends the last sentence
    if len(counts) == 2:  # whether the settings differ, at the line fixed before the data
        (k1, n1), (k2, n2) = counts
        p = stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]).pvalue
        text += (f"; at {limits.FLOOR_TOL:g} the two settings do not differ clearly (Fisher's p = {p:.2f})"
                 if p >= 0.05 else f"; at {limits.FLOOR_TOL:g} the two settings differ (Fisher's p = {p:.3f})")
    return text + "."


def stand_in_scope(stand_in: str = BOOK_PROFILE) -> str:
    """What the stand-in profile is, for the introduction: its shape (from the profile, so a
    book of any profile says its own), and the dropout twin it is also judged at, if any."""
    shape = get_profile(stand_in)
    text = (f"Its model has {shape.n_layer} layers, {shape.n_embd} wide, with context {shape.block_size}. A "
            "smaller model cannot check the absolute numbers of the paper's 10M and 124M models, so they are "
            "inconclusive here; the `paper-10m` and `paper-124m` columns judge them from runs of those settings, "
            "and mark a claim \"not run at this scale\" until the runs it needs are recorded.")
    twin = DROPOUT_TWIN.get(stand_in)
    if twin:
        text += (f" The central sweep is also judged at `{twin}`, the same model with the dropout "
                 f"({get_profile(twin).dropout:g}) of the recipe `paper-10m` follows.")
    return text



#: Cells of the grid that give no verdict to set beside another.
_OPEN = {"not run at this scale", "not testable here"}


def compared_seeds(records: pd.DataFrame, study: str = "paper-10m") -> int:
    """How many seeds ``study``'s variants are compared over: those of its central sweep, the
    seeds at which every variant recorded there has a run (not the fewest seeds a variant has,
    which counts seeds another variant lacks)."""
    return int(central_sweep(records[records.profile == study]).seed.nunique()) if len(records) else 0


def scale_shift(verdicts: pd.DataFrame, stand_in: str = BOOK_PROFILE, study: str = "paper-10m",
                seeds: int | None = None, link: bool = True) -> str:
    """What the paper's setting ``study`` changes on the verdict grid (:func:`.html.grid`): set
    beside the stand-in's dropout twin where the grid has that column (the closer analogue,
    :data:`DROPOUT_TWIN`), else beside the stand-in, which verdicts differ, which the stand-in
    decides and ``study`` leaves open, which the stand-in leaves inconclusive and ``study``
    decides, and how many stay; nothing where ``study`` has no column or no claim is judged at both.
    ``seeds``: how many seeds ``study``'s central sweep has, over which its variants are compared
    (:func:`compared_seeds`; one is said); ``link``: whether to point
    to the scorecard (not on the scorecard itself)."""
    twin = DROPOUT_TWIN.get(stand_in)
    base = twin if twin in verdicts.columns and verdicts[twin].notna().any() else stand_in
    if study not in verdicts.columns or base not in verdicts.columns:
        return ""
    pairs = verdicts[[base, study]].dropna()
    pairs = pairs[~pairs[base].isin(_OPEN) & ~pairs[study].isin(_OPEN)]
    n = len(pairs)
    if not n:
        return ""
    vague = pairs == "inconclusive"
    decided, opened = pairs[vague[base] & ~vague[study]], pairs[~vague[base] & vague[study]]
    differ = pairs[(pairs[base] != pairs[study]) & ~vague[base] & ~vague[study]]
    kept = n - len(decided) - len(opened) - len(differ)
    count = ("the one claim" if n == 1 else f"all {in_words(n)} claims" if kept == n else
             f"none of the {in_words(n)} claims" if not kept else f"{in_words(kept)} of the {in_words(n)} claims")
    who = (f"the stand-in with `{study}`'s dropout of {get_profile(study).dropout:g}" if base == twin
           else "the stand-in")
    same = "a verdict of its own" if n == 1 and not kept else "the same verdict"
    text = f"Set beside `{base}`, {who}, `{study}` gives {same} on {count} both judge."
    if len(differ):
        text += (f" It differs on {in_words(len(differ))}: " + listing(
            f"*{title}* ({a} at `{base}`, {b} at `{study}`)" for title, (a, b) in differ.iterrows()) + ".")
    if len(opened):
        text += (f" It leaves open {in_words(len(opened))} that `{base}` decides: " + listing(
            f"*{title}* ({a} at `{base}`)" for title, (a, _) in opened.iterrows()) + ".")
    if len(decided):
        alike = decided[study].nunique() == 1 and len(decided) > 1
        what = decided[study].iloc[0]
        group = (("neither" if len(decided) == 2 else "none") + " reproduced" if what == "not reproduced"
                 else f"each judged {what}")
        text += (f" It decides {in_words(len(decided))} that `{base}` leaves inconclusive" + (f", {group}: " if alike else ": ")
                 + listing(f"*{title}*" + ("" if alike else f" ({b})") for title, (_, b) in decided.iterrows()) + ".")
    text += (f" At `{study}` some rules also hold a value to the paper's own number, which no stand-in is held to"
             + (", and its variants are compared over one seed so far" if seeds == 1 else "")
             + ", so a verdict can change where the result does not"
             + ("; the [scorecard](../book/scorecard.html) gives each rule and what it read." if link else "."))
    return text
