"""TREC runs, qrels and topics.

Run lines: ``qid Q0 docid rank score tag``; qrels lines: ``qid 0 docid grade``. Fields are
separated by whitespace, so a query or document id holding whitespace (German acts such as
``AO 1977::177``) is written with each whitespace character and ``%`` percent-encoded
(``AO%201977::177``) and decoded on reading; ids without them are written as they are.
Topics: the classic SGML-ish ``<top><num>…<title>…</top>`` form, or ``qid<TAB>text`` lines.
"""

from __future__ import annotations

import contextlib
import math
import re
from pathlib import Path
from urllib.parse import unquote

from lexir.io.errors import FormatError
from lexir.types import Qrels, Query, Run, ranked


def write_run(run: Run, path: str | Path, tag: str = "lexir", k: int | None = 100) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    # Written to a side file and renamed, so an interrupted write never leaves half a run; a
    # write that fails (a bad id, a full disk, a folder in the way of the rename) removes it.
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            for qid, results in run.items():
                for rank, (doc_id, score) in enumerate(ranked(results)[:k], 1):
                    out.write(f"{_encode(qid, 'query id')} Q0 {_encode(doc_id, 'document id')} {rank} "
                              f"{score:.6f} {tag}\n")
        tmp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):  # (not there, or a folder of that name: left alone)
            tmp.unlink()
        raise


def read_run(path: str | Path) -> Run:
    """A TREC run. A malformed line (wrong field count, a score or rank that is not a
    number, a non-finite score) or a document listed twice for one query is an error that
    names the file and line: a run is never read half-right."""
    run: Run = {}
    seen: dict[tuple[str, str], int] = {}
    for lineno, cells in _rows(path, 6):
        qid, _q0, doc_id, rank, score, _tag = cells
        qid, doc_id = _decode(qid), _decode(doc_id)
        try:
            value = float(score)
        except ValueError:
            raise FormatError(path, lineno, f"score {score!r} is not a number") from None
        if not math.isfinite(value):
            raise FormatError(path, lineno, f"score {score!r} is not finite")
        if not rank.lstrip("-").isdigit():
            raise FormatError(path, lineno, f"rank {rank!r} is not an integer")
        first = seen.setdefault((qid, doc_id), lineno)
        if first != lineno:
            raise FormatError(path, lineno, f"document {doc_id!r} listed twice for query {qid!r} "
                                            f"(first on line {first})")
        run.setdefault(qid, {})[doc_id] = value
    return run


def write_qrels(qrels: Qrels, path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        for qid, judged in qrels.items():
            for doc_id, grade in judged.items():
                out.write(f"{_encode(qid, 'query id')} 0 {_encode(doc_id, 'document id')} {grade}\n")


def read_qrels(path: str | Path) -> Qrels:
    """TREC qrels: ``query-id iteration doc-id grade`` a line. A grade that is not an integer
    (``1.0`` included: trec_eval would read it as 1) or a document judged twice for one query (which
    grade holds?) is an error naming the file and line."""
    qrels: Qrels = {}
    seen: dict[tuple[str, str], int] = {}
    for lineno, cells in _rows(path, 4):
        qid, _iter, doc_id, grade = cells
        qid, doc_id = _decode(qid), _decode(doc_id)
        try:
            value = int(grade)
        except ValueError:
            raise FormatError(path, lineno, f"relevance grade {grade!r} is not an integer") from None
        first = seen.setdefault((qid, doc_id), lineno)
        if first != lineno:
            raise FormatError(path, lineno, f"document {doc_id!r} judged twice for query {qid!r} "
                                            f"(first on line {first})")
        qrels.setdefault(qid, {})[doc_id] = value
    return qrels


_TOP = re.compile(r"<top>(.*?)</top>", re.S | re.I)
_FIELD = re.compile(r"<(num|title|desc|narr)>\s*(?:Number:|Description:|Narrative:)?(.*?)(?=<(?:/?\w+)>|$)", re.S | re.I)


def read_topics(path: str | Path, fields: tuple[str, ...] = ("title",)) -> list[Query]:
    """TREC topics: SGML ``<top>`` blocks (text = the chosen fields) or ``qid<TAB>text`` lines."""
    path = Path(path)
    text = _read_text(path)
    if "<top>" in text.lower():
        queries = []
        for block in _TOP.finditer(text):
            values = {name.lower(): value.strip() for name, value in _FIELD.findall(block.group(1))}
            lineno = text.count("\n", 0, block.start()) + 1
            if not values.get("num"):
                raise FormatError(path, lineno, "topic without <num>")
            body = " ".join(values.get(f, "") for f in fields).strip()
            queries.append(Query(values["num"], body))
        return queries
    queries = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        qid, sep, body = line.partition("\t")
        if not sep:
            raise FormatError(path, lineno, "expected 'query-id<TAB>text'")
        queries.append(Query(qid.strip(), body.strip()))
    return queries


def _encode(value: str, what: str) -> str:
    """An id as one whitespace-free TREC field (see the module doc)."""
    if not value:
        raise ValueError(f"an empty {what} cannot be written to a TREC file")
    if "%" not in value and not any(ch.isspace() for ch in value):
        return value
    return "".join(f"%{ord(ch):02X}" if ch == "%" or ch.isspace() else ch for ch in value)


def _decode(value: str) -> str:
    return unquote(value) if "%" in value else value


def _read_text(path: Path) -> str:
    try:
        # utf-8-sig: a byte-order mark (Windows editors write one) is not part of the first query id
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise FormatError(path, None, "file not found") from None
    except UnicodeDecodeError as err:
        raise FormatError(path, None, f"not UTF-8 text ({err.reason} at byte {err.start})") from None


def _rows(path: str | Path, width: int):
    path = Path(path)
    for lineno, line in enumerate(_read_text(path).splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split()
        if len(cells) != width:
            raise FormatError(path, lineno, f"expected {width} whitespace-separated fields, got {len(cells)}")
        yield lineno, cells
