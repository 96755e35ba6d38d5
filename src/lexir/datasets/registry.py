"""The dataset registry: one name, one loader, and the files it needs with their provenance.

A dataset module registers itself with :func:`register`; adding a jurisdiction means one
module plus its rows in ``data/files.tsv`` (where each file lies under the data directory,
where it comes from upstream, and its sha256).

The data directory is, in order: an explicit ``data_dir`` argument (the CLI's ``--data-dir``),
the ``LEXIR_DATA`` environment variable, the ``shared/data`` folder beside the project
checkout when it exists, else a per-user folder (``$XDG_DATA_HOME/lexir`` or
``~/.local/share/lexir``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from lexir.io.paths import file_sha256
from lexir.io.tables import table_rows

_PROJECT_ROOT = Path(__file__).resolve().parents[3]


class DatasetError(Exception):
    """A dataset cannot be loaded: unknown name, missing or corrupt file, malformed content."""


@dataclass(frozen=True)
class DataFile:
    dataset: str
    path: str  # relative to the data directory
    repository: str
    commit: str
    upstream_path: str
    sha256: str

    def obtain_hint(self, data_dir: Path) -> str:
        return (
            f"expected at {data_dir / self.path}; obtain it from {self.repository} "
            f"(commit {self.commit}, {self.upstream_path}) and place it there, "
            "or point --data-dir / LEXIR_DATA at a folder that has it"
        )


@dataclass
class Dataset:
    """A registered dataset. ``load(data_dir)`` returns the dataset's content object."""

    name: str
    description: str
    language: str
    loader: Callable[[Path], Any]
    provides: tuple[str, ...] = ("docs",)  # docs, queries, qrels
    files: list[DataFile] = field(default_factory=list)
    needs: tuple[str, ...] = ()  # other datasets this one reads (pl-exams reads pl-codes)
    # a folder under the data directory the loader searches itself (files not pinned by sha256 here)
    folder: str = ""

    def has(self, kind: str) -> bool:
        return kind in self.provides

    def all_files(self) -> list[DataFile]:
        files = list(self.files)
        for other in self.needs:
            files.extend(f for f in get(other).all_files() if f not in files)
        return files

    def load(self, data_dir: str | Path | None = None, verify: bool = False) -> Any:
        root = resolve_data_dir(data_dir)
        for f in self.all_files():
            check = file_status(f, root, hash_it=verify)
            if check != "ok":
                raise DatasetError(f"dataset {self.name!r}: file {f.path} is {check}: {f.obtain_hint(root)}")
        loaded = _cached_load(self.name, str(root))
        # The cache keeps one parsed copy; every caller gets its own object over it.
        return loaded.copy() if hasattr(loaded, "copy") else loaded


_REGISTRY: dict[str, Dataset] = {}


def register(dataset: Dataset) -> Dataset:
    if dataset.name in _REGISTRY:
        raise ValueError(f"dataset {dataset.name!r} registered twice")
    dataset.files = [f for f in _file_table() if f.dataset == dataset.name]
    _REGISTRY[dataset.name] = dataset
    return dataset


def get(name: str) -> Dataset:
    _load_builtin_modules()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise DatasetError(f"unknown dataset {name!r}; registered: {', '.join(sorted(_REGISTRY))}") from None


def names() -> list[str]:
    _load_builtin_modules()
    return sorted(_REGISTRY)


def load(name: str, data_dir: str | Path | None = None) -> Any:
    """The dataset's content (a Corpus, a Benchmark, ...): a new object on every call, so what
    one caller does with it never reaches another (the parsed content behind it is cached)."""
    return get(name).load(data_dir)


@lru_cache(maxsize=16)
def _cached_load(name: str, root: str) -> Any:
    # Loading parses and cleans whole codes; an experiment asks for the same dataset many times.
    return _REGISTRY[name].loader(Path(root))


def _load_builtin_modules() -> None:
    # Importing the dataset modules registers them; done lazily to keep `import lexir` light.
    from lexir.datasets import devsets, greekbar, history, lay, polish, refex, statutes  # noqa: F401


# ---------------------------------------------------------------------------
# data directory and file checks


def resolve_data_dir(data_dir: str | Path | None = None) -> Path:
    if data_dir:
        return Path(data_dir).expanduser().resolve()
    env = os.environ.get("LEXIR_DATA")
    if env:
        return Path(env).expanduser().resolve()
    for candidate in (_PROJECT_ROOT.parent / "shared" / "data", Path.cwd().parent / "shared" / "data"):
        if candidate.is_dir():
            return candidate.resolve()
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "share") / "lexir"


def file_status(f: DataFile, data_dir: Path, hash_it: bool = True) -> str:
    """``ok``, ``missing`` or ``corrupt (sha256 ...)``."""
    path = data_dir / f.path
    if not path.is_file():
        return "missing"
    if hash_it:
        actual = file_sha256(path)
        if actual != f.sha256:
            return f"corrupt (sha256 {actual[:12]}…, expected {f.sha256[:12]}…)"
    return "ok"


@lru_cache(maxsize=1)
def _file_table() -> tuple[DataFile, ...]:
    text = (resources.files("lexir.datasets") / "data" / "files.tsv").read_text(encoding="utf-8")
    return tuple(DataFile(*cells) for _, cells in table_rows(text, "files.tsv", 6, DatasetError))
