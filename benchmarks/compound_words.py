"""Write a language's compound word table (``lexir/analysis/data/compounds/<code>.tsv``, read by
:mod:`lexir.analysis.compounds`): every word of at least ``MIN_PART`` letters that a corpus of the
language's statutes uses at least ``--min-count`` times, folded as the analyzer folds it, with its
count. The German table was made from all federal law (de-gesetze, 107,016 articles, about a minute):

    PYTHONPATH=src LEXIR_DATA=../shared/data python benchmarks/compound_words.py --corpus de-gesetze \\
        > src/lexir/analysis/data/compounds/de.tsv
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter

from lexir.analysis import Analyzer
from lexir.analysis.compounds import MIN_PART
from lexir.datasets.generic import open as open_data

# A first part written alone before "und"/"oder" ("Arbeits- und Sozialrecht"): not a word, and
# counted as one it would take the linking element into the part (arbeits + vertrag, not arbeit).
_TRUNCATED = re.compile(r"\w+-(?=[\s,])")


def count_words(texts, language: str) -> Counter:
    """How often each folded word occurs in ``texts`` (the analyzer's surface tokens, stopwords
    kept; a first part written alone with its hyphen left out)."""
    surface = Analyzer.create(language, "raw", stopwords=False).surface
    counts: Counter = Counter()
    for text in texts:
        counts.update(surface(_TRUNCATED.sub(" ", text)))
    return counts


def table(counts: Counter, min_count: int) -> list[str]:
    return [f"{word}\t{n}" for word, n in sorted(counts.items())
            if n >= min_count and len(word) >= MIN_PART and word.isalpha()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="de-gesetze", help="a registered corpus of statutes")
    parser.add_argument("--min-count", type=int, default=5, help="the fewest uses a word needs to be kept")
    args = parser.parse_args()
    corpus = open_data(args.corpus)
    counts = count_words((f"{d.title} {d.text}" for d in corpus), corpus.language)
    rows = table(counts, args.min_count)
    print(f"# Words of {args.corpus} ({len(corpus)} documents) with at least {MIN_PART} letters, used at least "
          f"{args.min_count} times, folded as lexir's analyzer folds them, and how often: the parts a compound may "
          "split into (lexir/analysis/compounds.py). Written by benchmarks/compound_words.py.")
    print("\n".join(rows))
    print(f"{len(rows)} words", file=sys.stderr)


if __name__ == "__main__":
    main()
