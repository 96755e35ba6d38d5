"""Corpora and queries given by path rather than by registered name.

A corpus path may be a BEIR folder (``corpus.jsonl`` inside), a JSONL corpus file
(``_id``/``id``, ``text``, optional ``title``), a code file in the PolishLawLLM form
(``{"<article>": "<text>"}``, source id = file stem) or a folder of such code files.
Query files come in four forms: ``polishlawllm`` (exam JSONL), ``orycore`` (parsed exam
JSON), ``beir`` (``queries.jsonl``, or a BEIR folder with ``qrels/test.tsv``) and ``trec``
(topics).
"""

from __future__ import annotations

import re
from pathlib import Path

from lexir.analysis import detect_language, normalise_language
from lexir.datasets import registry
from lexir.io import (
    FormatError,
    read_beir,
    read_corpus_jsonl,
    read_qrels,
    read_qrels_tsv,
    read_queries_jsonl,
    read_topics,
)
from lexir.types import Benchmark, Corpus, QuerySet

QUERY_FORMATS = ("polishlawllm", "orycore", "beir", "trec")


def is_path(spec: str) -> bool:
    return "/" in spec or "\\" in spec or Path(spec).exists()


def split_as_of(spec: str) -> tuple[str, str | None]:
    """``"de-gesetze-history@2013-06-01"`` -> ``("de-gesetze-history", "2013-06-01")``: a registered
    name with ``@DATE`` means its content as of that date (see :func:`load_dataset`)."""
    name, sep, day = spec.rpartition("@")
    if sep and name and re.fullmatch(r"\d{4}-\d{2}-\d{2}", day):
        return name, day
    return spec, None


def with_as_of(spec: str, as_of: str | None) -> str:
    """``spec`` with ``@as_of`` added (the CLI's ``--as-of``); a spec already dated conflicts."""
    if not as_of:
        return spec
    if split_as_of(spec)[1] is not None:
        raise ValueError(f"{spec!r} already names a date; drop --as-of or the @DATE")
    if is_path(spec):
        raise ValueError(f"--as-of needs a registered dataset with a history, not a path ({spec})")
    return f"{spec}@{as_of}"


def load_dataset(spec: str, data_dir: str | Path | None = None):
    """A registered dataset's content; ``NAME@DATE`` gives it as of that date (datasets with a
    history only: the provisions in force on that day, filtered before any retrieval)."""
    name, day = split_as_of(spec)
    loaded = registry.load(name, data_dir)
    if day is None:
        return loaded
    if not hasattr(loaded, "as_of"):
        dated = [n for n in registry.names() if registry.get(n).has("history")]
        raise registry.DatasetError(f"dataset {name!r} has no history, so no version as of {day}; "
                                    f"datasets with a history: {', '.join(dated)}")
    return loaded.as_of(day)


def load_benchmark(name: str, data_dir: str | Path | None = None, language: str | None = None,
                   notify=None) -> Benchmark:
    """A registered dataset that has queries, or a benchmark given by path: a BEIR folder
    (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``) or a JSONL corpus with a
    ``queries.jsonl`` (and optionally ``qrels/<split>.tsv``) beside it."""
    if is_path(name):
        bench = path_benchmark(name, language, notify)
        if bench is None:
            raise FormatError(Path(name), None, "no queries.jsonl beside the corpus: pass --queries and "
                                                "--queries-format, or add queries.jsonl (and qrels/<split>.tsv)")
        return bench
    dataset = registry.get(split_as_of(name)[0])
    if not dataset.has("queries"):
        with_queries = [n for n in registry.names() if registry.get(n).has("queries")]
        raise registry.DatasetError(f"dataset {name!r} has no queries; datasets with queries: {', '.join(with_queries)}")
    bench = load_dataset(name, data_dir)  # NAME@DATE: its corpus as of that date
    if language:
        bench = Benchmark(bench.corpus.with_language(normalise_language(language)), bench.queries)
    return bench


def path_benchmark(spec: str | Path, language: str | None = None, notify=None) -> Benchmark | None:
    """The benchmark a corpus path carries with it, or ``None`` when it has no queries.

    Every query of ``queries.jsonl`` is kept; each ``qrels/<split>.tsv`` adds its judgements
    and a split of that name (the queries it judges), so ``split("test")`` is BEIR's test set.
    """
    path = Path(spec)
    folder = path if path.is_dir() else path.parent
    queries_path = folder / "queries.jsonl"
    if not queries_path.is_file() or not (path.is_dir() or path.suffix == ".jsonl"):
        return None
    corpus = load_corpus(str(path), language, notify=notify)
    queries = read_queries_jsonl(queries_path)
    qrels: dict[str, dict[str, int]] = {}
    splits: dict[str, list[str]] = {}
    for split_file in sorted((folder / "qrels").glob("*.tsv")) if (folder / "qrels").is_dir() else []:
        judged = read_qrels_tsv(split_file)
        splits[split_file.stem] = list(judged)
        for qid, docs in judged.items():
            qrels.setdefault(qid, {}).update(docs)
    known = {q.id for q in queries}
    unknown = sorted(set(qrels) - known)
    if unknown:
        raise FormatError(folder / "qrels", None, f"{len(unknown)} judged query ids are not in {queries_path.name} "
                                                  f"(first: {unknown[0]!r})")
    return Benchmark(corpus, QuerySet(corpus.name, queries, qrels, splits=splits))


def load_corpus(
    spec: str, language: str | None = None, data_dir: str | Path | None = None, notify=None
) -> Corpus:
    """A registered dataset's corpus, or a corpus read from a path (see module doc).

    For a path without ``language`` the language is detected from the text and reported
    through ``notify`` (a callable taking a message).
    """
    if not is_path(spec):
        loaded = load_dataset(spec, data_dir)
        corpus = loaded.corpus if hasattr(loaded, "corpus") else loaded
        if language:
            corpus = corpus.with_language(normalise_language(language))
        return corpus
    path = Path(spec)
    if not path.exists():
        raise FormatError(path, None, "no such file or folder")
    corpus = _corpus_from_path(path)
    if language:
        return corpus.with_language(normalise_language(language))
    sample = [d.text for d in corpus.documents[:200]]
    code, confidence = detect_language(sample)
    if code == "unk":
        raise FormatError(path, None, "cannot detect the corpus language; pass --language")
    if notify:
        notify(f"detected language {code!r} for {path} (confidence {confidence:.2f}); override with --language")
    return corpus.with_language(code)


def _corpus_from_path(path: Path) -> Corpus:
    from lexir.datasets.polish import load_codes

    if path.is_dir() and (path / "corpus.jsonl").is_file():
        docs, _, _ = read_beir(path)
        return Corpus(path.name, docs)
    if path.is_file() and path.suffix == ".jsonl":
        return Corpus(path.stem, read_corpus_jsonl(path))
    if path.is_file() and path.suffix == ".json":
        return load_codes({path.stem: path}, name=path.stem)
    if path.is_dir():
        files = sorted(path.glob("*.json"))
        if files:
            return load_codes({f.stem: f for f in files}, name=path.name)
    raise FormatError(path, None, "not a corpus: expected a BEIR folder, a .jsonl corpus, a code .json, "
                                  "or a folder of code .json files")


def load_queries(path: str | Path, fmt: str, corpus: Corpus, qrels: str | Path | None = None) -> QuerySet:
    """Queries (and their gold, where the format carries it) from a file in one of QUERY_FORMATS."""
    from lexir.datasets.polish import load_orycore_exam, load_polishlawllm_exams

    path = Path(path)
    if fmt not in QUERY_FORMATS:
        raise ValueError(f"unknown query format {fmt!r}; valid: {', '.join(QUERY_FORMATS)}")
    if fmt == "polishlawllm":
        queryset = load_polishlawllm_exams(path, corpus, name=path.stem)
    elif fmt == "orycore":
        queryset = load_orycore_exam(path, corpus)
    elif fmt == "beir":
        if path.is_dir():
            _, queries, judged = read_beir(path)
        else:
            queries, judged = read_queries_jsonl(path), {}
        queryset = QuerySet(path.stem, queries, judged)
    else:
        queryset = QuerySet(path.stem, read_topics(path), {})
    if qrels:
        queryset.qrels = read_qrels(qrels)
    return queryset
