#!/usr/bin/env python
"""lexir's BM25 against Lucene's (Anserini 0.25.0 / Lucene 9.9.1, from the pyserini 0.25.0 wheel),
on the same documents and queries, one thread each.

Engines (every one built and searched in its own fresh process, so memory peaks do not mix):

* ``lexir``         - lexir's ``bm25`` system as it ships for the corpus's language (mode=auto:
                      German stems with verb lemmas and stopwords-iso, ...), built from the JSONL
                      file Lucene indexes, read as ``lexir index`` reads one (a stream: no document
                      kept once analysed): ``BM25Retriever.index`` then ``save`` (timed together:
                      Lucene's build writes its index too);
                      searched with ``search_many`` over the whole query set (text in, ranked ids
                      out), numba on one thread, the index loaded memory-mapped as the service does;
* ``lucene``        - Anserini's ``IndexCollection`` (JsonCollection, ``-language xx``: the analyzer
                      Anserini ships for that language, Lucene's GermanAnalyzer, FrenchAnalyzer,
                      MorfologikAnalyzer for Polish; ``-threads 1 -optimize``: one segment), searched
                      by ``benchmarks/lucene/LuceneLoop.java``: Lucene's own Java loop, one thread,
                      ``IndexSearcher.search`` of a BooleanQuery of the query's distinct terms, top-k
                      document numbers only;
* ``lucene-pretok`` - the same Lucene on lexir's own tokens (each document's lexir terms joined by
                      spaces, ``-pretokenized``: whitespace analysis; queries likewise, analysed by
                      lexir outside Lucene's timing), so the engines are compared on equal terms and
                      the analyzers told apart. Its ranking should agree closely with lexir's.

Both engines score BM25 with lexir's parameters, k1=1.2 and b=0.75 (Lucene's BM25Similarity;
lexir's "lucene" method: the same idf and saturation, Lucene stores document lengths in one byte,
so scores differ slightly).

Sets (``--sets``): ``demo`` (458 articles of the Kodeks karny, its exam questions; for tests),
``pl-codes`` (4,318 Polish articles; pl-exams's questions), ``de-gesetze`` (107k German articles;
article titles and gerlayqa-dev's lay questions), ``de-units`` (every unit of de-gesetze, about
961k; the same queries), ``fr-codes`` (78k French articles; fr-dev's division headings).
Query sets with judgements (exam, lay over de-gesetze, headings) get nDCG@10 and R@100 from the
k=100 runs (lexir's evaluation); every engine gets overlap@10 with lexir's top 10.

Timing: ``--rounds`` R starts every engine's search process R times, in alternating order; each
process makes untimed passes over each query set and k until they took ``--warmup`` seconds (at
least one; the JIT's and the caches' warm-up; the last one's run kept for quality), then
``--passes`` timed passes; queries/s is the set's size over the best pass of all (median in the
JSON). Builds run once per set (``--reuse`` takes indexes and build figures from ``--work``).

    bash benchmarks/install_lucene.sh
    PYTHONPATH=src python benchmarks/bench_lucene.py --sets de-units --queries lay --limit 500 --k 10 --rounds 2
    PYTHONPATH=src python benchmarks/bench_lucene.py --sets pl-codes,de-gesetze,fr-codes
"""

from __future__ import annotations

import argparse
import glob
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from harness import Memory, load_note, status_kib, write_json  # noqa: E402

SETS = ("demo", "pl-codes", "de-gesetze", "de-units", "fr-codes")
ENGINES = ("lexir", "lucene", "lucene-pretok")
K1, B = 1.2, 0.75
LOOP_SRC = HERE / "lucene" / "LuceneLoop.java"
LOOP_BUILD = HERE / "lucene" / "build"


class LuceneMissing(RuntimeError):
    """pyserini (the Anserini fatjar) or the JDK is not installed: see benchmarks/install_lucene.sh."""


# -- the Lucene side --------------------------------------------------------------------------

def anserini_jar() -> str:
    spec = importlib.util.find_spec("pyserini")
    if spec is None or spec.origin is None:
        raise LuceneMissing("pyserini is not installed: run benchmarks/install_lucene.sh")
    jars = sorted(glob.glob(os.path.join(os.path.dirname(spec.origin), "resources", "jars", "anserini-*-fatjar.jar")))
    if not jars:
        raise LuceneMissing(f"no Anserini fatjar under {os.path.dirname(spec.origin)}/resources/jars")
    return jars[-1]


# pyserini's search module imports these at import time (dense and hybrid search; openai's client
# is created at import and fails without credentials); BM25 never calls them.
PLACEHOLDERS = ("torch", "faiss", "transformers", "sklearn", "openai")


class _Placeholder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves an empty stand-in module (any attribute a MagicMock) for ``tops`` and their submodules."""

    def __init__(self, tops: set[str]) -> None:
        self.tops = tops

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.tops:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        from unittest import mock

        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = lambda attr: mock.MagicMock(name=f"{spec.name}.{attr}")
        return module

    def exec_module(self, module) -> None:
        pass


def pyserini_searcher():
    """pyserini's ``LuceneSearcher`` class, with placeholders in sys.modules for the dense-search
    packages of PLACEHOLDERS that are missing (openai always: its client fails at import without
    credentials). Only for cross-checks: the benchmark itself runs Anserini's jar with java."""
    anserini_jar()
    tops = {m for m in PLACEHOLDERS if m == "openai" or importlib.util.find_spec(m) is None}
    for name in [m for m in sys.modules if m.split(".")[0] in tops]:
        del sys.modules[name]
    sys.meta_path.insert(0, _Placeholder(tops))
    from pyserini.search.lucene import LuceneSearcher

    return LuceneSearcher


def ensure_loop() -> str:
    """The classpath of LuceneLoop (compiled here when missing or older than its source)."""
    jar = anserini_jar()
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            raise LuceneMissing(f"{tool} not found: install a JDK (benchmarks/install_lucene.sh)")
    target = LOOP_BUILD / "LuceneLoop.class"
    if not target.exists() or target.stat().st_mtime < LOOP_SRC.stat().st_mtime:
        LOOP_BUILD.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-cp", jar, "-d", str(LOOP_BUILD), str(LOOP_SRC)], check=True)
    return f"{jar}{os.pathsep}{LOOP_BUILD}"


def loop_lines(stdout: str) -> list[dict]:
    return [json.loads(line.split(" ", 1)[1]) for line in stdout.splitlines() if line.startswith("LUCENELOOP ")]


def java(classpath: str, args: list[str]) -> list[dict]:
    proc = subprocess.run(["java", "-cp", classpath, "LuceneLoop", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"LuceneLoop {args[0]} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return loop_lines(proc.stdout)


# -- sets: documents and queries ----------------------------------------------------------------

def short_titles(corpus, n: int, seed: int = 13) -> list:
    """Titles of articles with 1 to 6 words and no "(weggefallen)", drawn with a fixed seed (as
    bench_units.py): the short queries a user types."""
    from lexir.types import Query

    titles = sorted({d.title for d in corpus if d.title and 1 <= len(d.title.split()) <= 6
                     and "weggefallen" not in d.title})
    picked = random.Random(seed).sample(titles, min(n, len(titles)))
    return [Query(f"t{i:05d}", t) for i, t in enumerate(picked)]


def load_set(name: str, short: int = 2000):
    """(corpus, {query set name: (queries, qrels or None)}) of a set."""
    import lexir
    from lexir.types import Corpus, Document

    if name in ("demo", "pl-codes"):
        bench = lexir.load("demo" if name == "demo" else "pl-exams")
        sets = {"exam": (bench.queries.queries, bench.queries.qrels)}
        titles = short_titles(bench.corpus, short)
        if len(titles) >= 20:
            sets["titles"] = (titles, None)
        return bench.corpus, sets
    if name in ("de-gesetze", "de-units"):
        bench = lexir.load("gerlayqa-dev-all")  # de-gesetze's 107k articles, lay questions judged on them
        articles = bench.corpus
        titles = (short_titles(articles, short), None)
        if name == "de-gesetze":
            return articles, {"titles": titles, "lay": (bench.queries.queries, bench.queries.qrels)}
        articles = lexir.load("de-gesetze")  # the parsed acts: their units (the benchmark's corpus has none)
        articles = getattr(articles, "corpus", articles)
        docs = [Document(unit.id, unit.text, unit.title) for unit in articles.units()]
        return Corpus("de-units", docs, language=articles.language), {
            "titles": titles, "lay": (bench.queries.queries, None)}  # judged on articles, not units
    if name == "fr-codes":
        corpus = lexir.load("fr-codes")
        corpus = getattr(corpus, "corpus", corpus)
        dev = lexir.load("fr-dev").queries
        headings = [q for q in dev.queries if q.meta.get("kind") == "heading"]
        return corpus, {"headings": (headings, {q.id: dev.qrels[q.id] for q in headings})}
    raise SystemExit(f"unknown set {name!r}; valid: {', '.join(SETS)}")


def lexir_analyzer(corpus):
    """The analyzer of lexir's ``bm25`` system with its defaults (mode=auto)."""
    from lexir.retrieval.bm25 import make_analyzer

    return make_analyzer(corpus, "", "auto", True, "simplemma")


def flat(text: str) -> str:
    return " ".join(text.split())


def prepare(name: str, folder: Path, args) -> dict:
    """Write the set's collections (JsonCollection, native text and lexir's tokens) and query
    files; return what the workers and the report need."""
    start = time.perf_counter()
    corpus, qsets = load_set(name, args.short)
    if not len(corpus):
        raise RuntimeError(f"set {name!r} has no documents")
    print(f"[{name}] {len(corpus):,} documents, query sets "
          f"{', '.join(f'{q} {len(v[0]):,}' for q, v in qsets.items())} ({time.perf_counter() - start:.0f} s)",
          flush=True)
    if args.queries:
        wanted = set(args.queries.split(","))
        qsets = {q: v for q, v in qsets.items() if q in wanted}
        if not qsets:
            raise SystemExit(f"[{name}] none of the query sets {args.queries!r}")
    if args.limit:
        qsets = {q: (v[0][:args.limit], v[1]) for q, v in qsets.items()}
    analyzer = lexir_analyzer(corpus)
    folder.mkdir(parents=True, exist_ok=True)
    stamp = {"docs": len(corpus), "fingerprint": corpus.fingerprint, "analyzer": analyzer.config.to_dict()}
    stamp_file = folder / "collections.json"
    if not (stamp_file.exists() and json.loads(stamp_file.read_text()) == stamp):
        start = time.perf_counter()
        for sub in ("native", "pretok"):
            shutil.rmtree(folder / f"collection-{sub}", ignore_errors=True)
            (folder / f"collection-{sub}").mkdir()
        from lexir.retrieval.bm25 import document_tokens

        with open(folder / "collection-native" / "docs.jsonl", "w", encoding="utf-8") as native, \
                open(folder / "collection-pretok" / "docs.jsonl", "w", encoding="utf-8") as pretok:
            for doc in corpus:
                text = f"{doc.title}\n{doc.text}" if doc.title else doc.text
                native.write(json.dumps({"id": doc.id, "contents": text}, ensure_ascii=False) + "\n")
                tokens = document_tokens(analyzer, doc.title, doc.text)
                pretok.write(json.dumps({"id": doc.id, "contents": " ".join(tokens)}, ensure_ascii=False) + "\n")
        stamp_file.write_text(json.dumps(stamp))
        print(f"[{name}] collections written ({time.perf_counter() - start:.0f} s: lexir's analysis of "
              f"every document for the pre-tokenised one)", flush=True)
    qdir = folder / "queries"
    shutil.rmtree(qdir, ignore_errors=True)
    qdir.mkdir()
    for qname, (queries, _) in qsets.items():
        with open(qdir / f"{qname}.native.tsv", "w", encoding="utf-8") as native, \
                open(qdir / f"{qname}.pretok.tsv", "w", encoding="utf-8") as pretok:
            for q in queries:
                native.write(f"{q.id}\t{flat(q.text)}\n")
                pretok.write(f"{q.id}\t{' '.join(t for t in analyzer(q.text) if t.strip())}\n")
    return {"docs": len(corpus), "language": corpus.language, "queries": {q: len(v[0]) for q, v in qsets.items()},
            "qrels": {q: v[1] for q, v in qsets.items() if v[1]}}


def folder_mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def build(name: str, folder: Path, engine: str, language: str, classpath: str | None, args) -> dict:
    """Build one engine's index in a fresh process; its wall seconds, size and peak RSS."""
    index = folder / f"index-{engine}"
    shutil.rmtree(index, ignore_errors=True)
    if engine == "lexir":
        proc = subprocess.run([sys.executable, __file__, "--worker", "lexir-build", "--sets", name,
                               "--short", str(args.short), "--work", str(folder)],
                              capture_output=True, text=True, env=worker_env())
        if proc.returncode != 0:
            raise RuntimeError(f"lexir build of {name} failed:\n{proc.stderr[-3000:]}")
        row = json.loads(proc.stdout.strip().splitlines()[-1])
    else:
        pretok = engine == "lucene-pretok"
        cmd = ["index", "-collection", "JsonCollection", "-input", str(folder / f"collection-{'pretok' if pretok else 'native'}"),
               "-index", str(index), "-generator", "DefaultLuceneDocumentGenerator", "-threads", "1", "-optimize"]
        # -pretokenized alone: with -language too, IndexCollection takes the language's analyzer
        out = java(classpath, cmd + (["-pretokenized"] if pretok else ["-language", language]))[-1]
        row = {"build_s": out["wall_s"], "peak_rss_mib": out["vm_hwm_kib"] / 1024}
    row["index_mib"] = folder_mib(index)
    return row


def worker_env() -> dict:
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1")
    return env


def search(folder: Path, engine: str, language: str, classpath: str | None, qnames: list[str], ks: list[int],
           passes: int, warmup: float) -> list[dict]:
    """One search process of one engine over every query set and k: a row per (set, k) with the
    timed passes' seconds and the process's peak RSS; runs written under folder/runs."""
    runs = folder / "runs"
    runs.mkdir(exist_ok=True)
    if engine == "lexir":
        proc = subprocess.run([sys.executable, __file__, "--worker", "lexir-search", "--work", str(folder),
                               "--queries", ",".join(qnames), "--k", ",".join(map(str, ks)),
                               "--passes", str(passes), "--warmup", str(warmup)], capture_output=True, text=True, env=worker_env())
        if proc.returncode != 0:
            raise RuntimeError(f"lexir search failed:\n{proc.stderr[-3000:]}")
        return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    pretok = engine == "lucene-pretok"
    cmd = ["search", "-index", str(folder / f"index-{engine}"), "-analyzer", "whitespace" if pretok else language,
           "-k", ",".join(map(str, ks)), "-k1", str(K1), "-b", str(B), "-passes", str(passes),
           "-warmup", str(warmup), "-run", str(runs / engine)]
    for q in qnames:
        cmd += ["-queries", f"{q}={folder / 'queries' / (q + ('.pretok' if pretok else '.native') + '.tsv')}"]
    return java(classpath, cmd)


# -- workers (fresh processes) -----------------------------------------------------------------

def worker_lexir_build(args) -> None:
    """lexir's build from the file Lucene indexes (collection-native/docs.jsonl: id, and title and
    text as one field: the terms of the corpus's title and text in the same order, but where a
    title ends in a hyphen its text continues, one of de-gesetze's 107k), read as ``lexir index``
    reads a JSONL corpus: a stream, no document kept once analysed."""
    import numba

    numba.set_num_threads(1)
    from lexir.datasets import stream
    from lexir.retrieval.bm25 import BM25Retriever

    folder = Path(args.work)
    language = json.loads((folder / "collections.json").read_text())["analyzer"]["language"]
    corpus = stream(folder / "collection-native" / "docs.jsonl", language=language)
    analyzer = lexir_analyzer(corpus)
    memory = Memory()
    start, cpu = time.perf_counter(), time.process_time()
    retriever = BM25Retriever(analyzer, K1, B).index(corpus)
    index_s = time.perf_counter() - start
    retriever.save(folder / "index-lexir")
    build_s, build_cpu_s = time.perf_counter() - start, time.process_time() - cpu
    mem = memory.result()
    # CPU seconds beside the wall's: on a shared machine, the wall includes waiting for a CPU
    print(json.dumps({"build_s": build_s, "build_cpu_s": build_cpu_s, "index_only_s": index_s,
                      "peak_rss_mib": mem["peak_rss_mib"],
                      "build_rise_mib": mem["timed_peak_over_baseline_mib"],
                      "start_rss_mib": mem["baseline_rss_mib"]}))


def worker_lexir_search(args) -> None:
    import numba

    numba.set_num_threads(1)
    from lexir.retrieval.bm25 import BM25Retriever
    from lexir.types import Query

    folder = Path(args.work)
    retriever = BM25Retriever.load(folder / "index-lexir", mmap=True)
    for qname in args.queries.split(","):
        queries = []
        with open(folder / "queries" / f"{qname}.native.tsv", encoding="utf-8") as fh:
            for line in fh:
                qid, _, text = line.rstrip("\n").partition("\t")
                queries.append(Query(qid, text))
        retriever.search_many(queries[:5], k=10)  # the kernel is loaded or compiled here
        for k in [int(x) for x in args.k.split(",")]:
            seconds = []
            warmed = 0.0
            while True:  # untimed warm-up passes, as LuceneLoop: until they took --warmup seconds
                start = time.perf_counter()
                kept = retriever.search_many(queries, k=k)
                warmed += time.perf_counter() - start
                if warmed >= args.warmup:
                    break
            for _ in range(args.passes):
                start = time.perf_counter()
                retriever.search_many(queries, k=k)
                seconds.append(time.perf_counter() - start)
            with open(folder / "runs" / f"lexir.{qname}.k{k}.json", "w", encoding="utf-8") as fh:
                json.dump({q: sorted(r.items(), key=lambda kv: -kv[1]) for q, r in kept.items()}, fh)
            print(json.dumps({"queries": qname, "k": k, "n": len(queries), "seconds": seconds,
                              "vm_hwm_kib": status_kib("VmHWM")}), flush=True)


# -- quality ----------------------------------------------------------------------------------

def read_run(folder: Path, engine: str, qname: str, k: int) -> dict[str, dict[str, float]]:
    runs = folder / "runs"
    if engine == "lexir":
        data = json.loads((runs / f"lexir.{qname}.k{k}.json").read_text(encoding="utf-8"))
        return {q: dict(map(tuple, hits)) for q, hits in data.items()}
    run: dict[str, dict[str, float]] = {}
    with open(runs / f"{engine}.{qname}.k{k}.trec", encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split(" ")
            run.setdefault(parts[0], {})[" ".join(parts[2:-3])] = float(parts[-2])
    return run


def overlap(a: dict, b: dict, k: int = 10) -> float:
    """Mean share of lexir's top k that the other run also has in its top k (queries lexir answers)."""
    values = []
    for qid, hits in a.items():
        top = [d for d, _ in sorted(hits.items(), key=lambda kv: -kv[1])[:k]]
        if not top:
            continue
        other = {d for d, _ in sorted(b.get(qid, {}).items(), key=lambda kv: -kv[1])[:k]}
        values.append(len(other.intersection(top)) / len(top))
    return statistics.fmean(values) if values else float("nan")


def quality(folder: Path, engines: list[str], qname: str, ks: list[int], qrels: dict | None) -> dict:
    from lexir.evaluation import evaluate

    out: dict = {}
    kq = max(ks)
    runs = {e: read_run(folder, e, qname, kq) for e in engines}
    for e in engines:
        row = {}
        if "lexir" in runs and e != "lexir":
            row["overlap@10"] = overlap(runs["lexir"], runs[e])
        if qrels:
            ev = evaluate(runs[e], qrels, ["nDCG@10", "R@100"] if kq >= 100 else ["nDCG@10"])
            row.update({m: ev.mean(m) for m in (["nDCG@10", "R@100"] if kq >= 100 else ["nDCG@10"])})
        out[e] = row
    return out


# -- the benchmark ------------------------------------------------------------------------------

def run_set(name: str, args, classpath: str | None) -> dict:
    folder = Path(args.work) / name
    info = prepare(name, folder, args)
    engines = [e for e in args.engines.split(",")]
    ks = [int(x) for x in args.k.split(",")]
    qnames = list(info["queries"])
    builds_file = folder / "builds.json"
    builds = json.loads(builds_file.read_text()) if args.reuse and builds_file.exists() else {}
    lang = info["language"]
    for engine in engines:
        if engine in builds and (folder / f"index-{engine}").exists():
            print(f"[{name}] {engine}: index reused", flush=True)
            continue
        builds[engine] = build(name, folder, engine, lang, classpath, args)
        b = builds[engine]
        print(f"[{name}] {engine}: built in {b['build_s']:.1f} s, {b['index_mib']:.1f} MiB, "
              f"peak RSS {b['peak_rss_mib']:,.0f} MiB", flush=True)
        builds_file.write_text(json.dumps(builds, indent=1))
    timings: dict = {}
    peaks: dict = {}
    for r in range(args.rounds):
        order = engines if r % 2 == 0 else engines[::-1]
        for engine in order:
            for row in search(folder, engine, lang, classpath, qnames, ks, args.passes, args.warmup):
                timings.setdefault((engine, row["queries"], row["k"]), []).extend(row["seconds"])
                peaks[engine] = max(peaks.get(engine, 0), row["vm_hwm_kib"] / 1024)
        print(f"[{name}] search round {r + 1}/{args.rounds} done ({load_note()})", flush=True)
    rows = []
    for qname in qnames if args.rounds else []:  # --rounds 0: builds only, no runs to judge
        qual = quality(folder, engines, qname, ks, info["qrels"].get(qname))
        n = info["queries"][qname]
        for k in ks:
            for engine in engines:
                secs = timings[(engine, qname, k)]
                rows.append({"set": name, "docs": info["docs"], "queries": qname, "n": n, "k": k, "engine": engine,
                             "qps": n / min(secs), "qps_median": n / statistics.median(secs), "seconds": secs,
                             "search_peak_rss_mib": peaks[engine], **qual[engine]})
    return {"set": name, "docs": info["docs"], "builds": builds, "search": rows}


def fmt(x, spec: str = ",.0f") -> str:
    return "–" if x is None or (isinstance(x, float) and x != x) else format(x, spec)


def tables(results: list[dict]) -> str:
    lines = ["| set | docs | engine | build s | index MiB | build peak RSS MiB | search peak RSS MiB |",
             "|---|---:|---|---:|---:|---:|---:|"]
    for res in results:
        peaks = {r["engine"]: r["search_peak_rss_mib"] for r in res["search"]}
        for engine, b in res["builds"].items():
            lines.append(f"| {res['set']} | {res['docs']:,} | {engine} | {b['build_s']:.1f} | {b['index_mib']:,.1f} | "
                         f"{b['peak_rss_mib']:,.0f} | {fmt(peaks.get(engine))} |")
    lines += ["", "| set | queries | n | k | engine | q/s best (median) | nDCG@10 | R@100 | overlap@10 with lexir |",
              "|---|---|---:|---:|---|---:|---:|---:|---:|"]
    for res in results:
        for r in res["search"]:
            lines.append(f"| {r['set']} | {r['queries']} | {r['n']:,} | {r['k']} | {r['engine']} | "
                         f"{r['qps']:,.0f} ({r['qps_median']:,.0f}) | {fmt(r.get('nDCG@10'), '.3f')} | "
                         f"{fmt(r.get('R@100'), '.3f')} | {fmt(r.get('overlap@10'), '.3f')} |")
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="pl-codes,de-gesetze,fr-codes", help=f"comma-separated: {', '.join(SETS)}")
    parser.add_argument("--queries", default="", help="only these query sets (exam, titles, lay, headings)")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--k", default="10,100")
    parser.add_argument("--limit", type=int, default=0, help="at most this many queries per query set (0: all)")
    parser.add_argument("--short", type=int, default=2000, help="at most this many titles as short queries")
    parser.add_argument("--rounds", type=int, default=2, help="search processes per engine, interleaved")
    parser.add_argument("--passes", type=int, default=2, help="timed passes per search process")
    parser.add_argument("--warmup", type=float, default=2.0,
                        help="untimed passes over a query set until they took this many seconds (JIT, caches)")
    parser.add_argument("--work", default=str(HERE / "results" / "lucene"), help="collections, indexes, runs")
    parser.add_argument("--reuse", action="store_true", help="reuse indexes and build figures found in --work")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "lucene.json")
    parser.add_argument("--worker", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker == "lexir-build":
        worker_lexir_build(args)
        return {}
    if args.worker == "lexir-search":
        worker_lexir_search(args)
        return {}
    engines = args.engines.split(",")
    if unknown := set(engines) - set(ENGINES):
        raise SystemExit(f"unknown engines {sorted(unknown)}; valid: {', '.join(ENGINES)}")
    classpath = ensure_loop() if any(e.startswith("lucene") for e in engines) else None
    results = []
    out = {"k1": K1, "b": B, "load_at_start": load_note(), "argv": sys.argv[1:] if argv is None else list(argv),
           "results": results}
    for name in args.sets.split(","):
        results.append(run_set(name, args, classpath))
        write_json(args.output, out, indent=1)
    out["load_at_end"] = load_note()
    out["table"] = tables(results)
    write_json(args.output, out, indent=1)
    print(out["table"])
    print(f"k1={K1}, b={B}; {out['load_at_start']} at the start, {out['load_at_end']} at the end; "
          f"results in {args.output}")
    return out


if __name__ == "__main__":
    main()
