"""Compound words split into the words they are made of, so that a question's compound meets the
statute's words and the other way round: a German asks about *Mietvertragskündigung* where the
BGB writes *Kündigung* of a *Mietvertrag*, and about *Nebenkostenabrechnung* where it writes
*Abrechnung*.

The split is corpus-based (Koehn and Knight, "Empirical methods for compound splitting", EACL
2003): a word of the language's word table (``data/compounds/<code>.tsv``: folded words and how
often the language's statutes use them) splits into a first part and a rest joined by a linking
element (the *Fugen-s* of *Arbeit-s-vertrag*, *-n-*, *-en-*, *-es-*, *-e-*, *-er-*), where the first
part is a word of the table and the rest is one or splits again. Of all such splits, and the word
left whole, the one whose parts are most frequent (the geometric mean of their counts) wins, so a
word the statutes use more often than its parts is never split (*Gesellschaft* does not become
*Gesell* + *schaft*). Every part has at least :data:`MIN_PART` letters, which keeps suffixes and
short words out (*-lichen*, *-ung*, *über*).

The analyzer indexes and searches a word's parts after the word itself (``compounds=both``), or
searches them in a question alone (``compounds=query``: :meth:`Analyzer.for_queries`).
"""

from __future__ import annotations

import math
from functools import cache
from importlib import resources

from lexir.analysis.languages import normalise_language
from lexir.io.tables import table_rows

MIN_PART = 5  # letters of the shortest part (4, 5 and 6 tried on the German lay questions' tune split)
LINKS = ("", "s", "es", "n", "en", "e", "er")  # what may join two parts, tried in this order
MAX_PARTS = 3


@cache
def word_counts(language: str) -> dict[str, int]:
    """The word table of ``language`` (``data/compounds/<code>.tsv``); a language without one
    fails naming the file."""
    code = normalise_language(language)
    path = resources.files("lexir.analysis") / "data" / "compounds" / f"{code}.tsv"
    if not path.is_file():
        raise ValueError(f"no compound word table for language {code!r} (lexir/analysis/data/compounds/{code}.tsv)")
    return parse_counts(path.read_text(encoding="utf-8"), f"compounds/{code}.tsv")


def parse_counts(text: str, source: str = "compounds.tsv") -> dict[str, int]:
    """``word -> count`` of a word table; a bad row is reported with its table and line."""
    counts: dict[str, int] = {}
    for lineno, (word, count) in table_rows(text, source, 2):
        if not count.isdigit() or int(count) < 1:
            raise ValueError(f"{source} line {lineno} (field 'count'): {count!r} is not a positive count")
        if not word or word != word.strip():
            raise ValueError(f"{source} line {lineno} (field 'word'): empty or padded word {word!r}")
        counts[word] = int(count)
    return counts


class Splitter:
    """``parts(word)``: the parts of a compound, or ``()`` where the word stays whole."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def parts(self, word: str) -> tuple[str, ...]:
        if len(word) < 2 * MIN_PART:
            return ()
        return self._best(word, MAX_PARTS, {})[0]

    def _best(self, word: str, most: int, known: dict) -> tuple[tuple[str, ...], float]:
        """The best split of ``word`` into at most ``most`` parts and its score; ``((), count)``
        where the word whole scores best (or nothing splits it). ``known``: the rests already
        split, within one word."""
        found = known.get((word, most))
        if found is not None:
            return found
        counts = self.counts
        best: tuple[tuple[str, ...], float] = ((), float(counts.get(word, 0)))
        for cut in range(MIN_PART, len(word) - MIN_PART + 1):
            first = counts.get(word[:cut])
            if first is None:
                continue
            for link in LINKS:
                if not word.startswith(link, cut):
                    continue
                rest = word[cut + len(link):]
                if len(rest) < MIN_PART:
                    continue
                whole = counts.get(rest)
                if whole is not None:
                    parts, score = (rest,), float(whole)
                elif most > 2 and len(rest) >= 2 * MIN_PART:
                    parts, score = self._best(rest, most - 1, known)
                    if not parts:
                        continue
                else:
                    continue
                # the geometric mean of every part's count (a split rest's score is already one)
                mean = math.exp((math.log(first) + len(parts) * math.log(score)) / (len(parts) + 1))
                if mean > best[1]:
                    best = ((word[:cut], *parts), mean)
        known[(word, most)] = best
        return best
