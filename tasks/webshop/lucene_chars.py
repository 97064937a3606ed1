"""Symbol and mark characters that Lucene's StandardTokenizer (Lucene 9 in Anserini 0.22.1,
the version behind WebShop's pyserini index) emits as tokens although they are neither
letters, decimal or letter numbers, nor Extended_Pictographic in the Unicode data of the
`regex` package: older emoji data (most of U+2600-U+26FF), circled Latin letters, CJK
radicals, South-East Asian vowel signs and tone marks, modifier letters such as U+02C2.

Derived once by analysing every code point of categories S, P, C, Z and M with
``DefaultEnglishAnalyzer`` (``"x <char> x"``) and keeping those it emitted while
`tasks.webshop.search.tokenize` (without this table) did not. Code points, hex, ranges
inclusive.
"""

__all__ = ["LUCENE_EXTRA_TOKEN_CHARS", "DROPPED_LETTERS", "char_class"]

LUCENE_EXTRA_TOKEN_CHARS = """
    2C2-2C5 2D2-2D7 2DE-2DF 2ED 2EF-2FF 55B-55C 55E 5F3 66B E31 E34-E3A E47-E4E EB1 EB4-EBC
    EC8-ECD 102B-103E 1056-1059 105E-1060 1062-1064 1067-106D 1071-1074 1082-108D 108F
    109A-109F 17B4-17D3 17DD 19DE-19DF 1A55-1A5E 1A60-1A7C 1AA0-1AA6 1AA8-1AAD 2388
    24B6-24C1 24C3-24E9 2605 2607-260D 260F-2610 2612 2616-2617 2619-261C 261E-261F 2621
    2624-2625 2627-2629 262B-262D 2630-2637 263B-263F 2641 2643-2647 2654-265E 2661-2662
    2664 2667 2669-267A 267C-267D 2680-2685 2690-2691 2698 269A 269D-269F 26A2-26A6
    26A8-26A9 26AC-26AF 26B2-26BC 26BF-26C3 26C6-26C7 26C9-26CD 26D0 26D2 26D5-26E8
    26EB-26EF 26F6 26FB-26FC 26FE-2701 2703-2704 270E 2710-2711 2765-2767 2E80-2E99
    2E9B-2EF3 2F00-2FD5 309B-309C 30A0 32D0-32FE 3300-3357 A720-A721 A789-A78A A9E5
    AA77-AA79 AA7B-AA7D AAB0 AAB2-AAB4 AAB7-AAB8 AABE-AABF AAC1 AADE-AADF AB5B 1171D-1172B
    1173F 1F000-1F003 1F005-1F02B 1F030-1F093 1F0A0-1F0AE 1F0B1-1F0BF 1F0C1-1F0CE
    1F0D1-1F0F5 1F10D-1F10F 1F12F-1F149 1F150-1F169 1F16C-1F16F 1F172-1F17D 1F180-1F189
    1F1AD 1F200 1F260-1F265 1F322-1F323 1F394-1F395 1F398 1F39C-1F39D 1F3F1-1F3F2 1F3F6
    1F3FB-1F3FF 1F4FE 1F546-1F548 1F54F 1F568-1F56E 1F571-1F572 1F57B-1F586 1F588-1F589
    1F58E-1F58F 1F591-1F594 1F597-1F5A3 1F5A6-1F5A7 1F5A9-1F5B0 1F5B3-1F5BB 1F5BD-1F5C1
    1F5C5-1F5D0 1F5D4-1F5DB 1F5DF-1F5E0 1F5E2 1F5E4-1F5E7 1F5E9-1F5EE 1F5F0-1F5F2
    1F5F4-1F5F9 1F6C6-1F6CA 1F6D3-1F6D4 1F6E6-1F6E8 1F6EA 1F6F1-1F6F2 1F7D5-1F7D8
    1F8B0-1F8B1 1FA00-1FA53 1FA60-1FA6D 1FB00-1FB92 1FB94-1FBCA
"""
DROPPED_LETTERS = "FF9E-FF9F"
"""Halfwidth katakana sound marks, letters that Lucene does not emit."""


def char_class(spec: str) -> str:
    """A regex character-class body (``\\UXXXXXXXX`` ranges) for a space-separated list of
    hex code points and ``LOW-HIGH`` ranges."""
    parts = []
    for item in spec.split():
        low, _, high = item.partition("-")
        parts.append(f"\\U{int(low, 16):08X}" + (f"-\\U{int(high, 16):08X}" if high else ""))
    return "".join(parts)
