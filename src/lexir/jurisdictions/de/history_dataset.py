"""``de-gesetze-history``: 36 German federal laws through their versions of 2012-2022.

The dataset's content is a :class:`~lexir.structure.history.StatuteHistory`: each provision's
versions with ``valid_from`` / ``valid_to``, and ``history.as_of(date)`` for the corpus in force
on a date (``history.corpus`` is the latest). Parsing all 226 law versions takes about a
minute, so the built history is kept under the cache directory (``history/``), keyed by the
sha256 of both input files and :data:`HISTORY_FORMAT`; a changed file or parser version never
meets a stale copy.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from lexir.datasets.registry import Dataset, register
from lexir.jurisdictions.de.history import is_pending, iter_law_versions
from lexir.jurisdictions.de.statutes import ParseError
from lexir.structure.history import StatuteHistory, cached_history, gc_paused

NAME = "de-gesetze-history"
# Bump when parsing or version building changes what a history holds.
# 2: the history carries its jurisdiction; 3: versions dated by their header too; 4: "(zukünftig in
# Kraft)" units not in force; 5: an act named in a compound word dates a version too
HISTORY_FORMAT = 5


def load_german_history(tar_path: str | Path, versions_tsv: str | Path, name: str = NAME,
                        cache: bool = True, slugs: Iterable[str] | None = None) -> StatuteHistory:
    """The history of the laws in ``tar_path`` (only ``slugs`` when given), from the cache when
    it was built before."""
    chosen = ",".join(sorted(slugs)) if slugs is not None else "*"

    def build() -> StatuteHistory:
        laws, errors = [], []
        with gc_paused():
            for result in iter_law_versions(tar_path, versions_tsv, slugs):
                (errors if isinstance(result, ParseError) else laws).append(result)
        history = StatuteHistory.build(name, "de", laws, jurisdiction="de", pending=is_pending)
        history.parse_errors = tuple(errors)
        return history

    return cached_history(name, (tar_path, versions_tsv), f"{HISTORY_FORMAT}\0{chosen}", build, cache)


def _load(data_dir: Path) -> StatuteHistory:
    folder = data_dir / "de" / "history"
    return load_german_history(folder / "gesetze_history.tar.xz", folder / "versions.tsv")


register(Dataset(NAME, "36 German federal laws (BGB, StGB, ZPO, GG, SGB, ...) in every version 2012-2022: "
                 "provision versions with valid_from/valid_to; --as-of DATE gives the corpus in force",
                 "de", _load, ("docs", "history")))
