"""The scorecard as HTML: the verdict grid, the claim blocks, the verdict box that opens a
chapter, and the paper's values for a section."""

from __future__ import annotations

import html
from importlib import resources
import re
from pathlib import Path

import pandas as pd
from IPython.display import HTML

from ..names import prose_names
from ...run.profiles import BOOK_PROFILE, DROPOUT_TWIN, get_profile
from ...study import paper
from ...core.paths import results_folder
from ...core.text import in_words
from ...study.frames import load_records
from ..tables import listing, table
from .claims import CLAIMS, TITLES
from .rule import PAPER_SCALE, stand_ins
from .sensitivity import fragile, sensitivity
from .verdicts import build

#: Each verdict's symbol and short label in the verdict grid (a symbol as well as a colour,
#: so the grid reads without colour too); the CSS classes are ``v-<slug>``.
GRID_LABELS = {
    "reproduced": ("✓", "reproduced"),
    "partly reproduced": ("◐", "partly"),
    "agrees with the paper's confirmed result": ("✓", "agrees with the confirmed result"),
    "not reproduced": ("✗", "not reproduced"),
    "new evidence for": ("★", "for"),
    "new evidence against": ("★", "against"),
    "not testable here": ("∅", "not testable here"),
    "inconclusive": ("?", "inconclusive"),
    "not run at this scale": ("·", "not run at this scale"),
}


def ours_text(ours: str) -> str:
    """A rule's "ours" as the book shows it: the variants by their prose names, no " ± —"
    where a mean rests on one seed (its spread is undefined, and the seed count is stated
    beside it), and "in the one seed" for "in 1 of 1 seed" ("holds in the one seed")."""
    return re.sub(r"\bin 1 of 1 seed\b", "in the one seed", prose_names(str(ours)).replace(" ± —", ""))


def verdict_slug(verdict: str) -> str:
    return "v-" + "".join(c if c.isalnum() else "-" for c in verdict.lower()).strip("-").replace("--", "-")


def grid(table: pd.DataFrame, stand_in: str = BOOK_PROFILE) -> pd.DataFrame:
    """The verdict grid: one row per claim (its title, in the claims file's order), one
    column per profile (the stand-in and its twin, then each paper profile that has records:
    one without would be a column of "not run at this scale", named instead in
    ``attrs["without_records"]``, see :func:`grid_note`); empty where a claim is not checked
    at that profile. Where a claim has rows at two scales for one profile (e.g. 10M and 124M
    values of one claim), the first is shown."""
    # "not testable here" comes from rules that need no records (a CPU cannot test a GPU effect)
    recorded = set(table[~table.verdict.isin(["not run at this scale", "not testable here"])].profile)
    columns = [*stand_ins(stand_in), *[p for p in PAPER_SCALE if p in recorded]]
    out = table.drop_duplicates(["claim", "profile"]).pivot(index="claim", columns="profile", values="verdict")
    out = out.reindex(index=list(dict.fromkeys(table.claim)), columns=columns)
    out.index = [TITLES.get(c, c) for c in out.index]
    out.attrs["without_records"] = [p for p in PAPER_SCALE if p not in recorded]
    return out


def grid_note(frame: pd.DataFrame) -> str:
    """One sentence under the grid naming the paper profiles it leaves out for want of records."""
    missing = frame.attrs.get("without_records") or []
    if not missing:
        return ""
    named = " and ".join(f"`{p}`" for p in missing)
    return (f"{named} {'have' if len(missing) > 1 else 'has'} no records yet, so "
            f"{'their columns are' if len(missing) > 1 else 'its column is'} left out.")


def legend() -> str:
    """The grid's symbols in one sentence, the same on every page that shows a grid."""
    return ("✓ reproduced, or agrees with the paper's confirmed result; ◐ partly reproduced; ✗ not reproduced; "
            "★ new evidence for or against a proposal the paper left open; ∅ not testable with these records; "
            "? inconclusive, the records do not decide (an absolute number at a stand-in's scale, one seed where the "
            "rule needs an interval, a value between the rule's lines, a control not yet run); · not run at this "
            "scale (the runs the claim needs are not all recorded); — not a claim at that profile.")


def how_trained(records: pd.DataFrame) -> str:
    """Where and in what precision ``records`` were trained, from their provenance: "on CPU in
    bf16", "on a GPU (NVIDIA H200) in bf16", or each way once, joined, where they differ."""
    ways = []
    for (device, name, precision), _ in records.groupby(["device", "device_name", "precision"], dropna=False):
        where = "CPU" if str(device) == "cpu" else (f"a GPU ({name})" if isinstance(name, str) and name else "a GPU")
        way = f"on {where}" + (f" in {precision}" if isinstance(precision, str) and precision else "")
        ways += [way] if way not in ways else []
    return listing(ways) if ways else ""


def profiles_sentence(stand_in: str = BOOK_PROFILE, records: pd.DataFrame | None = None) -> str:
    """What a profile is, and the grid's profiles, for readers meeting the word above the grid;
    with ``records``, how the paper profiles' runs were trained, where they have any."""
    twin = DROPOUT_TWIN.get(stand_in)
    size = get_profile(stand_in)
    text = (f"Each column is a *profile*: a named setting of model, data and training budget. `{stand_in}` is the "
            f"stand-in trained here ({size.n_layer} layers, {size.n_embd} wide, context {size.block_size})")
    text += f", `{twin}` the same with dropout {get_profile(twin).dropout:g}" if twin else ""
    text += ", and `paper-10m` and `paper-124m` are the paper's 10M and 124M settings."
    for name in ("paper-10m", "paper-124m"):
        own = records[records.profile == name] if records is not None and len(records) else ()
        own = own[own.on_recipe.astype(bool)] if len(own) and "on_recipe" in own else own
        if len(own):
            runs = f"`{name}` run shown was" if len(own) == 1 else f"{in_words(len(own))} `{name}` runs shown were"
            text += f" The {runs} trained here {how_trained(own)}."
    return text


#: Where each claim's evidence is shown: the page (under the book's root, without .html) and the
#: figure or table it rests on (its id; None: the page as a whole).
EVIDENCE: dict[str, tuple[str, str | None]] = {
    "joint_collapse_10m": ("notebooks/04_joint_collapse", "fig-joint-collapse-curves"),
    "joint_collapse_124m": ("notebooks/04_joint_collapse", None),
    "layer0_starved_attn_only": ("notebooks/04_joint_collapse", "fig-layer0-gradients"),
    "layer0_starved_ffn_only": ("notebooks/04_joint_collapse", "fig-layer0-gradients"),
    "layer0_starved_no_residual": ("notebooks/04_joint_collapse", "fig-layer0-gradients"),
    "layer0_full": ("notebooks/04_joint_collapse", "fig-layer0-gradients"),
    "hidden_norm_growth": ("notebooks/07_mechanism", "T_tab-growth"),
    "gain_confound": ("notebooks/05_confounds", "fig-gain-timing"),
    "asymmetry_10m": ("notebooks/06_central", "fig-central-final"),
    "ffn_collapse_10m": ("notebooks/10_ffn_escape", "fig-escape-distances"),
    "ffn_vs_no_residual": ("notebooks/06_central", "T_tab-central-gaps"),
    "ratio_10m": ("notebooks/06_central", "T_tab-central-summary"),
    "seeds_124m": ("notebooks/06_central", "T_tab-central-summary"),
    "alpha_routing": ("notebooks/07_mechanism", "fig-alpha-heatmap"),
    "asymmetry_by_scale": ("notebooks/09_scale_ladder", "fig-ladder"),
    "mixer_test": ("notebooks/07_mechanism", "fig-mixer"),
    "intermediate_reproduction": ("notebooks/08_reproduction", "T_tab-paper-comparison"),
    "nondeterministic_repeats": ("notebooks/08_reproduction", "T_tab-repeats"),
    "original_record": ("notebooks/08_reproduction", "T_tab-paper-comparison"),
    "eval_noise_explains": ("notebooks/05_confounds", "T_tab-eval-noise"),
}
#: The chapter that follows each section of the paper (chapter N is the paper's section N).
SECTION_PAGES = {3: "notebooks/03_setup", 4: "notebooks/04_joint_collapse", 5: "notebooks/05_confounds",
                 6: "notebooks/06_central", 7: "notebooks/07_mechanism", 8: "notebooks/08_reproduction"}


def evidence_link(claim: str, root: str = "../") -> str:
    """``../notebooks/06_central.html#fig-central-final``: where ``claim``'s evidence is shown,
    from a page one folder below the book's root (``root``)."""
    page, anchor = EVIDENCE[claim]
    return f"{root}{page}.html" + (f"#{anchor}" if anchor else "")


def claim_anchor(claim: str) -> str:
    """The id of a claim's block on the scorecard page."""
    return "claim-" + claim.replace("_", "-")


def badge(verdict: str) -> str:
    """A verdict as an inline HTML badge: its symbol and label, coloured by verdict."""
    symbol, label = GRID_LABELS[verdict]
    return (f'<span class="verdict {verdict_slug(verdict)}" title="{html.escape(verdict)}">'
            f'<span class="verdict-symbol" aria-hidden="true">{symbol}</span> {html.escape(label)}</span>')


#: The mark after a verdict that changes at a plausible value of a threshold (the grid's and the chapters' boxes').
_FRAGILE = ('<span class="verdict-fragile" title="changes at a plausible threshold: see the scorecard\'s threshold '
            'table"> fragile</span>')


def grid_html(frame: pd.DataFrame, link: str = "scorecard.html", fragile_cells: set | None = None) -> str:
    """:func:`grid` as an HTML table: each cell a symbol and a short label, classed by
    verdict; each claim links to its block on the scorecard page (``link``). A cell of
    ``fragile_cells`` (``(claim, profile)`` pairs, :func:`residual_lib.pages.scorecard.sensitivity.fragile`) is marked: its verdict
    changes at a plausible value of a threshold."""
    ids = {title: claim for claim, title in TITLES.items()}
    fragile_cells = fragile_cells or set()
    head = "".join(f'<th scope="col">{html.escape(str(c))}</th>' for c in frame.columns)
    rows = []
    for claim, verdicts in frame.iterrows():
        cells = []
        for profile, verdict in verdicts.items():
            if not isinstance(verdict, str):
                cells.append('<td class="verdict-none" title="not a claim at this profile">—</td>')
                continue
            symbol, label = GRID_LABELS[verdict]
            mark = _FRAGILE if (ids.get(claim, claim), profile) in fragile_cells else ""
            cells.append(f'<td class="verdict {verdict_slug(verdict)}" title="{html.escape(verdict)}">'
                         f'<span class="verdict-symbol" aria-hidden="true">{symbol}</span>'
                         f'<span class="verdict-label"> {html.escape(label)}</span>{mark}</td>')
        name = html.escape(str(claim)).replace("/", "/<wbr>")  # "FFNOnly/AttnOnly" breaks on a phone
        if claim in ids:
            chapter = Path(EVIDENCE[ids[claim]][0]).name[:2].lstrip("0")
            # the verdict's rule on the scorecard, and the figure or table it rests on
            name = (f'<a href="{link}#{claim_anchor(ids[claim])}">{name}</a> <a class="grid-evidence" '
                    f'href="{evidence_link(ids[claim])}" title="the evidence, in chapter {chapter}">'
                    f'ch.&nbsp;{chapter}</a>')
            note = CLAIMS[ids[claim]].note
            name += f'<span class="claim-note">{html.escape(note)}</span>' if note else ""
        rows.append(f"<tr><th scope=\"row\">{name}</th>{''.join(cells)}</tr>")
    return (f'<div class="table-scroll"><table class="verdict-grid" id="verdict-grid"><thead><tr>'
            f'<th scope="col">claim</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def claims_html(table: pd.DataFrame) -> str:
    """Every claim of :func:`build` as a block that fits the text column: its title and
    verdicts (always visible), then, expandable, the paper's statement and values, ours per
    profile, and the rule. Each block's id is :func:`claim_anchor`."""
    blocks = []
    order = {p: i for i, p in enumerate(["paper-10m", "paper-124m"])}
    for claim, rows in table.groupby("claim", sort=False):
        rows = rows.sort_values("profile", key=lambda c: c.map(lambda p: order.get(p, -1)), kind="stable")
        first = rows.iloc[0]  # the small stand-in first: the profile with records
        verdicts = " ".join(f'<span class="claim-verdict"><span class="claim-profile">{html.escape(r.profile)}'
                            f"</span> {badge(r.verdict)}</span>" for r in rows.itertuples())
        per_profile = "".join(
            f"<tr><th scope=\"row\">{html.escape(r.profile)}</th><td>{badge(r.verdict)}</td>"
            f"<td>{html.escape(ours_text(r.ours))}</td><td>{html.escape(str(r.seeds))}</td></tr>"
            for r in rows.itertuples())
        rule = next((r for r in rows.rule if r), "")
        note = f"<p><em>About the paper's values:</em> {html.escape(first.paper_note)}.</p>" if first.paper_note else ""
        blocks.append(
            f'<details class="claim-block" id="{claim_anchor(claim)}">'
            f'<summary><span class="claim-title">{html.escape(TITLES.get(claim, claim))}</span>'
            f'<span class="claim-verdicts">{verdicts}</span></summary>'
            f"<p><em>The paper ({_section(first.section)}):</em> {html.escape(prose_names(first.statement))}</p>"
            f"<p><em>The paper's values:</em> {html.escape(prose_names(first.paper))}</p>{note}"
            f'<div class="table-scroll"><table class="claim-rows book-table"><thead><tr><th scope="col">profile</th>'
            f'<th scope="col">verdict</th><th scope="col">ours</th><th scope="col">seeds</th></tr></thead>'
            f"<tbody>{per_profile}</tbody></table></div>"
            + (f"<p><em>Rule:</em> {html.escape(prose_names(rule))}</p>" if rule else "")
            + f'<p class="claim-evidence"><a href="{evidence_link(claim)}">{_evidence_label(claim)}</a></p></details>')
    return _unbroken(f'<div class="claim-blocks" id="scorecard-claims">{"".join(blocks)}</div>')


def _section(section) -> str:
    """"section 6", linked to the chapter that follows that section of the paper where there is one."""
    try:
        page = SECTION_PAGES.get(int(section))
    except (TypeError, ValueError):
        page = None
    text = f"section {html.escape(str(section))}"
    return f'<a href="../{page}.html">{text}</a>' if page else text


def _evidence_label(claim: str) -> str:
    page, anchor = EVIDENCE[claim]
    chapter = int(Path(page).name[:2]) if Path(page).name[:2].isdigit() else None
    what = "the figure" if (anchor or "").startswith("fig-") else "the table" if anchor else "the chapter"
    if what == "the chapter":
        return f"Evidence: chapter {chapter} →"
    return f"Evidence: {what} in chapter {chapter} →" if chapter else f"Evidence: {what} →"


def _runs(frame: pd.DataFrame) -> str:
    return f"{len(frame)} run{'s' if len(frame) != 1 else ''}"


def _seed_list(seeds) -> str:
    """The seeds of a page's runs: listed when there are a few, counted when there are many."""
    seeds = sorted(set(int(x) for x in seeds))
    if len(seeds) > 6:
        return f"{len(seeds)} seeds"
    return ("seed " if len(seeds) == 1 else "seeds ") + ", ".join(map(str, seeds))


def _wider(row, records: pd.DataFrame) -> str:
    """A note for a verdict judged over more seeds than its page shows at that profile (an
    escape-rate seed, trained for FFNOnly alone, counts in a rule that reads every FFNOnly seed)."""
    text = str(row.seeds)  # rule.seeds: "1, 42, 123" for a few, "20 seeds" for more
    many = re.fullmatch(r"(\d+) seeds", text)
    judged = int(many.group(1)) if many else len(text.split(", ")) if re.fullmatch(r"\d+(, \d+)*", text) else 0
    shown = records[records.profile == row.profile].seed.nunique() if len(records) else 0
    if not shown or judged <= shown:  # a profile the page shows no run of is the scorecard's to describe
        return ""
    return f" The verdict reads {judged} seeds; this page shows {shown}."


def _unbroken(text: str) -> str:
    """``text`` with a value and its spread kept on one line ("2.591 ± 0.544" never breaks at the ±)."""
    return text.replace(" ± ", "\u00a0±\u00a0")


def verdict_box(claims: list[str], records: pd.DataFrame, table: pd.DataFrame | None = None,
                fragile_cells: set | None = None):
    """The box that opens a chapter (an IPython ``HTML`` object): the verdict of each of
    ``claims`` at the page's profile with what the records show, each linking to its block on
    the scorecard page, and one line on what the page shows (its runs and seeds per profile, the
    page's own profile first, then by model size). A claim whose verdict and text are the same
    at every profile it is shown at takes one line naming them; otherwise each line names its profile.
    ``records`` are the page's, as :func:`residual_lib.pages.notebook.notebook_records`
    returns them: their ``attrs`` name the profile and the results folder. A verdict among
    ``fragile_cells`` (``(claim, profile)`` pairs; by default those of the scorecard built for the
    page's profile, :func:`.sensitivity.sensitivity`) is marked fragile, as the scorecard's grid marks it."""
    profile, results_dir = records.attrs["profile"], records.attrs["results_dir"]
    every_run = load_records(results_folder(results_dir)) if table is None or fragile_cells is None else None
    table = build(stand_in=profile, records=every_run) if table is None else table
    if fragile_cells is None:
        fragile_cells = fragile(sensitivity(stand_in=profile, records=every_run, table=table, remember=True))
    profiles = stand_ins(profile)
    rows = table[table.claim.isin(claims) & table.profile.isin(profiles)
                 & ((table.profile == profile) | (table.verdict != "not run at this scale"))]
    items = []
    for claim in claims:
        said = []  # per profile: (profile, verdict and fragile mark, what follows the profile's name)
        for row in rows[rows.claim == claim].itertuples():
            ours = ours_text(row.ours)
            ours = "" if ours in ("—", "") else f" {html.escape(ours[:1].upper() + ours[1:])}."  # a sentence after the title
            said.append((row.profile, badge(row.verdict) + (_FRAGILE if (claim, row.profile) in fragile_cells else ""),
                         f' <a href="../book/scorecard.html#{claim_anchor(claim)}">'
                         f"{html.escape(TITLES.get(claim, claim))}</a>.{ours}{_wider(row, records)}"))
        if len(said) > 1 and len({(mark, rest) for _, mark, rest in said}) == 1:  # the same at every profile: one line
            names = listing([f"<code>{html.escape(p)}</code>" for p, _, _ in said])
            items.append(f"<li>{said[0][1]} {names}{said[0][2]}</li>")
            continue
        for name, mark, rest in said:  # the page's own profile unnamed, unless the claim has others beside it
            where = f" <code>{html.escape(name)}</code>" if name != profile or len(said) > 1 else ""
            items.append(f"<li>{mark}{where}{rest}</li>")
    shown = ""
    marks = [text for present, text in (
        ((rows.verdict == "not run at this scale").any(),
         "<em>Not run at this scale</em> marks a claim whose runs at this profile are not all recorded yet."),
        ((rows.verdict == "inconclusive").any(),
         "<em>Inconclusive</em> marks a claim these records do not decide; the scorecard's rule for it says why."),
        (any((c, p) in fragile_cells for c, p in zip(rows.claim, rows.profile)),
         "<em>Fragile</em> marks a verdict that changes at a plausible value of one of its thresholds.")) if present]
    if marks:
        shown += f'<p class="verdict-box-scope">{" ".join(marks)}</p>'
    left_out = records.attrs.get("diverged") or []
    if left_out:
        runs = f"{len(left_out)} run{'s' if len(left_out) > 1 else ''}"
        shown += (f'<p class="verdict-box-scope"><strong>Left out:</strong> {runs} that diverged '
                  f"(non-finite loss): {html.escape(prose_names('; '.join(left_out)))}.</p>")
    apart = records.attrs.get("left_out") or []  # sections.central_sweep: seeds not every variant has
    if apart:
        runs = f"{len(apart)} run{'s' if len(apart) > 1 else ''}"
        shown += (f'<p class="verdict-box-scope"><strong>Left out:</strong> {runs} at seeds where another variant '
                  f"has no usable run, so that every variant is averaged over the same seeds, here and on every "
                  f"other page: {html.escape(prose_names('; '.join(apart)))}.</p>")
    if len(records):
        parts = [f"{_runs(part)} at <code>{html.escape(name)}</code> ({_seed_list(part.seed)})"
                 for name, part in sorted(records.groupby("profile"),  # the page's profile, then by model size
                                          key=lambda g: (g[0] != profile, g[1].n_params.min(), g[0]))]
        shown += (f'<p class="verdict-box-scope">This page shows {listing(parts)}, read from '
                  f"<code>{html.escape(Path(results_dir).name)}/</code>. The verdict rules and the other profiles are "
                  f'on the <a href="../book/scorecard.html">scorecard</a>.</p>')
    title = " and ".join(f"<code>{html.escape(p)}</code>" for p in profiles if (rows.profile == p).any()) or \
        f"<code>{html.escape(profile)}</code>"
    return HTML(_unbroken(f'<div class="verdict-box"><p class="verdict-box-title">Verdicts at {title}'
                          f'</p><ul>{"".join(items)}</ul>{shown}</div>'))


def _as_stated(number: int | str) -> pd.DataFrame:
    """The paper's values for one section as the claims file writes them (``value``, ``std``: text,
    "" where none), in :func:`residual_lib.study.paper.section`'s order: the summary's own precision,
    "3.35" or "14.0", which the numbers as floats would lose."""
    with resources.files("residual_lib.study").joinpath("paper_claims.csv").open() as f:
        text = pd.read_csv(f, dtype=str, keep_default_na=False)
    return text[text.section == str(number)].reset_index(drop=True)[[*_ROW, "value", "std"]]


#: The columns that name a row of the claims file (with its section).
_ROW = ["claim", "scale", "variant", "quantity"]


def section_view(number: int | str) -> HTML:
    """The paper's values for one section as the book shows them, in one expandable block
    (the chapter's results come first): a compact table (claim, scale, variant, quantity,
    value ± std, seeds, marked "inferred" where the summary does not state them), then each
    claim's statement and what the summary leaves unstated. Labelled as the paper's."""
    rows, stated = paper.section(number), _as_stated(number)
    if not stated[_ROW].equals(rows[_ROW].fillna("").astype(str)):  # the text of each value beside the row it belongs to
        raise ValueError(f"section {number}'s rows of paper_claims.csv read differently as text and as numbers")
    shown = rows.assign(
        claim=rows.claim.map(lambda c: TITLES.get(c, c)),
        variant=rows.variant.map(paper.variant_label),
        quantity=rows.quantity.map(paper.quantity_label),
        seeds=[f"{s} (inferred)" if isinstance(i, str) and "seeds" in i else s
               for s, i in zip(rows.seeds, rows.inferred)],
        value=[v + (f" ± {s}" if s else "") for v, s in zip(stated.value, stated["std"])])
    values = table(shown[["claim", "scale", "variant", "quantity", "value", "seeds"]],
                   headers={"value": "the paper's value"}, caption=f"The paper's values, section {number}")
    items = []
    for claim, part in rows.groupby("claim", sort=False):
        notes = " ".join(dict.fromkeys(n for n in part["about the value"] if isinstance(n, str) and n))
        items.append(f"<li><strong>{html.escape(TITLES.get(claim, claim))}</strong>: "
                     f"{_unbroken(html.escape(part.statement.iloc[0]))}"
                     + (f" <em>{html.escape(notes)}</em>" if notes else "") + "</li>")
    statements = "".join(items)
    return HTML(f'<details class="paper-values"><summary>The paper\'s values for section {number} '
                f"({len(rows)} reported values) and its statements</summary>"
                f'<div class="table-scroll">{values.to_html()}</div><ul>{statements}</ul></details>')
