"""Section plans, the sweep (process pool and submitit), and every notebook under papermill."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from residual_lib import sections
from residual_lib.__main__ import main
from residual_lib.sections import RunSpec, plan
from residual_lib.sweep import all_notebooks, execute_notebook, sweep, train_specs

SEEDS = [1337, 42]
NOTEBOOKS = all_notebooks()


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*.json"))}


@pytest.fixture(scope="module")
def smoke_results(tmp_path_factory):
    """Every section's runs at smoke, trained once by a sweep without notebooks."""
    results = tmp_path_factory.mktemp("results")
    report = sweep([str(p) for p in NOTEBOOKS], profile="smoke", seeds=SEEDS, results_dir=results,
                   run_notebooks=False, progress=False)
    assert report.ok and report.cached == 0
    expected = {s for p in NOTEBOOKS for s in plan(p.stem, "smoke", SEEDS)}
    assert len(report.trained) == len(expected)
    return results


def test_there_is_one_notebook_per_paper_section():
    assert [p.stem for p in NOTEBOOKS] == list(sections.PLANS)


def test_plans_ask_for_the_runs_each_section_describes():
    assert plan("03_setup", "smoke", SEEDS) == []
    collapse = plan("04_joint_collapse", "smoke", SEEDS)
    random_runs = [s for s in collapse if s.eval_mode == "random"]
    assert len(random_runs) == 4 and {s.seed for s in random_runs} == {1337}
    assert set(collapse) - set(random_runs) == set(plan("06_central", "smoke", SEEDS))  # block 0 over every seed
    central = plan("06_central", "smoke", SEEDS)
    assert len(central) == 8 and all(s.eval_mode == "fixed" and s.deterministic for s in central)
    gains = {s.gain for s in plan("05_confounds", "smoke", SEEDS)}
    assert gains == {0.5, 1.0, 2.0, 4.0}
    assert {s.variant for s in plan("07_mechanism", "smoke", SEEDS)} == {"attn_only", "ffn_only", "mixer"}
    repro = plan("08_reproduction", "smoke", SEEDS)
    assert sum(not s.deterministic for s in repro) == 3
    with pytest.raises(ValueError, match="no section named"):
        plan("99_nothing", "smoke", SEEDS)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes_under_papermill(notebook, smoke_results, tmp_path):
    params = {"profile": "smoke", "seeds": SEEDS, "results_dir": str(smoke_results), "train_missing": False}
    before = _digest(smoke_results)
    executed = execute_notebook(notebook, params, tmp_path)
    nb = json.loads(executed.read_text())
    errors = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
              if o["output_type"] == "error"]
    assert not errors
    injected = [c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
    assert len(injected) == 1 and "train_missing = False" in "".join(injected[0]["source"])
    assert _digest(smoke_results) == before  # the notebook only read records


def test_a_notebook_with_missing_records_names_the_sweep_command(tmp_path):
    with pytest.raises(Exception, match="python -m residual_lib sweep notebooks/06_central.py"):
        execute_notebook(NOTEBOOKS[3], {"profile": "smoke", "seeds": [7], "results_dir": str(tmp_path),
                                        "train_missing": False}, tmp_path / "out")
    assert (tmp_path / "out" / "06_central.failed.ipynb").is_file()
    assert not (tmp_path / "out" / "06_central.ipynb").exists()


def test_a_second_sweep_trains_nothing_and_leaves_records_byte_identical(smoke_results):
    before = _digest(smoke_results)
    report = sweep([str(p) for p in NOTEBOOKS], profile="smoke", seeds=SEEDS, results_dir=smoke_results,
                   run_notebooks=False, progress=False)
    assert report.ok and report.trained == [] and report.cached == len(before)
    assert _digest(smoke_results) == before


def test_a_failed_run_does_not_stop_the_others(tmp_path, monkeypatch, capsys):
    good = [RunSpec("smoke", "full", 5), RunSpec("smoke", "ffn_only", 5)]
    bad = RunSpec("smoke", "full", 5, gain=-1.0)  # an invalid gain: the worker raises
    monkeypatch.setattr("residual_lib.sweep.plan", lambda section, **kw: [good[0], bad, good[1]])
    status = main(["sweep", str(NOTEBOOKS[3]), "--profile", "smoke", "--out", str(tmp_path / "r"),
                   "--no-notebooks", "--jobs", "2"])
    out = capsys.readouterr().out
    assert status == 1
    assert "2 run(s) trained" in out and "1 failed" in out
    assert "FAILED run smoke full seed 5 (gain -1)" in out and "gain must be a positive number" in out
    assert len(list((tmp_path / "r" / "smoke").glob("*.json"))) == 2
    log = tmp_path / "r" / "smoke" / "logs" / f"full_seed5_{bad.key}.log"
    assert "RunError: gain must be a positive number" in log.read_text()


def _comparable(path: str) -> dict:
    rec = json.loads(Path(path).read_text())
    return {k: rec[k] for k in ("key", "curves", "final_val_loss", "best_val_loss", "diagnostics", "config")}


def test_submitit_local_executor_makes_the_same_records_as_the_process_pool(tmp_path):
    specs = [RunSpec("smoke", "attn_only", 9), RunSpec("smoke", "no_residual", 9)]
    local, failed = train_specs(specs, tmp_path / "local", jobs=2, threads=1, executor="local", progress=False)
    assert not failed
    remote, failed = train_specs(specs, tmp_path / "submitit", jobs=2, threads=1, executor="submitit",
                                 cluster="local", progress=False)
    assert not failed, failed
    assert sorted(Path(p).name for p in local) == sorted(Path(p).name for p in remote)
    for a in sorted(local):
        b = str(tmp_path / "submitit" / "smoke" / Path(a).name)
        assert _comparable(a) == _comparable(b)


@pytest.fixture(scope="module")
def built_book(smoke_results, tmp_path_factory) -> Path:
    """The site built from the smoke records in a temporary copy of the book's sources."""
    import shutil

    from residual_lib import book

    root, tmp = Path(book.ROOT), tmp_path_factory.mktemp("site")
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(root / name, tmp / name)
    shutil.copytree(root / "book", tmp / "book")
    shutil.copytree(root / "_static", tmp / "_static")
    shutil.copytree(root / "notebooks", tmp / "notebooks", ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
    index = book.build("smoke", smoke_results, root=tmp)
    assert index.is_file()
    return tmp / "_build" / "html"


def test_the_book_builds_from_records_with_a_verdict_per_claim(built_book):
    import re

    from residual_lib import paper

    html = (built_book / "book" / "scorecard.html").read_text()
    table = html[html.index('id="scorecard-table"'):html.index("</table>", html.index('id="scorecard-table"'))]
    rows = re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)[1:]  # skip the header
    import html as html_lib

    from residual_lib.scorecard import TITLES

    titles = {TITLES[c] for c in paper.claims().claim}  # every claim, by its readable name
    assert {html_lib.unescape(re.search(r"<td>(.*?)</td>", r).group(1)) for r in rows} == titles
    assert all('class="verdict v-' in r for r in rows)
    intro = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", (built_book / "book" / "intro.html").read_text()))
    assert "records of the smoke profile" in intro and "2 seeds per variant" in intro
    assert any((built_book / "_images").glob("*.png"))
    for page in ("book/not_reproduced", "book/confounds", "notebooks/03_setup", "notebooks/08_reproduction"):
        assert (built_book / f"{page}.html").is_file()
    titles = {re.search(r"<title>([^<&]*)", (built_book / "notebooks" / f"{p.stem}.html").read_text()).group(1)
              for p in NOTEBOOKS}
    assert len(titles) == len(NOTEBOOKS)  # every chapter has its own title


def test_the_site_holds_no_path_of_the_building_machine_and_no_injected_parameters(built_book):
    leaks = [str(p.relative_to(built_book)) for p in built_book.rglob("*") if p.is_file()
             and p.suffix in (".html", ".ipynb", ".txt", ".js")
             and any(root in p.read_text(errors="ignore") for root in ("/work/", "/tmp/", "/root/", "/home/"))]
    assert not leaks
    pages = [p for p in built_book.rglob("*.html")]
    assert pages and not any('"injected-parameters"' in p.read_text() or "train_missing = False" in p.read_text()
                             for p in pages)


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


def test_the_book_in_a_real_browser(built_book):
    """Headless Chromium loads the index and the scorecard: a row per claim with a verdict,
    and at least one figure that actually loaded. Saves screenshots under test-output/."""
    import functools
    import http.server
    import os
    import shutil
    import threading

    from residual_lib import paper, scorecard

    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver_path):
        if os.environ.get("RESIDUAL_REQUIRE_BROWSER"):
            pytest.fail("chromium and chromedriver are required: apt-get install chromium chromium-driver")
        pytest.skip("chromium and chromedriver not installed")
    from selenium import webdriver
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(built_book))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1300,1800"):
        options.add_argument(flag)
    out = Path(__file__).resolve().parents[1] / "test-output"
    out.mkdir(exist_ok=True)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver_path))
    try:
        driver.get(f"{base}/index.html")  # redirects to the introduction
        WebDriverWait(driver, 15).until(lambda d: d.current_url.endswith("book/intro.html"))
        assert "what holds up" in driver.title
        driver.save_screenshot(str(out / "index.png"))

        driver.get(f"{base}/book/scorecard.html")
        rows = driver.find_elements(By.CSS_SELECTOR, "table#scorecard-table tbody tr")
        claims = {row.find_elements(By.TAG_NAME, "td")[0].text for row in rows}
        verdicts = [row.find_element(By.CSS_SELECTOR, "td.verdict").text for row in rows]
        assert claims == {scorecard.TITLES[c] for c in paper.claims().claim}
        assert len(verdicts) == len(rows) and set(verdicts) <= set(scorecard.VERDICTS)
        driver.save_screenshot(str(out / "scorecard.png"))

        # the verdict grid is whole on screen at a laptop and a phone width: no sideways scrolling
        edges = ("const g = document.getElementById('verdict-grid').getBoundingClientRect();"
                 "return [g.right, window.innerWidth, document.documentElement.scrollWidth]")
        for width, height, mobile in ((1280, 800, False), (390, 844, True)):
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                   {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})
            driver.get(f"{base}/book/scorecard.html")
            right, viewport, document_width = driver.execute_script(edges)
            assert right <= viewport and document_width <= viewport, (width, right, viewport, document_width)
            driver.save_screenshot(str(out / f"scorecard_{width}.png"))
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

        driver.get(f"{base}/notebooks/06_central.html")
        count_loaded = ("const imgs = Array.from(document.images); imgs.forEach(i => i.scrollIntoView());"
                        "return imgs.filter(i => i.complete && i.naturalWidth > 0).length")
        WebDriverWait(driver, 15).until(lambda d: d.execute_script(count_loaded) >= 1)
        driver.execute_script("window.scrollTo(0, 0)")
        driver.save_screenshot(str(out / "06_central.png"))
    finally:
        driver.quit()
        server.shutdown()


def test_sweep_trains_seed_by_seed(monkeypatch, tmp_path):
    """A sweep stopped half-way leaves whole seeds: runs are queued seed by seed."""
    import residual_lib.sweep as sweep_module

    queued = []
    monkeypatch.setattr(sweep_module, "_LocalPool", _RecordingPool.factory(queued))
    sweep([str(p) for p in NOTEBOOKS if p.stem in ("06_central", "07_mechanism", "08_reproduction")],
          profile="smoke", seeds=[7, 5], results_dir=tmp_path, run_notebooks=False, progress=False, jobs=1)
    seeds = [s["seed"] for group in queued for s in group]
    # seed 7: four central variants, the mixer, a deterministic and three non-deterministic repeats
    assert seeds == [7] * 9 + [5] * 5


class _RecordingPool:
    """Stands in for the process pool: records what is submitted, in order, and trains nothing."""

    def __init__(self, queued):
        self.queued, self.poll = queued, 0.0

    @classmethod
    def factory(cls, queued):
        return lambda jobs: cls(queued)

    def submit(self, specs, *args):
        from concurrent.futures import Future

        self.queued.append(specs)
        future = Future()
        future.set_result([])
        return future

    def close(self):
        pass


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
