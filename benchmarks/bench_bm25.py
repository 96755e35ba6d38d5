#!/usr/bin/env python
"""Speed and memory of three BM25 paths, side by side, on real statute corpora.

Paths (each measured in its own freshly spawned process, so memory peaks do not mix):

* ``lexir``     - (a) ``BM25Retriever(Analyzer(...)).index(corpus)`` then
                  ``search_many(queries, k)``: analysis + lexir's scoring kernel + mapping to document ids;
* ``bm25s``     - (b) raw bm25s on the same tokens: documents and queries are analysed with
                  lexir's analyzer and mapped to term ids *outside* the timed section; only
                  ``bm25s.BM25(...).index((ids, vocab))`` and ``retrieve(query_ids)`` are timed,
                  with the engine settings lexir uses (lucene, k1=1.2, b=0.75, numba backend,
                  one thread), so the ratio (a)/(b) is lexir's own overhead;
* ``bm25s_text`` - (d) bm25s from text, as a bm25s user runs it: its own ``Tokenizer`` (lexir's
                  stopword list) builds the index, and each timed pass tokenises the query texts and
                  retrieves; other words than lexir's analyzer finds, so other hits (top-10 overlap);
* ``rank_bm25`` - (c) ``rank_bm25.BM25Okapi`` on the same tokens (same k1, b), queried on a
                  sample of the queries (it scores every document in Python).

Corpora:

* ``pl-codes`` - the five Polish codes (4,317 articles), queries = the 1,495 pl-exams questions
                 (question + options, as lexir searches them);
* ``de-100k``  - 100,000 Absätze (a § or Art without Absätze counts as one) of the German federal
                 laws in ``de/gesetze_markdown_all.tar.gz``, parsed by ``lexir.jurisdictions.de.statutes``
                 (parse cache), laws taken in path order; each document's title is its article's
                 heading. Queries = 250 headings and 250 sentences drawn with a fixed seed from
                 those laws. German analyzer "de", mode raw.

Run ``python benchmarks/bench_bm25.py --help``; benchmarks/README.md explains the figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing as mp
import os
import pickle
import platform
import random
import statistics
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # harness.py, when imported from elsewhere
from harness import Clock as _Clock  # noqa: E402
from harness import Memory as _Memory  # noqa: E402
from harness import once as _once  # noqa: E402

PATHS = ("lexir", "bm25s", "bm25s_text", "rank_bm25")
LABELS = {
    "lexir": "(a) lexir BM25Retriever",
    "bm25s": "(b) raw bm25s, pre-tokenised",
    "bm25s_text": "(d) bm25s from text",
    "rank_bm25": "(c) rank_bm25 BM25Okapi",
}
CORPORA = ("pl-codes", "de-100k")
K1, B, METHOD = 1.2, 0.75, "lucene"  # lexir's "bm25" system defaults
GOAL_LEXIR_VS_RAW = 1.5  # lexir at most 1.5x slower than raw bm25s (build time, query time)
GOAL_RANK_VS_LEXIR = 100.0  # lexir over 100x faster than rank_bm25 on queries
DEFAULT_OUTPUT = Path(__file__).resolve().parent / "results" / "bm25.json"


# ---------------------------------------------------------------------------
# workloads


@dataclass
class Workload:
    name: str
    language: str
    description: str
    docs: list[tuple[str, str, str]]  # (id, title, text)
    queries: list[tuple[str, str]]  # (id, text)
    notes: dict = field(default_factory=dict)


def load_pl_codes(n_queries: int | None) -> Workload:
    from lexir.datasets import open as open_data

    bench = open_data("pl-exams")
    queries = [(q.id, q.text) for q in bench.queries.queries]
    total = len(queries)
    if n_queries is not None:
        queries = queries[:n_queries]
    return Workload(
        "pl-codes", "pl",
        f"Polish codes kc, kk, kks, kpa, kpc ({len(bench.corpus):,} articles); queries: "
        f"{len(queries):,} of {total:,} pl-exams questions (question + options)",
        [(d.id, d.title, d.text) for d in bench.corpus], queries,
        {"analyzer": "pl raw, stopwords"},
    )


def load_de(tar_path: Path, n_docs: int, n_headings: int, n_sentences: int, seed: int) -> Workload:
    """The first ``n_docs`` Absätze of the German laws in path order, parsed by lexir.structure.

    A § / Art with Absätze gives one document per Absatz (``BGB::823/abs:1``), one without gives
    itself; annexes and notices (``anlage``, ``body``) are left out. Titles are the article's.
    """
    from lexir.jurisdictions.de.statutes import ParseError, parse_archive

    docs: list[tuple[str, str, str]] = []
    titles: list[str] = []
    n_laws = 0
    for _path, act in sorted(parse_archive(tar_path), key=lambda law: law[0]):
        if isinstance(act, ParseError):
            continue
        n_laws += 1
        for article in act.articles:
            if article.level not in ("para", "art") or not article.text:
                continue
            if article.title and "weggefallen" not in article.title:
                titles.append(article.title)
            parts = [c for c in article.children if c.level == "abs"] or [article]
            docs.extend((p.id, article.title, p.text) for p in parts[:n_docs - len(docs)])
            if len(docs) == n_docs:
                break
        if len(docs) == n_docs:
            break
    from lexir.jurisdictions.de.statutes import split_sentences

    rng = random.Random(seed)
    headings = rng.sample(sorted(set(titles)), min(n_headings, len(set(titles))))
    sentences: list[str] = []
    for i in rng.sample(range(len(docs)), len(docs)):
        if len(sentences) == n_sentences:
            break
        candidates = [s for s in split_sentences(" ".join(docs[i][2].split())) if 6 <= len(s.split()) <= 40]
        if candidates:
            sentences.append(rng.choice(candidates))
    queries = [(f"h{i:04d}", t) for i, t in enumerate(headings, 1)] + [
        (f"s{i:04d}", t) for i, t in enumerate(sentences, 1)]
    return Workload(
        f"de-{n_docs // 1000}k" if n_docs % 1000 == 0 else f"de-{n_docs}", "de",
        f"{len(docs):,} Absätze of {n_laws:,} German laws (path order, lexir.structure, "
        f"{tar_path.name}); queries: {len(headings)} § headings + {len(sentences)} sentences "
        f"from those laws (seed {seed})",
        docs, queries,
        {"analyzer": "de raw, stopwords", "laws": n_laws, "seed": seed,
         "example_queries": [q[1] for q in queries[:3]] + [q[1] for q in queries[len(headings):len(headings) + 3]]},
    )


# ---------------------------------------------------------------------------
# measuring inside a worker process (the clock and memory readings live in harness.py)


def _numba_cache(job: dict) -> str:
    """Let bm25s's retrieval kernel use numba's on-disk cache (NUMBA_CACHE_DIR, set by the parent).

    bm25s compiles it without caching, so every new process pays seconds of JIT before its
    first query; with the cache only the first process ever does. This changes when the
    compilation happens, not the compiled code: it only shortens the (untimed) warm-up.
    """
    if not job.get("numba_cache"):
        return "off"
    try:
        from bm25s.numba.retrieve_utils import _retrieve_internal_jitted_serial as kernel

        kernel.enable_caching()
    except (ImportError, AttributeError):
        return "unavailable"
    return "on"


def _jit_source(status: str) -> str:
    if status != "on":
        return "compiled"
    from bm25s.numba.retrieve_utils import _retrieve_internal_jitted_serial as kernel

    return "loaded from cache" if sum(kernel.stats.cache_hits.values()) else "compiled (cached for next time)"


def _corpus_and_queries(job: dict):
    from lexir.types import Corpus, Document, Query

    corpus = Corpus(job["name"], [Document(i, text, title) for i, title, text in job["docs"]], language=job["language"])
    queries = [Query(i, t) for i, t in job["queries"]]
    return corpus, queries


def _pretokenise(job: dict):
    """Documents and queries analysed exactly as lexir's BM25Retriever does, outside any timing."""
    from lexir.analysis import Analyzer, AnalyzerConfig
    from lexir.retrieval.bm25 import BM25Retriever

    analyzer = Analyzer(AnalyzerConfig(job["language"], "raw"))
    compose = BM25Retriever(analyzer).document_tokens  # title tokens (x title_weight) + text tokens
    doc_tokens = [compose(title, text) for _, title, text in job["docs"]]
    query_tokens = [analyzer(text) for _, text in job["queries"]]
    return doc_tokens, query_tokens


def _tiny_corpus(language: str):
    from lexir.types import Corpus, Document

    words = ["alpha", "beta", "gamma", "delta", "epsilon"]
    return Corpus("warm-up", [Document(f"w::{i}", " ".join(words[i:] + words[:i][:2])) for i in range(5)],
                  language=language)


def run_lexir(job: dict) -> dict:
    from lexir.analysis import Analyzer, AnalyzerConfig
    from lexir.retrieval.bm25 import BM25Retriever
    from lexir.types import Query

    language = job["language"]
    cache = _numba_cache(job)
    # Warm-up before anything is measured: bm25s's numba kernels compile on their first
    # retrieval (seconds, and ~100 MiB of compiler memory); a tiny index pays for that here.
    jit = _once(lambda: BM25Retriever(Analyzer(AnalyzerConfig(language, "raw"))).index(_tiny_corpus(language))
                .search_many([Query("w", "alpha beta")], k=3))
    corpus, queries = _corpus_and_queries(job)
    del job["docs"]
    k = min(job["k"], len(corpus))
    memory = _Memory()
    build, search = _Clock(), _Clock()
    # A fresh analyzer each time: nothing (term-form caches included) carries over.
    retriever = _repeated(build, lambda: BM25Retriever(Analyzer(AnalyzerConfig(language, "raw"))).index(corpus),
                          job["repeat"])
    first = _once(lambda: retriever.search_many(queries[:1], k=k))
    # The first pass over the queries meets their words for the first time: the index keeps what
    # each distinct word of query text analyses to (as a service does, whose traffic repeats
    # words), so the timed passes below find them known. Reported apart.
    gc.collect()
    cold = _once(lambda: retriever.search_many(queries, k=k))
    run = _repeated(search, lambda: retriever.search_many(queries, k=k), job["repeat"])
    mem = memory.result()
    top = {q.id: list(run[q.id].items())[:10] for q in queries[:job["check"]]}

    # Breakdown, outside the figures above: the analysis part of index() (text of every
    # document, each distinct title once, as index() does it) and of search_many().
    def analyse_corpus():
        analyzer = Analyzer(AnalyzerConfig(language, "raw"))
        titles = {title: analyzer(title) for title in dict.fromkeys(d.title for d in corpus if d.title)}
        return [analyzer(d.text) for d in corpus], titles

    gc.collect()
    analysis = _once(analyse_corpus)
    texts = [q.text for q in queries]
    query_analysis = _once(lambda: retriever.terms().raw(texts))  # what search_many analyses: the batch
    # The scoring kernels alone, on the same term ids: lexir's (bm25_kernel) and bm25s's own.
    # lexir's does bm25s's steps (same results, same order), so this says how much of the
    # ratio above is the kernel and how much is what lexir does around it.
    flat, pointers = retriever.terms().batch(texts)
    matrix = retriever.matrix
    kernels = {}
    for name, top_k in (("lexir", matrix.top_k), ("bm25s", partial(_bm25s_kernel, matrix))):
        top_k(flat[:pointers[1]], pointers[:2], k)  # compiled (or loaded) before timing
        best = float("inf")
        for _ in range(max(3, job["repeat"])):
            best = min(best, _once(lambda top_k=top_k: top_k(flat, pointers, k)))
        kernels[f"kernel_{name}_s"] = best
    # What search_many does after the kernel: its arrays to (ids, scores) rows, then the run of dicts.
    raw_ids, raw_pointers = retriever.terms().raw_batch(texts)
    answer = matrix.top_k(raw_ids, raw_pointers, k, retriever.dedupe_query)
    ids = [q.id for q in queries]
    gc.collect()
    results = min(_once(lambda: {i: dict(zip(d, s, strict=True))
                                  for i, (d, s) in zip(ids, retriever.rows(*answer), strict=True)})
                  for _ in range(max(3, job["repeat"])))
    return {"build": build.result(), "search": search.result(), "n_queries": len(queries), "jit_warmup_s": jit,
            "jit": _jit_source(cache), "first_query_s": first, "memory": mem, "top10": top,
            "breakdown": {"corpus_analysis_s": analysis, "query_analysis_s": query_analysis,
                          "first_pass_s": cold, "results_s": results, **kernels}}


def _repeated(clock, fn, repeat: int):
    """``fn()`` timed ``repeat`` times by ``clock``, garbage collected before each (the last value
    dropped first, so two never coexist); the last value."""
    value = None
    for _ in range(repeat):
        value = None
        gc.collect()
        value = clock(fn)
    return value


def _bm25s_kernel(matrix, flat, pointers, k):
    """bm25s's own compiled retrieval kernel (what its ``BM25.retrieve`` runs) over lexir's
    score matrix: the kernels compared alone, in the breakdown."""
    import numpy as np
    from bm25s.numba.retrieve_utils import _retrieve_internal_jitted_serial as kernel

    return kernel(query_tokens_ids_flat=flat.astype(np.int32), query_pointers=pointers.astype(np.int32), k=k,
                  sorted=True, dtype=np.dtype(np.float32), int_dtype=np.dtype(np.int32), data=matrix.data,
                  indptr=matrix.indptr, indices=matrix.indices, num_docs=matrix.num_docs,
                  nonoccurrence_array=matrix.nonoccurrence, weight_mask=None)


def run_bm25s(job: dict) -> dict:
    import bm25s

    doc_tokens, query_tokens = _pretokenise(job)
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(t, len(vocab)) for t in tokens] for tokens in doc_tokens]
    vocab.setdefault("", len(vocab))  # as lexir: bm25s's token for queries with no known term
    n_tokens = sum(map(len, ids))
    query_ids = [list(dict.fromkeys(vocab[t] for t in tokens if t and t in vocab)) for tokens in query_tokens]
    # lexir answers a query with no known term without asking bm25s; such queries are not
    # passed here either (bm25s would score them through its empty token).
    kept = [i for i, q in enumerate(query_ids) if q]
    query_ids = [query_ids[i] for i in kept]
    query_names = [job["queries"][i][0] for i in kept]
    doc_names = [d[0] for d in job["docs"]]
    del job["docs"], doc_tokens, query_tokens
    k = min(job["k"], len(doc_names))

    def build(ids_per_doc, vocabulary):
        engine = bm25s.BM25(k1=K1, b=B, method=METHOD, backend="numba")
        engine.index((ids_per_doc, vocabulary), show_progress=False)
        return engine

    # Warm-up before anything is measured: a tiny index compiles the numba retrieval kernels.
    cache = _numba_cache(job)
    jit = _once(lambda: build([[0, 1, 2], [1, 2], [0, 3]], {"a": 0, "b": 1, "c": 2, "d": 3, "": 4})
                .retrieve([[0, 1]], k=2, show_progress=False, n_threads=1))
    memory = _Memory()
    build_clock, search_clock = _Clock(), _Clock()
    engine = _repeated(build_clock, lambda: build(ids, vocab), job["repeat"])
    first = _once(lambda: engine.retrieve(query_ids[:1], k=k, show_progress=False, n_threads=1))
    result = _repeated(search_clock, lambda: engine.retrieve(query_ids, k=k, show_progress=False, n_threads=1,
                                                             return_as="tuple"), job["repeat"])
    mem = memory.result()
    docs, scores = result
    top = {}
    for row, name in enumerate(query_names[:job["check"]]):
        top[name] = [(doc_names[d], float(s)) for d, s in zip(docs[row][:10], scores[row][:10], strict=True) if s > 0]
    return {"build": build_clock.result(), "search": search_clock.result(), "n_queries": len(query_ids),
            "jit_warmup_s": jit, "jit": _jit_source(cache), "first_query_s": first, "memory": mem, "top10": top,
            "corpus_stats": {"docs": len(ids), "tokens": n_tokens, "vocab": len(vocab) - 1,
                             "mean_doc_tokens": n_tokens / max(1, len(ids)),
                             "queries_without_known_terms": len(job["queries"]) - len(kept),
                             "mean_query_terms": sum(map(len, query_ids)) / max(1, len(query_ids))}}


def run_bm25s_text(job: dict) -> dict:
    """(d) bm25s from text, as a bm25s user runs it: its own ``Tokenizer`` (words of two or more
    characters, lower-cased, lexir's stopword list of the language), the corpus indexed from its
    ids, then each timed pass tokenises the query texts against that vocabulary and retrieves
    (arrays of document numbers and scores, bm25s's answer)."""
    import bm25s
    from bm25s.tokenization import Tokenizer

    from lexir.analysis import stopwords

    stop = sorted(stopwords(job["language"]))
    docs = [f"{title}\n{text}" if title else text for _, title, text in job["docs"]]
    texts = [text for _, text in job["queries"]]
    doc_names = [d[0] for d in job["docs"]]
    del job["docs"]
    k = min(job["k"], len(doc_names))
    cache = _numba_cache(job)

    def build():
        tokenizer = Tokenizer(stopwords=stop)
        ids = tokenizer.tokenize(docs, show_progress=False, return_as="ids")
        engine = bm25s.BM25(k1=K1, b=B, method=METHOD, backend="numba")
        engine.index((ids, tokenizer.get_vocab_dict()), show_progress=False)
        return tokenizer, engine

    def search(tokenizer, engine, batch, k=k):
        ids = tokenizer.tokenize(batch, update_vocab=False, show_progress=False, return_as="ids")
        return engine.retrieve(ids, k=k, show_progress=False, n_threads=1, return_as="tuple")

    jit = _once(lambda: search(*build_tiny(), ["alpha beta"], k=2))
    memory = _Memory()
    build_clock, search_clock = _Clock(), _Clock()
    built = _repeated(build_clock, build, job["repeat"])
    first = _once(lambda: search(*built, texts[:1]))
    result = _repeated(search_clock, lambda: search(*built, texts), job["repeat"])
    mem = memory.result()
    found, scores = result
    top = {}
    for row, (name, _) in enumerate(job["queries"][:job["check"]]):
        top[name] = [(doc_names[d], float(x)) for d, x in zip(found[row][:10], scores[row][:10], strict=True) if x > 0]
    return {"build": build_clock.result(), "search": search_clock.result(), "n_queries": len(texts),
            "jit_warmup_s": jit, "jit": _jit_source(cache), "first_query_s": first, "memory": mem, "top10": top}


def build_tiny():
    """A bm25s tokenizer and index of five tiny documents: the JIT's warm-up."""
    import bm25s
    from bm25s.tokenization import Tokenizer

    tokenizer = Tokenizer(stopwords=[])
    ids = tokenizer.tokenize(["alpha beta", "beta gamma", "gamma delta", "delta alpha", "epsilon"],
                             show_progress=False, return_as="ids")
    engine = bm25s.BM25(k1=K1, b=B, method=METHOD, backend="numba")
    engine.index((ids, tokenizer.get_vocab_dict()), show_progress=False)
    return tokenizer, engine


def run_rank_bm25(job: dict) -> dict:
    from rank_bm25 import BM25Okapi

    from lexir.retrieval.base import top_scores  # what lexir's rank-bm25 peer does with the scores

    doc_tokens, query_tokens = _pretokenise(job)
    known = set().union(*doc_tokens)
    sample = job["rank_sample"]
    # The same terms lexir and bm25s score: known, non-empty, repeats collapsed.
    query_terms = [list(dict.fromkeys(t for t in query_tokens[i] if t and t in known)) for i in sample]
    query_names = [job["queries"][i][0] for i in sample]
    doc_names = [d[0] for d in job["docs"]]
    del job["docs"], query_tokens, known
    k = min(job["k"], len(doc_names))
    memory = _Memory()
    build, search = _Clock(), _Clock()
    engine = _repeated(build, lambda: BM25Okapi(doc_tokens, k1=K1, b=B), job["repeat"])
    # One pass only: it is slow, and there is no JIT to warm up.
    gc.collect()
    result = search(lambda: [top_scores(engine.get_scores(terms), doc_names, k) if terms else [] for terms in query_terms])
    mem = memory.result()
    top = {name: hits[:10] for name, hits in zip(query_names, result, strict=True)}
    return {"build": build.result(), "search": search.result(), "n_queries": len(query_terms),
            "jit_warmup_s": None, "first_query_s": None, "memory": mem, "top10": top, "sampled": True}


def prime_numba_cache() -> dict:
    """Compile bm25s's retrieval kernel into the numba cache, so that no measured worker does."""
    import bm25s

    status = _numba_cache({"numba_cache": True})
    engine = bm25s.BM25(k1=K1, b=B, method=METHOD, backend="numba")
    engine.index(([[0, 1, 2], [1, 2], [0, 3]], {"a": 0, "b": 1, "c": 2, "d": 3, "": 4}), show_progress=False)
    seconds = _once(lambda: engine.retrieve([[0, 1]], k=2, show_progress=False, n_threads=1))
    return {"seconds": seconds, "jit": _jit_source(status)}


RUNNERS = {"lexir": run_lexir, "bm25s": run_bm25s, "bm25s_text": run_bm25s_text, "rank_bm25": run_rank_bm25}


def _worker(path: str, job_files: list[str], conn) -> None:
    try:
        if path == "numba-cache":
            conn.send(("ok", [prime_numba_cache()]))
            return
        results = []
        for job_file in job_files:
            with open(job_file, "rb") as fh:
                job = pickle.load(fh)
            results.append(RUNNERS[path](job))
            del job
            gc.collect()
        conn.send(("ok", results))
    except BaseException:  # noqa: BLE001 - reported to the parent, which fails loudly
        conn.send(("error", traceback.format_exc()))
    finally:
        conn.close()


def run_in_subprocess(path: str, job_files: list[str]) -> list[dict]:
    """Run ``path`` on each job, in order, in one freshly spawned interpreter."""
    ctx = mp.get_context("spawn")  # a fresh interpreter: nothing inherited, peaks are this path's own
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_worker, args=(path, job_files, child), name=f"bench-{path}")
    proc.start()
    child.close()
    try:
        status, payload = parent.recv()
    except EOFError:
        proc.join()
        raise RuntimeError(f"{path} worker died (exit code {proc.exitcode})") from None
    proc.join()
    if status != "ok":
        raise RuntimeError(f"{path} worker failed:\n{payload}")
    return payload


# ---------------------------------------------------------------------------
# summary


def merge_rounds(runs: list[dict]) -> dict:
    """One path's results over several rounds: all timings pooled, the highest memory peaks."""
    merged = dict(runs[0])
    for key in ("build", "search"):
        merged[key] = {kind: [t for run in runs for t in run[key][kind]] for kind in ("wall", "cpu")}
    merged["memory"] = {
        field_: max((run["memory"][field_] for run in runs if run["memory"][field_] is not None), default=None)
        for field_ in runs[0]["memory"]
    }
    if "breakdown" in merged:
        merged["breakdown"] = {key: min(run["breakdown"][key] for run in runs) for key in runs[0]["breakdown"]}
    return merged


def summarise(workload: Workload, raw: dict[str, dict], repeat: int) -> dict:
    paths: dict[str, dict] = {}
    for path, res in raw.items():
        n = res["n_queries"]
        build, search = res["build"], res["search"]
        paths[path] = {
            "build_s": min(build["wall"]),
            "build_s_median": statistics.median(build["wall"]),
            "build_cpu_s": min(build["cpu"]),
            "build_s_all": build["wall"],
            "queries": n,
            "search_s": min(search["wall"]),
            "search_s_median": statistics.median(search["wall"]),
            "search_cpu_s": min(search["cpu"]),
            "search_s_all": search["wall"],
            "qps": n / min(search["wall"]),
            "qps_median": n / statistics.median(search["wall"]),
            "qps_cpu": n / min(search["cpu"]) if min(search["cpu"]) > 0 else None,
            "jit_warmup_s": res["jit_warmup_s"],
            "jit": res.get("jit"),
            "first_query_after_warmup_s": res["first_query_s"],
            "sampled": bool(res.get("sampled")),
            **res["memory"],
        }
        if "breakdown" in res:
            paths[path]["breakdown"] = res["breakdown"]
    out = {"description": workload.description, "language": workload.language, "docs": len(workload.docs),
           "queries": len(workload.queries), "repeat": repeat, "notes": workload.notes, "paths": paths}
    if "bm25s" in raw:
        out["corpus_stats"] = raw["bm25s"]["corpus_stats"]
    ratios: dict[str, float] = {}
    for suffix, build_key, qps_key in (("", "build_s", "qps"), ("_median", "build_s_median", "qps_median"),
                                       ("_cpu", "build_cpu_s", "qps_cpu")):
        if "lexir" in paths and "bm25s" in paths:
            a, b = paths["lexir"], paths["bm25s"]
            ratios["build_lexir_over_bm25s" + suffix] = a[build_key] / b[build_key]
            ratios["query_time_lexir_over_bm25s" + suffix] = b[qps_key] / a[qps_key]
        if "lexir" in paths and "bm25s_text" in paths:
            a, d = paths["lexir"], paths["bm25s_text"]
            ratios["build_lexir_over_bm25s_text" + suffix] = a[build_key] / d[build_key]
            ratios["query_time_lexir_over_bm25s_text" + suffix] = d[qps_key] / a[qps_key]
        if "lexir" in paths and "rank_bm25" in paths:
            a, c = paths["lexir"], paths["rank_bm25"]
            ratios["build_rank_bm25_over_lexir" + suffix] = c[build_key] / a[build_key]
            ratios["query_time_rank_bm25_over_lexir" + suffix] = a[qps_key] / c[qps_key]
    out["ratios"] = ratios
    checks = {}
    if "lexir" in raw:
        ref = raw["lexir"]["top10"]
        for other in ("bm25s", "bm25s_text", "rank_bm25"):
            if other not in raw:
                continue
            theirs = raw[other]["top10"]
            common = [q for q in theirs if q in ref]
            same_ids = sum([d for d, _ in ref[q]] == [d for d, _ in theirs[q]] for q in common)
            same = sum(ref[q] == theirs[q] for q in common)
            overlap = [len({d for d, _ in ref[q]} & {d for d, _ in theirs[q]}) / max(1, len(ref[q]))
                       for q in common]
            checks[other] = {"queries_compared": len(common), "top10_ids_identical": same_ids,
                             "top10_ids_and_scores_identical": same,
                             "mean_top10_overlap": statistics.fmean(overlap) if overlap else None}
    out["checks"] = checks
    return out


def _jit_cell(p: dict) -> str:
    if p["jit_warmup_s"] is None:
        return "-"
    source = {"loaded from cache": " cached"}.get(p.get("jit") or "", "")
    return f"{p['jit_warmup_s']:.2f}{source}"


def _fmt(value, spec: str, missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


def print_tables(results: dict, console) -> None:
    from rich.table import Table

    for name, res in results["corpora"].items():
        stats = res.get("corpus_stats", {})
        caption = res["description"]
        if stats:
            caption += (f"\n{res['docs']:,} docs, {stats['tokens']:,} tokens, vocabulary {stats['vocab']:,}, "
                        f"{stats['mean_doc_tokens']:.1f} tokens/doc, {stats['mean_query_terms']:.1f} distinct "
                        f"known terms/query")
        table = Table(title=f"BM25 on {name}: best of {res['repeat']} (median in brackets), k={results['meta']['k']}",
                      caption=caption, caption_justify="left")
        table.add_column("path")
        table.add_column("build s", justify="right")
        table.add_column("queries", justify="right")
        table.add_column("queries/s", justify="right")
        table.add_column("JIT warm-up s", justify="right")
        table.add_column("peak RSS MiB", justify="right")
        table.add_column("Δ peak MiB", justify="right")
        table.add_column("top-10 vs (a)", justify="right")
        for path, p in res["paths"].items():
            check = res["checks"].get(path)
            if path == "lexir":
                agree = "reference"
            elif check and path == "bm25s":
                agree = f"{check['top10_ids_and_scores_identical']}/{check['queries_compared']} identical"
            elif check:
                agree = f"{check['mean_top10_overlap']:.0%} overlap"
            else:
                agree = "-"
            queries = f"{p['queries']:,}" + (" sample" if p["sampled"] else "")
            table.add_row(LABELS[path], f"{p['build_s']:.3f} ({p['build_s_median']:.3f})", queries,
                          f"{p['qps']:,.1f} ({p['qps_median']:,.1f})", _jit_cell(p),
                          f"{p['peak_rss_mib']:,.0f}", _fmt(p["timed_peak_over_baseline_mib"], ",.0f"), agree)
        console.print(table)
        r = res["ratios"]
        lines = []
        if "build_lexir_over_bm25s" in r:
            lines.append("what each side's query time includes: (a) analysing the query texts, scoring, a run of "
                         "dicts (document id -> score); (b) scoring term ids made beforehand, arrays of numbers")
            for key, what in (("build_lexir_over_bm25s", "build time"), ("query_time_lexir_over_bm25s", "query time")):
                verdict = "meets" if r[key] <= GOAL_LEXIR_VS_RAW else "MISSES"
                lines.append(f"lexir / raw bm25s, {what}: {r[key]:.2f}x best, {r[key + '_median']:.2f}x median, "
                             f"{r[key + '_cpu']:.2f}x CPU time  ({verdict} goal <= {GOAL_LEXIR_VS_RAW}x)")
        if "query_time_lexir_over_bm25s_text" in r:
            lines.append("(d) starts from the texts, as (a) does: bm25s's tokenizer (its own words, so other hits) "
                         "and its retrieval, arrays of numbers")
            for key, what in (("build_lexir_over_bm25s_text", "build time"),
                              ("query_time_lexir_over_bm25s_text", "query time")):
                lines.append(f"lexir / bm25s from text, {what}: {r[key]:.2f}x best, {r[key + '_median']:.2f}x median, "
                             f"{r[key + '_cpu']:.2f}x CPU time")
        if "query_time_rank_bm25_over_lexir" in r:
            q = r["query_time_rank_bm25_over_lexir"]
            verdict = "meets" if q > GOAL_RANK_VS_LEXIR else "MISSES"
            lines.append(f"rank_bm25 / lexir, query time: {q:,.0f}x  ({verdict} goal > {GOAL_RANK_VS_LEXIR:.0f}x; "
                         f"rank_bm25 timed on a sample of {res['paths']['rank_bm25']['queries']:,} queries)")
            lines.append(f"rank_bm25 / lexir, build time: {r['build_rank_bm25_over_lexir']:.2f}x")
        lexir = res["paths"].get("lexir")
        if lexir and "breakdown" in lexir:
            bd = lexir["breakdown"]
            lines.append(f"lexir breakdown (timed apart): analysing the corpus {bd['corpus_analysis_s']:.3f} s of the "
                         f"{lexir['build_s']:.3f} s build; analysing the queries {bd['query_analysis_s']:.3f} s of "
                         f"the {lexir['search_s']:.3f} s search")
            if "first_pass_s" in bd:
                lines.append(f"lexir's first pass over the queries, every word new to the index: {bd['first_pass_s']:.3f} s "
                             f"({lexir['queries'] / bd['first_pass_s']:,.0f} queries/s; the figures above are of later "
                             f"passes, the words' analysis kept)")
            if "kernel_lexir_s" in bd:
                lines.append(f"scoring kernels alone, same term ids: lexir's {bd['kernel_lexir_s']:.3f} s, bm25s's "
                             f"{bd['kernel_bm25s_s']:.3f} s (bm25s's / lexir's: "
                             f"{bd['kernel_bm25s_s'] / bd['kernel_lexir_s']:.2f}x; the same hits in the same order)")
            raw_bm25s = res["paths"].get("bm25s")
            if "results_s" in bd and raw_bm25s:
                floor = bd["query_analysis_s"] + bd["results_s"]
                lines.append(f"what lexir does besides scoring: analysing the queries {bd['query_analysis_s']:.3f} s + "
                             f"making the run's dicts {bd['results_s']:.3f} s = {floor:.3f} s, against raw bm25s's "
                             f"whole search {raw_bm25s['search_s']:.3f} s: lexir <= 1.0x would leave its kernel "
                             f"{raw_bm25s['search_s'] - floor:.3f} s (its kernel takes {bd['kernel_lexir_s']:.3f} s)")
        for line in lines:
            console.print("  " + line)
        console.print()


# ---------------------------------------------------------------------------
# main


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", choices=[*CORPORA, "all"], default="all")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 200 pl queries, 10,000 German blocks and 100 queries, rank_bm25 on 20 "
                             "queries, one repetition, one process per path for both corpora")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="JSON results (default: %(default)s)")
    parser.add_argument("--paths", default=",".join(PATHS), help="comma-separated subset of " + ", ".join(PATHS))
    parser.add_argument("--repeat", type=int, default=None, help="timed repetitions per process (default 5; quick 1)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every path's process this many times, alternating their order, and pool the "
                             "timings (use 3 or more on a busy machine)")
    parser.add_argument("--rank-bm25-queries", type=int, default=None,
                        help="queries in rank_bm25's sample (default 100; quick 20)")
    parser.add_argument("--de-docs", type=int, default=None, help="German blocks (default 100000; quick 10000)")
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--data-dir", type=Path, default=None, help="lexir data folder (default: as lexir resolves it)")
    parser.add_argument("--numba-cache", type=Path, default=DEFAULT_OUTPUT.parent / "numba-cache",
                        help="numba on-disk cache for bm25s's retrieval kernel, so that only the first worker "
                             "ever compiles it (default: %(default)s)")
    parser.add_argument("--no-numba-cache", action="store_true", help="compile the kernel in every worker")
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    from rich.console import Console

    from lexir.datasets.registry import resolve_data_dir

    console = Console(width=None if sys.stdout.isatty() else 150)
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    unknown = sorted(set(paths) - set(PATHS))
    if unknown:
        raise SystemExit(f"unknown path(s) {', '.join(unknown)}; valid: {', '.join(PATHS)}")
    repeat = args.repeat or (1 if args.quick else 5)
    rank_n = args.rank_bm25_queries or (20 if args.quick else 100)
    de_docs = args.de_docs or (10_000 if args.quick else 100_000)
    corpora = CORPORA if args.corpus == "all" else (args.corpus,)
    data_dir = resolve_data_dir(args.data_dir)
    if args.data_dir:
        os.environ["LEXIR_DATA"] = str(data_dir)  # for the workers' registry look-ups
    if not args.no_numba_cache:
        args.numba_cache.mkdir(parents=True, exist_ok=True)
        os.environ["NUMBA_CACHE_DIR"] = str(args.numba_cache)  # read by numba when a worker imports it
    # Full runs: one process per (path, corpus), so that every peak is one path on one corpus.
    # Quick runs: one process per path for all corpora, so numba compiles once per path.
    per_corpus = not args.quick
    results = {
        "meta": {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "argv": sys.argv[1:] if argv is None else list(argv),
            "quick": args.quick, "repeat": repeat, "rounds": args.rounds, "k": args.k, "k1": K1, "b": B, "method": METHOD,
            "python": platform.python_version(), "platform": platform.platform(),
            "cpus": os.cpu_count(), "versions": _versions(), "loadavg_start": _loadavg(),
            "processes": "one per (path, corpus)" if per_corpus else "one per path, corpora in turn",
            "timing": "time.perf_counter (wall) and time.process_time (CPU) around each call; best and median of "
                      "--repeat runs; numba kernels compiled (or loaded from the numba cache) on a tiny index "
                      "before anything is measured, then one untimed query on the real index",
            "memory": "peak_rss_mib = VmHWM of the path's process (input loading included; in --quick runs, "
                      "earlier corpora too); timed_peak_over_baseline_mib = VmHWM after the timed builds and "
                      "searches minus VmRSS just before them, the high-water mark reset via /proc/self/clear_refs",
            "numba_cache": None if args.no_numba_cache else str(args.numba_cache),
        },
        "corpora": {},
    }
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lexir-bench-") as tmp:
        workloads: list[tuple[Workload, str]] = []
        for name in corpora:
            t0 = time.perf_counter()
            if name == "pl-codes":
                workload = load_pl_codes(200 if args.quick else None)
            else:
                workload = load_de(data_dir / "de" / "gesetze_markdown_all.tar.gz", de_docs,
                                   50 if args.quick else 250, 50 if args.quick else 250, args.seed)
            console.print(f"[bold]{workload.name}[/]: {workload.description} "
                          f"(prepared in {time.perf_counter() - t0:.1f} s)")
            rank_sample = sorted(random.Random(args.seed).sample(range(len(workload.queries)),
                                                                 min(rank_n, len(workload.queries))))
            job = {"name": workload.name, "language": workload.language, "docs": workload.docs,
                   "queries": workload.queries, "k": args.k, "repeat": repeat, "rank_sample": rank_sample,
                   "check": len(workload.queries), "numba_cache": not args.no_numba_cache}
            job_file = Path(tmp) / f"{workload.name}.pickle"
            with open(job_file, "wb") as fh:
                pickle.dump(job, fh, protocol=pickle.HIGHEST_PROTOCOL)
            workloads.append((workload, str(job_file)))
        if not args.no_numba_cache and {"lexir", "bm25s"} & set(paths):
            t0 = time.perf_counter()
            primed = run_in_subprocess("numba-cache", [])[0]
            results["meta"]["numba_cache_priming"] = primed
            console.print(f"  numba cache for bm25s's retrieval kernel: {primed['jit']} "
                          f"({time.perf_counter() - t0:.1f} s)")
        raw: dict[str, dict[str, list[dict]]] = {w.name: {p: [] for p in paths} for w, _ in workloads}
        batches = [[w] for w in workloads] if per_corpus else [workloads]
        for batch in batches:
            for round_ in range(args.rounds):
                # Rounds alternate the order of the paths, so that a spell of load from other
                # processes falls on all of them alike.
                for path in paths if round_ % 2 == 0 else paths[::-1]:
                    t0 = time.perf_counter()
                    outcome = run_in_subprocess(path, [job_file for _, job_file in batch])
                    for (workload, _), res in zip(batch, outcome, strict=True):
                        raw[workload.name][path].append(res)
                    names = ", ".join(w.name for w, _ in batch)
                    label = f" (round {round_ + 1}/{args.rounds})" if args.rounds > 1 else ""
                    console.print(f"  {LABELS[path]} on {names}{label}: {time.perf_counter() - t0:.1f} s")
        for workload, _ in workloads:
            merged = {path: merge_rounds(runs) for path, runs in raw[workload.name].items()}
            results["corpora"][workload.name] = summarise(workload, merged, repeat * args.rounds)
    results["meta"]["wall_s"] = time.perf_counter() - started
    results["meta"]["loadavg_end"] = _loadavg()
    console.print()
    print_tables(results, console)
    load = max([*(results["meta"]["loadavg_start"] or [0]), *(results["meta"]["loadavg_end"] or [0])])
    if load > (os.cpu_count() or 1):
        console.print(f"[yellow]note: load average reached {load:.1f} on {os.cpu_count()} CPUs during the run; "
                      "other processes competed for the CPUs, so absolute figures are pessimistic and noisy.[/]")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2, ensure_ascii=False), encoding="utf-8")
    console.print(f"results written to {args.output}  (total {results['meta']['wall_s']:.1f} s)")
    return results


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("lexir", "bm25s", "rank-bm25", "numba", "numpy", "scipy"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = None
    return out


if __name__ == "__main__":
    main()
