"""Polish law: the five codes (``pl-codes``) and the exam questions citing them (``pl-exams``).

Exam questions get their gold ids from the Polish citation parser; a question whose legal
basis cannot be used is dropped and counted by reason:

* ``basis unparseable``      - no citation found in the legal-basis string;
* ``act unknown``            - a citation names an act the abbreviation table does not know;
* ``act not in corpus``      - every cited act is known but none is in the corpus;
* ``article not in corpus``  - the act is there but the cited article is not;
* ``partly absent``          - several bases, some of them outside the corpus.

Splits are by exam year so that nothing tuned on earlier exams leaks into later ones:
``tune`` = 2012-2017, ``test`` = 2018-2023.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path

from lexir.citations.model import known_articles
from lexir.datasets.registry import Dataset, register
from lexir.datasets.statutes import corpus_of
from lexir.io.errors import FormatError
from lexir.io.jsonl import field, read_json, read_jsonl
from lexir.jurisdictions.pl.citations import gold_from_orycore, parse_legal_basis
from lexir.jurisdictions.pl.statutes import parse_code
from lexir.types import Act, Benchmark, Corpus, Query, QuerySet

log = logging.getLogger(__name__)

TUNE_YEARS = range(2012, 2018)
TEST_YEARS = range(2018, 2024)
QUERY_FIELDS = ("question", "question+options")


# ---------------------------------------------------------------------------
# codes


@lru_cache(maxsize=1)
def code_table() -> tuple[tuple[str, str, str], ...]:
    """(source id, file under the data dir, title) for each Polish code lexir knows."""
    text = (resources.files(__package__) / "data" / "codes.tsv").read_text(encoding="utf-8")
    return tuple(tuple(line.split("\t")) for line in text.splitlines() if line and not line.startswith("#"))


def read_code_file(path: str | Path) -> dict[str, str]:
    """A code file in the PolishLawLLM form: ``{"<article>": "<text>"}``."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict):
        raise FormatError(path, None, 'expected an object {"<article>": "<text>"}')
    for label, text in data.items():
        if not isinstance(text, str):
            raise FormatError(path, None, f"article text is {type(text).__name__}, not a string", field=label)
    return data


# an article heading at the start of a line inside another article's text: the PDF extraction
# ran two articles together ("106l" of kks.json also holds "Art. 106ł. § 1. Kto, ...")
_EMBEDDED = re.compile(r"(?m)^[ \t]*Art\.[ \t]*(?P<label>\d+[a-zżźćńółęąś]{0,3}(?:\^\d+)?)\.[ \t]")


def split_embedded_articles(articles: Mapping[str, str]) -> dict[str, str]:
    """``{"<article>": "<text>"}`` with articles run into another one given their own key.

    The heading must give a label that the file does not have yet and that follows the
    article holding it (``106l`` -> ``106ł``), so a quoted "Art. 5." is left alone.
    """
    out: dict[str, str] = {}
    for label, text in articles.items():
        cuts = [m for m in _EMBEDDED.finditer(text)
                if m.group("label") not in articles and _number(m.group("label")) >= _number(label)]
        if not cuts:
            out[label] = text
            continue
        out[label] = text[: cuts[0].start()].rstrip()
        for m, nxt in zip(cuts, [*cuts[1:], None], strict=True):
            out[m.group("label")] = text[m.end() : nxt.start() if nxt else len(text)].strip()
    return out


def _number(label: str) -> int:
    m = re.match(r"\d+", label)
    return int(m.group()) if m else -1


def missing_articles(labels: Iterable[str]) -> list[str]:
    """Whole numbers absent from a code's run of article numbers: repealed articles the source
    dropped, or text lost in its PDF extraction (``53`` in kks.json, the code's glossary).
    The loader reports them; it never invents their text."""
    have = {_number(label) for label in labels}
    have.discard(-1)
    if not have:
        return []
    return [str(n) for n in range(1, max(have) + 1) if n not in have]


def corpus_from_acts(name: str, acts: Iterable[Act], language: str) -> Corpus:
    return corpus_of(name, list(acts), language, jurisdiction="pl")


def load_codes(files: Mapping[str, str | Path], titles: Mapping[str, str] | None = None, name: str = "pl-codes") -> Corpus:
    """Parse code files (source id -> path) into a corpus of cleaned articles."""
    titles = titles or {}
    acts = []
    for src, path in files.items():
        articles = split_embedded_articles(read_code_file(path))
        gaps = missing_articles(articles)
        if gaps:
            shown = ", ".join(gaps[:10]) + (f" and {len(gaps) - 10} more" if len(gaps) > 10 else "")
            log.info("%s: no text for art. %s (repealed, or lost from the source file)", path, shown)
        acts.append(parse_code(src, articles, title=titles.get(src, "")))
    return corpus_from_acts(name, acts, "pl")


def _load_pl_codes(data_dir: Path) -> Corpus:
    table = code_table()
    return load_codes({src: data_dir / file for src, file, _ in table}, {src: title for src, _, title in table})


# ---------------------------------------------------------------------------
# exam questions


def query_text(question: str, options: Mapping[str, str] | None, fields: str = "question+options") -> str:
    if fields not in QUERY_FIELDS:
        raise ValueError(f"unknown query fields {fields!r}; valid: {', '.join(QUERY_FIELDS)}")
    if fields == "question" or not options:
        return question.strip()
    return " ".join([question.strip(), *(str(v).strip() for _, v in sorted(options.items()))])


def judge(citations, known: Mapping[str, set[str]]) -> tuple[list[str], str | None, str]:
    """Gold ids for a question's citations, or the reason it must be dropped."""
    if not citations:
        return [], "basis unparseable", ""
    unknown = [c.act_raw for c in citations if c.act is None]
    if unknown:
        return [], "act unknown", ", ".join(unknown)
    inside = [c for c in citations if c.act in known and c.article in known[c.act]]
    if len(inside) == len(citations):
        return list(dict.fromkeys(c.id for c in inside)), None, ""
    if inside:
        return [], "partly absent", ", ".join(c.id for c in citations if c not in inside)
    if all(c.act not in known for c in citations):
        return [], "act not in corpus", ", ".join(sorted({c.act for c in citations}))
    return [], "article not in corpus", ", ".join(c.id for c in citations)


def load_polishlawllm_exams(
    path: str | Path, corpus: Corpus, fields: str = "question+options", name: str = "pl-exams"
) -> QuerySet:
    """Questions in the PolishLawLLM JSONL form; ids are ``{year}-{exam_type}-{id}``."""
    known = known_articles(corpus)
    queries, qrels, dropped = [], {}, []
    splits: dict[str, list[str]] = {"tune": [], "test": []}
    for lineno, row in read_jsonl(path):
        year = field(row, "year", path, lineno, int)
        qid = f"{year}-{field(row, 'exam_type', path, lineno)}-{field(row, 'id', path, lineno)}"
        question = field(row, "question", path, lineno)
        options = row.get("choices") or {}
        if not isinstance(options, dict):
            raise FormatError(path, lineno, "expected an object of options", field="choices")
        basis = field(row, "legal_basis", path, lineno)
        gold, reason, detail = judge(parse_legal_basis(basis, known), known)
        if reason:
            dropped.append((qid, reason, detail or basis))
            continue
        # question and options kept apart from the query text, for answering (lexir.llm.answer)
        meta = {"year": year, "exam_type": row["exam_type"], "legal_basis": basis, "answer": row.get("answer"),
                "question": question.strip(), "options": {str(k): str(v) for k, v in options.items()}}
        queries.append(Query(qid, query_text(question, options, fields), meta))
        qrels[qid] = {g: 1 for g in gold}
        split = "tune" if year in TUNE_YEARS else "test" if year in TEST_YEARS else "other"
        splits.setdefault(split, []).append(qid)
    return QuerySet(name, queries, qrels, dropped, {k: v for k, v in splits.items() if v})


def load_orycore_exam(path: str | Path, corpus: Corpus, fields: str = "question+options", name: str = "") -> QuerySet:
    """A parsed OryCore exam (``exam-adw-*.json``); ids are the questions' own ``id`` field.

    The structured ``gold`` items are trusted first; only where they are empty does the
    ``legal_basis_raw`` string get parsed, because that string flattens superscripts
    (``art. 4541 k.c.`` is art. 454^1) and the parser has to guess them back.
    """
    path = Path(path)
    data = read_json(path)
    items = data.get("questions") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise FormatError(path, None, "expected an object with a 'questions' list", field="questions")
    known = known_articles(corpus)
    queries, qrels, dropped = [], {}, []
    for i, item in enumerate(items):
        where = f"questions[{i}]"
        if not isinstance(item, dict):
            raise FormatError(path, None, "expected an object", field=where)
        qid = field(item, "id", path, None)
        question = field(item, "question", path, None)
        gold_items = [g for g in item.get("gold") or [] if isinstance(g, dict)]
        citations = [c for c in (gold_from_orycore(g) for g in gold_items) if c is not None]
        if not citations:
            citations = parse_legal_basis(item.get("legal_basis_raw") or "", known)
        gold, reason, detail = judge(citations, known)
        if reason:
            dropped.append((qid, reason, detail or str(item.get("legal_basis_raw"))))
            continue
        options = item.get("options") or {}
        if not isinstance(options, dict):
            raise FormatError(path, None, "expected an object of options", field=f"{where}.options")
        meta = {"legal_basis": item.get("legal_basis_raw"), "answer": item.get("correct"),
                "question": question.strip(), "options": {str(k): str(v) for k, v in options.items()}}
        queries.append(Query(qid, query_text(question, options, fields), meta))
        qrels[qid] = {g: 1 for g in gold}
    exam = data.get("exam") or {}
    return QuerySet(name or str(exam.get("id") or path.stem), queries, qrels, dropped)


# ---------------------------------------------------------------------------
# registration


def _load_pl_exams(data_dir: Path) -> Benchmark:
    corpus = _load_pl_codes(data_dir)
    return Benchmark(corpus, load_polishlawllm_exams(data_dir / "pl" / "exams_2012_2023.jsonl", corpus))


def _load_orycore_sample(data_dir: Path) -> Benchmark:
    corpus = _load_pl_codes(data_dir)
    return Benchmark(corpus, load_orycore_exam(data_dir / "pl" / "orycore" / "exam-adw-2024-sample.json", corpus))


def _load_demo(_data_dir: Path) -> Benchmark:
    root = resources.files(__package__) / "demo"
    with resources.as_file(root) as folder:
        corpus = load_codes({"kk": folder / "kk.json"}, {"kk": "Kodeks karny"}, name="demo")
        return Benchmark(corpus, load_polishlawllm_exams(folder / "kk_exams.jsonl", corpus, name="demo"))


register(Dataset("pl-codes", "Five Polish codes (kc, kk, kks, kpa, kpc), articles split into § and pkt", "pl",
                 _load_pl_codes, ("docs",)))
register(Dataset("pl-exams", "Polish bar, bailiff and notary exam questions 2012-2023 with gold articles "
                 "(splits: tune 2012-2017, test 2018-2023)", "pl", _load_pl_exams, ("docs", "queries", "qrels"),
                 needs=("pl-codes",)))
register(Dataset("pl-orycore-sample", "First 10 questions of the parsed 2024 advocate exam (OryCore format)", "pl",
                 _load_orycore_sample, ("docs", "queries", "qrels"), needs=("pl-codes",)))
register(Dataset("demo", "Shipped with lexir: the Kodeks karny and the exam questions citing it", "pl",
                 _load_demo, ("docs", "queries", "qrels")))
