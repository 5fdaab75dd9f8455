"""The rendered book, as a reader sees it: built from smoke records, read as HTML and in
headless Chromium at a laptop and a phone width."""

from __future__ import annotations

import html as html_lib
import re
from pathlib import Path

import pytest
from conftest import SMOKE_SEEDS as SEEDS
from conftest import TRANSIENT

from residual_lib.pages import scorecard
from residual_lib.pages.execute import all_notebooks
from residual_lib.study import paper

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


def _reader_text(path: Path) -> str:
    """The page's main text as a reader sees it: prose and outputs, without the code behind
    the "Show code cell source" toggles."""
    article = re.sub(r'<details class="[^"]*above-input[^"]*">.*?</details>', " ", _article(path), flags=re.S)
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", " ", article)))


def test_the_book_builds_from_records_with_a_verdict_per_claim(built_book):
    html = (built_book / "book" / "scorecard.html").read_text()
    blocks = re.findall(r'<details class="claim-block" id="([^"]+)">(.*?)</details>', html, flags=re.S)
    assert {anchor for anchor, _ in blocks} == {scorecard.claim_anchor(c) for c in paper.claims().claim}
    for _, block in blocks:
        assert 'class="verdict v-' in block and "<em>Rule:</em>" in block or "not run at this scale" in block
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
        numbers = []
        for attributes, caption in captioned:
            alt = re.search(r'alt="([^"]*)"', attributes).group(1)
            assert len(alt) > 30 and not re.fullmatch(r"[0-9a-f]{64}\.\w+", alt), (page.name, alt)
            number = re.search(r'class="caption-number">Fig\. ([\d.]+) ', caption)
            assert number, (page.name, caption[:80])
            numbers.append(number.group(1))
        # numbered per chapter: Fig. 10.2 is chapter 10's second; other pages count from 1
        chapter = re.match(r"(\d+)_", page.stem)
        prefix = f"{int(chapter.group(1))}." if chapter else ""
        assert numbers == [f"{prefix}{k}" for k in range(1, len(numbers) + 1)], (page.name, numbers)
        figures += len(images)
    assert figures >= 10


def test_code_is_hidden_behind_toggles_and_tables_use_one_format(built_book):
    for path in [*NOTEBOOKS, *sorted((Path(__file__).resolve().parents[1] / "book").glob("*.py"))]:
        article = _article(built_book / path.parent.name / f"{path.stem}.html")
        inputs = re.findall(r'<div class="(cell [^"]*)"', article)
        shown = [c for c in inputs if "tag_hide-input" not in c]
        assert not shown, (path.stem, shown)
        assert not re.search(r"<td[^>]*>\s*(?:nan|NaN|None|<NA>)\s*</td>", article), path.stem
        assert 'class="dataframe"' not in article, path.stem  # every table through residual_lib.pages.tables
        assert not re.search(r"\d\.\d{5,}", re.sub(r"<[^>]+>", " ", article)), path.stem  # no long decimals


def test_figures_are_numbered_per_chapter_and_references_follow(tmp_path):
    """The book's Sphinx extension, on a small project: a chapter's figures are N.1, N.2, a
    page outside the numbered chapters counts from 1, and a reference from another page
    names the figure by the number its caption shows."""
    from sphinx.application import Sphinx

    figure = ".. figure:: {image}\n   :name: {name}\n\n   A caption.\n\n"
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "dot.png").write_bytes(bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"))
    (tmp_path / "conf.py").write_text("extensions = ['residual_lib.pages.book']\nnumfig = True\n")
    (tmp_path / "index.rst").write_text(
        "Index\n=====\n\n" + figure.format(image="dot.png", name="fig-intro")
        + "See :numref:`fig-second` and :numref:`fig-intro`.\n\n"
        ".. toctree::\n\n   notebooks/03_setup\n   notebooks/10_escape\n")
    (tmp_path / "notebooks" / "03_setup.rst").write_text(
        "Setup\n=====\n\n" + figure.format(image="../dot.png", name="fig-setup"))
    (tmp_path / "notebooks" / "10_escape.rst").write_text(
        "Escape\n======\n\n" + figure.format(image="../dot.png", name="fig-first")
        + figure.format(image="../dot.png", name="fig-second"))
    out = tmp_path / "_build"
    app = Sphinx(str(tmp_path), str(tmp_path), str(out), str(tmp_path / ".doctrees"), "html",
                 status=None, warningiserror=True)
    app.build()
    numbers = {page: re.findall(r'class="caption-number">Fig\. ([\d.]+) ', (out / f"{page}.html").read_text())
               for page in ("index", "notebooks/03_setup", "notebooks/10_escape")}
    assert numbers == {"index": ["1"], "notebooks/03_setup": ["3.1"], "notebooks/10_escape": ["10.1", "10.2"]}
    index = _text(out / "index.html")
    assert "See Fig. 10.2 and Fig. 1 " in index


def test_the_setup_chapter_shows_readers_only_the_books_profiles_and_no_error_text(built_book):
    text = _reader_text(built_book / "notebooks" / "03_setup.html")
    assert "paper-10m" in text and "ladder-10m" in text and "cpu-dropout" in text
    assert "smoke" not in text and "Error" not in text


def test_without_the_gpt2_bpe_the_setup_chapter_says_so_in_one_sentence(tmp_path, monkeypatch):
    """Offline without a tiktoken cache: the BPE row is left out with a sentence that says
    why, and no exception's text reaches the page."""
    import nbformat

    from residual_lib.pages.book import ROOT
    from residual_lib.pages.execute import execute_notebook

    monkeypatch.delenv("RESIDUAL_DATA_DIR", raising=False)  # the packaged TinyShakespeare
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    for proxy in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):  # a download fails at once
        monkeypatch.setenv(proxy, "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    params = {"profile": "smoke", "results_dir": str(tmp_path / "results"), "train_missing": False}
    executed = execute_notebook(ROOT / "notebooks" / "03_setup.py", params, tmp_path / "out")
    shown = " ".join(str(value) for cell in nbformat.read(executed, as_version=4).cells
                     if "injected-parameters" not in cell.metadata.get("tags", [])
                     for output in cell.get("outputs", []) for key, value in output.get("data", {}).items()
                     if key.startswith("text/"))
    assert "The GPT-2 BPE corpus could not be loaded on the machine that built this page" in shown
    assert "shakespeare_char" in shown and "shakespeare_gpt2" not in shown
    assert "Error" not in shown and "smoke" not in shown


def test_chapters_open_with_their_verdicts_linking_to_the_scorecard(built_book):
    anchors = set(re.findall(r'id="(claim-[^"]+)"', (built_book / "book" / "scorecard.html").read_text()))
    for chapter, claim in CHAPTER_CLAIMS.items():
        article = _article(built_book / "notebooks" / f"{chapter}.html")
        box = article[article.index('class="verdict-box"'):]
        assert article.index('class="verdict-box"') < article.find("<img") or "<img" not in article
        links = re.findall(r'href="\.\./book/scorecard\.html#(claim-[^"]+)"', box)
        assert scorecard.claim_anchor(claim) in links and set(links) <= anchors, chapter
        assert f"seeds {', '.join(str(s) for s in sorted(SEEDS))}" in _text(built_book / "notebooks" /
                                                                            f"{chapter}.html"), chapter


def test_glued_numbers_read_as_prose_not_code(built_book):
    intro = (built_book / "book" / "intro.html").read_text()
    pasted = re.findall(r'<span class="pasted-text">(.*?)</span>', intro)
    assert len(pasted) >= 10 and all(p.strip() for p in pasted)
    assert not re.search(r"<code[^>]*>[^<]*<span class=\"pasted-text\"", intro)
    assert "{glue" not in intro
    # sentences glued as Prose keep their inline code on the intro: no Markdown shows through
    assert "`" not in _article(built_book / "book" / "intro.html")


def test_prose_is_markdown_on_its_page_and_inline_html_elsewhere():
    from residual_lib.pages.book import Prose

    prose = Prose("The ladder's FFNOnly at `cpu` *leaves* the floor.")
    assert prose._repr_markdown_() == "The ladder's FFNOnly at `cpu` *leaves* the floor."
    # no <p>: it sits in a sentence; quotes curled as on the rest of the page
    assert prose._repr_html_() == "The ladder’s FFNOnly at <code>cpu</code> <em>leaves</em> the floor."


def test_every_notebook_page_has_a_colab_button_to_its_repository_twin(built_book):
    import yaml

    from residual_lib.pages.book import ROOT, pages

    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    slug = url.removeprefix("https://github.com/")
    for page in pages():
        rel = f"{page.parent.name}/{page.stem}"
        html = (built_book / f"{rel}.html").read_text()
        assert f"https://colab.research.google.com/github/{slug}/blob/main/{rel}.ipynb" in html, rel
        assert (page.with_suffix(".ipynb")).is_file(), f"{rel}.ipynb is missing: run make notebooks"


def test_every_notebook_says_how_to_switch_to_the_books_profile():
    import nbformat

    from residual_lib.pages.book import pages

    for page in pages():  # in the Colab twin, which is where a reader runs it
        cells = nbformat.read(page.with_suffix(".ipynb"), as_version=4).cells
        parameters = next(i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", []))
        before = " ".join(c.source for c in cells[:parameters] if c.cell_type == "markdown")
        default = re.search(r'^profile = "(\w+)"', cells[parameters].source, flags=re.M).group(1)
        assert f"runs the `{default}` profile by default" in before, page.name
        assert 'set `profile = "cpu"`' in before and "papermill" in before, page.name


def test_notebook_code_lines_fit_the_code_box():
    import jupytext

    from residual_lib.pages.book import pages

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
        assert [r.find_element(By.CSS_SELECTOR, "th a").text for r in rows] == [  # α_tt's tt set as a subscript
            scorecard.TITLES[c].replace("α_tt", "αtt") for c in dict.fromkeys(paper.claims().claim)]

        # whole on screen at a laptop and a phone width: the grid, and every page on the phone
        edges = ("const g = document.getElementById('verdict-grid');"  # its box must not scroll either
                 "return [g ? g.getBoundingClientRect().right : 0,"
                 " g ? g.parentElement.getBoundingClientRect().right : window.innerWidth, window.innerWidth,"
                 " document.documentElement.scrollWidth]")
        loaded = ("const imgs = Array.from(document.images).filter(i => i.closest('article'));"
                  "imgs.forEach(i => i.scrollIntoView());"
                  "return [imgs.length, imgs.filter(i => i.complete && i.naturalWidth > 0).length]")
        # the introduction's first screen: the outcome in words (the tally), then the top of the
        # verdict grid; the central claim in sentences right after the grid
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})
        driver.get(f"{base}/book/intro.html")
        top, words, after = driver.execute_script(
            "const g = document.getElementById('verdict-grid');"
            "const ps = Array.from(document.querySelectorAll('article p'));"
            "const p = ps.find(p => /^Of the paper.s \\d+ claims/.test(p.textContent.trim()));"
            "const c = ps.find(p => p.textContent.includes('central claim'));"
            "return [g.getBoundingClientRect().top, p && (p.compareDocumentPosition(g) & 4) ? p.textContent : null,"
            " c && (g.compareDocumentPosition(c) & 4) ? c.textContent : null]")
        assert top <= 800 and words and "reproduced" in words, (top, words)
        assert after and "FFNOnly" in after
        # figures a phone reader can read: a 2x PNG drawn at >= 0.6 of its design size
        scale = ("return Array.from(document.querySelectorAll('article img')).filter(i => i.src.endsWith('.png'))"
                 ".map(i => { i.scrollIntoView(); return [i.src.slice(-40), i.clientWidth / (i.naturalWidth / 2)]; })")
        for width, height, mobile in ((1280, 800, False), (390, 844, True)):
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                   {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})
            if mobile:
                for page in ("notebooks/06_central.html", "notebooks/10_ffn_escape.html"):
                    driver.get(f"{base}/{page}")
                    WebDriverWait(driver, 15).until(lambda d: len(set(d.execute_script(loaded))) == 1)
                    drawn = driver.execute_script(scale)
                    assert drawn and all(r >= 0.6 for _, r in drawn), (page, drawn)
            for page in pages:
                driver.get(f"{base}/{page}")
                right, box, viewport, document_width = driver.execute_script(edges)
                assert right <= box + 0.5 and document_width <= viewport, (page, width, right, box, document_width)
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


@pytest.fixture
def browser(built_book):
    """Headless Chromium at 1280x800 on the built site, served locally: ``(driver, base URL)``."""
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

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(built_book)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--hide-scrollbars", "--window-size=1280,800"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the console, for the error checks
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver_path))
    try:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})
        yield driver, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        driver.quit()
        server.shutdown()


def test_a_link_to_a_claim_lands_on_its_block_open(browser):
    """The scorecard's claim blocks are folded; one named by the address's fragment opens and
    is scrolled into view: on loading the page, from a chapter's verdict box, and from the grid
    on the same page (the fragment changes, the page does not load again)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver, base = browser
    opened = "return Array.from(document.querySelectorAll('details.claim-block[open]')).map(d => d.id)"
    in_view = ("const r = document.getElementById(arguments[0]).getBoundingClientRect();"
               "return r.top >= 0 && r.top < window.innerHeight / 2")

    def lands_open(anchor):
        WebDriverWait(driver, 10).until(lambda d: anchor in d.execute_script(opened))
        WebDriverWait(driver, 10).until(lambda d: d.execute_script(in_view, anchor))

    driver.get(f"{base}/book/scorecard.html")
    assert driver.execute_script(opened) == []  # folded when no link names one
    driver.get(f"{base}/book/scorecard.html#claim-asymmetry-10m")
    lands_open("claim-asymmetry-10m")
    assert driver.execute_script(opened) == ["claim-asymmetry-10m"]

    anchor = scorecard.claim_anchor(CHAPTER_CLAIMS["05_confounds"])
    driver.get(f"{base}/notebooks/05_confounds.html")
    link = driver.find_element(By.CSS_SELECTOR, f'.verdict-box a[href$="#{anchor}"]')
    driver.execute_script("arguments[0].click()", link)
    WebDriverWait(driver, 10).until(lambda d: d.current_url.endswith(f"book/scorecard.html#{anchor}"))
    lands_open(anchor)

    other = scorecard.claim_anchor("ffn_collapse_10m")
    driver.execute_script("window.scrollTo(0, 0); window.loaded = true")
    link = driver.find_element(By.CSS_SELECTOR, f'#verdict-grid a[href$="#{other}"]')
    driver.execute_script("arguments[0].click()", link)
    lands_open(other)
    assert driver.execute_script("return window.loaded")  # the same page: only the fragment changed


def test_figure_captions_read_as_text_in_light_and_dark_mode(browser):
    """Captions in the body text's weight (the theme sets them light, weight 300) and at WCAG
    AA contrast on the page behind them, in both colour schemes."""
    driver, base = browser
    for scheme in ("light", "dark"):
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                               {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
        driver.get(f"{base}/notebooks/04_joint_collapse.html")
        assert driver.execute_script("return document.documentElement.dataset.theme") == scheme
        captions = driver.execute_script(
            "const bg = e => { while (e) { const c = getComputedStyle(e).backgroundColor;"
            " if (c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') return c; e = e.parentElement; }"
            " return 'rgb(255, 255, 255)'; };"
            "return Array.from(document.querySelectorAll('article figure figcaption .caption-text'))"
            ".map(e => { const s = getComputedStyle(e); return [e.textContent.slice(0, 30), s.color, bg(e),"
            " parseInt(s.fontWeight), parseFloat(s.fontSize)]; })")
        assert len(captions) >= 2
        for text, color, background, weight, size in captions:
            assert weight >= 400 and size >= 14, (scheme, text, weight, size)
            assert _contrast(color, background) >= 4.5, (scheme, text, color, background)


def test_the_book_shows_only_seeds_every_section_has(smoke_results, tmp_path):
    """A seed whose central runs exist but whose mixer run does not is left out of the book."""
    import shutil

    from residual_lib.pages.book import recorded_seeds

    assert recorded_seeds(smoke_results, "smoke") == SEEDS
    copy = tmp_path / "results"
    shutil.copytree(smoke_results, copy, ignore=TRANSIENT)
    for path in (copy / "smoke").glob(f"mixer_seed{SEEDS[1]}_*.json"):
        path.unlink()
    assert recorded_seeds(copy, "smoke") == SEEDS[:1]


def test_staging_hides_code_removes_injected_parameters_and_captions_figures(tmp_path):
    """What the book build does to an executed notebook, on a notebook made for the test."""
    import matplotlib

    matplotlib.use("Agg")
    import nbformat
    from IPython.core.interactiveshell import InteractiveShell

    from residual_lib.pages import plots
    from residual_lib.pages.book import _clean_executed

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


def test_numbers_read_one_way_on_every_page(built_book):
    """No "(s)" plurals, no "−0.000", no Python-style scientific notation (4.5e-07) in what a reader sees."""
    for page in [built_book / "book" / "intro.html", *sorted((built_book / "book").glob("*.html")),
                 *sorted((built_book / "notebooks").glob("*.html"))]:
        text = _reader_text(page)
        assert "(s)" not in text, page.name
        assert "−0.000" not in text and "-0.000" not in text, page.name
        assert not re.search(r"\d\.?\d*e[-+]\d\d", text), (page.name, re.search(r".{30}\d\.?\d*e[-+]\d\d.{10}", text))


# --------------------------------------------------------------------------- accessibility

BOOK_PAGES = ["book/intro.html", "book/scorecard.html", "book/not_reproduced.html", "book/confounds.html",
              *[f"notebooks/{p.stem}.html" for p in NOTEBOOKS]]

#: axe-core findings caused by the theme (pydata-sphinx-theme under sphinx-book-theme), not by
#: this book's HTML, CSS or scripts: (rule, pattern of the element's selector, why it is
#: excepted). Any other finding, of any impact, fails the test.
AXE_THEME_EXCEPTIONS = [
    ("aria-allowed-role", r"^#main-content$",
     "the theme writes <main role='main'>, a role that repeats the element's own: axe-core 3.1 reports "
     "it (minor), later axe-core versions do not, and a screen reader announces the same landmark"),
]

#: Settles the page before it is measured: no transition (the theme's colours fade for 0.15 s
#: when it applies the dark scheme, which a measurement taken meanwhile would catch halfway).
_STILL = ("const s = document.createElement('style');"
          "s.textContent = '*, *::before, *::after { transition: none !important; animation: none !important; }';"
          "document.head.appendChild(s);")

#: Controls whose label (aria-label) leaves out what they show: the words, and the titles of
#: visible icons, a sighted reader would say to a speech-input program (WCAG 2.5.3). axe-core
#: checks this from version 3.3 on (label-content-name-mismatch); the pinned 3.1 does not.
_LABEL_NOT_IN_NAME = """
const shown = e => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
const seen = e => Array.from(e.childNodes).map(n => n.nodeType === 3 ? n.textContent
  : n.nodeType !== 1 || !shown(n) ? ''
  : n.tagName.toLowerCase() === 'svg' ? (n.getAttribute('aria-hidden') === 'true' ? ''
                                          : ' ' + (n.querySelector('title') || {textContent: ''}).textContent)
  : ' ' + seen(n)).join('');
const norm = s => s.replace(/\\s+/g, ' ').trim().toLowerCase();
return Array.from(document.querySelectorAll('button, summary, a, [role="button"]')).filter(shown)
  .map(e => [e.outerHTML.slice(0, 100), norm(e.getAttribute('aria-label') || ''), norm(seen(e))])
  .filter(([, label, text]) => label && text && !label.includes(text));
"""


def _axe(driver) -> list[dict]:
    """axe-core's violations on the loaded page (the version axe-selenium-python bundles)."""
    import os

    try:
        from axe_selenium_python import Axe
    except ImportError:
        if os.environ.get("RESIDUAL_REQUIRE_BROWSER"):
            pytest.fail("axe-selenium-python is required: pip install -r requirements.txt")
        pytest.skip("axe-selenium-python not installed")
    driver.execute_script(_STILL)
    Axe(driver).inject()
    driver.set_script_timeout(120)
    found = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations), e => done(String(e)))")
    assert isinstance(found, list), found  # axe itself failed
    return found


def test_every_page_passes_axe_in_light_and_dark_mode(browser):
    """axe-core over every page of the book in both colour schemes: nothing but the theme's
    excepted findings (AXE_THEME_EXCEPTIONS); and every control's label names what it shows,
    the colour-mode button's following the mode it switches to."""
    driver, base = browser
    findings = []
    for scheme in ("light", "dark"):
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                               {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
        for page in BOOK_PAGES:
            driver.get(f"{base}/{page}")
            assert driver.execute_script("return document.documentElement.dataset.theme") == scheme
            for violation in _axe(driver):
                for node in violation["nodes"]:
                    target = " ".join(map(str, node["target"]))
                    if not any(rule == violation["id"] and re.search(pattern, target)
                               for rule, pattern, _ in AXE_THEME_EXCEPTIONS):
                        findings.append((scheme, page, violation["id"], violation["impact"], target,
                                         node.get("failureSummary", "")[:160]))
            if scheme == "light":
                findings += [(scheme, page, "label not in name", control, label, text)
                             for control, label, text in driver.execute_script(_LABEL_NOT_IN_NAME)]
    assert not findings, f"{len(findings)} findings:\n" + "\n".join(map(str, findings[:25]))

    # the colour-mode button after a click: another mode, another icon, the label follows it
    driver.get(f"{base}/book/intro.html")
    button = driver.find_element("css selector", ".theme-switch-button")
    before = button.get_attribute("aria-label")
    driver.execute_script("arguments[0].click()", button)
    try:
        assert button.get_attribute("aria-label") != before
        assert not driver.execute_script(_LABEL_NOT_IN_NAME)
    finally:
        driver.execute_script("localStorage.clear()")  # the mode chosen by the click is remembered


def test_code_toggles_are_named_by_the_words_they_show(built_book):
    """A hidden cell's toggle has no label of its own ("Toggle hidden content" where it shows
    "Show code cell source"): its name is its visible text."""
    summaries = [tag for page in BOOK_PAGES for tag in re.findall(r"<summary[^>]*>", _article(built_book / page))]
    assert len(summaries) >= 20
    assert not [tag for tag in summaries if "aria-label" in tag]


def test_every_claim_that_did_not_reproduce_is_a_section_in_the_pages_contents(built_book):
    """The claims on the 'What did not reproduce' page are headings of the page, one level below
    its title, each listed in the page's contents: not rubrics in a cell's output."""
    html = (built_book / "book" / "not_reproduced.html").read_text()
    article = _article(built_book / "book" / "not_reproduced.html")
    levels = [int(level) for level in re.findall(r"<h(\d)", article)]
    assert levels[0] == 1 and all(b - a <= 1 for a, b in zip(levels, levels[1:]))  # no level skipped
    sections = re.findall(r'<h2>.*?<a class="headerlink" href="#([^"]+)"', article)
    toc = html[html.index('id="pst-page-toc-nav"'):]
    listed = re.findall(r'href="#([^"]+)"', toc[:toc.index("</nav>")])
    claims = [s for s in sections if s != "not-run-at-this-scale"]
    assert claims and listed == sections
    assert 'class="rubric"' not in article
    for claim in claims:  # each with its verdict and a link to its row on the scorecard
        body = article[article.index(f'href="#{claim}"'):]
        body = body[:body.find("<h2>") if "<h2>" in body else None]
        assert 'class="verdict v-' in body and 'href="scorecard.html#claim-' in body, claim


def test_a_cell_tagged_markdown_output_puts_its_markdown_into_the_page(tmp_path):
    """Staging turns what a cell tagged markdown-output displayed into a Markdown cell after it
    (the page's own text, headings included); a cell so tagged that displayed none stops the build."""
    import nbformat

    from residual_lib.pages.book import _clean_executed

    markdown = nbformat.v4.new_output("display_data", data={"text/markdown": "## A claim\n\nIts verdict."})
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("Markdown(...)", metadata={"tags": ["hide-input", "markdown-output"]},
                                          outputs=[markdown]),
                nbformat.v4.new_code_cell("Markdown(...)", outputs=[markdown])]
    path = tmp_path / "page.ipynb"
    nbformat.write(nb, path)
    _clean_executed(path, "book/page.py")
    cells = nbformat.read(path, as_version=4).cells
    assert [c.cell_type for c in cells] == ["code", "markdown", "code"]
    assert cells[0].outputs == [] and "hide-input" in cells[0].metadata.tags
    assert cells[1].source == "## A claim\n\nIts verdict."
    assert cells[2].outputs[0].data["text/markdown"] == "## A claim\n\nIts verdict."  # untagged: untouched

    nb.cells[0].outputs = [nbformat.v4.new_output("stream", text="no markdown")]
    nbformat.write(nb, path)
    with pytest.raises(ValueError, match="markdown-output"):
        _clean_executed(path, "book/page.py")


def test_wide_tables_reflow_on_a_phone(browser):
    """At 390x844 no book table is wider than its column on the chapters with the widest
    tables: a table that would not fit shows each row as a block, each value beside its
    column's header; at a laptop width the same tables keep their table layout."""
    driver, base = browser
    measure = """
    return Array.from(document.querySelectorAll('article table.book-table')).map(t => {
      const box = t.parentElement;
      const heads = Array.from(t.tHead.rows[t.tHead.rows.length - 1].cells, c => c.textContent.trim());
      const labelled = Array.from(t.tBodies[0].rows)
        .every(r => Array.from(r.cells).every((c, i) => (c.dataset.label || '') === heads[i]));
      return [heads.join(' | ').slice(0, 60), t.getBoundingClientRect().width, box.clientWidth, box.scrollWidth,
              t.classList.contains('book-table-reflow'), getComputedStyle(t).display, labelled];
    });"""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})
    reflowed = 0
    for chapter in ("06_central", "10_ffn_escape"):
        driver.get(f"{base}/notebooks/{chapter}.html")
        tables = driver.execute_script(measure)
        assert tables, chapter
        for name, width, box, scroll, reflow, display, labelled in tables:
            assert width <= box + 1 and scroll <= box + 1, (chapter, name, width, box, scroll)
            assert labelled, (chapter, name)
            assert display == ("block" if reflow else "table"), (chapter, name, display)
            reflowed += reflow
    assert reflowed  # some table was too wide for the phone: the reflow made it fit, not its size

    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})
    driver.get(f"{base}/notebooks/06_central.html")
    assert {display for *_, display, _ in driver.execute_script(measure)} == {"table"}
    # a table of sentences (the scorecard's thresholds) reads as blocks at a laptop's width too, and
    # no table there scrolls sideways
    driver.get(f"{base}/book/scorecard.html")
    blocks = driver.execute_script("""return Array.from(document.querySelectorAll('table.book-table-blocks'),
        t => [getComputedStyle(t).display, getComputedStyle(t.tBodies[0].rows[0].cells[1]).textAlign]);""")
    assert blocks == [["block", "left"]], blocks
    assert all(width <= box + 1 and scroll <= box + 1 for _, width, box, scroll, *_ in driver.execute_script(measure))
    driver.get(f"{base}/notebooks/09_scale_ladder.html")  # eight columns of numbers: the rungs fit as a table
    assert all(scroll <= box + 1 for _, _, box, scroll, *_ in driver.execute_script(measure))


def test_jupyter_book_build_of_sources_not_staged_stops_with_one_line(tmp_path):
    """`jupyter-book build .` on the repository's sources, whose notebooks nothing executed,
    exits non-zero with one line naming the command that builds the book, and renders no page;
    the sources `python -m residual_lib book` stages carry the marker that lets them build."""
    import shutil
    import subprocess
    import sys
    from types import SimpleNamespace

    from residual_lib.pages.book import ROOT
    from residual_lib.pages.sphinxext import MARKER, UNSTAGED, require_staged

    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, tmp_path / name)
    for folder in ("book", "notebooks", "_static"):  # the notebooks' unexecuted .ipynb twins too
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    run = subprocess.run([str(Path(sys.executable).with_name("jupyter-book")), "build", "."], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert run.stderr.strip() == UNSTAGED and "python -m residual_lib book --profile cpu" in UNSTAGED
    assert not list((tmp_path / "_build").rglob("*.html"))

    (tmp_path / MARKER).write_text("staged\n")
    require_staged(SimpleNamespace(srcdir=str(tmp_path)))  # no exception


def test_a_strip_plot_is_drawn_the_same_every_time_and_leaves_numpys_generator_alone():
    import io

    import numpy as np
    import pandas as pd

    from residual_lib.pages import plots

    frame = pd.DataFrame({"variant": ["full", "attn_only"] * 5, "seed": range(10),
                          "final_val_loss": np.linspace(1.5, 2.0, 10)})

    def png(global_seed: int) -> bytes:
        np.random.seed(global_seed)
        fig = plots.final_losses(frame, floor=3.3)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", metadata={"Software": None})
        plots.plt.close(fig)
        return buffer.getvalue()

    assert png(1) == png(2)
    np.random.seed(3)
    expected = np.random.random()
    np.random.seed(3)
    plots.plt.close(plots.final_losses(frame, floor=3.3))
    assert np.random.random() == expected


def test_a_book_without_a_usable_seed_names_the_section_and_the_run_it_lacks(smoke_results, tmp_path):
    import shutil

    from residual_lib.pages.book import shortfall
    from residual_lib.storage.records import read_record

    results = tmp_path / "results"
    shutil.copytree(smoke_results, results, ignore=TRANSIENT)
    for path in (results / "smoke").glob("attn_only_seed1337_*.json"):
        if read_record(path)["gain"] == 2.0:  # the first seed's run at gain 2, which chapter 5 needs
            path.unlink()
    message = shortfall(results, "smoke")
    assert message.startswith("seed 1337 lacks 1 record that section 05_confounds needs under")
    assert message.endswith("run `python -m residual_lib sweep notebooks/05_confounds.py --profile smoke --seeds 1337"
                            f" --results {results}` first")  # a folder other than the default is named
    assert shortfall(tmp_path / "empty", "smoke").startswith("no complete central sweep under")


def test_the_introduction_describes_the_profile_its_book_was_built_from(built_book):
    """A smoke book says what smoke is; nothing of the cpu stand-in is hard-coded on the page."""
    text = _text(built_book / "book" / "intro.html")
    assert "2 layers, 32 wide, with context 32" in text and "smoke-dropout" in text
    assert "128 wide" not in text and "cpu-dropout" not in text


def _phone(driver) -> None:
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})


def test_on_a_phone_the_page_list_and_the_contents_open_when_tapped(browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver, base = browser
    _phone(driver)
    driver.get(f"{base}/notebooks/06_central.html")
    for kind in ("primary", "secondary"):
        shown = [b for b in driver.find_elements(By.CSS_SELECTOR, f".{kind}-toggle") if b.is_displayed()]
        assert len(shown) == 1, kind
        shown[0].click()
        dialog = driver.find_element(By.ID, f"pst-{kind}-sidebar-modal")
        WebDriverWait(driver, 5).until(lambda d: d.execute_script("return arguments[0].open", dialog))
        links = [a for a in dialog.find_elements(By.CSS_SELECTOR, "a") if a.is_displayed()]
        assert links and all(0 <= a.rect["x"] < 390 for a in links), kind  # on screen, not at left -292 px
        driver.execute_script("arguments[0].close()", dialog)


def test_the_tally_of_verdicts_is_in_the_first_screen_at_a_laptop_and_a_phone_width(browser):
    driver, base = browser
    for width, height, mobile in ((1280, 800, False), (390, 844, True)):
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})
        driver.get(f"{base}/book/intro.html")
        bottom = driver.execute_script(
            "const p = Array.from(document.querySelectorAll('article p')).find(p => /^Of the paper.s \\d+ claims/"
            ".test(p.textContent.trim())); return p ? p.getBoundingClientRect().bottom : null")
        assert bottom is not None and bottom <= height, (width, bottom)


def test_every_page_weighs_at_most_1_2_mb_and_logs_no_error(browser):
    """All that a page loads (HTML, scripts, styles, images, fonts) stays under 1.2 MB, and its
    console has no error: no script declared twice, no missing file, no warning from the theme."""
    driver, base = browser
    driver.get_log("browser")  # drop what came before
    for page in BOOK_PAGES:
        driver.get(f"{base}/{page}")
        driver.execute_script("window.scrollTo(0, document.body.scrollHeight)")  # lazy images load
        size = driver.execute_script(
            "return new Promise(done => setTimeout(() => done(performance.getEntriesByType('navigation')"
            ".concat(performance.getEntriesByType('resource')).reduce((n, e) => n + (e.decodedBodySize || 0), 0)),"
            " 500))")
        assert 0 < size <= 1.2e6, (page, size)
        errors = [e["message"] for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
        assert not errors, (page, errors)


def test_every_verdict_is_two_clicks_from_its_evidence(built_book):
    """Each claim block and each grid row links to the figure or table its verdict rests on, and
    that anchor exists on its page; the paper's section links to its chapter."""
    scorecard_page = (built_book / "book" / "scorecard.html").read_text()
    blocks = re.findall(r'<details class="claim-block" id="([^"]+)">(.*?)</details>', scorecard_page, re.S)
    assert len(blocks) == len(scorecard.EVIDENCE)
    for anchor, block in blocks:
        links = re.findall(r'<p class="claim-evidence"><a href="\.\./([^"#]+)(?:#([^"]+))?"', block)
        assert len(links) == 1, anchor
        page, target = links[0]
        assert (built_book / page).is_file(), (anchor, page)
        if target:
            assert f'id="{target}"' in (built_book / page).read_text(), (anchor, page, target)
    assert re.search(r'The paper \(<a href="\.\./notebooks/06_central\.html">section 6</a>\)', scorecard_page)
    grid = scorecard_page[scorecard_page.index('id="verdict-grid"'):]
    assert grid.count('class="grid-evidence"') == len(scorecard.EVIDENCE)
    # and back: the chapter's verdict box links to the claim's block (a claim about the 124M
    # model has no row at this profile to show there)
    for claim, (page, _) in scorecard.EVIDENCE.items():
        if not claim.endswith("124m"):
            box = _article(built_book / f"{page}.html")
            box = box[box.index('class="verdict-box"'):]
            assert f'scorecard.html#{scorecard.claim_anchor(claim)}"' in box, (claim, page)


def test_every_link_between_the_books_pages_lands_on_a_page_of_the_site(built_book):
    from urllib.parse import unquote

    broken, followed, ids = [], 0, {}

    def has_id(page: Path, fragment: str) -> bool:
        if page not in ids:
            ids[page] = set(re.findall(r'\bid="([^"]+)"', page.read_text()))
        return unquote(fragment) in ids[page]

    for page in built_book.rglob("*.html"):
        if "_static" in page.relative_to(built_book).parts:
            continue
        for href in re.findall(r'<a\b[^>]*\bhref="([^"]*)"', page.read_text()):
            if re.match(r"[a-z][a-z0-9+.-]*:", href) or not href:
                continue
            path, _, fragment = href.partition("#")
            target = (page.parent / unquote(path.split("?")[0])) if path else page
            followed += 1
            if not target.is_file() or (fragment and target.suffix == ".html" and not has_id(target, fragment)):
                broken.append((str(page.relative_to(built_book)), href))
    assert followed > 100 and not broken


def test_the_pages_markdown_links_name_a_built_page_as_every_page_can_reach_it():
    """A link in Markdown a chapter's code writes is not resolved by the build (an output's
    Markdown is not a source): it must name the built page, from the folder both page folders
    sit beside, so that it lands from a chapter and from the introduction alike."""
    root = Path(__file__).resolve().parents[1]
    targets = [t for p in (root / "residual_lib" / "pages").rglob("*.py")
               for t in re.findall(r"\]\(([^)\s]+)\)", p.read_text()) if not re.match(r"https?:|#|\{", t)]
    assert targets  # the chapters do link to each other this way
    for target in targets:
        named = re.fullmatch(r"\.\./(book|notebooks)/([\w-]+)\.html(#[\w-]+)?", target)
        assert named and any((root / named[1] / f"{named[2]}{ext}").is_file() for ext in (".py", ".md")), target


def test_alpha_tt_is_set_with_a_subscript_in_text_but_not_in_code_attributes_or_the_title():
    from residual_lib.pages.sphinxext import set_subscripts

    page = ('<html><head><title>α_tt</title></head><body><p title="α_tt">mean α_tt <code>x.α_tt</code></p>'
            '<pre>α_tt <span>α_tt</span></pre><a href="#c">Routing: AttnOnly learns α_tt ≈ 1</a><br/></body></html>')
    assert set_subscripts(page) == (
        '<html><head><title>α_tt</title></head><body><p title="α_tt">mean α<sub>tt</sub> <code>x.α_tt</code></p>'
        '<pre>α_tt <span>α_tt</span></pre><a href="#c">Routing: AttnOnly learns α<sub>tt</sub> ≈ 1</a><br/></body></html>')
    assert set_subscripts("<body><p>no such name</p></body>") == "<body><p>no such name</p></body>"
    # a comment, a ">" inside a quoted attribute, a script holding "<" and "</code>", a page without a body
    tricky = ('<body><!-- after <body> α_tt --><a title="a > α_tt">α_tt</a><script>if (a<b) x = "</code> α_tt";'
              '</script><p>α_tt</p></body>')
    assert set_subscripts(tricky) == ('<body><!-- after <body> α_tt --><a title="a > α_tt">α<sub>tt</sub></a>'
                                      '<script>if (a<b) x = "</code> α_tt";</script><p>α<sub>tt</sub></p></body>')
    assert set_subscripts("<p>α_tt</p>") == "<p>α_tt</p>"


def test_icons_are_drawn_into_the_page_from_the_themes_own_bundle(built_book):
    """No page loads the 1.5 MB Font Awesome bundle or leaves an <i> icon for it to draw (whose
    web fonts the theme's CSS would then fetch): each icon is an SVG path of that bundle."""
    from residual_lib.pages.sphinxext import bundle_icons

    icons = bundle_icons((built_book / "_static" / "scripts" / "fontawesome.js").read_text())
    bars = icons["fas"]["bars"]
    for page in BOOK_PAGES:
        html = (built_book / page).read_text()
        assert "fontawesome.js" not in html and not re.search(r'<i\b[^>]*class="[^"]*\bfa-', html), page
    intro = (built_book / "book" / "intro.html").read_text()
    assert f'viewBox="0 0 {bars[0]} {bars[1]}" aria-hidden="true" focusable="false"><path fill="currentColor" ' \
           f'd="{bars[2]}"></path></svg>' in intro
