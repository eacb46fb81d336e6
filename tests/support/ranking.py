"""The reference ranking that lorebot's word search must not fall below: plain FTS5 bm25
over the notes' text, the question's words ORed after common English stopwords."""

from __future__ import annotations

import re
import sqlite3

from memory.ranking import ENGLISH_STOPWORDS


def plain_bm25_over(docs: list[tuple[str, str]], question: str, k: int) -> list[str]:
    """The topics of the top `k` of `docs` (topic, text) by a plain FTS5 bm25() query of
    the words of `question` ORed, NLTK's English stopwords left out (all words when only
    they are left), with the porter tokenizer."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute(
            "CREATE VIRTUAL TABLE ref USING fts5(topic UNINDEXED, text, "
            "tokenize = 'porter unicode61')"
        )
        db.executemany("INSERT INTO ref (topic, text) VALUES (?, ?)", docs)
        words = list(dict.fromkeys(w.lower() for w in re.findall(r"\w+", question)))
        words = [w for w in words if w not in ENGLISH_STOPWORDS] or words
        match = " OR ".join('"' + w + '"' for w in words)
        rows = db.execute(
            "SELECT topic FROM ref WHERE ref MATCH ? ORDER BY bm25(ref) LIMIT ?", (match, k)
        ).fetchall()
        return [r[0] for r in rows]
    finally:
        db.close()
