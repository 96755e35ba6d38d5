"""Greek datasets: ``el-statutes`` (the Penal Code and eight laws, gazette headers removed) and
``el-dev`` (the known-item development set made from them)."""

from __future__ import annotations

from pathlib import Path

from lexir.datasets.devsets import known_item_set
from lexir.datasets.registry import Dataset, register
from lexir.datasets.statutes import corpus_of
from lexir.jurisdictions.el.statutes import load_greek_statutes
from lexir.types import Benchmark, Corpus


def _load_el_statutes(data_dir: Path) -> Corpus:
    return corpus_of("el-statutes", load_greek_statutes(data_dir / "el"), "el", jurisdiction="el")


def _load_el_dev(data_dir: Path) -> Benchmark:
    from lexir.datasets.generic import open as open_data

    return known_item_set(open_data("el-statutes", data_dir=data_dir), "el-dev", n_per_kind=300)


register(Dataset("el-statutes", "Greek statutes (Penal Code and eight laws), gazette headers removed, "
                 "articles split into paragraphs and items", "el", _load_el_statutes, ("docs",)))
register(Dataset("el-dev", "Greek development set: 300 heading and 300 held-out-sentence known-item "
                 "queries over el-statutes (the query's words taken out of the index)", "el", _load_el_dev,
                 ("docs", "queries", "qrels"), needs=("el-statutes",)))
