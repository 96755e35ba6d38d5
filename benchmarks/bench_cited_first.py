"""The trained ``recommended`` with and without the articles a question cites put first, on the
same models: the five fold models ``bench_train.py`` leaves under its ``model folders`` line
(``/tmp/bench-train-*``), each answering its own fold's questions (never seen in its training).
``bm25-qa(model=DIR)`` is the trained system alone; ``recommended(model=DIR)`` wraps it in
``explicit`` wherever the legal order has a citation finder (German law has one).

    nice -n 5 python benchmarks/bench_train.py            # prints "model folders under DIR"
    python benchmarks/bench_cited_first.py DIR
"""

from __future__ import annotations

import argparse
from pathlib import Path

import lexir
from lexir.evaluation import Measure, to_markdown
from lexir.learning.folds import kfold

REPO = Path(__file__).resolve().parents[1]
MEASURES = tuple(Measure.parse(m) for m in ("nDCG@10", "R@10", "R@100", "MAP@100", "Hit@10"))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", help="bench_train.py's model folders (fold0 .. fold4 inside)")
    parser.add_argument("--folder", default=str(REPO.parent / "shared" / "data" / "de" / "gerlayqa-dev"))
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args(argv)
    bench = lexir.load(args.folder, language="de")
    queries = bench.queries.split("dev")
    runs: dict[str, dict] = {"trained (bm25-qa alone)": {}, "trained recommended (cited articles first)": {}}
    for i, (_, test) in enumerate(kfold(queries, args.folds, seed="gerlayqa")):
        model = str(Path(args.models) / f"fold{i}")
        runs["trained (bm25-qa alone)"].update(lexir.retrieve(lexir.build(bench.corpus, "bm25-qa", model=model), test))
        runs["trained recommended (cited articles first)"].update(
            lexir.retrieve(lexir.build(bench.corpus, "recommended", model=model), test))
    print(to_markdown(lexir.compare(runs, queries, baseline="trained (bm25-qa alone)", measures=MEASURES)))


if __name__ == "__main__":
    main()
