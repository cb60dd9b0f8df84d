"""Texts the exporter checks parity on and calibrates with (English, Russian, Chinese, German, edge cases).

Kept in the package (not read from any data folder) so an export is reproducible anywhere.
"""

from __future__ import annotations

PROBE_TEXTS: tuple[str, ...] = (
    "The cat sat on the mat.",
    "Berlin is the capital of Germany.",
    "Who wrote the novel War and Peace?",
    "1945",
    "an Italo-Norman named Raoul",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "Москва — столица России.",
    "Лев Толстой написал роман «Война и мир».",
    "北京是中国的首都。",
    "光合作用把光能转化为化学能。",
    "Die Hauptstadt von Deutschland ist Berlin.",
    "Café, naïve, résumé — accents and punctuation!",
    "",
    "   ",
    "?",
    # longer than any max_seq_length we ship (256 tokens for all-MiniLM-L6-v2, 512 for the cross-encoders)
    " ".join(f"sentence {i} of a very long answer that goes on and on," for i in range(90)),
)

PROBE_PAIRS: tuple[tuple[str, str], ...] = (
    ("The cat sat on the mat.", "A cat was sitting on the mat."),
    ("Berlin is the capital of Germany.", "Germany's capital city is Berlin."),
    ("Who wrote the novel War and Peace?", "Leo Tolstoy"),
    ("1945", "in 1945"),
    ("Москва — столица России.", "Столица России — Москва."),
    ("北京是中国的首都。", "中国的首都是北京。"),
    ("The weather is nice today.", "Лев Толстой написал роман «Война и мир»."),
    ("", ""),
    ("", "an empty first text"),
    (PROBE_TEXTS[-1], "a short text paired with one longer than the max length"),
    (PROBE_TEXTS[-1], PROBE_TEXTS[-1]),
)

# Short answer-like texts used to calibrate static int8 activation ranges (quantize.py, method "static")
CALIBRATION_TEXTS: tuple[str, ...] = (
    *PROBE_TEXTS,
    "Norman mercenary",
    "Seine",
    "the Rhine river",
    "Albert Einstein",
    "in the 19th century",
    "approximately 3.5 million people",
    "because of the high cost of production",
    "The treaty was signed in Paris in 1783, ending the war.",
    "Water boils at 100 degrees Celsius at sea level.",
    "The mitochondria is the powerhouse of the cell.",
    "He was born in a small village near the border and moved to the city as a child.",
    "Nine",
    "none",
    "chucky",
    "Amma",
    "two weeks",
    "the president of the United States",
    "Пётр Первый основал Санкт-Петербург в 1703 году.",
    "около двух миллионов человек",
    "长城是世界上最长的建筑。",
    "大约三百万人",
    "das Brandenburger Tor",
    "im Jahr 1990",
)
