"""The one door to data, :func:`open` (``lexir.datasets.open``): a registered name, ``NAME@DATE``
or a path; and query files read over a corpus (:func:`load_queries`).

A corpus path may be a BEIR folder (``corpus.jsonl`` inside), a JSONL corpus file
(``_id``/``id``, ``text``, optional ``title``), a code file in the PolishLawLLM form
(``{"<article>": "<text>"}``, source id = file stem) or a folder of such code files.
Query files come in four forms: ``polishlawllm`` (exam JSONL), ``orycore`` (parsed exam
JSON), ``beir`` (``queries.jsonl``, or a BEIR folder with ``qrels/test.tsv``) and ``trec``
(topics).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any

from lexir.analysis import detect_language, normalise_language
from lexir.datasets import registry
from lexir.datasets.registry import is_path
from lexir.io import (
    FormatError,
    iter_corpus_jsonl,
    read_beir,
    read_corpus_jsonl,
    read_qrels,
    read_qrels_tsv,
    read_queries_jsonl,
    read_topics,
)
from lexir.types import Benchmark, Corpus, Document, DocumentStream, QuerySet

GENERIC_QUERY_FORMATS = ("beir", "trec")


def query_formats() -> tuple[str, ...]:
    """The query-file formats lexir reads: the legal orders' own (``polishlawllm``, ``orycore``),
    then the generic ones."""
    from lexir.jurisdiction import jurisdictions

    return (*(name for order in jurisdictions() for name in order.query_formats), *GENERIC_QUERY_FORMATS)


WANTS = (None, "corpus", "queries")


def open(spec: str | Path, *, language: str | None = None, data_dir: str | Path | None = None,
         notify: Callable[[str], None] | None = None, want: str | None = None,
         jurisdiction: str | None = None) -> Any:
    """The one door to data: a registered name (``pl-exams``), a name a registry pattern matches
    (``de-gesetze-history@2013-06-01``: the provisions in force that day) or a path.

    A dataset with queries, a BEIR folder, or a JSONL corpus with ``queries.jsonl`` beside it gives
    a :class:`~lexir.types.Benchmark`; a corpus alone a :class:`~lexir.types.Corpus`; a dataset
    with a history its :class:`~lexir.structure.history.StatuteHistory`. ``want="corpus"``: always
    the corpus; ``want="queries"``: a benchmark, else a clear error. ``language`` overrides the
    corpus language (a path without it has its language detected, reported through ``notify``).
    ``jurisdiction``: the legal order whose law a corpus given by path is (``at``: a folder of
    Austrian law, read as German law by default; see :func:`given_order`); its language is then
    the order's unless ``language`` says otherwise. ``data_dir``: where registered datasets' files
    lie (see :mod:`lexir.datasets.registry`). Every call returns a new object."""
    if want not in WANTS:
        raise ValueError(f"want={want!r}: valid: corpus, queries (or None: what the spec holds)")
    spec = str(spec)
    order = given_order(spec, jurisdiction)
    if order is not None:
        language = language or order.language
    if is_path(spec):
        loaded = _from_path(Path(spec), language, notify, want)
    else:
        if want == "queries" and not registry.get(registry.split_dated(spec)[0]).has("queries"):
            with_queries = [n for n in registry.names() if registry.get(n).has("queries")]
            raise registry.DatasetError(f"dataset {spec!r} has no queries; datasets with queries: "
                                        f"{', '.join(with_queries)}; or give a query file (--queries)")
        loaded = registry._resolve(spec, data_dir)
    if want == "corpus" and hasattr(loaded, "corpus"):
        loaded = loaded.corpus
    if not language:
        return loaded
    lang = normalise_language(language)

    def read_as(corpus: Corpus) -> Corpus:
        corpus = corpus.with_language(lang)
        return corpus.with_jurisdiction(order.code) if order is not None else corpus

    if isinstance(loaded, Benchmark):
        return Benchmark(read_as(loaded.corpus), loaded.queries)
    return read_as(loaded) if isinstance(loaded, Corpus) else loaded


def given_order(spec: str, jurisdiction: str | None):
    """The order a corpus given by path is read as, where ``jurisdiction`` names one (None where
    it names none): its :class:`~lexir.jurisdiction.Jurisdiction`. A registered dataset is its own
    order's law already: naming one for it is an error."""
    if not jurisdiction:
        return None
    from lexir.jurisdiction import get_jurisdiction

    order = get_jurisdiction(jurisdiction)  # unknown: ValueError naming the valid codes
    if not is_path(spec):
        raise ValueError(f"dataset {spec!r} is registered as its own legal order's law: a jurisdiction "
                         f"({order.code!r}) is named only for a corpus given by path")
    return order


def _from_path(path: Path, language: str | None, notify, want: str | None) -> Corpus | Benchmark:
    """A benchmark when the path carries queries (unless only the corpus is wanted), else its
    corpus, its language detected when none is given (the caller sets a given one)."""
    if not path.exists():
        raise FormatError(path, None, "no such file or folder")
    corpus = _corpus_from_path(path)
    if not language:
        corpus = corpus.with_language(_detected(path, corpus, notify))
    bench = None if want == "corpus" else _path_benchmark(path, corpus)
    if want == "queries" and bench is None:
        raise FormatError(path, None, "no queries.jsonl beside the corpus: pass --queries and "
                                      "--queries-format, or add queries.jsonl (and qrels/<split>.tsv)")
    return bench or corpus


def _detected(path: Path, documents: Iterable[Document], notify) -> str:
    """The language of the first 200 documents' text (an error when it cannot be told)."""
    code, confidence = detect_language([d.text for d in islice(documents, 200)])
    if code == "unk":
        raise FormatError(path, None, "cannot detect the corpus language; pass --language")
    if notify:
        notify(f"detected language {code!r} for {path} (confidence {confidence:.2f}); override with --language")
    return code


def stream(spec: str | Path, *, language: str | None = None, notify: Callable[[str], None] | None = None,
           data_dir: str | Path | None = None, jurisdiction: str | None = None) -> DocumentStream | None:
    """A JSONL corpus file, a BEIR folder's ``corpus.jsonl``, or a registered dataset with a
    document reader (``de-gesetze``, ``fr-codes``), as a :class:`~lexir.types.DocumentStream`: read as a build
    needs it, never held whole (a file's language detected as :func:`open` does when none is
    given); None for any other spec (a code file, another dataset, a dated name: :func:`open`
    them); ``jurisdiction`` as for :func:`open`."""
    path = Path(str(spec))
    order = given_order(str(spec), jurisdiction)
    if order is not None:
        language = language or order.language
    if not is_path(str(spec)):
        if registry.split_dated(str(spec))[1] is not None or str(spec) not in registry.names():
            return None
        documents = registry.get(str(spec)).stream(data_dir)
        if documents is None or not language:
            return documents
        return documents.with_language(normalise_language(language))
    if path.is_dir() and (path / "corpus.jsonl").is_file():
        name, file = path.name, path / "corpus.jsonl"
    elif path.is_file() and path.suffix == ".jsonl":
        name, file = path.stem, path
    else:
        return None
    documents = DocumentStream(name, partial(iter_corpus_jsonl, file))
    code = normalise_language(language) if language else _detected(file, iter_corpus_jsonl(file), notify)
    documents = documents.with_language(code)
    return documents.with_jurisdiction(order.code) if order is not None else documents


def _path_benchmark(path: Path, corpus: Corpus) -> Benchmark | None:
    """The benchmark a corpus path carries with it, or ``None`` when it has no queries.

    Every query of ``queries.jsonl`` is kept; each ``qrels/<split>.tsv`` adds its judgements
    and a split of that name (the queries it judges), so ``split("test")`` is BEIR's test set.
    """
    folder = path if path.is_dir() else path.parent
    queries_path = folder / "queries.jsonl"
    if not queries_path.is_file() or not (path.is_dir() or path.suffix == ".jsonl"):
        return None
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


def _corpus_from_path(path: Path) -> Corpus:
    from lexir.jurisdiction import jurisdictions

    if path.is_dir() and (path / "corpus.jsonl").is_file():
        docs, _, _ = read_beir(path)
        return Corpus(path.name, docs)
    if path.is_file() and path.suffix == ".jsonl":
        return Corpus(path.stem, read_corpus_jsonl(path))
    for order in jurisdictions():  # a legal order's own file format (Polish code .json files, ...)
        corpus = order.corpus_reader(path) if order.corpus_reader is not None else None
        if corpus is not None:
            return corpus
    raise FormatError(path, None, "not a corpus: expected a BEIR folder, a .jsonl corpus, a code .json, "
                                  "or a folder of code .json files")


def load_queries(path: str | Path, fmt: str, corpus: Corpus, qrels: str | Path | None = None) -> QuerySet:
    """Queries (and their gold, where the format carries it) from a file in one of
    :func:`query_formats` (``beir``, ``trec``, and those the legal orders bring)."""
    from lexir.jurisdiction import jurisdictions

    path = Path(path)
    own = {name: load for order in jurisdictions() for name, load in order.query_formats.items()}
    if fmt not in query_formats():
        raise ValueError(f"unknown query format {fmt!r}; valid: {', '.join(query_formats())}")
    if fmt in own:
        queryset = own[fmt](path, corpus)
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
