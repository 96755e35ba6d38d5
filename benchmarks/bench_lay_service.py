"""One lay question through a trained ``recommended`` over all German law, served: p50/p99 at 1 and
8 clients (issue 29, item 4).

The corpus is ``gerlayqa-dev-all`` (the 2,151 German lay questions against all of de-gesetze:
6,636 laws, 107,016 articles). The model is trained on four of the five hash folds
(:func:`lexir.learning.folds.kfold`, seed ``gerlayqa``, as ``bench_train.py`` cuts them) and the
questions sent are the fifth fold's, which the model never saw (a served model refuses its own
training questions with 409, which this script would count as errors).

    nice -n 5 python benchmarks/bench_lay_service.py                       # trains, then serves
    python benchmarks/bench_lay_service.py --model DIR --seconds 30        # an existing model
    python benchmarks/bench_lay_service.py --corpus gerlayqa-dev           # the BGB alone

Training over all of de-gesetze took 570 s on four folds (1,687 questions; peak RSS 4.95 GB) once
the inner folds kept each question's candidates only (``InnerFold.compact``); before, its rows were
as wide as the corpus (107k columns) and it had not finished after 35 minutes at 9 GB.
``--corpus gerlayqa-dev`` (the BGB's 2,377 §§) trains in minutes.

``--base`` is the pipeline the model is trained over. Its default is German's lexical row (what
``recommended`` was before it fused dense retrieval): the fused row would first encode all 107k
articles (hours on two cores). Over a corpus this size the model's own dense evidence is off
(``dense=auto`` keeps it for corpora of at most 3,000 provisions), so each question costs its
analysis, the BM25 base over all articles and the learned lexical fields.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_service import load, load_path, rss_mib, start_server  # noqa: E402

CORPORA = ("gerlayqa-dev-all", "gerlayqa-dev")
LEXICAL_BASE = "bm25(mode=stem;stoplist=iso;verb_lemmas=true)"


def folds(corpus: str, fold: int):
    import lexir
    from lexir.learning.folds import kfold

    bench = lexir.load(corpus)
    train, test = kfold(bench.queries.split("dev"), 5, seed="gerlayqa")[fold]
    return bench.corpus, train, test


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", choices=CORPORA, default=CORPORA[0],
                        help="all of de-gesetze (default) or the BGB alone (gerlayqa-dev)")
    parser.add_argument("--model", help="a model folder trained on all folds but --fold (default: train one)")
    parser.add_argument("--fold", type=int, default=4, help="the held-out fold whose questions are sent")
    parser.add_argument("--base", default=LEXICAL_BASE)
    parser.add_argument("--clients", default="1,8")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    name = args.corpus
    corpus, train, test = folds(name, args.fold)
    model = args.model
    if not model:
        from lexir.learning.train import train_system

        model = str(Path(tempfile.mkdtemp(prefix="bench-lay-")) / "model")
        t0 = time.perf_counter()
        train_system("recommended", corpus, train, Path(model), data={"data": name, "fold": args.fold},
                     params={"base": args.base})
        print(f"trained {model} on {len(train)} questions in {time.perf_counter() - t0:.0f} s", flush=True)
    questions = [q.text for q in test.queries]
    proc, port, log, startup = start_server(name, ["--system", f"recommended(model={model})", "--max-in-flight",
                                                  "64", "--no-request-log"], "bench-lay-service")
    try:
        load(port, name, questions, 2, 3.0)  # warm-up
        rows = []
        for n in (int(c) for c in args.clients.split(",")):
            found = load(port, name, questions, n, args.seconds)
            health = load_path(port, "/healthz", min(args.seconds, 10.0), n)
            rows.append({**found, "healthz_rps": health["rps"]})
        rss = rss_mib(proc.pid)
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()
    print(f"\n== {name} ({len(corpus):,} articles), recommended(model=...) over {args.base}; "
          f"{len(questions)} held-out questions (fold {args.fold}); server up in {startup:.0f} s, RSS {rss[0]:.0f} MiB")
    print(f"{'clients':>8} {'requests':>9} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7} {'healthz/s':>10}")
    for r in rows:
        print(f"{r['clients']:>8} {r['requests']:>9} {r['rps']:>8.1f} {r['p50_ms']:>8.1f} {r['p99_ms']:>8.1f} "
              f"{r['errors']:>7} {r['healthz_rps']:>10.0f}" + (f"  {r['statuses']}" if r["statuses"] else ""))
    if args.json:
        args.json.write_text(json.dumps({"model": model, "base": args.base, "rows": rows, "rss_mib": rss[0],
                                         "startup_s": startup}, indent=1))


if __name__ == "__main__":
    main()
