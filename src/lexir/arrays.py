"""Arrays saved with an index (``.npy`` files, ``.npz`` archives, and the JSON beside them), read
back the one way: every saved row of numbers lexir maps or loads goes through :func:`load_row` (or
:func:`load_members` for an archive), which names the file in whatever it refuses.

A saved index is read by compiled kernels that trust what they read (numba checks no bounds): a
truncated file, a row of another type, or numbers pointing past the end must be refused when the
file is opened, not found as a wrong answer or a crash later. :func:`load_row` checks what the
file itself says (readable, complete, its type and shape); what the rows say about each other
(offsets that delimit a blob, postings inside the corpus) is checked by their owner, with
:func:`ascending_within` for the common case of sorted runs.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from lexir.kernels import compiled

DAMAGED = "damaged: rebuild the index"


def missing(path: str | Path) -> FileNotFoundError:
    """The error for a file of a saved index that is gone (a reader racing a save that removed its
    generation catches it and reads the new one)."""
    return FileNotFoundError(f"{path}: missing (the index is not complete; rebuild it)")


def load_row(path: str | Path, dtypes: Sequence[str], mmap: bool = True, *, length: int | None = None,
             ndim: int = 1) -> np.ndarray:
    """The array ``np.save`` wrote at ``path``, memory-mapped unless ``mmap`` is off.

    Refused, with ``path`` in the message: a missing file (:class:`FileNotFoundError`, so a reader
    racing a save that removed its generation tries the new one), and as :class:`ValueError` a file
    that is not a ``.npy`` array or is shorter than its header says, one whose type is not one of
    ``dtypes`` (names such as ``"int32"``), of another number of dimensions than ``ndim``, or
    (when ``length`` is given) of another length."""
    path = Path(path)
    try:
        array = np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
    except FileNotFoundError:
        raise missing(path) from None
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"{path}: unreadable as a saved array ({exc}; {DAMAGED})") from None
    if array.dtype.name not in dtypes or array.ndim != ndim:
        raise ValueError(f"{path}: {array.ndim}-d {array.dtype}, expected {ndim}-d {' or '.join(dtypes)} "
                         f"({DAMAGED})")
    if length is not None and len(array) != length:
        raise ValueError(f"{path}: {len(array)} values, expected {length} ({DAMAGED})")
    return array


def load_members(path: str | Path, members: Mapping[str, Sequence[str]]) -> dict[str, np.ndarray]:
    """The 1-d arrays ``np.savez`` wrote at ``path``: each of ``members`` (a member's name, and
    the type names it may have), read whole.

    Refused, with ``path`` and the member in the message: a missing file (:class:`FileNotFoundError`),
    and as :class:`ValueError` a file that is not such an archive or is cut short, a member that is
    not there, and one of another type or not 1-d."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            absent = [name for name in members if name not in archive.files]
            found = {name: archive[name] for name in members if name in archive.files}
    except FileNotFoundError:
        raise missing(path) from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path}: unreadable as saved arrays ({exc}; {DAMAGED})") from None
    if absent:
        raise ValueError(f"{path}: no {', '.join(absent)} in it ({DAMAGED})")
    for name, dtypes in members.items():
        array = found[name]
        if array.dtype.name not in dtypes or array.ndim != 1:
            raise ValueError(f"{path}: {name} is {array.ndim}-d {array.dtype}, expected 1-d "
                             f"{' or '.join(dtypes)} ({DAMAGED})")
    return found


def load_json(path: str | Path):
    """The JSON an index saved at ``path``; a missing file is :class:`FileNotFoundError`, an
    unreadable one :class:`ValueError`, both naming it."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise missing(path) from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable ({exc}; {DAMAGED})") from None


def refuse_outside(path: str | Path, name: str, values: np.ndarray, limit: int, beyond: str, low: int = 0) -> None:
    """Refuse (ValueError naming ``path``, ``name`` and the first value out of place, which is
    ``beyond``) a row ``name`` of ``values`` that holds a value outside ``[low, limit)``."""
    bad = np.flatnonzero((values < low) | (values >= limit)) if len(values) else ()
    if len(bad):
        at = int(bad[0])
        raise ValueError(f"{path}: {name}[{at}] = {values[at]} is {beyond} ({DAMAGED})")


def _ascending_within_source(pointers, values, limit):  # pragma: no cover - compiled by numba
    """The first position of ``values`` that breaks the rule (-1 if none): inside each run
    ``values[pointers[i]:pointers[i + 1]]`` strictly ascending, every value in ``[0, limit)``."""
    for i in range(len(pointers) - 1):
        last = -1
        for j in range(pointers[i], pointers[i + 1]):
            v = values[j]
            if v <= last or v >= limit:
                return j
            last = v
    return -1


def delimits(pointers: np.ndarray, n: int) -> bool:
    """Whether ``pointers`` cut a row of ``n`` values into runs: from 0 to ``n``, never falling."""
    if len(pointers) == 0 or pointers[0] != 0 or pointers[-1] != n:
        return False
    return len(pointers) < 2 or not np.any(pointers[1:] < pointers[:-1])


def ascending_within(pointers: np.ndarray, values: np.ndarray, limit: int) -> int:
    """The first position of ``values`` that is not strictly ascending within its run of
    ``pointers`` (which must :func:`delimit <delimits>` it) or not in ``[0, limit)``; -1 if every
    one is (one compiled pass, about 10 ms for ten million values)."""
    if not len(values):
        return -1
    return int(compiled(_ascending_within_source)(np.asarray(pointers).view(np.ndarray),
                                                  np.asarray(values).view(np.ndarray), np.int64(limit)))
