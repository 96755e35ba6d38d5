"""Austrian datasets: ``at-laws``, the 44 federal laws of ``at/laws.tar.xz`` (ABGB, StGB, ZPO, MRG,
KSchG, ...) in the version of 17.07.2025, parsed into § / Art > Absatz > Ziffer > litera. A law that
does not parse is reported in ``corpus.parse_errors`` (member and line) and the others are kept."""

from __future__ import annotations

from pathlib import Path

from lexir.datasets.devsets import known_item_set
from lexir.datasets.registry import Dataset, register
from lexir.datasets.statutes import corpus_of
from lexir.jurisdictions.at.statutes import load_austrian_laws
from lexir.types import Benchmark, Corpus


def _load_at_laws(data_dir: Path) -> Corpus:
    acts, errors = load_austrian_laws(data_dir / "at" / "laws.tar.xz")
    return corpus_of("at-laws", acts, "de", errors, jurisdiction="at")


def _load_at_dev(data_dir: Path) -> Benchmark:
    from lexir.datasets.generic import open as open_data

    return known_item_set(open_data("at-laws", data_dir=data_dir), "at-dev", n_per_kind=400)


register(Dataset("at-laws", "44 Austrian federal laws (ABGB, StGB, ZPO, MRG, KSchG, ASVG, ...) as of 17.07.2025, "
                 "parsed into § / Art > Absatz > Ziffer > litera; ids AT-<Kurztitel>::<§>", "de", _load_at_laws,
                 ("docs",)))
register(Dataset("at-dev", "Austrian development set: 400 § heading and 400 held-out-sentence known-item queries "
                 "over at-laws (the query's words taken out of the index)", "de", _load_at_dev,
                 ("docs", "queries", "qrels"), needs=("at-laws",)))
