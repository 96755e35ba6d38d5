"""The verbs of ``import lexir``: load, build, retrieve, evaluate, compare, fuse, train, find_citations.

::

    import lexir

    bench = lexir.load("pl-exams")                    # a registered name, or a path
    test = bench.queries.split("test")
    bm25 = lexir.retrieve(lexir.build(bench, "bm25"), test)
    stem = lexir.retrieve(lexir.build(bench, "bm25", mode="stem"), test)
    both = lexir.fuse([bm25, stem], "wrrf", weights="1,0.7", k0=20)
    print(lexir.compare({"bm25": bm25, "stem": stem, "fused": both}, test, baseline="bm25").to_markdown())

This module is the public face: it imports the layers below it, and nothing below imports it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lexir.types import Benchmark, Corpus, Qrels, Query, QuerySet, Run

Queries = QuerySet | Benchmark | Sequence[Query] | Mapping[str, str]


def load(name_or_path: str | Path, *, language: str | None = None, data_dir: str | Path | None = None,
         notify: Callable[[str], None] | None = None, jurisdiction: str | None = None) -> Any:
    """A registered dataset by name (``pl-exams``, ``de-gesetze`` ...), ``NAME@DATE`` (a dataset
    with a history as in force that day), or a corpus by path: :func:`lexir.datasets.open`.

    A dataset with queries, a BEIR folder, or a JSONL corpus with ``queries.jsonl`` beside it
    gives a :class:`~lexir.types.Benchmark` (``.corpus``, ``.queries``); a corpus alone gives
    a :class:`~lexir.types.Corpus`. Every call returns a new object. ``language`` overrides
    the corpus language (a path without it has its language detected). ``jurisdiction``: the
    legal order whose law a corpus given by path is (``"at"``: Austrian law; else the home order
    of its language, so German text is German law), its language then the order's.
    """
    from lexir.datasets import open as open_data

    return open_data(name_or_path, language=language, data_dir=data_dir, notify=notify, jurisdiction=jurisdiction)


def build(corpus: Corpus | Benchmark, system: str = "bm25", *, cache: bool = True,
          progress: Callable[[int], None] | None = None, **params: Any):
    """A retriever: ``system`` is a name or a spec (``"bm25(k1=0.9;mode=stem)"``), ``params``
    override it. Saved indexes come from and go to the cache. Given a benchmark, the
    controls that need the gold (``oracle``, ``oracle-act``) get its judgements."""
    from lexir.retrieval.build import build_retriever

    if isinstance(corpus, str | Path):  # a dataset's name or a path: loaded, as lexir.load does
        corpus = load(corpus)
    if not isinstance(system, str) or not system.strip():
        raise ValueError(f"system: a name or a spec such as 'bm25(k1=0.9)' (lexir systems lists them); got {system!r}")
    context: dict[str, Any] = {}
    if isinstance(corpus, Benchmark):
        context["qrels"] = corpus.queries.qrels
        corpus = corpus.corpus
    return build_retriever(corpus, system, params, progress=progress, cache=cache, **context)


def _queries(queries: Queries) -> list[Query]:
    if isinstance(queries, Benchmark):
        return list(queries.queries.queries)
    if isinstance(queries, QuerySet):
        return list(queries.queries)
    if isinstance(queries, Mapping):
        return [Query(str(qid), str(text)) for qid, text in queries.items()]
    if isinstance(queries, str):
        raise TypeError("queries: a list of Query, {query id: text}, a QuerySet or a Benchmark; got a string "
                        "(one question: retriever.search(text, k))")
    listed = list(queries)
    seen: dict[str, int] = {}
    for i, query in enumerate(listed):
        if not isinstance(query, Query):
            raise TypeError(f"queries[{i}]: a Query(id, text); got {type(query).__name__}")
        if query.id in seen:  # a run holds one ranking per id: the second would replace the first
            raise ValueError(f"query id {query.id!r} is given twice (queries[{seen[query.id]}] and queries[{i}]); "
                             "a run holds one ranking per id")
        seen[query.id] = i
    return listed


def _qrels(gold: Qrels | QuerySet | Benchmark) -> Qrels:
    if isinstance(gold, Benchmark):
        return gold.queries.qrels
    if isinstance(gold, QuerySet):
        return gold.qrels
    return gold


def retrieve(retriever, queries: Queries, k: int = 100, progress: Callable[[int], None] | None = None) -> Run:
    """The run of ``retriever`` over ``queries`` (a query set, a benchmark, a list of
    :class:`~lexir.types.Query`, or ``{query id: text}``): the top ``k`` per query."""
    from lexir.retrieval.base import check_k

    return retriever.search_many(_queries(queries), k=check_k(k), progress=progress)


def evaluate(run: Run, gold: Qrels | QuerySet | Benchmark, measures: Iterable = ()):
    """Per-query and mean scores of ``run`` (every judged query; a missing one scores 0)."""
    from lexir.evaluation import DEFAULT_MEASURES
    from lexir.evaluation import evaluate as _evaluate

    _check_run(run, "run")
    if isinstance(measures, str):  # one measure: "nDCG@10", not its letters
        measures = (measures,)
    return _evaluate(run, _qrels(gold), tuple(measures) or DEFAULT_MEASURES)


def _check_run(run: Any, name: str) -> None:
    if not isinstance(run, Mapping):
        raise TypeError(f"{name}: a run, {{query id: {{document id: score}}}} (lexir.retrieve(retriever, queries)); "
                        f"got {type(run).__name__}")


def compare(runs: Mapping[str, Run], gold: Qrels | QuerySet | Benchmark, baseline: str | None = None, **kw):
    """Every run's scores with 95% intervals, and paired tests against ``baseline`` (default:
    the first run), Holm-corrected; render with ``to_markdown`` / ``to_latex`` of
    :mod:`lexir.evaluation`."""
    from lexir.evaluation import compare as _compare

    if not isinstance(runs, Mapping):
        raise TypeError(f"runs: {{name: run}}, each run named; got {type(runs).__name__}")
    if not runs:
        raise ValueError("compare needs at least one run")
    for name, run in runs.items():
        _check_run(run, f"runs[{name!r}]")
    return _compare(runs, _qrels(gold), baseline or next(iter(runs)), **kw)


def fuse(runs: Sequence[Run], method: str = "rrf", **params: Any) -> Run:
    """Runs fused query by query: ``rrf`` (``k``), ``wrrf`` (``weights``, ``k0``) or
    ``combsum`` (``weights``, ``norm``); ``depth`` results of each run are used."""
    from lexir.retrieval.fusion import fuse as _fuse

    if isinstance(runs, Mapping | str):
        raise TypeError(f"runs: a list of runs; got {type(runs).__name__}")
    for i, run in enumerate(runs):
        _check_run(run, f"runs[{i}]")
    return _fuse(runs, method, **params)  # a parameter of another method is refused there, not ignored


def train(system: str, data: Any = None, *, output: str | Path, split: str | None = None,
          language: str | None = None, corpus: Any = None, queries: str | Path | None = None,
          qrels: str | Path | None = None, queries_format: str | None = None,
          data_dir: str | Path | None = None, **params: Any) -> dict:
    """Train ``system`` (``bm25-qa``, ``recommended``) on judged questions and write the model
    folder ``output``; returns its manifest. ``data``: a registered dataset, a BEIR folder or a
    :class:`~lexir.types.Benchmark` (its ``split``), or ``queries`` + ``qrels`` files over
    ``corpus``. ``params``: ``base`` (a spec), ``folds`` (2 to 100), ``depth`` (1 or more), ``ltr``
    (``off``, ``auto``, ``on``), ``dense`` (``auto``, ``on``, ``off``), ``recall`` (``auto``, ``off``);
    docs/train.md. Then
    ``build(corpus, system, model=output)`` uses it (docs/train.md)."""
    from lexir.learning.train import train_system, training_data

    corp, qset, described = training_data(data, split=split, language=language, corpus=corpus, queries=queries,
                                          qrels=qrels, queries_format=queries_format, data_dir=data_dir)
    return train_system(system, corp, qset, output, data=described, params=params)


def find_citations(text: str, jurisdiction: str, **kw: Any):
    """The statutory citations in ``text`` as the legal order ``jurisdiction`` writes them (``de``,
    ``at``, ``fr``, ``pl``, ``el``: ``lexir.jurisdiction.codes()``), resolved to ids."""
    from lexir.citations.extract import find_citations as _find

    return _find(text, jurisdiction, **kw)
