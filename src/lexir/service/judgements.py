"""Relevance marks made in the web page (or posted to ``/judgements``), kept in SQLite per corpus
and per judge, and exported as TREC qrels.

A mark is (corpus, query text, provision id, judge, grade). The query id of a query text is
stable (``w`` + the first 12 hex digits of the SHA-1 of its whitespace-normalised text), so marks
made on the same question on different days land under one qid, and ``lexir qrels export
--topics`` writes the texts beside the qrels for ``lexir run`` / ``lexir eval``. A judge marks a
(question, provision) once: a second mark replaces the first; two judges' marks of it are two
rows. The judge is who made the mark (:func:`lexir.service.web.judge_of`: the page's session
cookie, or the API key's fingerprint); marks saved before judges were recorded (schema 1) are
the judge ``unknown``. The database lives at ``cache_dir()/judgements.sqlite`` unless a path is
given; a database of schema 1 is migrated in one transaction when it is opened (all its marks
kept, or, on a crash, none changed).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from pathlib import Path

from lexir.io.paths import cache_dir

SCHEMA_VERSION = 2
UNKNOWN_JUDGE = "unknown"  # the judge of marks saved before judges were recorded
SCHEMA = """
CREATE TABLE IF NOT EXISTS marks (
  corpus TEXT NOT NULL, qid TEXT NOT NULL, query TEXT NOT NULL, doc_id TEXT NOT NULL,
  judge TEXT NOT NULL DEFAULT 'unknown', grade INTEGER NOT NULL, updated REAL NOT NULL,
  PRIMARY KEY (corpus, qid, doc_id, judge)
)
"""
INDEX = "CREATE INDEX IF NOT EXISTS marks_by_time ON marks (corpus, updated)"


def query_id(text: str) -> str:
    return "w" + hashlib.sha1(" ".join(text.split()).encode()).hexdigest()[:12]


class Judgements:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else cache_dir() / "judgements.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._migrate()

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=10)

    def _migrate(self) -> None:
        """Create the table, or bring a schema-1 table (no judge) to schema 2 in one transaction."""
        db = self._connect()
        try:
            db.isolation_level = None  # explicit transactions
            db.execute("BEGIN IMMEDIATE")  # one migrator at a time; readers see old or new, never half
            columns = [row[1] for row in db.execute("PRAGMA table_info(marks)")]
            if columns and "judge" not in columns:
                db.execute("ALTER TABLE marks RENAME TO marks_v1")
                db.execute(SCHEMA)
                db.execute("INSERT INTO marks (corpus, qid, query, doc_id, judge, grade, updated) "
                           "SELECT corpus, qid, query, doc_id, ?, grade, updated FROM marks_v1", (UNKNOWN_JUDGE,))
                db.execute("DROP TABLE marks_v1")
            else:
                db.execute(SCHEMA)
            db.execute(INDEX)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        finally:
            db.close()

    def mark(self, corpus: str, query: str, doc_id: str, grade: int, judge: str = UNKNOWN_JUDGE) -> str:
        """Save (or replace) one judge's mark; returns the query id."""
        qid = query_id(query)
        with self._lock, self._connect() as db:
            db.execute("INSERT OR REPLACE INTO marks (corpus, qid, query, doc_id, judge, grade, updated) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (corpus, qid, " ".join(query.split()), doc_id, judge, int(grade), time.time()))
        return qid

    def marks_for(self, corpus: str, query: str, judge: str | None = None) -> dict[str, int]:
        """The marks of one question: ``judge``'s own, or (no judge) the latest mark of each provision."""
        with self._connect() as db:
            if judge is not None:
                rows = db.execute("SELECT doc_id, grade FROM marks WHERE corpus = ? AND qid = ? AND judge = ?",
                                  (corpus, query_id(query), judge)).fetchall()
            else:
                rows = db.execute("SELECT doc_id, grade FROM marks WHERE corpus = ? AND qid = ? ORDER BY updated",
                                  (corpus, query_id(query))).fetchall()
        return dict(rows)

    def rows(self, corpus: str, since: float | None = None) -> list[tuple[str, str, str, str, int, float]]:
        """``(qid, query, doc_id, judge, grade, updated)`` of a corpus's marks (after ``since``), oldest first."""
        sql = "SELECT qid, query, doc_id, judge, grade, updated FROM marks WHERE corpus = ?"
        args: tuple = (corpus,)
        if since is not None:
            sql += " AND updated > ?"
            args += (since,)
        with self._connect() as db:
            return db.execute(sql + " ORDER BY updated, qid, doc_id, judge", args).fetchall()

    def qrels_lines(self, corpus: str | None = None, judge: str | None = None) -> list[str]:
        """TREC qrels: one line per (question, provision); with several judges, their mean grade
        rounded half up (``judge``: that judge's marks only)."""
        where, args = [], []
        if corpus:
            where.append("corpus = ?")
            args.append(corpus)
        if judge:
            where.append("judge = ?")
            args.append(judge)
        sql = "SELECT qid, doc_id, CAST(AVG(grade) + 0.5 AS INTEGER) FROM marks" + \
              (" WHERE " + " AND ".join(where) if where else "") + " GROUP BY qid, doc_id ORDER BY qid, doc_id"
        with self._connect() as db:
            rows = db.execute(sql, args).fetchall()
        return [f"{qid} 0 {doc} {grade}" for qid, doc, grade in rows]

    def topics(self, corpus: str | None = None) -> list[tuple[str, str]]:
        sql = "SELECT DISTINCT qid, query FROM marks" + (" WHERE corpus = ?" if corpus else "") + " ORDER BY qid"
        with self._connect() as db:
            return db.execute(sql, (corpus,) if corpus else ()).fetchall()

    def judges(self, corpus: str | None = None) -> dict[str, int]:
        """Judge -> number of marks (of ``corpus``)."""
        sql = "SELECT judge, COUNT(*) FROM marks" + (" WHERE corpus = ?" if corpus else "") + " GROUP BY judge"
        with self._connect() as db:
            return dict(db.execute(sql, (corpus,) if corpus else ()).fetchall())
