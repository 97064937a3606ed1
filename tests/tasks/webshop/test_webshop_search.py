"""Search: the Lucene-style analyzer, Lucene's BM25 by hand, ties, and rankings recorded from
pyserini/Anserini 0.22.1 on the real 1000-product index."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tasks.webshop.search import B, K1, BM25Index, analyze, lucene_lengths, tokenize
from webshop_testdata import real_suite


@pytest.mark.parametrize("text,tokens", [
    ("Women's Shoes", ["women", "shoe"]),                       # possessive, Porter
    ("the shoes and a hat for the win", ["shoe", "hat", "win"]),  # Lucene's stop words
    ("technology assembly incredibly us", ["technolog", "assembl", "incred", "us"]),
    ("size:m wash:hand", ["size:m", "wash:hand"]),              # ':' joins letters (UAX #29)
    ("3.5 oz 1,000 x-large", ["3.5", "oz", "1,000", "x", "larg"]),
    ("★ fast ✓ shipping ❤️", ["★", "fast", "ship", "❤️"]),       # pictographs, not ✓
    ("½ cup ① ___", ["cup"]),                                    # other numbers and '_' dropped
])
def test_analyzer_matches_anserini(text, tokens):
    assert analyze(text) == tokens


def test_tokenize_keeps_unicode_words_whole():
    assert tokenize("U.S.A. don't B07XYZ 16oz") == ["U.S.A", "don't", "B07XYZ", "16oz"]


def test_lucene_lengths_keep_four_significant_bits_above_24():
    lengths = np.array([0, 5, 23, 24, 31, 32, 39, 40, 41, 55, 56, 100, 1000])
    assert lucene_lengths(lengths).tolist() == [0, 5, 23, 24, 31, 32, 39, 40, 40, 54, 56, 96, 984]


def test_bm25_scores_by_hand():
    index = BM25Index(["red shoe", "red red hat", "blue hat shoe"])
    average = 8 / 3
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))

    def part(tf, length):
        return tf / (tf + K1 * (1 - B + B * length / average))

    scores = index.scores("red")
    assert scores[0] == pytest.approx(idf * part(1, 2), rel=1e-6)
    assert scores[1] == pytest.approx(idf * part(2, 3), rel=1e-6)
    assert scores[2] == 0.0
    assert index.search("red") == [1, 0]          # doc 2 shares no term: not a hit
    assert index.search("the of") == []           # only stop words: no hits
    both = index.scores("red shoe")
    assert both[0] == pytest.approx(scores[0] + index.scores("shoe")[0], rel=1e-6)
    assert index.scores("red red")[1] == pytest.approx(2 * scores[1], rel=1e-6)


def test_long_documents_use_the_lossy_norm():
    text = " ".join(f"w{i}" for i in range(40)) + " lamp"   # 41 tokens, stored as 40
    index = BM25Index([text, "lamp"])
    average = (41 + 1) / 2
    idf = math.log(1 + (2 - 2 + 0.5) / (2 + 0.5))
    expected = idf / (1 + K1 * (1 - B + B * 40 / average))
    assert index.scores("lamp")[0] == pytest.approx(expected, rel=1e-6)


def test_ties_break_by_ascending_id_and_k_limits():
    index = BM25Index(["lamp", "lamp", "lamp"], ids=["c", "a", "b"])
    assert index.search("lamp") == [1, 2, 0]
    assert index.search("lamp", k=2) == [1, 2]


LUCENE_TOP10 = {
    # query: (number of hits, top 10 asins) from pyserini's LuceneSearcher on the 1k index
    'find me double sided, machine washable decorative pillows with printing technology with '
    'size: 28" x 28", and price lower than 50.00 dollars': (50, [
        "B0743JKHBV", "B07XTK3P89", "B08K7LDM7Q", "B09P58VY9G", "B09N8SLFRJ", "B08QVDNJC7",
        "B00SYVE3CI", "B097TTL54K", "B09QRV4YLR", "B08R5Z7S2K"]),
    "find me machine wash men's t-shirts with long sleeve with color: army, and size: x-large, "
    "and price lower than 70.00 dollars": (50, [
        "B09QQP3356", "B09HGFV91W", "B00O30JLDK", "B09Q8RD8YN", "B09T756KQ5", "B09S3BN15C",
        "B09ND9DP7J", "B09RVF4JP1", "B09QGK5XHZ", "B09KLQLLT2"]),
    "otao privacy screen protector for iphone 11 pro max/iphone xs max 6.5 inch true "
    "28°anti spy tempered glass full-coverage (2-pack)": (50, [
        "B07YCGBPRD", "B01M7U6F8T", "B088LZPNG6", "B08ZYQC4PL", "B08MBG3421", "B09QMPV75P",
        "B095PF5BXT", "B09JJWGGD9", "B09CPZH548", "B07JMXLXNY"]),
    "wii u microphone": (17, [
        "B009AFLXZM", "B09Q55JLCS", "B09JT3Z6JV", "B08ZMR6MCR", "B09GXPBPLG", "B09L86RDXS",
        "B014C9KQLM", "B095C2ZMTX", "B09J2QLPR1", "B09KQNH5C6"]),
    "shoes": (39, [  # B09HH6P68W and B09QPX97VW tie: ascending asin
        "B094RBNS2K", "B09HH6P68W", "B09QPX97VW", "B08HN55NGW", "B001J6NXFS", "B09QXF3V3X",
        "B01JJR8GJG", "B07JZ5HVN6", "B09S3TWKSC", "B09PKHJN8P"]),
    "3.5 oz": (50, [
        "B09C896SN6", "B085HGD5Z3", "B09QKJHF4Q", "B07JZ5HVN6", "B086VP8Q9T", "B08M5BYQN9",
        "B09RPRRNVP", "B08X4YD5WH", "B09S3TWKSC", "B07MVN1K94"]),
    "men's running shoes size 10": (50, [
        "B094RBNS2K", "B01JJR8GJG", "B09HH6P68W", "B09S3TWKSC", "B09RPRRNVP", "B07S7HDC88",
        "B08MFFGK5C", "B09QXF3V3X", "B07HP6LVRS", "B09QRV4YLR"]),
    "x-large": (50, [
        "B07HRFSNL4", "B07GYTHLGV", "B00O30JLDK", "B085FQ4YL5", "B098XT346Y", "B07JVVDJ6L",
        "B00ED8OH2C", "B09T756KQ5", "B09P39QN2W", "B08HF132PN"]),
    "the": (0, []),
}


@pytest.mark.parametrize("query", list(LUCENE_TOP10))
def test_rankings_equal_pyserini_on_the_real_index(query):
    total, top = LUCENE_TOP10[query]
    hits = real_suite().world.search(query)
    assert len(hits) == total and list(hits[:10]) == top
