"""The rendered book, as a reader sees it: built from smoke records, read as HTML and in
headless Chromium at a laptop and a phone width."""

from __future__ import annotations

import html as html_lib
import re
from pathlib import Path

import pytest
from conftest import SMOKE_SEEDS as SEEDS

from residual_lib import paper, scorecard
from residual_lib.execute import all_notebooks

NOTEBOOKS = all_notebooks()
CHAPTER_CLAIMS = {  # chapters that open with a verdict box, and a claim each must show
    "04_joint_collapse": "joint_collapse_10m", "05_confounds": "gain_confound", "06_central": "asymmetry_10m",
    "07_mechanism": "mixer_test", "08_reproduction": "intermediate_reproduction", "10_ffn_escape": "ffn_collapse_10m"}
MACHINE_PATHS = ("/work/", "/tmp/", "/root/", "/home/")


def _text(path: Path) -> str:
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", " ", path.read_text())))


def _article(path: Path) -> str:
    """The page's main text (empty for a page without one, e.g. the index's redirect)."""
    page = path.read_text()
    start = page.find('<article class="bd-article"')
    return page[start:page.index("</article>", start)] if start >= 0 else ""


def test_the_book_builds_from_records_with_a_verdict_per_claim(built_book):
    html = (built_book / "book" / "scorecard.html").read_text()
    blocks = re.findall(r'<details class="claim-block" id="([^"]+)">(.*?)</details>', html, flags=re.S)
    assert {anchor for anchor, _ in blocks} == {scorecard.claim_anchor(c) for c in paper.claims().claim}
    for _, block in blocks:
        assert 'class="verdict v-' in block and "<em>Rule:</em>" in block or "not run yet" in block
    intro = _text(built_book / "book" / "intro.html")
    assert "records of the smoke profile" in intro and "2 seeds per variant" in intro
    assert any((built_book / "_images").glob("*.png"))
    for page in ("book/not_reproduced", "book/confounds", "notebooks/03_setup", "notebooks/08_reproduction"):
        assert (built_book / f"{page}.html").is_file()
    titles = {re.search(r"<title>([^<&]*)", (built_book / "notebooks" / f"{p.stem}.html").read_text()).group(1)
              for p in NOTEBOOKS}
    assert len(titles) == len(NOTEBOOKS)  # every chapter has its own title


def test_the_site_holds_no_path_of_the_building_machine_and_no_injected_parameters(built_book):
    leaks = [str(p.relative_to(built_book)) for p in built_book.rglob("*") if p.is_file()
             and p.suffix in (".html", ".ipynb", ".txt", ".js", ".svg")
             and any(root in p.read_text(errors="ignore") for root in MACHINE_PATHS)]
    assert not leaks
    staged = [p for p in (built_book.parent / "source").rglob("*.ipynb")
              if any(root in p.read_text() for root in MACHINE_PATHS)]
    assert not staged
    pages = list(built_book.rglob("*.html"))
    assert pages and not any('"injected-parameters"' in p.read_text() or "train_missing = False" in p.read_text()
                             for p in pages)


def test_every_figure_is_numbered_with_a_caption_and_alt_text(built_book):
    figures = 0
    for page in built_book.rglob("*.html"):
        if page.name in ("search.html", "genindex.html") or "_static" in page.parts:
            continue
        article = _article(page)
        images = re.findall(r"<img [^>]*>", article)
        figures_html = re.findall(r"<figure[^>]*>(.*?)</figure>", article, flags=re.S)
        captioned = [(re.search(r"<img ([^>]*)>", f).group(1), re.search(r"<figcaption>(.*?)</figcaption>", f,
                                                                        flags=re.S).group(1))
                     for f in figures_html if "<img " in f and "<figcaption>" in f]
        assert len(captioned) == len(images), (page.name, len(images), len(captioned))
        for attributes, caption in captioned:
            alt = re.search(r'alt="([^"]*)"', attributes).group(1)
            assert len(alt) > 30 and not re.fullmatch(r"[0-9a-f]{64}\.\w+", alt), (page.name, alt)
            assert re.search(r'class="caption-number">Fig\. \d+', caption), (page.name, caption[:80])
        figures += len(images)
    assert figures >= 10


def test_code_is_hidden_behind_toggles_and_tables_use_one_format(built_book):
    for path in [*NOTEBOOKS, *sorted((Path(__file__).resolve().parents[1] / "book").glob("*.py"))]:
        article = _article(built_book / path.parent.name / f"{path.stem}.html")
        inputs = re.findall(r'<div class="(cell [^"]*)"', article)
        shown = [c for c in inputs if "tag_hide-input" not in c]
        assert not shown, (path.stem, shown)
        assert not re.search(r"<td[^>]*>\s*(?:nan|NaN|None|<NA>)\s*</td>", article), path.stem
        assert 'class="dataframe"' not in article, path.stem  # every table through residual_lib.tables
        assert not re.search(r"\d\.\d{5,}", re.sub(r"<[^>]+>", " ", article)), path.stem  # no long decimals


def test_chapters_open_with_their_verdicts_linking_to_the_scorecard(built_book):
    anchors = set(re.findall(r'id="(claim-[^"]+)"', (built_book / "book" / "scorecard.html").read_text()))
    for chapter, claim in CHAPTER_CLAIMS.items():
        article = _article(built_book / "notebooks" / f"{chapter}.html")
        box = article[article.index('class="verdict-box"'):]
        assert article.index('class="verdict-box"') < article.find("<img") or "<img" not in article
        links = re.findall(r'href="\.\./book/scorecard\.html#(claim-[^"]+)"', box)
        assert scorecard.claim_anchor(claim) in links and set(links) <= anchors, chapter
        assert f"seed(s) {', '.join(str(s) for s in sorted(SEEDS))}" in _text(built_book / "notebooks" /
                                                                            f"{chapter}.html"), chapter


def test_glued_numbers_read_as_prose_not_code(built_book):
    intro = (built_book / "book" / "intro.html").read_text()
    pasted = re.findall(r'<span class="pasted-text">(.*?)</span>', intro)
    assert len(pasted) >= 10 and all(p.strip() for p in pasted)
    assert not re.search(r"<code[^>]*>[^<]*<span class=\"pasted-text\"", intro)
    assert "{glue" not in intro


def test_every_notebook_page_has_a_colab_button_to_its_repository_twin(built_book):
    import yaml

    from residual_lib.book import ROOT, pages

    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    slug = url.removeprefix("https://github.com/")
    for page in pages():
        rel = f"{page.parent.name}/{page.stem}"
        html = (built_book / f"{rel}.html").read_text()
        assert f"https://colab.research.google.com/github/{slug}/blob/main/{rel}.ipynb" in html, rel
        assert (page.with_suffix(".ipynb")).is_file(), f"{rel}.ipynb is missing: run make notebooks"


def test_every_notebook_says_how_to_switch_to_the_books_profile():
    import nbformat

    from residual_lib.book import pages

    for page in pages():  # in the Colab twin, which is where a reader runs it
        cells = nbformat.read(page.with_suffix(".ipynb"), as_version=4).cells
        parameters = next(i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", []))
        before = " ".join(c.source for c in cells[:parameters] if c.cell_type == "markdown")
        default = re.search(r'^profile = "(\w+)"', cells[parameters].source, flags=re.M).group(1)
        assert f"runs the `{default}` profile by default" in before, page.name
        assert 'set `profile = "cpu"`' in before and "papermill" in before, page.name


def test_notebook_code_lines_fit_the_code_box():
    import jupytext

    from residual_lib.book import pages

    long = [(page.name, line) for page in pages() for cell in jupytext.read(page).cells
            if cell.cell_type == "code" and "remove-cell" not in cell.metadata.get("tags", [])
            for line in cell.source.splitlines() if len(line) > 88]
    assert not long


def _contrast(a: str, b: str) -> float:
    def luminance(css: str) -> float:
        rgb = [float(x) / 255 for x in re.findall(r"[\d.]+", css)[:3]]
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_the_book_in_a_real_browser(built_book):
    """Headless Chromium at 1280x800 and 390x844: the verdict grid is whole on screen, no page
    scrolls sideways on the phone, every figure loads, verdict colours meet WCAG AA in light
    and dark mode. Saves screenshots of three pages at both widths under test-output/."""
    import functools
    import http.server
    import os
    import shutil
    import threading

    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver_path):
        if os.environ.get("RESIDUAL_REQUIRE_BROWSER"):
            pytest.fail("chromium and chromedriver are required: apt-get install chromium chromium-driver")
        pytest.skip("chromium and chromedriver not installed")
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(built_book))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--hide-scrollbars", "--window-size=1300,1800"):
        options.add_argument(flag)
    out = Path(__file__).resolve().parents[1] / "test-output"
    out.mkdir(exist_ok=True)
    pages = ["book/intro.html", "book/scorecard.html", "book/not_reproduced.html", "book/confounds.html",
             *[f"notebooks/{p.stem}.html" for p in NOTEBOOKS]]
    shots = {"book/intro.html": "intro", "book/scorecard.html": "scorecard", "notebooks/06_central.html": "06_central"}
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver_path))
    try:
        driver.get(f"{base}/index.html")  # redirects to the introduction
        WebDriverWait(driver, 15).until(lambda d: d.current_url.endswith("book/intro.html"))
        assert "what holds up" in driver.title

        driver.get(f"{base}/book/scorecard.html")
        cells = driver.find_elements(By.CSS_SELECTOR, "#verdict-grid td.verdict")
        assert {c.get_attribute("title") for c in cells} <= set(scorecard.VERDICTS) and cells
        rows = driver.find_elements(By.CSS_SELECTOR, "#verdict-grid tbody tr")
        assert [r.find_element(By.TAG_NAME, "th").text for r in rows] == [
            scorecard.TITLES[c] for c in dict.fromkeys(paper.claims().claim)]

        # whole on screen at a laptop and a phone width: the grid, and every page on the phone
        edges = ("const g = document.getElementById('verdict-grid');"
                 "return [g ? g.getBoundingClientRect().right : 0, window.innerWidth,"
                 " document.documentElement.scrollWidth]")
        loaded = ("const imgs = Array.from(document.images).filter(i => i.closest('article'));"
                  "imgs.forEach(i => i.scrollIntoView());"
                  "return [imgs.length, imgs.filter(i => i.complete && i.naturalWidth > 0).length]")
        for width, height, mobile in ((1280, 800, False), (390, 844, True)):
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                   {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})
            for page in pages:
                driver.get(f"{base}/{page}")
                right, viewport, document_width = driver.execute_script(edges)
                assert right <= viewport and document_width <= viewport, (page, width, right, document_width)
                if page in shots:
                    WebDriverWait(driver, 15).until(lambda d: len(set(d.execute_script(loaded))) == 1)
                    driver.execute_script("window.scrollTo(0, 0)")
                    driver.save_screenshot(str(out / f"{shots[page]}_{width}.png"))
        driver.get(f"{base}/notebooks/06_central.html")
        WebDriverWait(driver, 15).until(lambda d: d.execute_script(loaded)[1] >= 1)

        # verdict colours, as the browser computes them, in light and in dark mode
        for scheme in ("light", "dark"):
            driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                                   {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
            driver.get(f"{base}/book/scorecard.html")
            assert driver.execute_script("return document.documentElement.dataset.theme") == scheme
            pairs = driver.execute_script(
                "return Array.from(document.querySelectorAll('.verdict')).map(e => {"
                " const s = getComputedStyle(e); return [e.className, s.color, s.backgroundColor]; })")
            assert len(pairs) > 20
            for name, color, background in pairs:
                assert _contrast(color, background) >= 4.5, (scheme, name, color, background)
            # the text around the verdicts, on whatever background shows through (a chapter's box too)
            around = []
            for page in ("book/scorecard.html", "notebooks/04_joint_collapse.html"):
                driver.get(f"{base}/{page}")
                around += driver.execute_script(
                    "const bg = e => { while (e) { const c = getComputedStyle(e).backgroundColor;"
                    " if (c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') return c; e = e.parentElement; }"
                    " return 'rgb(255, 255, 255)'; };"
                    "return Array.from(document.querySelectorAll('#verdict-grid th, .claim-block summary .claim-title,"
                    " .claim-block p, .verdict-box-title, .verdict-box li'))"
                    ".map(e => [e.textContent.slice(0, 30), getComputedStyle(e).color, bg(e)]);")
            assert len(around) > 20
            for text, color, background in around:
                assert _contrast(color, background) >= 4.5, (scheme, text, color, background)
    finally:
        driver.quit()
        server.shutdown()


def test_the_book_shows_only_seeds_every_section_has(smoke_results, tmp_path):
    """A seed whose central runs exist but whose mixer run does not is left out of the book."""
    import shutil

    from residual_lib.book import recorded_seeds

    assert recorded_seeds(smoke_results, "smoke") == SEEDS
    copy = tmp_path / "results"
    shutil.copytree(smoke_results, copy)
    for path in (copy / "smoke").glob(f"mixer_seed{SEEDS[1]}_*.json"):
        path.unlink()
    assert recorded_seeds(copy, "smoke") == SEEDS[:1]


def test_staging_hides_code_removes_injected_parameters_and_captions_figures(tmp_path):
    """What the book build does to an executed notebook, on a notebook made for the test."""
    import matplotlib

    matplotlib.use("Agg")
    import nbformat
    from IPython.core.interactiveshell import InteractiveShell

    from residual_lib import plots
    from residual_lib.book import _clean_executed

    shell = InteractiveShell.instance()
    published = []
    shell.display_pub.publish = lambda data, metadata=None, **kw: published.append((data, metadata or {}))
    fig, ax = plots.plt.subplots()
    plots.show(fig, "fig-test", "A caption.", "A description of the figure for screen readers.")
    with pytest.raises(ValueError, match="fig-"):
        plots.show(fig, "test", "A caption.", "Alt text.")
    data, metadata = published[0]
    assert "image/png" in data and metadata["residual_lib"]["name"] == "fig-test"

    nb = nbformat.v4.new_notebook(metadata={"papermill": {"input_path": "/home/someone/06.ipynb",
                                                          "output_path": "/tmp/x/06.ipynb"}})
    nb.cells = [nbformat.v4.new_code_cell("profile = 'cpu'", metadata={"tags": ["injected-parameters"]}),
                nbformat.v4.new_code_cell("x = 1"),
                nbformat.v4.new_code_cell("plots.show(...)", outputs=[nbformat.v4.new_output(
                    "display_data", data={"image/png": "AAAA"}, metadata=metadata)]),
                nbformat.v4.new_code_cell("shown", metadata={"tags": ["show-input"]})]
    path = tmp_path / "06_central.ipynb"
    nbformat.write(nb, path)
    _clean_executed(path, "notebooks/06_central.py")
    cells = nbformat.read(path, as_version=4).cells
    assert "remove-cell" in cells[0].metadata.tags
    assert cells[1].metadata.tags == ["hide-input"] and "hide-input" not in cells[3].metadata.tags
    assert cells[2].metadata.mystnb == {"figure": {"name": "fig-test", "caption": "A caption."},
                                        "image": {"alt": "A description of the figure for screen readers."}}
    assert "residual_lib" not in cells[2].outputs[0].metadata
    text = path.read_text()
    assert "/home/" not in text and "/tmp/" not in text and "notebooks/06_central.py" in text
