"""Shared fixtures. Tests read the offline data copies: ``$RESIDUAL_DATA_DIR`` if set,
otherwise ``../shared/data`` beside the repository when it exists."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

# Before anything imports torch: the package pins the CPU kernels' instruction set when it is
# imported first (residual_lib/__init__.py), so the bits of a run trained in this process do not
# depend on which test module happened to be collected first.
import residual_lib  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
_shared = ROOT.parent / "shared" / "data"
if "RESIDUAL_DATA_DIR" not in os.environ and _shared.is_dir():
    os.environ["RESIDUAL_DATA_DIR"] = str(_shared)
DATA_DIR = os.environ.get("RESIDUAL_DATA_DIR")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Derived files (tokenized corpora, Hugging Face caches) go to a temporary folder."""
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("RESIDUAL_CACHE_DIR", str(cache))
    monkeypatch.setenv("HF_HOME", str(cache / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def data_dir() -> str | None:
    """The data folder; None means the library downloads TinyShakespeare itself."""
    return DATA_DIR


@pytest.fixture(scope="session")
def char_corpus(data_dir):
    from residual_lib.run.data import load_corpus

    return load_corpus("shakespeare_char", data_dir)


SMOKE_SEEDS = [1337, 42]
#: What a copy of the shared smoke results leaves out: the claims and temporary files that a test
#: sweeping that folder in another pytest-xdist worker may be writing or removing.
TRANSIENT = shutil.ignore_patterns(".*.claim", ".*.tmp")


def _once(tmp_path_factory, name: str, make) -> Path:
    """``make(folder)`` run once per test session, also when pytest-xdist splits the session
    across workers (``make test`` runs two): the first worker to ask makes it in a folder all
    workers share, under a lock, and the others wait for it and reuse it."""
    from filelock import FileLock

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        folder = tmp_path_factory.mktemp(name)
        make(folder)
        return folder
    shared = tmp_path_factory.getbasetemp().parent  # the workers' basetemps sit side by side in it
    folder, failed = shared / name, shared / f"{name}.failed"
    with FileLock(str(shared / f"{name}.lock")):
        if failed.exists():  # another worker's build failed: its error, not a second attempt
            pytest.fail(f"{name} could not be built (by another worker): {failed.read_text()}")
        if not folder.exists():
            private = tmp_path_factory.mktemp(name)  # built aside, moved into place whole
            try:
                make(private)
            except BaseException as exc:
                failed.write_text(f"{type(exc).__name__}: {exc}")
                raise
            private.rename(folder)
    return folder


@pytest.fixture(scope="session")
def smoke_results(tmp_path_factory):
    """Every section's runs at smoke, trained once by a sweep without notebooks."""
    from residual_lib.commands.sweep import sweep
    from residual_lib.pages.execute import all_notebooks
    from residual_lib.study.sections import plan

    def make(results: Path) -> None:
        notebooks = all_notebooks()
        report = sweep([str(p) for p in notebooks], profile="smoke", seeds=SMOKE_SEEDS, results_dir=results,
                       run_notebooks=False, progress=False)
        assert report.ok and report.cached == 0
        expected = {s for p in notebooks for s in plan(p.stem, "smoke", SMOKE_SEEDS)}
        assert len(report.trained) == len(expected)

    return _once(tmp_path_factory, "results", make)


@pytest.fixture(scope="session")
def built_book(smoke_results, tmp_path_factory) -> Path:
    """The site built from the smoke records in a temporary copy of the book's sources."""
    from residual_lib.pages import book

    def make(tmp: Path) -> None:
        root = Path(book.ROOT)
        for name in ("_config.yml", "_toc.yml"):
            shutil.copy(root / name, tmp / name)
        shutil.copytree(root / "book", tmp / "book")
        shutil.copytree(root / "_static", tmp / "_static")
        shutil.copytree(root / "notebooks", tmp / "notebooks", ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
        assert book.build("smoke", smoke_results, root=tmp).is_file()

    return _once(tmp_path_factory, "site", make) / "_build" / "html"


@pytest.fixture(scope="session")
def gpt2(data_dir):
    """tiktoken's gpt2 encoding; without network or a tiktoken cache the test is skipped
    (CI has the cache and sets RESIDUAL_REQUIRE_GPT2, so there it must run)."""
    from residual_lib.run.data import DataError, gpt2_encoding

    try:
        return gpt2_encoding(data_dir)
    except DataError as exc:
        if os.environ.get("RESIDUAL_REQUIRE_GPT2"):
            pytest.fail(str(exc))
        pytest.skip(f"GPT-2 BPE unavailable offline: {exc}")
