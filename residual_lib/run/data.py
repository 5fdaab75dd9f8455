"""Corpora, batches and the unigram floor.

Three corpora, all held as 1-D integer token arrays split into train and val:

* ``shakespeare_char`` -- TinyShakespeare, one token per character (65 symbols),
  the first 90% of the text for training (1,003,854 characters), the rest for
  validation (111,540): nanoGPT's ``shakespeare_char``.
* ``shakespeare_gpt2`` -- the same text split the same way, each part encoded with
  tiktoken's ``gpt2`` BPE (301,966 / 36,059 tokens): nanoGPT's ``shakespeare``.
* ``openwebtext`` -- the first ``num_docs`` documents of OpenWebText (the paper:
  100,000), GPT-2 BPE with an end-of-text token after each document, written
  once to uint16 memmaps by :func:`prepare_openwebtext`.

Where files come from. TinyShakespeare (1,115,394 characters) ships with the package
(``residual_lib/run/corpora/tinyshakespeare.txt``, checked against :data:`SHAKESPEARE_SHA256`
when loaded), so nothing needs a network or a setting. A data directory given as an
argument or by the ``RESIDUAL_DATA_DIR`` environment variable takes precedence (expected
layout: ``tinyshakespeare/input.txt``, checked against the same sha256, optionally
``tiktoken/`` as a tiktoken cache); if
the packaged file is missing (a trimmed install), the text is downloaded into the cache
directory (``RESIDUAL_CACHE_DIR``, default ``~/.cache/residual_lib``) and verified. GPT-2's
BPE comes from tiktoken, which reads its cache (``TIKTOKEN_CACHE_DIR``, or the data
directory's ``tiktoken/``) or downloads once; offline without a cache it is a one-line
error. OpenWebText is streamed from the Hugging Face hub
(``Skylion007/openwebtext``) or read from ``RESIDUAL_OPENWEBTEXT_SOURCE``, a dataset
name or a local ``.jsonl``/``.txt`` file. Derived files are only ever written to the cache
directory, never into the data directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..core.files import atomic_write, files_sha256
from ..core.text import plural
from .batches import fixed_val_batches

SHAKESPEARE_URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
SHAKESPEARE_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
OPENWEBTEXT_SOURCE = "Skylion007/openwebtext"
CORPORA = ("shakespeare_char", "shakespeare_gpt2", "openwebtext")
#: The sha256 a corpus's records must name, where fixed in advance (not OpenWebText's).
CORPUS_SHA256 = {"shakespeare_char": SHAKESPEARE_SHA256, "shakespeare_gpt2": SHAKESPEARE_SHA256}


class DataError(RuntimeError):
    """A corpus cannot be found or made; the message says how to fix it."""


# --------------------------------------------------------------------------- locations


def data_dir(path: str | os.PathLike | None = None) -> Path | None:
    """The read-only data directory: ``path``, else ``$RESIDUAL_DATA_DIR``, else None."""
    path = path or os.environ.get("RESIDUAL_DATA_DIR")
    return Path(path).expanduser() if path else None


def cache_dir() -> Path:
    """Where downloads and derived files go: ``$RESIDUAL_CACHE_DIR`` or ``~/.cache/residual_lib``."""
    return Path(os.environ.get("RESIDUAL_CACHE_DIR") or Path.home() / ".cache" / "residual_lib").expanduser()


#: The copy of TinyShakespeare that ships with the package.
PACKAGED_SHAKESPEARE = Path(__file__).resolve().parent / "corpora" / "tinyshakespeare.txt"


def _verified(path: Path) -> bool:
    return files_sha256(path) == SHAKESPEARE_SHA256  # read once per process while the file is unchanged


def shakespeare_path(directory: str | os.PathLike | None = None) -> Path:
    """The TinyShakespeare text file: the data directory's when one is set, otherwise the
    packaged copy (verified), otherwise a verified download into the cache."""
    root = data_dir(directory)
    if root is not None:
        path = root / "tinyshakespeare" / "input.txt"
        if not path.is_file():
            raise DataError(
                f"TinyShakespeare not found at {path}: point RESIDUAL_DATA_DIR (or --data-dir) "
                "at a folder holding tinyshakespeare/input.txt, or unset it to use the packaged copy"
            )
        if not _verified(path):
            # a run's key names its corpus; another text under that name would train (and be
            # averaged into the profile) as if it were TinyShakespeare
            raise DataError(f"{path} is not TinyShakespeare (its sha256 is not {SHAKESPEARE_SHA256[:12]}…): point "
                            "RESIDUAL_DATA_DIR (or --data-dir) at an unchanged copy, or unset it to use the packaged one")
        return path
    packaged = PACKAGED_SHAKESPEARE
    if packaged.is_file():
        if not _verified(packaged):
            raise DataError(f"{packaged} does not match TinyShakespeare's sha256 {SHAKESPEARE_SHA256}: reinstall "
                            "residual_lib (or delete the file to download a fresh copy)")
        return packaged
    path = cache_dir() / "tinyshakespeare" / "input.txt"
    if path.is_file():
        if not _verified(path):
            raise DataError(f"{path} does not match TinyShakespeare's sha256 {SHAKESPEARE_SHA256}: delete it to "
                            "download a fresh copy")
    else:
        try:
            with urllib.request.urlopen(SHAKESPEARE_URL, timeout=30) as response:
                payload = response.read()
        except OSError as exc:
            raise DataError(
                f"cannot download TinyShakespeare ({exc.__class__.__name__}): go online, or set "
                "RESIDUAL_DATA_DIR to a folder holding tinyshakespeare/input.txt"
            ) from None
        digest = hashlib.sha256(payload).hexdigest()
        if digest != SHAKESPEARE_SHA256:
            raise DataError(f"downloaded TinyShakespeare has sha256 {digest}, expected {SHAKESPEARE_SHA256}: retry")
        atomic_write(path, payload)
    return path


def _use_local_tiktoken_cache(directory: str | os.PathLike | None = None) -> None:
    root = data_dir(directory)
    if root is not None and (root / "tiktoken").is_dir() and "TIKTOKEN_CACHE_DIR" not in os.environ:
        os.environ["TIKTOKEN_CACHE_DIR"] = str(root / "tiktoken")


def gpt2_encoding(directory: str | os.PathLike | None = None):
    """tiktoken's ``gpt2`` encoding (the data directory's ``tiktoken/`` cache is used when present)."""
    import tiktoken

    _use_local_tiktoken_cache(directory)
    try:
        return tiktoken.get_encoding("gpt2")
    except Exception as exc:  # tiktoken raises requests' errors when offline
        raise DataError(
            f"cannot load tiktoken's gpt2 encoding ({exc.__class__.__name__}): go online, or set "
            "TIKTOKEN_CACHE_DIR to a folder holding its cached files"
        ) from None


# --------------------------------------------------------------------------- corpora


@dataclass
class Corpus:
    name: str
    train: np.ndarray
    val: np.ndarray
    vocab_size: int
    decode: Callable[[list[int]], str] = field(repr=False)
    #: Add-k smoothing for :meth:`unigram_floor`: 0 for characters (every symbol occurs
    #: in training), 1 for BPE corpora, whose validation text holds tokens that training
    #: never shows (without smoothing their floor would be infinite).
    floor_smoothing: float = 0.0
    #: sha256 of what the tokens were made from (TinyShakespeare's text; OpenWebText's token
    #: files): a record stores it, so a run names the corpus it trained on, not only its name.
    sha256: str | None = None

    @property
    def sizes(self) -> dict[str, int]:
        return {"train": len(self.train), "val": len(self.val)}

    def unigram_floor(self) -> float:
        return unigram_floor(self.train, self.val, self.vocab_size, self.floor_smoothing)


def _char_corpus(directory) -> Corpus:
    data = shakespeare_path(directory).read_bytes()
    text = data.decode("utf-8")
    chars = sorted(set(text))
    table = np.zeros(max(map(ord, chars)) + 1, dtype=np.uint16)
    table[[ord(c) for c in chars]] = np.arange(len(chars))
    tokens = table[np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)]
    n = int(0.9 * len(tokens))
    return Corpus("shakespeare_char", tokens[:n], tokens[n:], len(chars), lambda ids: "".join(chars[i] for i in ids),
                  sha256=hashlib.sha256(data).hexdigest())


def _gpt2_shakespeare(directory) -> Corpus:
    data = shakespeare_path(directory).read_bytes()
    text = data.decode("utf-8")
    enc = gpt2_encoding(directory)
    n = int(0.9 * len(text))
    train = np.array(enc.encode_ordinary(text[:n]), dtype=np.uint16)
    val = np.array(enc.encode_ordinary(text[n:]), dtype=np.uint16)
    return Corpus("shakespeare_gpt2", train, val, enc.n_vocab, enc.decode, floor_smoothing=1.0,
                  sha256=hashlib.sha256(data).hexdigest())


def _openwebtext(directory) -> Corpus:
    root = cache_dir() / "openwebtext"
    if not (root / "meta.json").is_file():
        source = os.environ.get("RESIDUAL_OPENWEBTEXT_SOURCE") or OPENWEBTEXT_SOURCE
        prepare_openwebtext(root, source=source, directory=directory)
    enc = gpt2_encoding(directory)
    train = np.memmap(root / "train.bin", dtype=np.uint16, mode="r")
    val = np.memmap(root / "val.bin", dtype=np.uint16, mode="r")
    return Corpus("openwebtext", train, val, enc.n_vocab, enc.decode, floor_smoothing=1.0,
                  sha256=files_sha256(root / "train.bin", root / "val.bin"))


def load_corpus(name: str, directory: str | os.PathLike | None = None) -> Corpus:
    loaders = {"shakespeare_char": _char_corpus, "shakespeare_gpt2": _gpt2_shakespeare, "openwebtext": _openwebtext}
    if name not in loaders:
        raise DataError(f"unknown corpus {name!r}: choose one of {', '.join(CORPORA)}")
    return loaders[name](directory)


def _read_documents(source: str, num_docs: int):
    """Yield the text of the first ``num_docs`` documents of ``source``: a Hugging Face
    dataset name (streamed, so only those documents are downloaded) or a local
    ``.txt`` (one document per line) / ``.json`` / ``.jsonl`` file with a ``text`` field."""
    try:
        from datasets import load_dataset
    except ImportError:
        raise DataError("OpenWebText needs Hugging Face datasets: pip install datasets") from None
    local = Path(source)
    if local.exists():
        builder = "text" if local.suffix == ".txt" else "json"
        stream = load_dataset(builder, data_files=str(local), split="train", streaming=True)
    else:
        try:
            stream = load_dataset(source, split="train", streaming=True)
        except Exception as exc:
            raise DataError(
                f"cannot open dataset {source!r} ({exc.__class__.__name__}): go online, "
                "or pass a local .jsonl/.txt file as the source"
            ) from None
    for i, row in enumerate(stream):
        if i >= num_docs:
            break
        yield row["text"]


def prepare_openwebtext(
    out_dir: str | os.PathLike,
    source: str = OPENWEBTEXT_SOURCE,
    num_docs: int = 100_000,
    val_fraction: float = 0.0005,
    seed: int = 2357,
    directory: str | os.PathLike | None = None,
    chunk: int = 1024,
) -> dict:
    """Tokenize the first ``num_docs`` documents into ``train.bin`` / ``val.bin`` (uint16).

    As nanoGPT's ``data/openwebtext/prepare.py``: GPT-2 BPE with ``encode_ordinary``,
    an end-of-text token appended to every document, a document-level split with
    ``val_fraction`` of the documents (shuffled with ``seed``) held out. Each file is
    written under a temporary name and renamed, ``meta.json`` last, so an interrupted
    run leaves nothing that looks finished. Returns the metadata written to ``meta.json``.
    """
    out = Path(out_dir)
    enc = gpt2_encoding(directory)
    docs: list[np.ndarray] = []
    batch: list[str] = []

    def flush():
        for ids in enc.encode_ordinary_batch(batch):
            ids.append(enc.eot_token)
            docs.append(np.array(ids, dtype=np.uint16))
        batch.clear()

    for text in _read_documents(source, num_docs):
        batch.append(text)
        if len(batch) == chunk:
            flush()
    flush()
    if len(docs) < 2:
        raise DataError(f"{len(docs)} {plural('document', len(docs))} read from {source!r}: a train/val split needs at least 2")
    order = np.random.default_rng(seed).permutation(len(docs))
    n_val = max(1, int(round(val_fraction * len(docs))))
    val_ids, train_ids = sorted(order[:n_val]), sorted(order[n_val:])
    meta = {"source": source, "num_docs": len(docs), "val_docs": n_val, "seed": seed, "encoding": "gpt2"}
    for split, ids in (("train", train_ids), ("val", val_ids)):
        arr = np.concatenate([docs[i] for i in ids])
        atomic_write(out / f"{split}.bin", arr.tobytes())
        meta[f"{split}_tokens"] = int(arr.size)
    atomic_write(out / "meta.json", json.dumps(meta, indent=1).encode())
    return meta


# --------------------------------------------------------------------------- reference losses


def unigram_floor(train: np.ndarray, val: np.ndarray, vocab_size: int, smoothing: float = 0.0) -> float:
    """Cross-entropy (nats) on ``val`` of the unigram distribution estimated on ``train``
    (token counts plus ``smoothing`` for every vocabulary entry): the loss of a model that
    ignores its input. Without smoothing it is infinite if a validation token never
    occurs in training."""
    counts = np.bincount(np.asarray(train), minlength=vocab_size).astype(np.float64) + smoothing
    with np.errstate(divide="ignore"):
        logp = np.log(counts / counts.sum())
    return float(-logp[np.asarray(val)].mean())


def _unigram_logp(train: np.ndarray, vocab_size: int, smoothing: float) -> np.ndarray:
    counts = np.bincount(np.asarray(train), minlength=vocab_size).astype(np.float64) + smoothing
    with np.errstate(divide="ignore"):
        return np.log(counts / counts.sum())


def eval_floor(corpus: Corpus, block_size: int, batch_size: int, n_batches: int, mode: str) -> float:
    """The unigram floor on the tokens a loss is measured on, so that a loss and its floor
    can be subtracted: for ``fixed`` evaluation the cross-entropy of the training
    frequencies on the targets of :func:`fixed_val_batches`; for ``random`` evaluation its
    expected value over random windows (each validation position weighted by how many of
    the ``len(val) - block_size`` window starts of :func:`residual_lib.run.batches.get_batch` make it a target).
    :meth:`Corpus.unigram_floor`, over the whole validation split, differs from both."""
    nll = -_unigram_logp(corpus.train, corpus.vocab_size, corpus.floor_smoothing)
    if mode == "fixed":
        targets = np.concatenate([y.numpy().ravel() for _, y in
                                  fixed_val_batches(corpus.val, block_size, batch_size, n_batches)])
        return float(nll[targets].mean())
    if mode != "random":
        raise ValueError(f"unknown eval mode {mode!r}: choose fixed or random")
    val = np.asarray(corpus.val)
    starts = len(val) - block_size  # get_batch's window starts: 0 .. starts - 1
    t = np.arange(len(val))
    # position t is a target of the windows starting at t - block_size .. t - 1
    weights = np.clip(np.minimum(t - 1, starts - 1) - np.maximum(t - block_size, 0) + 1, 0, None)
    return float((weights * nll[val]).sum() / weights.sum())


def eval_input_blind(corpus: Corpus, block_size: int, batch_size: int, n_batches: int, mode: str = "fixed") -> float:
    """The lowest loss (nats) any model that ignores its input can reach on the tokens a loss is
    measured on: the entropy of those targets' own frequencies (the targets of :func:`eval_floor`,
    weighted as it weights them). :func:`eval_floor` predicts them with the training split's
    frequencies instead, so ``eval_floor - eval_input_blind`` is how far below the floor a model
    can get without reading its input: a line beyond which leaving the floor means using it."""
    if mode == "fixed":
        targets = np.concatenate([y.numpy().ravel() for _, y in
                                  fixed_val_batches(corpus.val, block_size, batch_size, n_batches)])
        weights = np.bincount(targets, minlength=corpus.vocab_size).astype(np.float64)
    elif mode == "random":
        val = np.asarray(corpus.val)
        starts, t = len(val) - block_size, np.arange(len(val))
        w = np.clip(np.minimum(t - 1, starts - 1) - np.maximum(t - block_size, 0) + 1, 0, None)
        weights = np.bincount(val, weights=w, minlength=corpus.vocab_size)
    else:
        raise ValueError(f"unknown eval mode {mode!r}: choose fixed or random")
    p = weights[weights > 0] / weights.sum()
    return float(-(p * np.log(p)).sum())


def _bigram_nll(train: np.ndarray, vocab_size: int, prev: np.ndarray, nxt: np.ndarray) -> np.ndarray:
    """``-log P(nxt | prev)`` for each pair, with ``P`` the maximum-likelihood bigram
    distribution of ``train`` (see :func:`eval_bigram` for the rows that get add-one smoothing)."""
    train = np.asarray(train, dtype=np.int64)
    prev, nxt = np.asarray(prev, dtype=np.int64), np.asarray(nxt, dtype=np.int64)
    codes, wanted = train[:-1] * vocab_size + train[1:], prev * vocab_size + nxt
    rows = np.bincount(train[:-1], minlength=vocab_size).astype(np.float64)
    if vocab_size <= 4096:  # characters: a dense table of pair counts
        count = np.bincount(codes, minlength=vocab_size * vocab_size)[wanted].astype(np.float64)
    else:  # BPE: only the pairs that occur
        pairs, counts = np.unique(codes, return_counts=True)
        at = np.clip(np.searchsorted(pairs, wanted), 0, len(pairs) - 1)
        count = np.where(pairs[at] == wanted, counts[at], 0).astype(np.float64)
    seen = count > 0
    # add-one only in the rows (current tokens) where an evaluated pair never occurs in training
    smooth = np.zeros(vocab_size, dtype=bool)
    smooth[prev[~seen]] = True
    s = smooth[prev]
    return -(np.log(count + s) - np.log(rows[prev] + s * vocab_size))


def eval_bigram(corpus: Corpus, block_size: int, batch_size: int, n_batches: int, mode: str = "fixed") -> float:
    """The bigram reference on the tokens a loss is measured on: the cross-entropy (nats)
    of the training split's bigram distribution ``P(next | current)`` on exactly the targets
    :func:`eval_floor` uses, each predicted from the token before it (for a window's first
    target, the window's first input token). ``P`` is the maximum-likelihood estimate
    (pair counts over the counts of the current token in training); only in a row whose
    current token is followed, somewhere in the evaluated targets, by a token it is never
    followed by in training, every count gets one added (add-one smoothing of that row), so
    the reference stays finite and rows with every evaluated pair seen are left exact.
    ``fixed``: the targets of :func:`fixed_val_batches`; ``random``: the expected value
    over :func:`residual_lib.run.batches.get_batch`'s windows, weighted as :func:`eval_floor` weights them.

    A model that ignores everything but the current token can reach this loss; one below
    it uses more context than one token. Pair counts are a dense table for small vocabularies, sparse over the pairs training holds for BPE ones."""
    if mode == "fixed":
        batches = fixed_val_batches(corpus.val, block_size, batch_size, n_batches)
        prev = np.concatenate([x.numpy().ravel() for x, _ in batches])
        nxt = np.concatenate([y.numpy().ravel() for _, y in batches])
        return float(_bigram_nll(corpus.train, corpus.vocab_size, prev, nxt).mean())
    if mode != "random":
        raise ValueError(f"unknown eval mode {mode!r}: choose fixed or random")
    val = np.asarray(corpus.val)
    starts = len(val) - block_size
    t = np.arange(1, len(val))
    weights = np.clip(np.minimum(t - 1, starts - 1) - np.maximum(t - block_size, 0) + 1, 0, None)
    nll = _bigram_nll(corpus.train, corpus.vocab_size, val[:-1], val[1:])
    return float((weights * nll).sum() / weights.sum())
