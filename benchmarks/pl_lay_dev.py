"""Everyday Polish questions (issue 30, item 2): which analysis meets a lay question's words.

``benchmarks/data/pl_lay_dev.jsonl``: 45 questions written for this choice as a newcomer would ask
them (first person, everyday words: "ukradłem", "pobiłem się", "zalał mi mieszkanie"), 28 about
the Kodeks karny and 17 about the Kodeks cywilny, each with the article(s) a lawyer would cite,
checked against the article's text. They are development data: settings are chosen here, so the
figures below are not a measure of unseen questions. The questions were written after the word
families (``lexir/analysis/data/families/pl.tsv``, read off the codes' own verbs) and were not
changed to fit them. Searched over all five codes (``pl-codes``, 4,318 articles); the exam
questions' tune split (``pl-exams:tune``) is printed beside, since a Polish default must not lose
what it does for questions written in the statutes' words.

    nice -n 5 python benchmarks/pl_lay_dev.py
    nice -n 5 python benchmarks/pl_lay_dev.py --systems "bm25+bm25(mode=lemma;lemmatizer=morfeusz;families=true)"
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lexir.datasets import open as open_data
from lexir.evaluation.evaluate import evaluate
from lexir.retrieval.build import build_retriever
from lexir.retrieval.spec import parse_spec_list
from lexir.types import Query

HERE = Path(__file__).parent
MEASURES = ("nDCG@10", "Hit@10", "R@100", "MRR")
LEMMA = "bm25(mode=lemma;lemmatizer=morfeusz)"
FAMILIES = "bm25(mode=lemma;lemmatizer=morfeusz;families=true)"
DEFAULT_SYSTEMS = "+".join(["bm25", LEMMA, FAMILIES, "dense", "recommended"])


def lay_questions(path: Path = HERE / "data" / "pl_lay_dev.jsonl") -> tuple[list[Query], dict]:
    queries, qrels = [], {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            queries.append(Query(row["id"], row["text"]))
            qrels[row["id"]] = {doc: 1 for doc in row["gold"]}
        except (ValueError, KeyError) as err:
            raise SystemExit(f"{path}:{lineno}: {err}") from None
    return queries, qrels


def scores(retriever, queries, qrels) -> dict[str, float]:
    run = retriever.search_many(queries, 100)
    ev = evaluate({q.id: run.get(q.id, {}) for q in queries}, {q.id: qrels[q.id] for q in queries}, MEASURES)
    return {m: ev.mean(m) for m in MEASURES}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", default=DEFAULT_SYSTEMS, help="system specs joined by '+' (as combsum's systems=)")
    ap.add_argument("--no-exams", action="store_true", help="skip the exams' tune split")
    args = ap.parse_args()
    queries, qrels = lay_questions()
    codes = open_data("pl-codes")
    exams = None if args.no_exams else open_data("pl-exams")
    tune = None if exams is None else exams.queries.split("tune")
    print(f"{len(queries)} lay questions over pl-codes ({len(codes)} articles)"
          + ("" if exams is None else f"; pl-exams:tune {len(tune)} questions"))
    header = " | ".join(f"lay {m}" for m in MEASURES) + ("" if exams is None else " | exams nDCG@10 | exams R@100")
    print(f"| system | {header} |")
    for spec in map(str, parse_spec_list(args.systems)):
        lay = scores(build_retriever(codes, spec), queries, qrels)
        cells = [f"{lay[m]:.3f}" for m in MEASURES]
        if exams is not None:
            ex = scores(build_retriever(exams.corpus, spec), list(tune.queries), tune.qrels)
            cells += [f"{ex['nDCG@10']:.3f}", f"{ex['R@100']:.3f}"]
        print(f"| `{spec}` | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
