"""The dataset registry: one name, one loader, and the files it needs with their provenance.

A dataset module registers itself with :func:`register`; a legal order names its dataset modules
in its :class:`lexir.jurisdiction.Jurisdiction` record (``datasets``), and they are imported on the
first lookup here. Adding a dataset means one module plus its rows in the order's table of data
files (``Jurisdiction.files``: ``lexir/jurisdictions/<code>/data/files.tsv``, where each file lies
under the data directory, where it comes from upstream, and its sha256). A name no dataset has may still match a
pattern (:func:`register_pattern`): ``NAME@YYYY-MM-DD`` is a dataset with a history as in
force on that day. Content is read through :func:`lexir.datasets.open`, the one door to data.

The data directory is, in order: an explicit ``data_dir`` argument (the CLI's ``--data-dir``),
the ``LEXIR_DATA`` environment variable, the ``shared/data`` folder beside the project
checkout when it exists, else a per-user folder (``$XDG_DATA_HOME/lexir`` or
``~/.local/share/lexir``).
"""

from __future__ import annotations

import datetime
import os
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache, lru_cache, partial
from pathlib import Path
from typing import Any

from lexir.io.paths import file_sha256
from lexir.io.tables import table_rows
from lexir.jurisdiction import jurisdictions
from lexir.types import DocumentStream

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
    """A registered dataset; :func:`lexir.datasets.open` gives its content object."""

    name: str
    description: str
    language: str
    loader: Callable[[Path], Any]
    provides: tuple[str, ...] = ("docs",)  # docs, queries, qrels
    files: list[DataFile] = field(default_factory=list)
    needs: tuple[str, ...] = ()  # other datasets this one reads (pl-exams reads pl-codes)
    # a folder under the data directory the loader searches itself (files not pinned by sha256 here)
    folder: str = ""
    # the corpus's documents, read one at a time from the data directory, in the corpus's order
    # (a build's stream: see stream()); None where the dataset offers no such reader
    documents: Callable[[Path], Iterable[Any]] | None = None

    def has(self, kind: str) -> bool:
        return kind in self.provides

    def all_files(self) -> list[DataFile]:
        files = list(self.files)
        for other in self.needs:
            files.extend(f for f in get(other).all_files() if f not in files)
        return files

    def stream(self, data_dir: str | Path | None = None) -> DocumentStream | None:
        """The corpus as a :class:`~lexir.types.DocumentStream` (its documents read anew on each
        pass, never held together), or None where the dataset has no document reader."""
        if self.documents is None:
            return None
        return DocumentStream(self.name, partial(self.documents, self._checked_root(data_dir)), language=self.language)

    def _checked_root(self, data_dir: str | Path | None) -> Path:
        root = resolve_data_dir(data_dir)
        for f in self.all_files():
            check = file_status(f, root, hash_it=False)
            if check != "ok":
                raise DatasetError(f"dataset {self.name!r}: file {f.path} is {check}: {f.obtain_hint(root)}")
        return root

    def _content(self, data_dir: str | Path | None = None) -> Any:
        root = self._checked_root(data_dir)
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


def _resolve(spec: str, data_dir: str | Path | None = None) -> Any:
    """The content (a Corpus, a Benchmark, a history ...) of a registered name or of a name a
    pattern matches: a new object on every call, so what one caller does with it never reaches
    another (the parsed content behind it is cached). Called by :func:`lexir.datasets.open`."""
    _load_builtin_modules()
    if spec in _REGISTRY:
        return _REGISTRY[spec]._content(data_dir)
    for pattern, load in _PATTERNS:
        match = pattern.fullmatch(spec)
        if match:
            return load(spec, match, data_dir)
    raise DatasetError(f"unknown dataset {spec!r}; registered: {', '.join(sorted(_REGISTRY))} "
                       "(a dataset with a history also as NAME@YYYY-MM-DD)")


# ---------------------------------------------------------------------------
# patterns: names no dataset registers, resolved by a function (like ir_datasets' register_pattern)

_PATTERNS: list[tuple[re.Pattern[str], Callable[[str, re.Match[str], str | Path | None], Any]]] = []


def register_pattern(pattern: str, load: Callable[[str, re.Match[str], str | Path | None], Any]) -> None:
    """Names matching ``pattern`` (a whole-name regular expression) are loaded by
    ``load(spec, match, data_dir)``."""
    _PATTERNS.append((re.compile(pattern), load))


def is_path(spec: str) -> bool:
    """Whether a spec names a file or folder rather than a dataset."""
    return "/" in spec or "\\" in spec or Path(spec).exists()


_DATED = r"(?P<name>[^@]+)@(?P<day>[^@]*)"


def split_dated(spec: str) -> tuple[str, str | None]:
    """``"de-gesetze-history@2013-06-01"`` -> ``("de-gesetze-history", "2013-06-01")``, a name
    without ``@`` -> ``(name, None)``: the one place ``NAME@DATE`` is read. A bad date is a
    :class:`DatasetError` naming the spec."""
    match = re.fullmatch(_DATED, spec)
    if match is None:
        if "@" in spec:
            raise DatasetError(f"{spec!r}: expected NAME@YYYY-MM-DD (a dataset with a history, then a date)")
        return spec, None
    day = match["day"]
    try:
        valid = re.fullmatch(r"\d{4}-\d{2}-\d{2}", day) and datetime.date.fromisoformat(day)
    except ValueError:
        valid = None
    if not valid:
        raise DatasetError(f"{spec!r}: the date after @ must be a day as YYYY-MM-DD, not {day!r}")
    return match["name"], day


def with_as_of(spec: str, as_of: str | None) -> str:
    """``spec`` with ``@as_of`` added (the CLI's ``--as-of``); a spec already dated conflicts."""
    if not as_of:
        return spec
    if split_dated(spec)[1] is not None:
        raise DatasetError(f"{spec!r} already names a date; drop --as-of or the @DATE")
    if is_path(spec):
        raise DatasetError(f"--as-of needs a registered dataset with a history, not a path ({spec})")
    name, day = split_dated(f"{spec}@{as_of}")
    return f"{name}@{day}"


def _as_of(spec: str, match: re.Match[str], data_dir: str | Path | None) -> Any:
    name, day = split_dated(spec)
    dataset = get(name)
    if not dataset.has("history"):
        dated = [n for n in names() if get(n).has("history")]
        raise DatasetError(f"dataset {name!r} has no history, so no version as of {day}; "
                           f"datasets with a history: {', '.join(dated)}")
    return dataset._content(data_dir).as_of(day)


register_pattern(_DATED, _as_of)


@lru_cache(maxsize=16)
def _cached_load(name: str, root: str) -> Any:
    # Loading parses and cleans whole codes; an experiment asks for the same dataset many times.
    return _REGISTRY[name].loader(Path(root))


def _load_builtin_modules() -> None:
    # Importing the dataset modules registers them; done lazily to keep `import lexir` light. Each
    # legal order names its own (lexir.jurisdictions.<code>); this layer never names an order.
    import importlib

    for order in jurisdictions():
        for module in order.datasets:
            if module not in sys.modules:  # every lookup comes here: import each once
                importlib.import_module(module)


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
    """``ok``, ``missing`` or ``changed (sha256 ...)``: a file present whose sha256 is not the pinned
    one still loads (loading does not hash it), but results may differ from the recorded ones, so it
    is not called corrupt."""
    path = data_dir / f.path
    if not path.is_file():
        return "missing"
    if hash_it:
        actual = file_sha256(path)
        if actual != f.sha256:
            return (f"changed (sha256 {actual[:12]}…, pinned {f.sha256[:12]}…: it loads, but results may differ "
                    "from the recorded ones)")
    return "ok"


def _file_table() -> tuple[DataFile, ...]:
    """Every legal order's data files (its ``files`` table), in catalogue order."""
    return tuple(f for order in jurisdictions() if order.files is not None for f in _order_files(order.files))


@cache
def _order_files(table: Any) -> tuple[DataFile, ...]:
    """One order's table of data files; a malformed row is a :class:`DatasetError` naming the table
    and the line."""
    text = (Path(table) if isinstance(table, str) else table).read_text(encoding="utf-8")
    return tuple(DataFile(*cells) for _, cells in table_rows(text, str(table), 6, DatasetError))
