"""Shared fixtures. Tests read the offline data copies: ``$RESIDUAL_DATA_DIR`` if set,
otherwise ``../shared/data`` beside the repository when it exists."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
    from residual_lib.data import load_corpus

    return load_corpus("shakespeare_char", data_dir)
