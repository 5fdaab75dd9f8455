"""Corpora, evaluation batches and the unigram floor."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from residual_lib.run.batches import ValidationSet, fixed_val_batches, get_batch
from residual_lib.run.data import DataError, gpt2_encoding, load_corpus, prepare_openwebtext, shakespeare_path


def test_tinyshakespeare_characters_match_the_papers_split(char_corpus):
    assert char_corpus.vocab_size == 65
    assert char_corpus.sizes == {"train": 1_003_854, "val": 111_540}
    assert char_corpus.decode(char_corpus.train[:14].tolist()) == "First Citizen:"


def test_gpt2_tinyshakespeare_matches_nanogpt(data_dir, gpt2):
    corpus = load_corpus("shakespeare_gpt2", data_dir)
    assert corpus.vocab_size == 50_257
    assert corpus.sizes == {"train": 301_966, "val": 36_059}
    assert math.isfinite(corpus.unigram_floor())


def test_unigram_floor_equals_a_count_based_cross_entropy(char_corpus, data_dir):
    text = shakespeare_path(data_dir).read_text(encoding="utf-8")
    n = int(0.9 * len(text))
    train, val = Counter(text[:n]), Counter(text[n:])
    total = sum(train.values())
    expected = -sum(count * math.log(train[ch] / total) for ch, count in val.items()) / sum(val.values())
    assert char_corpus.unigram_floor() == pytest.approx(expected, rel=1e-12)
    assert 3.0 < expected < 3.6  # the paper's collapse floor (~3.35) sits here


def test_fixed_batches_are_identical_across_runs_and_variants(char_corpus):
    # two runs (different seeds, as different variants or seeds would be) see the same batches
    a = ValidationSet(char_corpus.val, 32, 8, 3, "fixed", seed=1)
    b = ValidationSet(char_corpus.val, 32, 8, 3, "fixed", seed=2)
    first, again, other = a.batches(), a.batches(), b.batches()
    for (x1, y1), (x2, y2), (x3, y3) in zip(first, again, other):
        assert torch.equal(x1, x2) and torch.equal(x1, x3) and torch.equal(y1, y3)
    assert torch.equal(first[0][0], fixed_val_batches(char_corpus.val, 32, 8, 1, seed=99_991)[0][0])
    assert not torch.equal(first[0][0], fixed_val_batches(char_corpus.val, 32, 8, 1, seed=1)[0][0])


def test_random_batches_change_between_evaluations_but_follow_the_seed(char_corpus):
    a = ValidationSet(char_corpus.val, 32, 8, 2, "random", seed=5)
    first, second = a.batches(), a.batches()
    assert not torch.equal(first[0][0], second[0][0])
    replay = ValidationSet(char_corpus.val, 32, 8, 2, "random", seed=5).batches()
    assert torch.equal(first[0][0], replay[0][0])


def test_batches_are_next_token_windows():
    data = np.arange(100, dtype=np.uint16)
    x, y = get_batch(data, 10, 4, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (4, 10) and x.dtype == torch.int64
    assert torch.equal(y, x + 1)


def test_missing_data_directory_names_the_fix(tmp_path):
    with pytest.raises(DataError, match="RESIDUAL_DATA_DIR"):
        load_corpus("shakespeare_char", tmp_path)


def test_openwebtext_preparation_writes_uint16_memmaps(tmp_path, data_dir, gpt2):
    docs = [f"Document {i}: the quick brown fox {'jumps ' * i}over the lazy dog." for i in range(30)]
    source = tmp_path / "corpus.jsonl"
    source.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    out = tmp_path / "owt"
    meta = prepare_openwebtext(out, source=str(source), num_docs=20, val_fraction=0.1, directory=data_dir)

    enc = gpt2_encoding(data_dir)
    assert meta["num_docs"] == 20 and meta["val_docs"] == 2  # only the first num_docs documents
    train = np.memmap(out / "train.bin", dtype=np.uint16, mode="r")
    val = np.memmap(out / "val.bin", dtype=np.uint16, mode="r")
    assert len(train) == meta["train_tokens"] and len(val) == meta["val_tokens"]
    # every document appears once, in order within its split, each ending with end-of-text
    encoded = [enc.encode_ordinary(d) + [enc.eot_token] for d in docs[:20]]
    assert sum(map(len, encoded)) == len(train) + len(val)
    assert (np.asarray(train) == enc.eot_token).sum() == 18 and (np.asarray(val) == enc.eot_token).sum() == 2
    text = enc.decode(np.asarray(train).tolist()) + enc.decode(np.asarray(val).tolist())
    assert sorted(text.split("<|endoftext|>")[:-1] + [""]) == sorted(docs[:20] + [""])
    assert not list(out.glob(".*.tmp"))
    assert json.loads((out / "meta.json").read_text()) == meta


def test_openwebtext_loader_prepares_into_the_cache(tmp_path, data_dir, monkeypatch, gpt2):
    import residual_lib.run.data as data

    source = tmp_path / "docs.txt"
    source.write_text("\n".join(f"line {i} of a tiny corpus" for i in range(40)) + "\n")
    monkeypatch.setenv("RESIDUAL_OPENWEBTEXT_SOURCE", str(source))
    corpus = load_corpus("openwebtext", data_dir)
    assert corpus.vocab_size == 50_257 and len(corpus.val) > 0
    assert (Path(data.cache_dir()) / "openwebtext" / "train.bin").is_file()
    assert math.isfinite(corpus.unigram_floor())


def test_the_packaged_corpus_needs_no_network_and_no_setting(monkeypatch, tmp_path):
    import residual_lib.run.data as data

    monkeypatch.delenv("RESIDUAL_DATA_DIR", raising=False)
    monkeypatch.setattr(data, "SHAKESPEARE_URL", "http://127.0.0.1:9/input.txt")  # a download would fail
    assert shakespeare_path() == data.PACKAGED_SHAKESPEARE
    corpus = load_corpus("shakespeare_char")
    assert corpus.sizes == {"train": 1_003_854, "val": 111_540} and corpus.vocab_size == 65
    assert not (data.cache_dir() / "tinyshakespeare").exists()
    damaged = tmp_path / "tinyshakespeare.txt"
    damaged.write_bytes(data.PACKAGED_SHAKESPEARE.read_bytes()[:-1] + b"?")
    monkeypatch.setattr(data, "PACKAGED_SHAKESPEARE", damaged)
    with pytest.raises(DataError, match="does not match TinyShakespeare's sha256"):
        shakespeare_path()


def test_the_gpt2_encoding_offline_without_a_cache_is_one_line(monkeypatch, tmp_path):
    import residual_lib.run.data as data

    monkeypatch.delenv("RESIDUAL_DATA_DIR", raising=False)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    import tiktoken.load

    def offline(*args, **kwargs):
        raise ConnectionError("no network")

    monkeypatch.setattr(tiktoken.load, "read_file", offline)
    import tiktoken.registry

    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    with pytest.raises(DataError, match="set TIKTOKEN_CACHE_DIR"):
        data.gpt2_encoding()


def test_download_path_verifies_and_caches_the_file(monkeypatch, data_dir, tmp_path):
    import residual_lib.run.data as data

    monkeypatch.setattr(data, "PACKAGED_SHAKESPEARE", Path("/nonexistent/tinyshakespeare.txt"))  # a trimmed install
    if data_dir is None:
        pytest.skip("needs a local copy to serve as the download source")
    monkeypatch.delenv("RESIDUAL_DATA_DIR", raising=False)
    local = Path(data_dir) / "tinyshakespeare" / "input.txt"
    monkeypatch.setattr(data, "SHAKESPEARE_URL", local.resolve().as_uri())
    path = shakespeare_path()
    assert path == data.cache_dir() / "tinyshakespeare" / "input.txt"
    assert path.read_bytes() == local.read_bytes()
    assert load_corpus("shakespeare_char").sizes["val"] == 111_540


def test_offline_download_failure_names_the_fix_and_writes_nothing(monkeypatch):
    import residual_lib.run.data as data

    monkeypatch.setattr(data, "PACKAGED_SHAKESPEARE", Path("/nonexistent/tinyshakespeare.txt"))  # a trimmed install
    monkeypatch.delenv("RESIDUAL_DATA_DIR", raising=False)
    monkeypatch.setattr(data, "SHAKESPEARE_URL", "http://127.0.0.1:9/input.txt")  # nothing listens there
    with pytest.raises(DataError, match="set RESIDUAL_DATA_DIR"):
        load_corpus("shakespeare_char")
    assert not (data.cache_dir() / "tinyshakespeare").exists()


def test_corrupt_download_is_rejected(monkeypatch, tmp_path):
    import residual_lib.run.data as data

    monkeypatch.setattr(data, "PACKAGED_SHAKESPEARE", Path("/nonexistent/tinyshakespeare.txt"))  # a trimmed install
    monkeypatch.delenv("RESIDUAL_DATA_DIR", raising=False)
    bogus = tmp_path / "input.txt"
    bogus.write_text("not shakespeare")
    monkeypatch.setattr(data, "SHAKESPEARE_URL", bogus.as_uri())
    with pytest.raises(DataError, match="sha256"):
        shakespeare_path()
    assert not (data.cache_dir() / "tinyshakespeare").exists()


def test_the_fixed_evaluation_floor_is_the_unigram_loss_on_the_fixed_batches_targets(char_corpus):
    from residual_lib.run.data import eval_floor

    counts = np.bincount(char_corpus.train, minlength=char_corpus.vocab_size)
    logp = np.log(counts / counts.sum())
    targets = np.concatenate([y.numpy().ravel() for _, y in fixed_val_batches(char_corpus.val, 16, 4, 3)])
    assert eval_floor(char_corpus, 16, 4, 3, "fixed") == pytest.approx(-logp[targets].mean(), rel=1e-12)
    # a different sample of tokens, so a different number from the whole-split floor
    assert abs(eval_floor(char_corpus, 64, 32, 20, "fixed") - char_corpus.unigram_floor()) > 0.005


def test_the_random_evaluation_floor_is_the_expected_value_over_get_batch_windows():
    from residual_lib.run.data import Corpus, eval_floor

    # five validation tokens, windows of 2: starts 0..2, targets at positions 1..4 with
    # multiplicities 1, 2, 2, 1; training frequencies give token 0 and 1 probabilities 3/4, 1/4
    corpus = Corpus("tiny", np.array([0, 0, 0, 1]), np.array([1, 0, 1, 0, 1]), 2, str)
    nll = {0: -math.log(0.75), 1: -math.log(0.25)}
    expected = (1 * nll[0] + 2 * nll[1] + 2 * nll[0] + 1 * nll[1]) / 6
    assert eval_floor(corpus, 2, 1, 1, "random") == pytest.approx(expected, rel=1e-12)
    g = torch.Generator().manual_seed(0)
    draws = [np.mean([nll[int(t)] for t in get_batch(corpus.val, 2, 64, g)[1].ravel()]) for _ in range(200)]
    assert np.mean(draws) == pytest.approx(expected, abs=0.02)
    with pytest.raises(ValueError, match="fixed or random"):
        eval_floor(corpus, 2, 1, 1, "bogus")


def test_the_bigram_reference_is_the_training_bigrams_cross_entropy_on_the_evaluated_pairs():
    from residual_lib.run.data import Corpus, eval_bigram

    # training pairs (0,0) (0,0) (0,1) (1,1) (1,0): P(0|0) = 2/3, P(1|0) = 1/3, P(0|1) = P(1|1) = 1/2
    p = {(0, 0): 2 / 3, (0, 1): 1 / 3, (1, 0): 1 / 2, (1, 1): 1 / 2}
    corpus = Corpus("tiny", np.array([0, 0, 0, 1, 1, 0]), np.array([0, 1, 1, 0, 0, 0]), 2, str)
    pairs = [(0, 1), (1, 1), (1, 0), (0, 0), (0, 0)]
    # one window start (block = len(val) - 1): the fixed batch's targets are val[1:], each
    # predicted from the token before it, the first from the window's first input
    expected = -sum(math.log(p[pair]) for pair in pairs) / len(pairs)
    assert eval_bigram(corpus, 5, 3, 2, "fixed") == pytest.approx(expected, rel=1e-12)
    # random windows of 2 (starts 0..3): targets 1..5 with multiplicities 1, 2, 2, 2, 1
    weights = [1, 2, 2, 2, 1]
    expected = -sum(w * math.log(p[pair]) for w, pair in zip(weights, pairs)) / sum(weights)
    assert eval_bigram(corpus, 2, 1, 1, "random") == pytest.approx(expected, rel=1e-12)
    # pairs training never shows, (1,2) and (2,0) (2 is never followed): add-one in rows 1 and 2
    # only; row 0, whose evaluated pair (0,1) occurs, keeps its exact 1/4
    corpus = Corpus("tiny", np.array([0, 0, 0, 1, 1, 0, 2]), np.array([0, 1, 2, 0]), 3, str)
    expected = -(math.log(1 / 4) + math.log((0 + 1) / (2 + 3)) + math.log((0 + 1) / (0 + 3))) / 3
    assert eval_bigram(corpus, 3, 1, 1, "fixed") == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="fixed or random"):
        eval_bigram(corpus, 2, 1, 1, "bogus")


def test_the_cpu_profiles_bigram_reference_sits_between_the_floor_and_a_trained_model(char_corpus):
    from residual_lib.run.data import eval_bigram, eval_floor
    from residual_lib.run.profiles import get_profile

    cpu = get_profile("cpu")
    bigram = eval_bigram(char_corpus, cpu.block_size, cpu.batch_size, cpu.eval_iters)
    assert 2.3 < bigram < 2.6
    assert bigram < eval_floor(char_corpus, cpu.block_size, cpu.batch_size, cpu.eval_iters, "fixed") - 0.5


def test_a_records_bigram_reference_comes_from_its_configuration(char_corpus):
    from residual_lib.run.data import eval_bigram
    from residual_lib.study.frames import record_eval_bigram

    rec = {"eval_mode": "fixed", "config": {"dataset": "shakespeare_char",
                                            "profile": {"block_size": 16, "batch_size": 4, "eval_iters": 3}}}
    assert record_eval_bigram(rec) == pytest.approx(eval_bigram(char_corpus, 16, 4, 3), rel=1e-12)
    assert math.isnan(record_eval_bigram({**rec, "config": {**rec["config"], "dataset": "openwebtext"}}))
    assert math.isnan(record_eval_bigram({"config": {}}))


def test_the_input_blind_loss_is_the_entropy_of_the_evaluated_tokens_and_lies_below_the_floor():
    """A model that ignores its input does best with the evaluated tokens' own frequencies: their
    entropy, which the floor (the training split's frequencies) can only exceed, by their KL divergence."""
    from residual_lib.run.data import Corpus, eval_floor, eval_input_blind

    rng = np.random.default_rng(0)
    train = rng.choice(4, size=5000, p=[0.4, 0.3, 0.2, 0.1]).astype(np.uint16)
    val = rng.choice(4, size=3000, p=[0.1, 0.2, 0.3, 0.4]).astype(np.uint16)  # other frequencies
    corpus = Corpus("toy", train, val, 4, str)
    targets = np.concatenate([y.numpy().ravel() for _, y in fixed_val_batches(val, 8, 4, 5)])
    p = np.bincount(targets, minlength=4) / len(targets)
    assert eval_input_blind(corpus, 8, 4, 5) == pytest.approx(-(p[p > 0] * np.log(p[p > 0])).sum())
    gap = eval_floor(corpus, 8, 4, 5, "fixed") - eval_input_blind(corpus, 8, 4, 5)
    q = np.bincount(train, minlength=4) / len(train)
    assert gap == pytest.approx((p * np.log(p / q)).sum())  # KL(evaluated || training) > 0
    assert gap > 0.1
    same = Corpus("same", val, val, 4, str)  # training frequencies that are the whole validation split's
    assert eval_floor(same, 8, 4, 5, "random") - eval_input_blind(same, 8, 4, 5, "random") == pytest.approx(0, abs=1e-3)
    with pytest.raises(ValueError, match="choose fixed or random"):
        eval_input_blind(corpus, 8, 4, 5, "nanogpt")
