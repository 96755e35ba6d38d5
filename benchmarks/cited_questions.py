"""How often a development question cites an article of its corpus itself, and whether the article
it cites is judged relevant: the evidence for putting cited articles first in ``recommended``
(docs/systems.md, "The articles a question cites come first"). Development sets and tune splits
only; the cited articles are what :class:`lexir.retrieval.cascade.ExplicitReferences` promotes.

    LEXIR_DATA=../shared/data python benchmarks/cited_questions.py
"""

from __future__ import annotations

from lexir.datasets import DatasetError
from lexir.datasets import open as open_data
from lexir.retrieval.cascade import ExplicitReferences

SETS = (("gerlayqa-dev", "tune"), ("de-dev", None), ("at-dev", None), ("fr-dev", None), ("el-dev", None),
        ("pl-exams", "tune"), ("demo", "tune"))


def main() -> None:
    print("| set | questions | cite an article of the corpus | the cited one judged relevant |")
    print("|---|---:|---:|---:|")
    for name, split in SETS:
        try:
            bench = open_data(name, want="queries")
        except DatasetError as err:
            print(f"| {name} | not here: {str(err)[:80]} | | |")
            continue
        queries = bench.queries.split(split)
        finder = ExplicitReferences(None, bench.corpus, bench.corpus.language)  # only its cited() is used
        citing = relevant = 0
        for query in queries.queries:
            cited = finder.cited(query.text)
            if cited:
                citing += 1
                relevant += any(doc in queries.qrels.get(query.id, {}) for doc in cited)
        print(f"| {queries.name} | {len(queries):,} | {citing} | {relevant} |")


if __name__ == "__main__":
    main()
