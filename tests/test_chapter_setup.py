"""Chapter 3's tables: the corpora, their floors and the models each profile builds."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from residual_lib import PROFILES, Corpus, DataError
from residual_lib.pages.chapters import setup
from residual_lib.run.data import eval_floor, gpt2_encoding


def _corpus(name: str, train, val, vocab_size: int) -> Corpus:
    return Corpus(name, np.asarray(train, dtype=np.uint16), np.asarray(val, dtype=np.uint16), vocab_size,
                  lambda ids: "")


def _skewed(seed: int = 0) -> Corpus:
    """A corpus whose tokens differ in frequency, so that the floors of different batches differ."""
    rng = np.random.default_rng(seed)
    p = np.array([0.5, 0.25, 0.15, 0.1])
    return _corpus("shakespeare_char", rng.choice(4, 5000, p=p), rng.choice(4, 2000, p=p), 4)


def test_corpora_measure_each_corpus_and_leave_out_an_unloadable_bpe_corpus_with_a_note():
    char = _corpus("shakespeare_char", [0, 0, 1, 1], [0, 1, 1], 2)

    def offline(name):
        if name == "shakespeare_gpt2":
            raise DataError("no tiktoken cache")
        return char

    rows, note = setup.corpora(load=offline)
    assert note == setup.BPE_MISSING
    assert rows.corpus.tolist() == ["shakespeare_char"]
    row = rows.iloc[0]
    assert (row["vocabulary"], row["train tokens"], row["val tokens"]) == (2, 4, 3)
    assert row["unigram floor, whole val split (nats)"] == pytest.approx(math.log(2))  # both tokens equally likely

    rows, note = setup.corpora(load=lambda name: char)
    assert note == "" and rows.corpus.tolist() == ["shakespeare_char", "shakespeare_gpt2"]


def test_a_character_corpus_that_fails_to_load_is_an_error():
    def broken(name):
        raise DataError("no TinyShakespeare")

    with pytest.raises(DataError):
        setup.corpora(load=broken)


def test_the_book_lists_every_profile_but_the_tests_smoke_ones():
    shown = setup.book_profiles()
    assert "cpu" in shown and "paper-10m" in shown and "paper-124m" in shown
    assert not [name for name in shown if name.startswith("smoke")]


def test_floors_are_per_character_profile_and_per_evaluation_mode():
    char = _skewed()
    profiles = {"a": PROFILES["smoke"], "b": PROFILES["cpu"], "owt": PROFILES["paper-124m"]}
    floors = setup.floors(char, profiles)
    assert floors.index.tolist() == ["a", "b"]  # paper-124m trains on OpenWebText
    for name in ("a", "b"):
        prof = profiles[name]
        assert floors.loc[name, setup.FIXED] == eval_floor(char, prof.block_size, prof.batch_size, prof.eval_iters,
                                                           "fixed")
        assert floors.loc[name, setup.RANDOM] == eval_floor(char, prof.block_size, prof.batch_size, prof.eval_iters,
                                                            "random")
        assert floors.loc[name, "whole val split"] == char.unigram_floor()
    assert floors.loc["a", setup.FIXED] != floors.loc["b", setup.FIXED]  # different batches, different floors
    assert setup.fixed_floor(floors, "b") == floors.loc["b", setup.FIXED]
    assert math.isnan(setup.fixed_floor(floors, "owt"))


def test_the_floor_table_lists_the_book_profiles_in_nats():
    floors = pd.DataFrame({"whole val split": [3.3, 3.3], setup.FIXED: [3.2, 3.1]},
                          index=pd.Index(["smoke", "cpu"], name="profile"))
    shown = setup.floor_table(floors)
    assert shown.index.tolist() == ["cpu"]
    assert shown.columns.tolist() == ["whole val split (nats)", f"{setup.FIXED} (nats)"]


def test_gpt2_vocabulary_comes_from_tiktoken_and_falls_back_offline(monkeypatch):
    char = _corpus("shakespeare_char", [0, 1, 2], [0], 3)

    class Encoding:
        n_vocab = 123

    monkeypatch.setattr(setup, "gpt2_encoding", lambda: Encoding())
    assert setup.vocab_sizes(char) == {"shakespeare_char": 3, "openwebtext": 123}

    def offline():
        raise DataError("offline")

    monkeypatch.setattr(setup, "gpt2_encoding", offline)
    assert setup.vocab_sizes(char) == {"shakespeare_char": 3, "openwebtext": setup.GPT2_VOCAB}


def test_the_offline_gpt2_vocabulary_is_tiktokens():
    try:
        encoding = gpt2_encoding()
    except DataError:
        pytest.skip("tiktoken's gpt2 encoding is not available offline here")
    assert setup.GPT2_VOCAB == encoding.n_vocab


def test_models_count_parameters_per_book_profile_and_variant():
    profiles = {name: PROFILES[name] for name in ("paper-10m", "ladder-10m", "cpu", "ladder-3m", "ladder-0.1m", "smoke")}
    models = setup.models({"shakespeare_char": 65}, profiles)
    # stand-ins, then the ladder's rungs by size (3m before 10m), then the paper's; smoke left out
    assert models.profile.tolist() == ["cpu", "ladder-0.1m", "ladder-3m", "ladder-10m", "paper-10m"]
    assert models.columns.tolist() == ["profile", "layers×width", "context", "corpus", "steps", "tokens",
                                       "Full (M params)", "mixer (M params)"]
    cpu = models.set_index("profile").loc["cpu"]
    assert (cpu["layers×width"], cpu["context"], cpu["tokens"]) == ("4×128", 64, "4.1M")  # 2,000 steps of 32 x 64
    assert cpu["mixer (M params)"] < cpu["Full (M params)"]  # the mixer is the smaller sublayer
    # the tied head is counted once: 100 more tokens add one 128-wide embedding row each
    bigger = setup.models({"shakespeare_char": 165}, profiles).set_index("profile").loc["cpu"]
    assert (bigger["Full (M params)"] - cpu["Full (M params)"]) * 1e6 == pytest.approx(100 * 128)


def test_the_collapse_table_puts_the_paper_10m_floors_beside_the_papers_collapse_values():
    claims = pd.DataFrame({
        "claim": ["c1", "c2", "c3", "c4"], "scale": ["10M", "10M", "124M", "10M"],
        "variant": ["ffn_only", "no_residual", "ffn_only", "attn_only"],
        "quantity": ["final_val_loss", "final_val_loss", "final_val_loss", "final_val_loss"],
        "value": [3.35, 3.356, 7.4, 1.58]})
    floors = pd.DataFrame({"whole val split": [3.347, 3.347], setup.FIXED: [3.335, 3.3469]},
                          index=pd.Index(["cpu", "paper-10m"], name="profile"))
    table = setup.collapse_vs_floor(claims, floors)
    assert table.claim.tolist() == ["c1", "c2"]  # 10M collapse values only (an unknown claim keeps its name)
    named = setup.collapse_vs_floor(claims.assign(claim=["ffn_collapse_10m", "c2", "c3", "c4"]), floors)
    assert named.claim.tolist() == ["FFNOnly collapses in every seed", "c2"]  # a known claim by its title
    assert table["floor, whole val split"].tolist() == [3.347, 3.347]
    assert table["floor, paper-10m fixed batches"].tolist() == [3.3469, 3.3469]
