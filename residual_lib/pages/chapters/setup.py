"""Chapter 3, the experimental setup: the corpora, the floors a loss is compared with, and the
models every profile builds. Nothing here trains."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pandas as pd
import torch

from ...run.architecture import DISPLAY_NAMES
from ...run.data import Corpus, DataError, eval_floor, gpt2_encoding, load_corpus
from ...run.model import GPTConfig, ResidualGPT
from ...run.profiles import PROFILES, Profile
from ..scorecard.claims import TITLES

#: The corpora the chapter measures: the paper's character corpus and, for comparison, GPT-2's
#: BPE tokenisation of the same text.
CORPORA = ("shakespeare_char", "shakespeare_gpt2")
#: Corpora that need tiktoken's GPT-2 encoding, which an offline machine without its cache lacks.
NEEDS_TIKTOKEN = ("shakespeare_gpt2",)
#: The page's note where a corpus of :data:`NEEDS_TIKTOKEN` is left out.
BPE_MISSING = ("The GPT-2 BPE corpus could not be loaded on the machine that built this page, so its row is left"
               " out; building the book online once, or with `TIKTOKEN_CACHE_DIR` pointing at tiktoken's cached"
               " files, adds it.")
#: GPT-2's vocabulary: 256 byte tokens, 50,000 BPE merges and <|endoftext|> (tiktoken's ``n_vocab`` for
#: gpt2). A parameter count needs only this size, so the model table does not depend on tiktoken's files.
GPT2_VOCAB = 256 + 50_000 + 1
#: The two variants whose sizes the model table compares: the mixer replaces attention by a smaller mixer.
SIZED_VARIANTS = ("full", "mixer")
#: The floor columns of :func:`floors` besides the whole split's, one per evaluation mode.
FIXED, RANDOM = "fixed batches (fixed evaluation)", "random windows, expected (random evaluation)"
#: The caption and alt text of the block-variants figure.
VARIANTS_CAPTION = ("The four block variants. Solid arcs are the identity paths a variant keeps, dotted ones those it"
                    " removes.")
VARIANTS_ALT = ("Four block diagrams, one per variant, each showing x, Attn(LN1), h, FFN(LN2) and y, with an identity"
                " arc beside each sublayer: solid where kept, dotted where removed.")


def book_profiles(profiles: Mapping[str, Profile] = PROFILES) -> list[str]:
    """The profiles the book's tables list: the paper's and the book's; the ``smoke*`` ones exist for the tests."""
    return [name for name in profiles if not name.startswith("smoke")]


def corpora(names=CORPORA, load: Callable[[str], Corpus] = load_corpus) -> tuple[pd.DataFrame, str]:
    """Vocabulary, split sizes and whole-validation-split unigram floor of each corpus, and a note for the page
    ("" when none is needed): a corpus of :data:`NEEDS_TIKTOKEN` that cannot be loaded offline is left out
    and the note says so; any other corpus must load."""
    rows, missing = [], False
    for name in names:
        try:
            corpus = load(name)
        except DataError:
            if name not in NEEDS_TIKTOKEN:
                raise
            missing = True
            continue
        rows.append({"corpus": name, "vocabulary": corpus.vocab_size, "train tokens": corpus.sizes["train"],
                     "val tokens": corpus.sizes["val"],
                     "unigram floor, whole val split (nats)": corpus.unigram_floor()})
    return pd.DataFrame(rows), BPE_MISSING if missing else ""


def floors(char: Corpus, profiles: Mapping[str, Profile] = PROFILES) -> pd.DataFrame:
    """Per character-level profile, the unigram floor over the whole validation split, on the fixed
    evaluation batches and expected over random windows: a loss is compared with the floor of the tokens
    it was measured on, and the three differ. Indexed by profile."""
    rows = [{"profile": name, "whole val split": char.unigram_floor(),
             FIXED: eval_floor(char, prof.block_size, prof.batch_size, prof.eval_iters, "fixed"),
             RANDOM: eval_floor(char, prof.block_size, prof.batch_size, prof.eval_iters, "random")}
            for name, prof in profiles.items() if prof.dataset == "shakespeare_char"]
    return pd.DataFrame(rows).set_index("profile")


def fixed_floor(floors: pd.DataFrame, profile: str) -> float:
    """The floor of ``profile``'s fixed evaluation batches; NaN for a profile not trained on characters."""
    return floors.loc[profile, FIXED] if profile in floors.index else float("nan")


def floor_table(floors: pd.DataFrame, profiles: Mapping[str, Profile] = PROFILES) -> pd.DataFrame:
    """The rows of :func:`floors` the book lists (:func:`book_profiles`), every column in nats."""
    return floors[floors.index.isin(book_profiles(profiles))].add_suffix(" (nats)")


def vocab_sizes(char: Corpus) -> dict[str, int]:
    """The vocabulary size of each dataset a profile trains on: the character corpus's alphabet, and GPT-2's
    from tiktoken, or :data:`GPT2_VOCAB` where its encoding cannot be loaded (offline without a cache)."""
    try:
        gpt2 = gpt2_encoding().n_vocab
    except DataError:
        gpt2 = GPT2_VOCAB
    return {"shakespeare_char": char.vocab_size, "openwebtext": gpt2}


def models(vocab: Mapping[str, int], profiles: Mapping[str, Profile] = PROFILES) -> pd.DataFrame:
    """One row per profile the book lists: its shape (layers × width, and context), corpus and
    budget (steps, and training tokens in millions), and the parameter count in millions of each variant of :data:`SIZED_VARIANTS`
    (nanoGPT's count: tied head once, no position embeddings). Rows run from the stand-ins to
    the ladder's rungs to the paper's profiles, each group by size. Models are built on
    PyTorch's ``meta`` device, so no memory is allocated."""
    rows = []
    for name in book_profiles(profiles):
        prof = profiles[name]
        row = {"profile": name, "layers×width": f"{prof.n_layer}×{prof.n_embd}", "context": prof.block_size,
               "corpus": prof.dataset, "steps": prof.max_iters,
               "tokens": f"{prof.tokens_per_step * prof.max_iters / 1e6:.3g}M"}
        for variant in SIZED_VARIANTS:
            config = GPTConfig.for_profile(prof, variant, vocab_size=vocab[prof.dataset])
            with torch.device("meta"):
                row[f"{DISPLAY_NAMES.get(variant, variant)} (M params)"] = ResidualGPT(config).num_params() / 1e6
        rows.append(row)
    group = {"ladder": 1, "paper": 2}
    rows.sort(key=lambda r: (group.get(r["profile"].split("-")[0], 0), r["Full (M params)"], r["profile"]))
    return pd.DataFrame(rows)


def collapse_vs_floor(claims: pd.DataFrame, floors: pd.DataFrame) -> pd.DataFrame:
    """The paper's collapse values at 10M (ffn_only, no_residual) beside the character corpus's floors: a
    collapsed model has learned the character frequencies and nothing else. Each claim by its title."""
    collapse = claims[(claims.scale == "10M") & claims.variant.isin(["ffn_only", "no_residual"])
                      & (claims.quantity == "final_val_loss")]
    return collapse[["claim", "variant", "value"]].assign(claim=collapse.claim.map(lambda c: TITLES.get(c, c)), **{
        "floor, whole val split": floors.loc["paper-10m", "whole val split"],
        "floor, paper-10m fixed batches": floors.loc["paper-10m", FIXED]})
