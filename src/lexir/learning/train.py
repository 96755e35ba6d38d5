"""``lexir train``: fit a trainable system on judged questions and write its model folder.

Trainable systems:

- ``bm25-qa``: base ``bm25`` (the language's analysis) plus the question evidence of
  :mod:`lexir.learning.qa`;
- ``recommended``: the same over the language's ``recommended`` pipeline, which is what
  ``recommended(model=DIR)`` then runs.

``base=SPEC`` overrides the base, ``folds`` the inner folds the weights are chosen on, ``ltr``
whether a LightGBM lambdarank reranker over the top 100 is fitted (``off``, the default: on
gerlayqa-dev it lost to the linear weights on inner folds and costs minutes; ``auto``: where
LightGBM is installed, kept only if it beats the linear weights on the inner folds; ``on``),
``recall`` whether a recall stage is tried (``auto``, the default: kept where it wins on the
inner folds; ``off``), ``dense`` whether the e5 evidence (nearest training questions by e5 cosine, and a linear adapter
from question vectors to provisions; :class:`lexir.learning.qa.DenseEvidence`) is tried (``auto``,
the default: where ``lexir[onnx]`` is installed and the corpus has at most
``qa.DENSE_AUTO_MAX`` provisions, since the corpus is encoded once; ``on``: always, with the best non-zero dense
weights, as ``ltr=on`` forces the ranker; ``off``). Under ``auto`` its weights are chosen on the
inner folds like the others, so it is kept only where it helps there.
"""

from __future__ import annotations

import io
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from lexir.learning.model import load_model, manifest_for, write_model
from lexir.learning.qa import (
    DENSE_AUTO_MAX,
    DENSE_SPEC,
    DEPTH,
    DenseEvidence,
    choose_ranker,
    choose_recall,
    choose_weights,
    lightgbm,
    questions_of,
    uses_dense,
    vote_matrix,
)
from lexir.retrieval.build import build_retriever, effective_spec
from lexir.types import Corpus, QuerySet

TRAINABLE = ("bm25-qa", "recommended")
RANKER = "ranker.txt"  # the LightGBM booster, where learning to rank won on the inner folds
ADAPTER_FILE = "adapter.npz"  # the dense adapter (W, b and the provision ids of W's columns)
OPTIONS = {"base": str, "folds": int, "depth": int, "ltr": str, "dense": str, "recall": str}
RECALL = ("auto", "off")  # auto: the recall stage where it wins on the inner folds (qa.choose_recall)
DENSE = ("auto", "on", "off")
LTR = ("off", "auto", "on")  # auto: lambdarank where LightGBM is installed and it wins on inner folds
CHOICES = {"ltr": LTR, "dense": DENSE, "recall": RECALL}
RANGES = {"folds": (2, 100), "depth": (1, None)}  # the numeric options' valid ranges (None: no upper bound)


def default_base(system: str, corpus: Corpus) -> str:
    """What ``system`` is trained over when no ``base`` is given: ``recommended``'s pipeline for
    the corpus (its legal order's, else its language's), else BM25."""
    if system == "recommended":
        from lexir.learning.recommended import pipeline_spec

        return pipeline_spec(corpus.language, jurisdiction=corpus.jurisdiction)
    return "bm25"


def train_system(system: str, corpus: Corpus, queries: QuerySet, output: str | Path, *,
                 data: Mapping[str, Any] | None = None, params: Mapping[str, Any] | None = None,
                 log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Train ``system`` on ``queries`` (with their judgements) over ``corpus``; write the model
    folder ``output`` (atomically) and return its manifest."""
    if system not in TRAINABLE:
        raise ValueError(f"system {system!r} cannot be trained; trainable: {', '.join(TRAINABLE)}")
    options = check_options(system, params)
    if not corpus.language:
        raise ValueError(f"corpus {corpus.name!r} has no language: pass --language")
    if Path(output).exists():
        raise ValueError(f"{output} already exists: remove it or choose another --output")
    judged = [q for q in queries.queries if any(g > 0 for g in queries.qrels.get(q.id, {}).values())]
    known = set(corpus.ids)
    usable = [q for q in judged if any(d in known for d in queries.qrels[q.id])]
    source = (data or {}).get("qrels") or (data or {}).get("data") or queries.name
    if len(usable) < 10:
        raise ValueError(f"{source}: {len(usable)} of {len(judged)} judged questions cite provisions of corpus "
                         f"{corpus.name!r}; training needs at least 10{_unknown_example(judged, queries, corpus)}")
    if len(usable) < len(judged):
        _say(f"{source}: {len(judged) - len(usable)} of {len(judged)} judged questions cite no provision of "
             f"corpus {corpus.name!r} and are left out{_unknown_example(judged, queries, corpus)}", log)
    base_spec = options.get("base") or default_base(system, corpus)
    folds, depth = options.get("folds", 3), options.get("depth", DEPTH)
    if folds > len(usable):
        raise ValueError(f"parameter folds={folds}: more inner folds than the {len(usable)} questions to train on")
    # everything is checked before anything is built: the base spec's systems and parameters, and
    # what ltr=on / dense=on need installed
    try:
        effective_spec(base_spec, None, corpus.language, corpus.jurisdiction)
    except (ValueError, KeyError, FileNotFoundError) as exc:
        raise ValueError(f"parameter base={base_spec!r}: {exc}") from None
    ltr = options.get("ltr", "off")
    if ltr == "on":
        lightgbm()  # refuse now, not after the weights are chosen
    if options.get("dense") == "on":
        try:
            import onnxruntime  # noqa: F401
        except ImportError:
            raise ImportError("parameter dense=on needs onnxruntime: pip install 'lexir[onnx]' (or -p dense=off)") \
                from None
    start = time.perf_counter()
    base = build_retriever(corpus, base_spec)
    dense = dense_retriever(corpus, options.get("dense", "auto"), log)
    weights, selection = choose_weights(corpus, base, usable, queries.qrels, folds=folds, depth=depth,
                                        dense=dense, force_dense=options.get("dense") == "on", log=log)
    parts = selection.pop("_parts")
    files: dict[str, bytes] = {}
    if ltr != "off":
        try:
            lightgbm()
        except ImportError as exc:
            if log:
                log(f"no learning to rank: {exc}")
        else:
            ranker, selection["lambdarank"] = choose_ranker(corpus, parts, weights, force=ltr == "on", log=log)
            if ranker is not None:
                files[RANKER] = ranker.model_to_string().encode("utf-8")
    recall = None
    if RANKER not in files and options.get("recall", "auto") == "auto":  # a ranker reorders its own candidates
        recall, selection["recall_stage"] = choose_recall(parts, weights, log=log)
    encoded = uses_dense(weights, recall)
    if encoded:
        # the adapter over all training questions (the BM25 fields are built when the model is loaded)
        trained = questions_of(usable, queries.qrels)
        column = {d: i for i, d in enumerate(corpus.ids)}
        final = DenseEvidence(dense, corpus.ids, [q.text for q in trained], vote_matrix(trained, column))
        buffer = io.BytesIO()
        np.savez(buffer, weights=final.weights, bias=final.bias, ids=np.array(corpus.ids))
        files[ADAPTER_FILE] = buffer.getvalue()
    params_out = {"base": base_spec, "depth": depth, **weights.as_dict(), "ranker": RANKER if RANKER in files else "",
                  "recall": recall.as_dict() if recall is not None else {},
                  "dense": DENSE_SPEC if encoded else "", "adapter_file": ADAPTER_FILE if encoded else ""}
    manifest = manifest_for(system, params_out, corpus=corpus, queries=usable, qrels=queries.qrels,
                            data={**dict(data or {}), "name": queries.name,
                                  "judged_questions": len(judged), "citing_corpus": len(usable)},
                            extra={"selection": selection, "train_seconds": round(time.perf_counter() - start, 2)})
    write_model(output, manifest, questions_of(usable, queries.qrels), files)
    manifest = load_model(output).manifest  # as written (with its files' digests), and read back whole
    if log:
        log(f"trained {system} on {len(usable)} questions in {manifest['train_seconds']:.1f}s -> {output}")
    return manifest


def _whole_number(value: Any) -> int:
    """An int from ``3``, ``"3"`` or ``3.0``; a ValueError for ``3.5``, ``"x"`` or a bool."""
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(value)
    return int(value)


def check_options(system: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The training options of ``params`` (OPTIONS), each converted and checked against its range or
    allowed values; a ValueError naming the parameter and what is valid."""
    options: dict[str, Any] = {}
    for key, value in (params or {}).items():
        if key not in OPTIONS:
            raise ValueError(f"lexir train {system} has no parameter {key!r}; valid: {', '.join(OPTIONS)}")
        kind = OPTIONS[key]
        try:
            options[key] = _whole_number(value) if kind is int else kind(value).strip()
        except (TypeError, ValueError):
            raise ValueError(f"parameter {key}={value!r}: expected {kind.__name__}") from None
        if key in RANGES:
            low, high = RANGES[key]
            if options[key] < low or (high is not None and options[key] > high):
                valid = f"{low} to {high}" if high is not None else f"{low} or more"
                raise ValueError(f"parameter {key}={value!r} is out of range; valid: {valid}")
        if key in CHOICES and options[key] not in CHOICES[key]:
            raise ValueError(f"parameter {key}={value!r}; valid: {', '.join(CHOICES[key])}")
    return options


def _say(message: str, log: Callable[[str], None] | None) -> None:
    """``message`` to ``log`` (the CLI's stderr), else as a Python warning."""
    if log:
        log(message)
    else:
        warnings.warn(message, stacklevel=3)


def _unknown_example(judged, queries: QuerySet, corpus: Corpus) -> str:
    """`` (first unknown id: 'X', ...)`` for the first judged provision ``corpus`` lacks, noting an
    id that differs from one of the corpus's only in case; "" when there is none."""
    known = set(corpus.ids)
    for q in judged:
        for doc, grade in queries.qrels[q.id].items():
            if grade > 0 and doc not in known:
                folded = {d.casefold(): d for d in corpus.ids}.get(doc.casefold())
                hint = f", which the corpus has as {folded!r}: ids are case-sensitive" if folded else ""
                return f" (first unknown id: {doc!r} of question {q.id!r}{hint})"
    return ""


def dense_retriever(corpus: Corpus, mode: str, log: Callable[[str], None] | None = None):
    """The dense retriever the e5 evidence uses (``DENSE_SPEC``), or None (``mode``: DENSE)."""
    if mode not in DENSE:
        raise ValueError(f"parameter dense={mode!r}; valid: {', '.join(DENSE)}")
    if mode == "off":
        return None
    if mode == "auto":
        try:
            import onnxruntime  # noqa: F401
        except ImportError:
            if log:
                log("no dense evidence: onnxruntime is not installed (pip install 'lexir[onnx]')")
            return None
        if len(corpus) > DENSE_AUTO_MAX:
            if log:
                log(f"no dense evidence: {len(corpus)} provisions > {DENSE_AUTO_MAX} (pass -p dense=on to encode them)")
            return None
    return build_retriever(corpus, DENSE_SPEC)


def training_data(data: Any = None, *, split: str | None = None, language: str | None = None,
                  corpus: Any = None, queries: str | Path | None = None, qrels: str | Path | None = None,
                  queries_format: str | None = None, data_dir: str | Path | None = None,
                  notify: Callable[[str], None] | None = None) -> tuple[Corpus, QuerySet, dict[str, Any]]:
    """(corpus, judged questions, a description for the manifest) from what ``lexir train`` is given.

    ``data``: a registered dataset with queries, a BEIR folder (or a benchmark object); its
    ``split`` only. Or ``queries`` (BEIR ``queries.jsonl``, or TREC topics / ``qid<TAB>text``
    lines as ``lexir qrels export --topics`` writes them) with ``qrels`` (BEIR ``.tsv`` or TREC
    qrels; not needed for a format that carries its gold, ``polishlawllm`` and ``orycore``) over
    ``corpus`` (default: ``data``'s corpus). ``corpus`` may be a name, a path or a
    :class:`~lexir.types.Corpus`."""
    from lexir.analysis import normalise_language
    from lexir.datasets import load_queries
    from lexir.datasets import open as open_data
    from lexir.datasets.registry import is_path, names, split_dated
    from lexir.io import read_qrels, read_qrels_tsv
    from lexir.types import Benchmark

    if qrels is not None and queries is None:
        raise ValueError("--qrels needs --queries (the questions they judge)")
    source = corpus if corpus is not None else data
    if language and isinstance(source, (str, Path)) and not is_path(str(source)) and split_dated(str(source))[0] in names():
        # a registered dataset has its language; another would make a model it refuses (a path, or a
        # name no dataset has, goes on to its own error: missing file, unknown dataset)
        raise ValueError(f"--language is for a corpus given by path; {str(source)!r} is no path but a registered "
                         "dataset, which has its own language: leave --language out")
    described: dict[str, Any] = {"split": split or "all"}
    if isinstance(corpus, Corpus):
        corp = corpus.with_language(normalise_language(language)) if language else corpus
    elif corpus is not None:
        corp = open_data(corpus, language=language, data_dir=data_dir, notify=notify, want="corpus")
        described["corpus"] = str(corpus)
    else:
        corp = None
    if queries is not None:
        if corp is None:
            if data is None:
                raise ValueError("--queries needs a corpus: give DATA or --corpus")
            corp = data.corpus if isinstance(data, Benchmark) else open_data(
                data, language=language, data_dir=data_dir, notify=notify, want="corpus")
        fmt = queries_format or ("beir" if Path(queries).suffix == ".jsonl" else "trec")
        qset = load_queries(queries, fmt, corp)
        if qrels is not None:
            qset.qrels = read_qrels_tsv(qrels) if Path(qrels).suffix == ".tsv" else read_qrels(qrels)
        elif not qset.qrels:
            raise ValueError(f"{queries}: no judgements in the file ({fmt}); give them with --qrels")
        unknown = [q for q in qset.qrels if q not in {x.id for x in qset.queries}]
        if unknown:
            raise ValueError(f"{qrels}: {len(unknown)} judged query ids are not in {queries} (first: {unknown[0]!r})")
        described.update(queries=str(queries), qrels=str(qrels) if qrels else "")
        return corp, qset.split(split) if split else qset, described
    if data is None:
        raise ValueError("give DATA (a BEIR folder or registered dataset) or --queries and --qrels")
    bench = data if isinstance(data, Benchmark) else open_data(
        data, language=language, data_dir=data_dir, notify=notify, want="queries")
    described["data"] = bench.queries.name if isinstance(data, Benchmark) else str(data)
    if corp is None:
        corp = bench.corpus.with_language(normalise_language(language)) if language else bench.corpus
    return corp, bench.queries.split(split), described
