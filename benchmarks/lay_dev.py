"""Everyday questions (issue 30, item 2): which analysis and fusion meet a lay question's words.

Each language has a file of questions written for the choice as a newcomer would ask them (first
person, everyday words), each with the article(s) a lawyer would cite, checked against the
article's text. They are development data: settings are chosen here, so the figures are not a
measure of unseen questions. Beside them the script prints the development sets the language's
defaults were chosen on before, since a default must not lose what it does for questions written in
the statutes' words.

- ``pl``: ``data/pl_lay_dev.jsonl``, 45 questions (28 Kodeks karny, 17 Kodeks cywilny), searched over
  all five codes (``pl-codes``, 4,318 articles); beside them the exam questions' tune split
  (``pl-exams:tune``). Written after the word families (``lexir/analysis/data/families/pl.tsv``,
  read off the codes' own verbs) and not changed to fit them.
- ``fr``: ``data/fr_lay_dev.jsonl``, 45 questions (15 Code pénal, 12 Code civil, 11 Code du travail,
  7 Code de la consommation), searched over those codes and the Code de procédure civile as in force
  (``fr-codes``' five development codes, 20,281 articles); beside them ``fr-dev``'s heading and
  held-out-sentence known-item splits. Dense runs through ``encoder=onnx`` (the same e5-small as
  the base install's ``dense``, about four times faster here), as ``experiments/fr-dev-dense.yaml``.
- ``at`` (Austria, German-language): ``data/at_lay_dev.jsonl``, 45 questions (18 criminal law: StGB,
  StVO, SMG; 27 civil, labour, social and procedural law: ABGB, MRG, KSchG, ASVG, IO, EO, DSG, ZPO,
  StPO, TSchG) in Austrian words (Willhaben, Krankenstand, Gehsteig), searched over ``at-laws``
  (44 federal laws, 8,976 articles); beside them ``at-dev``'s heading and held-out-sentence splits.
  Written after the German defaults were chosen (on ``de-dev`` and German lay questions); the rows
  are German ``recommended`` before and after it took dense at 1 for questions in the first person
  (which every one of these is), as French and Polish had, then Austria's own (dense at 1.5 for them,
  chosen here: ``Jurisdiction.recommended`` in ``lexir/jurisdictions/at``).

    nice -n 5 python benchmarks/lay_dev.py --set pl
    nice -n 5 python benchmarks/lay_dev.py --set fr --systems "bm25+bm25(mode=stem;stoplist=iso)"
    nice -n 5 python benchmarks/lay_dev.py --set at --no-checks

``--paired`` then tests each row against the first, question by question (lexir's paired
randomisation test over nDCG@10, with the questions each row answers better and worse).

The sets are legal orders, not languages (``at`` is German-language); ``--lang`` is the old name of
``--set``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from lexir.datasets import open as open_data
from lexir.evaluation.evaluate import evaluate
from lexir.retrieval.build import build_retriever
from lexir.retrieval.spec import parse_spec_list
from lexir.types import Corpus, Query

HERE = Path(__file__).parent
MEASURES = ("nDCG@10", "Hit@10", "R@100", "MRR")


def _fr_codes() -> Corpus:
    """The five codes of ``fr-dev`` as in force, their texts whole (``fr-dev`` itself holds its
    known-item queries' words out of the index)."""
    from lexir.jurisdictions.fr.datasets import DEV_CODES

    codes = open_data("fr-codes")
    return Corpus("fr-dev-codes", [d for d in codes if d.act in DEV_CODES], language=codes.language,
                  jurisdiction=codes.jurisdiction, acts=[a for a in codes.acts.values() if a.id in DEV_CODES])


@dataclass(frozen=True)
class LaySet:
    file: str
    corpus: Callable[[], Corpus]
    checks: tuple[tuple[str, str], ...]  # (benchmark, split) printed beside
    systems: tuple[str, ...]  # the default rows


LAY_SETS = {
    "pl": LaySet("pl_lay_dev.jsonl", partial(open_data, "pl-codes"), (("pl-exams", "tune"),), (
        "bm25", "bm25(mode=lemma;lemmatizer=morfeusz)", "bm25(mode=lemma;lemmatizer=morfeusz;families=true)",
        "dense", "recommended")),
    "fr": LaySet("fr_lay_dev.jsonl", _fr_codes, (("fr-dev", "heading"), ("fr-dev", "sentence")), (
        "bm25", "dense(encoder=onnx)",
        "combsum(systems=bm25(mode=stem;bigrams=0.25)+dense(encoder=onnx);weights=1,0.35)")),
    "at": LaySet("at_lay_dev.jsonl", partial(open_data, "at-laws"), (("at-dev", "heading"), ("at-dev", "sentence")), (
        "bm25", "dense(encoder=onnx)",
        "combsum(systems=bm25(mode=stem;stoplist=iso;verb_lemmas=true)+dense(encoder=onnx);weights=1,0.75)",
        "combsum(systems=bm25(mode=stem;stoplist=iso;verb_lemmas=true)+dense(encoder=onnx);weights=1,0.75;"
        "first_person=true;long_weights=1,1)",
        "combsum(systems=bm25(mode=stem;stoplist=iso;verb_lemmas=true)+dense(encoder=onnx);weights=1,0.75;"
        "first_person=true;long_weights=1,1.5)")),
}


def lay_questions(path: Path) -> tuple[list[Query], dict]:
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


def missing_gold(qrels: dict, corpus: Corpus) -> list[str]:
    """The gold articles of ``qrels`` that ``corpus`` does not hold, sorted."""
    return sorted({doc for gold in qrels.values() for doc in gold} - set(corpus.ids))


def scores(retriever, queries, qrels, runs: dict | None = None, name: str = "") -> dict[str, float]:
    """The means of MEASURES over ``queries``; with ``runs``, the run is kept there under ``name``."""
    run = retriever.search_many(queries, 100)
    run = {q.id: run.get(q.id, {}) for q in queries}
    if runs is not None:
        runs[name] = run
    ev = evaluate(run, {q.id: qrels[q.id] for q in queries}, MEASURES)
    return {m: ev.mean(m) for m in MEASURES}


def paired(runs: dict, qrels: dict) -> None:
    """Each row against the first on the lay questions' nDCG@10: questions better and worse, the
    difference, and the paired randomisation test's p (lexir.evaluation.compare)."""
    from lexir.evaluation.compare import compare

    names = list(runs)
    result = compare(runs, qrels, names[0], measures=("nDCG@10",), tests=("nDCG@10",))
    per = {name: result.evaluations[name].values("nDCG@10") for name in names}
    print(f"\npaired against `{names[0]}` (lay nDCG@10, per question):")
    for test in result.tests:
        diffs = [a - b for a, b in zip(per[test.system], per[names[0]], strict=True)]
        print(f"- `{test.system}`: {sum(d > 1e-9 for d in diffs)} better, {sum(d < -1e-9 for d in diffs)} worse, "
              f"{sum(abs(d) <= 1e-9 for d in diffs)} the same; difference {test.delta:+.3f}, randomisation p = {test.p:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", "--lang", dest="set", choices=sorted(LAY_SETS), required=True,
                    help="the legal order's questions (--lang: the old name)")
    ap.add_argument("--systems", help="system specs joined by '+' (as combsum's systems=); default: the language's rows")
    ap.add_argument("--no-checks", action="store_true", help="skip the development sets printed beside")
    ap.add_argument("--paired", action="store_true",
                    help="also test each row against the first, question by question (paired randomisation test)")
    args = ap.parse_args()
    lay = LAY_SETS[args.set]
    queries, qrels = lay_questions(HERE / "data" / lay.file)
    corpus = lay.corpus()
    missing = missing_gold(qrels, corpus)
    if missing:
        raise SystemExit(f"{lay.file}: gold articles not in {corpus.name}: {', '.join(missing)}")
    checks = [] if args.no_checks else [(f"{name}:{split}", (bench := open_data(name)).corpus,
                                         bench.queries.split(split)) for name, split in lay.checks]
    print(f"{len(queries)} lay questions over {corpus.name} ({len(corpus)} articles)"
          + "".join(f"; {label} {len(qs)} questions" for label, _, qs in checks))
    header = " | ".join(f"lay {m}" for m in MEASURES) + "".join(f" | {label} nDCG@10" for label, _, _ in checks)
    print(f"| system | {header} |")
    specs = parse_spec_list(args.systems) if args.systems else lay.systems
    runs: dict = {}
    for spec in map(str, specs):
        found = scores(build_retriever(corpus, spec), queries, qrels, runs, spec)
        cells = [f"{found[m]:.3f}" for m in MEASURES]
        for _, check_corpus, qs in checks:
            cells.append(f"{scores(build_retriever(check_corpus, spec), list(qs.queries), qs.qrels)['nDCG@10']:.3f}")
        print(f"| `{spec}` | " + " | ".join(cells) + " |", flush=True)
    if args.paired and len(runs) > 1:
        paired(runs, qrels)


if __name__ == "__main__":
    main()
