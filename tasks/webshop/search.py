"""Product search: BM25 over WebShop's search documents, the way its Lucene index ranks them.

Upstream indexes ``Product.search_text()`` with pyserini (``JsonCollection``, Anserini's
default English analyzer) and queries it with ``LuceneSearcher.search(query, k=50)``: BM25
with Lucene's parameters as pyserini sets them, ``k1 = 0.9``, ``b = 0.4``, and Lucene's
formula ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``,
``tf part = tf / (tf + k1 (1 - b + b * doc length / mean doc length))``.

Here `bm25s` (``method="lucene"``) builds the index and sums the scores; its per-(term,
document) scores are then rewritten with Lucene's lossy one-byte document-length norm and
Lucene's float32 arithmetic (`lucene_lengths`), so that near ties order as in Lucene.
`analyze` stands in for Anserini's analyzer: Unicode word segmentation (the `regex`
package's UAX #29 word boundaries, as Lucene's StandardTokenizer), possessive ``'s``
removal, lower-casing, Lucene's 33 English stop words and the Porter stemmer in the form
Lucene's ``PorterStemFilter`` implements (NLTK's ``MARTIN_EXTENSIONS`` mode: Porter's
reference C rules such as ``-logi -> -log``, words of one or two letters unstemmed), with
the symbols Lucene's older Unicode data also emits as tokens (`tasks.webshop.lucene_chars`).
Checked once against Anserini 0.22.1 (pyserini's jar) on the 1000-product set: the analysis
is identical on all 1,000 documents and 2,308 queries (2,000 goal instructions, 300
titles, 8 short queries), and so are the top-50 result lists of all 2,308 queries;
scores agree to 6e-5 (bm25s sums a query's term scores in float32, Lucene in double).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence

import bm25s
import numpy as np
import regex

from tasks.webshop.lucene_chars import DROPPED_LETTERS, LUCENE_EXTRA_TOKEN_CHARS, char_class

__all__ = ["LUCENE_STOP_WORDS", "K1", "B", "SEARCH_RETURN_N", "analyze", "BM25Index"]

K1 = 0.9
B = 0.4
SEARCH_RETURN_N = 50
"""Results a search returns (upstream's ``SEARCH_RETURN_N``)."""
LUCENE_STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split())
"""Lucene's ``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``."""

_BOUNDARY = regex.compile(r"\b", flags=regex.WORD | regex.V1)
_TOKEN_CHAR = regex.compile(
    "(?![" + char_class(DROPPED_LETTERS) + "])"
    r"[\p{L}\p{Nd}\p{Nl}\p{Extended_Pictographic}" + char_class(LUCENE_EXTRA_TOKEN_CHARS) + "]",
    flags=regex.V1)
_POSSESSIVES = ("'s", "\u2019s", "\uff07s")
logging.getLogger("bm25s").setLevel(logging.WARNING)


@functools.lru_cache(maxsize=1)
def _porter():
    from nltk.stem.porter import PorterStemmer  # imported on first use: nltk loads slowly

    return PorterStemmer(mode=PorterStemmer.MARTIN_EXTENSIONS)


@functools.lru_cache(maxsize=1 << 20)
def _stem(word: str) -> str:
    return _porter().stem(word)


def tokenize(text: str) -> list[str]:
    """Unicode default word segmentation (UAX #29, as Lucene's StandardTokenizer), keeping the
    segments that hold a letter, a decimal or letter number, a pictograph or one of the
    symbols Lucene also emits (`tasks.webshop.lucene_chars`)."""
    return [s for s in _BOUNDARY.split(text) if _TOKEN_CHAR.search(s)]


def analyze(text: str) -> list[str]:
    """Lucene-style analysis of `text`: `tokenize`, lower-case, drop a trailing possessive
    ``'s``, drop Lucene's stop words, Porter-stem (the reference C version's rules, as Lucene's
    ``PorterStemFilter``). Repeats are kept (they count in the query and in tf)."""
    tokens = []
    for token in tokenize(text):
        token = token.lower()
        if token.endswith(_POSSESSIVES):
            token = token[:-2]
        if token and token not in LUCENE_STOP_WORDS:
            tokens.append(_stem(token))
    return tokens


def lucene_lengths(lengths: np.ndarray) -> np.ndarray:
    """Document lengths as Lucene's one-byte norm gives them back (``SmallFloat.intToByte4``
    then ``byte4ToInt``): exact below 24, else ``24 + (length - 24)`` cut to its four most
    significant bits. Shape as `lengths`."""
    extra = np.maximum(np.asarray(lengths, dtype=np.int64) - 24, 0)
    shift = np.maximum(np.frexp(extra.astype(np.float64))[1] - 4, 0)
    return np.where(extra > 0, 24 + ((extra >> shift) << shift), lengths)


def _use_lucene_norms(bm25: bm25s.BM25, lengths: np.ndarray) -> None:
    """Rewrite the index's per-(term, document) scores as Lucene computes them: float32
    arithmetic in Lucene's order with the norm-decoded document length (bm25s uses the exact
    length). Term frequencies are read back from bm25s's scores (they are integers)."""
    k1, b = np.float32(bm25.k1), np.float32(bm25.b)
    data, indices, indptr = (bm25.scores[k] for k in ("data", "indices", "indptr"))
    n_docs = bm25.scores["num_docs"]
    df = np.repeat(np.diff(indptr), np.diff(indptr)).astype(np.float64)
    idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
    average = lengths.sum() / n_docs
    ratio = data.astype(np.float64) / idf
    tf = np.rint(bm25.k1 * (1 - bm25.b + bm25.b * lengths[indices] / average)
                 * ratio / (1 - ratio))
    if np.any(tf < 1):
        raise RuntimeError("could not read term frequencies back from the bm25s index")
    norm_inverse = np.float32(1) / (k1 * ((np.float32(1) - b) + b * lucene_lengths(
        lengths[indices]).astype(np.float32) / np.float32(average)))
    weight = idf.astype(np.float32)
    bm25.scores["data"] = (weight - weight / (np.float32(1) + tf.astype(np.float32)
                                              * norm_inverse)).astype(np.float32)


class BM25Index:
    """A BM25 index of documents given as texts, searched by `search`. `ids` (default: the
    positions as strings) break score ties in ascending string order, as Anserini does
    with its document ids."""

    def __init__(self, texts: Sequence[str], ids: Sequence[str] | None = None,
                 k1: float = K1, b: float = B):
        self.size = len(texts)
        ids = list(ids) if ids is not None else [f"{i:012d}" for i in range(self.size)]
        if len(ids) != self.size:
            raise ValueError("one id per document")
        self._tie_rank = np.empty(self.size, dtype=np.int64)
        self._tie_rank[np.argsort(np.array(ids, dtype=object), kind="stable")] = np.arange(
            self.size)
        tokens = [analyze(t) for t in texts]
        self._bm25 = bm25s.BM25(k1=k1, b=b, method="lucene")
        self._bm25.index(tokens, show_progress=False)
        _use_lucene_norms(self._bm25, np.array([len(t) for t in tokens], dtype=np.int64))

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for `query`, shape ``(n_documents,)``."""
        ids = self._bm25.get_tokens_ids(analyze(query))
        if not ids:
            return np.zeros(self.size, dtype=np.float32)
        return self._bm25.get_scores(ids)

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[int]:
        """Indices of the top `k` documents sharing a term with `query`, best first, ties by
        ascending id."""
        scores = self.scores(query)
        hits = np.flatnonzero(scores > 0)
        if len(hits) > k:
            # keep everything tied with the k-th best score, then order exactly
            kth = np.partition(scores[hits], len(hits) - k)[len(hits) - k]
            hits = hits[scores[hits] >= kth]
        order = np.lexsort((self._tie_rank[hits], -scores[hits]))
        return [int(i) for i in hits[order][:k]]
