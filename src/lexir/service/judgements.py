"""Relevance marks made in the web page, kept in SQLite and exported as TREC qrels.

A mark is (corpus, query text, provision id, grade). The query id of a query text is stable
(``w`` + the first 12 hex digits of the SHA-1 of its whitespace-normalised text), so marks made
on the same question on different days land under one qid, and ``lexir qrels export --topics``
writes the texts beside the qrels for ``lexir run`` / ``lexir eval``. The database lives at
``cache_dir()/judgements.sqlite`` unless a path is given.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from pathlib import Path

from lexir.io.paths import cache_dir

SCHEMA = """
CREATE TABLE IF NOT EXISTS marks (
  corpus TEXT NOT NULL, qid TEXT NOT NULL, query TEXT NOT NULL, doc_id TEXT NOT NULL,
  grade INTEGER NOT NULL, updated REAL NOT NULL,
  PRIMARY KEY (corpus, qid, doc_id)
)
"""


def query_id(text: str) -> str:
    return "w" + hashlib.sha1(" ".join(text.split()).encode()).hexdigest()[:12]


class Judgements:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else cache_dir() / "judgements.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        with self._connect() as db:
            db.execute(SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=10)

    def mark(self, corpus: str, query: str, doc_id: str, grade: int) -> str:
        """Save (or replace) one mark; returns the query id."""
        qid = query_id(query)
        with self._lock, self._connect() as db:
            db.execute("INSERT OR REPLACE INTO marks VALUES (?, ?, ?, ?, ?, ?)",
                       (corpus, qid, " ".join(query.split()), doc_id, int(grade), time.time()))
        return qid

    def marks_for(self, corpus: str, query: str) -> dict[str, int]:
        with self._connect() as db:
            rows = db.execute("SELECT doc_id, grade FROM marks WHERE corpus = ? AND qid = ?",
                              (corpus, query_id(query))).fetchall()
        return dict(rows)

    def qrels_lines(self, corpus: str | None = None) -> list[str]:
        sql = "SELECT qid, doc_id, grade FROM marks" + (" WHERE corpus = ?" if corpus else "") + \
              " ORDER BY qid, doc_id"
        with self._connect() as db:
            rows = db.execute(sql, (corpus,) if corpus else ()).fetchall()
        return [f"{qid} 0 {doc} {grade}" for qid, doc, grade in rows]

    def topics(self, corpus: str | None = None) -> list[tuple[str, str]]:
        sql = "SELECT DISTINCT qid, query FROM marks" + (" WHERE corpus = ?" if corpus else "") + " ORDER BY qid"
        with self._connect() as db:
            return db.execute(sql, (corpus,) if corpus else ()).fetchall()
