"""Measures as values: ``Measure("nDCG", 10)`` prints as ``nDCG@10`` and hashes.

A measure names *what* is computed, never *how*; ``evaluate`` decides which
backend computes it. Keeping them as values lets them key dicts and travel
through JSON as their string form.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# canonical name -> pytrec_eval measure family (None: computed by lexir itself)
_TREC_FAMILY: dict[str, str | None] = {
    "nDCG": "ndcg_cut",
    "MAP": "map_cut",
    "R": "recall",
    "P": "P",
    "Hit": None,
    "MRR": None,
    "ActHit": None,
}
# measures whose per-query value is 0 or 1, so proportions statistics apply
_BINARY = frozenset({"Hit", "ActHit"})
# measures that make sense over the whole ranking
_CUTOFF_OPTIONAL = frozenset({"MRR"})
_BY_LOWER = {name.lower(): name for name in _TREC_FAMILY}
_VALID_FORMS = "nDCG@k, MAP@k, R@k, P@k, Hit@k, ActHit@k, MRR, MRR@k (k a positive integer)"
_PATTERN = re.compile(r"^\s*([A-Za-z]+)\s*(?:@\s*(\d+))?\s*$")


@dataclass(frozen=True)
class Measure:
    """One evaluation measure, optionally cut at rank ``k``."""

    name: str
    k: int | None = None

    def __post_init__(self) -> None:
        if self.name not in _TREC_FAMILY:
            raise ValueError(f"unknown measure {self.name!r}; valid forms: {_VALID_FORMS}")
        if self.k is None:
            if self.name not in _CUTOFF_OPTIONAL:
                raise ValueError(f"{self.name} needs a cutoff ({self.name}@k); valid forms: {_VALID_FORMS}")
        # bool is an int subclass; Hit@True is surely a mistake
        elif isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ValueError(
                f"cutoff of {self.name} must be a positive integer, got {self.k!r}; valid forms: {_VALID_FORMS}"
            )

    @classmethod
    def parse(cls, text: str) -> Measure:
        """``Measure.parse("nDCG@10")``; names are matched case-insensitively."""
        match = _PATTERN.match(text)
        name = _BY_LOWER.get(match.group(1).lower()) if match else None
        if name is None:
            raise ValueError(f"unknown measure {text!r}; valid forms: {_VALID_FORMS}")
        k = match.group(2)
        return cls(name, int(k) if k is not None else None)

    @classmethod
    def coerce(cls, value: Measure | str) -> Measure:
        return value if isinstance(value, Measure) else cls.parse(value)

    @property
    def binary(self) -> bool:
        """True when every per-query value is 0 or 1 (a success/failure)."""
        return self.name in _BINARY

    @property
    def trec_family(self) -> str | None:
        """The pytrec_eval measure family, or None if lexir computes it itself."""
        return _TREC_FAMILY[self.name]

    @property
    def trec_key(self) -> str | None:
        """The key pytrec_eval reports this measure under (``ndcg_cut_10``)."""
        family = self.trec_family
        return None if family is None else f"{family}_{self.k}"

    def __str__(self) -> str:
        return self.name if self.k is None else f"{self.name}@{self.k}"


def coerce_measures(measures: Iterable[Measure | str]) -> tuple[Measure, ...]:
    """Measures from values or strings, duplicates dropped, order kept."""
    if isinstance(measures, (str, Measure)):
        measures = [measures]
    return tuple(dict.fromkeys(Measure.coerce(m) for m in measures))


DEFAULT_MEASURES: tuple[Measure, ...] = coerce_measures(
    [
        "nDCG@10",
        "nDCG@100",
        "MAP@100",
        "R@10",
        "R@100",
        "Hit@1",
        "Hit@5",
        "Hit@10",
        "Hit@20",
        "Hit@50",
        "Hit@100",
        "MRR",
        "ActHit@10",
    ]
)
