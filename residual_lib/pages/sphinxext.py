"""The book's Sphinx extension (``_config.yml``: ``sphinx: extra_extensions``).

- **Only the staged sources build.** The chapters' results come from notebooks that
  ``python -m residual_lib book`` executes from the run records into ``_build/source/``;
  jupyter-book executes nothing (``execute_notebooks: off``), so ``jupyter-book build .`` at
  the repository root would render every chapter without a result and exit 0. The staging
  step writes :data:`MARKER` into the folder it stages; a source folder without it stops
  the build at once, with one line that names the command to use.
- **Code toggles are named by what they say.** myst-nb labels each hidden cell's
  ``<summary>`` "Toggle hidden content" while it shows "Show code cell source", so a
  speech-input user who says what they see does not reach it (WCAG 2.5.3, *Label in Name*).
  The summary is written here without that label: its name is its visible text, and a
  ``<details>`` already tells its open or closed state.
- **Subscripts are set as subscripts.** The pages write attention's weight on a position's own
  token as ``α_tt``, as the code names it; in a link's underline its underscore vanishes and it
  reads "α tt". After the build, the text of every page's body sets it as α with a subscript tt
  (:func:`set_subscripts`), leaving code, attributes and the page's title as written.
- **Light pages, no console errors.** The theme loads the whole Font Awesome bundle (1.5 MB of
  JavaScript) for about fifteen icons: after the build, each page loads ``_static/icons.js``
  instead, which holds only the icons the pages use, read from that same bundle
  (:func:`write_icons`), and draws them as inline SVG as the bundle did. A script the theme's
  extensions add twice (sphinx-thebe's configuration, whose second copy redeclares a
  constant) is included once, and sphinx-design's assets only on a page that uses them
  (:func:`include_scripts_once`).
"""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path

#: Written by :func:`residual_lib.pages.book.build` into the staged sources (a dot file: Sphinx's
#: ``exclude_patterns`` keep it out of the book).
MARKER = ".residual-book-staged"

UNSTAGED = ("build the book with `python -m residual_lib book --profile cpu` (or `make book`): it executes the "
            "notebooks from the run records; `jupyter-book build .` alone renders them empty")


class UnstagedBook(SystemExit):
    """Raised at ``builder-inited`` for sources that were not staged. A ``SystemExit``, not a
    ``SphinxError``: jupyter-book turns a Sphinx error into a boxed message and a traceback,
    while this passes through it and ends the process with the one line and status 1."""


def require_staged(app) -> None:
    """``builder-inited``: refuse a source folder that ``python -m residual_lib book`` did not stage."""
    if not (Path(app.srcdir) / MARKER).is_file():
        raise UnstagedBook(UNSTAGED)


def visit_hide_input(self, node) -> None:
    """myst-nb's ``visit_HideCellInput`` less the summary's ``aria-label``."""
    classes = " ".join(node["classes"])
    self.body.append(f'<details class="admonition hide {classes}">\n<summary>\n')
    self.body.append(f'<p class="collapsed admonition-title">{escape(node["prompt_show"])}</p>\n')
    self.body.append(f'<p class="expanded admonition-title">{escape(node["prompt_hide"])}</p>\n')
    self.body.append("</summary>\n")


def include_scripts_once(app, pagename, templatename, context, doctree) -> None:
    """``html-page-context``: each script the page includes, once (the first of equal ones), and
    none of sphinx-design's assets on a page that uses none of its components."""
    seen, kept = set(), []
    for script in context.get("script_files", []):
        attributes = getattr(script, "attributes", {})
        # an inline script's filename is None or "" depending on who added it
        key = (str(getattr(script, "filename", script) or ""), tuple(sorted((k, str(v)) for k, v in attributes.items())))
        if key not in seen:
            seen.add(key)
            kept.append(script)
    if "script_files" in context:
        context["script_files"][:] = kept
    # sphinx-design's styles and tab script (60 kB) on a page with none of its components
    if "sd-" not in context.get("body", ""):
        for name, unused in (("script_files", "design-tabs.js"), ("css_files", "sphinx-design.min.css")):
            if name in context:
                context[name][:] = [f for f in context[name]
                                    if Path(str(getattr(f, "filename", f) or "")).name != unused]


#: One icon of the bundle: ``name:[width,height,[aliases],"unicode","path"]``.
_ICON = re.compile(r'(?:"([^"]+)"|([A-Za-z_$][\w$]*)|(\d+)):\[(\d+),(\d+),\[([^\]]*)\],"[0-9a-f]*",("(?:[^"\\]|\\.)*")\]')
_BUNDLE_TAG = re.compile(r'<script defer src="([^"]*)_static/scripts/fontawesome\.js(?:\?[^"]*)?"></script>')
_STYLES = {"fa-solid": "fas", "fas": "fas", "fa-regular": "far", "far": "far", "fa-brands": "fab", "fab": "fab"}


def bundle_icons(bundle: str) -> dict[str, dict[str, tuple[int, int, str]]]:
    """The icons of a Font Awesome free bundle by style (``fas``, ``far``, ``fab``) and name
    (aliases included): ``(width, height, path)``."""
    packs: dict[str, dict] = {}
    for defined in re.finditer(r'\(function\(\)\{\w+\("(fa[bsr])",(\w+)\)', bundle):
        start = bundle.rfind(f"var {defined.group(2)}={{", 0, defined.start())
        icons = {}
        for entry in _ICON.finditer(bundle, start, defined.start()):
            icon = (int(entry.group(4)), int(entry.group(5)), json.loads(entry.group(7)))
            icons[entry.group(1) or entry.group(2) or entry.group(3)] = icon
            for alias in re.findall(r'"([^"]+)"', entry.group(6)):
                icons.setdefault(alias, icon)
        packs.setdefault(defined.group(1), icons)
    return packs


_ICONS_JS = """/* The book's icons: those of the Font Awesome Free bundle (CC BY 4.0, fontawesome.com) that its
   pages use, drawn as inline SVG, as the bundle draws them. Written by residual_lib.pages.sphinxext. */
(() => {
  const ICONS = %s;
  const STYLES = %s;
  const SVG = "http://www.w3.org/2000/svg";
  function draw(root) {
    for (const icon of root.querySelectorAll("i[class*='fa-'], span[class*='fa-']")) {
      const classes = Array.from(icon.classList);
      const style = classes.map((c) => STYLES[c]).find(Boolean) || "fas";
      const name = classes.find((c) => c.startsWith("fa-") && ICONS[`${style} ${c.slice(3)}`]);
      if (!name) continue;
      const [width, height, d] = ICONS[`${style} ${name.slice(3)}`];
      const svg = document.createElementNS(SVG, "svg");
      for (const {name: attribute, value} of Array.from(icon.attributes)) svg.setAttribute(attribute, value);
      svg.setAttribute("class", ["svg-inline--fa", ...classes.filter((c) => !STYLES[c])].join(" "));
      svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
      svg.setAttribute("aria-hidden", "true");
      svg.setAttribute("focusable", "false");
      const path = document.createElementNS(SVG, "path");
      path.setAttribute("fill", "currentColor");
      path.setAttribute("d", d);
      svg.appendChild(path);
      icon.replaceWith(svg);
    }
  }
  // sized by _static/verdicts.css, as the icons drawn into the pages at build time
  document.addEventListener("DOMContentLoaded", () => {
    draw(document);
    new MutationObserver(() => draw(document)).observe(document.body, {childList: true, subtree: true});
  });
})();
"""


#: An empty icon element the theme writes, ``<i class="fa-solid fa-bars" ...></i>``.
_ICON_TAG = re.compile(r'<(i|span)\b([^>]*?)\bclass="([^"]*\bfa-[^"]*)"([^>]*)></\1>')


def inline_icon(match: re.Match, icons: dict) -> str:
    """The SVG the Font Awesome script would draw for one icon element (the element kept when
    its icon is unknown): its other attributes kept, hidden from screen readers as the
    script hides it."""
    before, classes, after = match.group(2), match.group(3).split(), match.group(4)
    style = next((_STYLES[c] for c in classes if c in _STYLES), "fas")
    name = next((c[3:] for c in classes if c.startswith("fa-") and f"{style} {c[3:]}" in icons), None)
    if name is None:
        return match.group(0)
    width, height, path = icons[f"{style} {name}"]
    kept = " ".join(c for c in classes if c not in _STYLES)
    attributes = " ".join(a.strip() for a in (before, after) if a.strip())
    return (f'<svg {attributes + " " if attributes else ""}class="svg-inline--fa {kept}" viewBox="0 0 {width} '
            f'{height}" aria-hidden="true" focusable="false"><path fill="currentColor" d="{path}"></path></svg>')


def write_icons(app, exception) -> None:
    """``build-finished``: write ``_static/icons.js`` with the icons the built pages use, and
    point every page at it instead of the theme's whole Font Awesome bundle. Where the bundle
    is not there or cannot be read, the pages keep it."""
    out = Path(app.outdir)
    bundle = out / "_static" / "scripts" / "fontawesome.js"
    if exception is not None or app.builder.format != "html" or not bundle.is_file():
        return
    packs = bundle_icons(bundle.read_text(encoding="utf-8"))
    pages = list(out.rglob("*.html"))
    used: dict[str, tuple] = {}
    for page in pages:
        for classes in re.findall(r'<(?:i|span)\b[^>]*\bclass="([^"]*\bfa-[^"]*)"', page.read_text(encoding="utf-8")):
            names = classes.split()
            style = next((_STYLES[c] for c in names if c in _STYLES), "fas")
            for name in names:
                if name.startswith("fa-") and name[3:] in packs.get(style, {}):
                    used[f"{style} {name[3:]}"] = packs[style][name[3:]]
    if not used:
        return
    script = _ICONS_JS % (json.dumps(dict(sorted(used.items())), separators=(",", ":")), json.dumps(_STYLES))
    (out / "_static" / "icons.js").write_text(script, encoding="utf-8")
    for page in pages:
        text = page.read_text(encoding="utf-8")
        # drawn into the page itself: an <i> left for a script to replace would make the theme's
        # CSS fetch Font Awesome's web fonts (270 kB) for the moment before it runs
        text = _ICON_TAG.sub(lambda m: inline_icon(m, used), text)
        lighter = _BUNDLE_TAG.sub(lambda m: f'<script defer src="{m.group(1)}_static/icons.js"></script>', text)
        lighter = re.sub(r'<link rel="preload" as="script" href="[^"]*_static/scripts/fontawesome\.js[^"]*"\s*/?>\n?',
                         "", lighter)
        if lighter != text:
            page.write_text(lighter, encoding="utf-8")


#: Names the pages write with an underscore, and how their text sets them.
SUBSCRIPTS = {"α_tt": "α<sub>tt</sub>"}
#: What in a page's body is not text to set: a comment, an element whose content is code or not
#: text at all (taken whole, up to its own end tag), and a tag (whose quoted attributes may hold ">").
_NOT_TEXT = re.compile(r"<!--.*?-->|<(script|style|pre|code|kbd|samp|textarea|title)\b[^>]*>.*?</\1\s*>"
                       r"""|<(?:[^>"']|"[^"]*"|'[^']*')*>""", re.S | re.I)


def set_subscripts(page: str) -> str:
    """``page`` with every name of :data:`SUBSCRIPTS` in the text of its body set as written there:
    not in a comment, a tag's attributes, the head, or code (:data:`_NOT_TEXT`)."""
    start = page.find("<body")
    if start < 0 or not any(name in page[start:] for name in SUBSCRIPTS):
        return page
    out, at = [page[:start]], start

    def text(part: str) -> str:
        for name, html in SUBSCRIPTS.items():
            part = part.replace(name, html)
        return part

    for match in _NOT_TEXT.finditer(page, start):
        out += [text(page[at:match.start()]), match.group(0)]
        at = match.end()
    return "".join(out) + text(page[at:])


def write_subscripts(app, exception) -> None:
    """``build-finished``: :func:`set_subscripts` on every page of the built book."""
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    for page in out.rglob("*.html"):
        if "_static" in page.relative_to(out).parts:
            continue
        text = page.read_text(encoding="utf-8")
        set_ = set_subscripts(text)
        if set_ != text:
            page.write_text(set_, encoding="utf-8")


def setup(app):
    app.setup_extension("myst_nb")  # its node first, so that this visitor replaces its own
    from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput

    app.add_node(HideCodeCellNode, override=True, html=(visit_hide_input, depart_HideCellInput))
    app.connect("builder-inited", require_staged)
    app.connect("html-page-context", include_scripts_once, priority=100)
    app.connect("build-finished", write_icons)
    app.connect("build-finished", write_subscripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
