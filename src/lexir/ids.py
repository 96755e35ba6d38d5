"""Document ids kept compactly: every id's UTF-8 bytes in one array, and where each begins.

A million German units' ids as Python strings take about 80 MiB (an object of 70-80 bytes and a
list slot each); their bytes take 22 MiB, and saved as ``.npy`` files they are memory-mapped, so a
search process holds only the pages its hits touch. An id becomes a string when it is asked for:
:meth:`DocIds.take` turns a search's document numbers into ids with one compiled loop and one
decode. Ids are never changed in place: a new list is a new :class:`DocIds`.
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from lexir.arrays import DAMAGED, delimits, load_row
from lexir.kernels import compiled

_SEPARATOR = b"\n"  # between ids in take()'s buffer; an id holding it is decoded on its own
_CHUNK = 65_536  # ids decoded at a time when iterating
_INT32_BYTES = 2**31  # ids of fewer bytes keep int32 offsets
_FEW = 64  # a take() of at most this many ids (one query's hits) looks in the recent ones first
_RECENT = 65_536  # ids kept as strings for those, at most (then forgotten, all at once)


def _gathered_source(blob, offsets, numbers, separator):  # pragma: no cover - compiled by numba
    """The bytes of the ids numbered ``numbers``, each followed by ``separator``, in one array
    (IndexError for a number out of range)."""
    n = offsets.shape[0] - 1
    total = 0
    for i in range(numbers.shape[0]):
        d = numbers[i]
        if d < 0 or d >= n:
            raise IndexError("document numbers out of range")
        total += offsets[d + 1] - offsets[d] + 1
    out = np.empty(total, dtype=np.uint8)
    at = 0
    for i in range(numbers.shape[0]):
        d = numbers[i]
        start, end = offsets[d], offsets[d + 1]
        out[at:at + end - start] = blob[start:end]
        at += end - start
        out[at] = separator
        at += 1
    return out


class DocIds(Sequence[str]):
    """An immutable sequence of document ids (document number -> id) stored as bytes.

    ``blob`` holds the ids' UTF-8 bytes one after another and ``offsets`` (int32, int64 past 2 GiB
    of ids; one more than there are ids) where each begins: id ``i`` is ``blob[offsets[i]:offsets[i + 1]]``. Either may
    be a read-only memory map (:meth:`load`). It compares equal to any sequence of the same ids.
    """

    __slots__ = ("_recent", "blob", "offsets")

    def __init__(self, blob: np.ndarray, offsets: np.ndarray) -> None:
        if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != len(blob):
            raise ValueError(f"document ids: {len(offsets)} offsets do not delimit {len(blob)} bytes")
        # plain arrays (a memory map's view stays mapped): numba reads a np.memmap's type slower,
        # a microsecond of every take()
        self.blob, self.offsets = blob.view(np.ndarray), offsets.view(np.ndarray)
        # document number -> its id, for a service's one query at a time: the strings (and their
        # hashes) reused, no compiled call; written only by take(), never handed out as a dict
        self._recent: dict[int, str] = {}

    @classmethod
    def of(cls, ids: Iterable[str]) -> DocIds:
        """``ids`` kept compactly (a DocIds is returned as it is)."""
        if isinstance(ids, DocIds):
            return ids
        collected = IdsCollector()
        for i in ids:
            collected.add(i)
        return collected.ids()

    # -- reading ------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, key):
        if isinstance(key, slice):
            chosen = range(len(self))[key]  # the numbers a slice takes, none made for the others
            return self.take(np.arange(chosen.start, chosen.stop, chosen.step, dtype=np.int64))
        i = operator.index(key)
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"document number {key} out of range (0..{n - 1})")
        return self.blob[self.offsets[i]:self.offsets[i + 1]].tobytes().decode("utf-8")

    def take(self, numbers: np.ndarray) -> list[str]:
        """The ids of the document ``numbers`` (any integer array, every one in range), in order."""
        numbers = np.asarray(numbers).ravel()
        if not len(numbers):
            return []
        if numbers.dtype.kind not in "iu":
            raise TypeError(f"document numbers must be integers, not {numbers.dtype}")
        if len(numbers) <= _FEW:
            return self._few(numbers.tolist())
        return self._decoded(numbers)

    def _few(self, numbers: list[int]) -> list[str]:
        recent = self._recent
        names = [recent.get(d) for d in numbers]
        if None in names:
            missing = [d for d, name in zip(numbers, names, strict=True) if name is None]
            if len(recent) + len(missing) > _RECENT:
                recent.clear()
            found = dict(zip(missing, self._decoded(np.array(missing, dtype=np.int64)), strict=True))
            recent.update(found)
            names = [found[d] if name is None else name for d, name in zip(numbers, names, strict=True)]
        return names

    def _decoded(self, numbers: np.ndarray) -> list[str]:
        """take() through the compiled copy: ``numbers`` an integer array."""
        out = compiled(_gathered_source)(self.blob, self.offsets, numbers, _SEPARATOR[0])
        names = str(out, "utf-8").split(_SEPARATOR.decode())
        if len(names) == len(numbers) + 1:  # the last separator leaves an empty piece
            names.pop()
            return names
        return [self[i] for i in numbers.tolist()]  # some id holds the separator

    def tolist(self) -> list[str]:
        return list(self)

    def __iter__(self) -> Iterator[str]:
        for start in range(0, len(self), _CHUNK):
            yield from self.take(np.arange(start, min(start + _CHUNK, len(self)), dtype=np.int64))

    def __eq__(self, other) -> bool:
        if isinstance(other, DocIds):
            return np.array_equal(self.offsets, other.offsets) and np.array_equal(self.blob, other.blob)
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # compared by content, like a list

    def __repr__(self) -> str:
        shown = ", ".join(repr(i) for i in self[:3])
        return f"DocIds([{shown}{', …' if len(self) > 3 else ''}], {len(self)} ids)"

    @property
    def nbytes(self) -> int:
        """The bytes the ids take (both arrays), mapped or not."""
        return int(self.blob.nbytes + self.offsets.nbytes)

    # -- files --------------------------------------------------------------------------------

    @staticmethod
    def files(name: str) -> tuple[str, str]:
        """The two files :meth:`save` writes for ``name``."""
        return f"{name}.bytes.npy", f"{name}.offsets.npy"

    def save(self, folder: str | Path, name: str) -> None:
        """The ids as two ``.npy`` files of ``folder`` (see :meth:`files`)."""
        blob_file, offsets_file = self.files(name)
        np.save(Path(folder) / blob_file, np.ascontiguousarray(self.blob, dtype=np.uint8), allow_pickle=False)
        np.save(Path(folder) / offsets_file, np.ascontiguousarray(self.offsets), allow_pickle=False)

    @classmethod
    def load(cls, folder: str | Path, name: str, mmap: bool = True) -> DocIds:
        """The ids :meth:`save` wrote, memory-mapped unless ``mmap`` is off; files that do not hold
        them (missing, another type, offsets past the bytes) are a clear error naming the file."""
        folder = Path(folder)
        arrays = [load_row(folder / file, dtypes, mmap)
                  for file, dtypes in zip(cls.files(name), (("uint8",), ("int32", "int64")), strict=True)]
        blob, offsets = arrays
        try:
            ids = cls(blob, offsets)
        except ValueError as error:
            raise ValueError(f"{folder / cls.files(name)[1]}: {error}") from None
        if not delimits(offsets, len(blob)):
            raise ValueError(f"{folder / cls.files(name)[1]}: offsets are not ascending ({DAMAGED})")
        return ids


class IdsCollector:
    """Ids added one at a time (a corpus read as a stream), kept as :class:`DocIds` keeps them: no
    id stays a Python string. With ``hashes``, each id's hash is kept too, so that
    :meth:`repeated` finds an id added twice without a set of the ids themselves."""

    _hash = staticmethod(hash)  # 64 bits: a million ids collide with odds of about 1 in 40 million

    def __init__(self, hashes: bool = False) -> None:
        self._bytes, self._ends = bytearray(), array("q")
        self._hashes = array("q") if hashes else None

    def __len__(self) -> int:
        return len(self._ends)

    def add(self, doc_id: str) -> None:
        self._bytes += doc_id.encode("utf-8")
        self._ends.append(len(self._bytes))
        if self._hashes is not None:
            self._hashes.append(self._hash(doc_id))

    def ids(self) -> DocIds:
        """The ids added so far (a copy: adding more does not change it)."""
        offsets = np.zeros(len(self._ends) + 1, dtype=np.int64)
        offsets[1:] = np.frombuffer(self._ends, dtype=np.int64)
        if offsets[-1] < _INT32_BYTES:
            offsets = offsets.astype(np.int32)
        return DocIds(np.frombuffer(bytes(self._bytes), dtype=np.uint8), offsets)

    def repeated(self) -> tuple[str, int, int] | None:
        """An id added twice, as (id, its first position, its second), the one whose second
        addition came first; None where every id is new (needs ``hashes``)."""
        if self._hashes is None:
            raise RuntimeError("IdsCollector(hashes=True) finds repeated ids")
        hashes = np.frombuffer(self._hashes, dtype=np.int64)
        order = np.argsort(hashes, kind="stable")  # equal hashes together, in order of addition
        ranked = hashes[order]
        ties = np.flatnonzero(ranked[1:] == ranked[:-1])
        if not len(ties):
            return None
        ids, found = self.ids(), None
        first: dict[tuple[int, str], int] = {}  # (hash, id) -> first position; a few entries
        for tie in ties.tolist():
            for at in (int(order[tie]), int(order[tie + 1])):
                key = (int(hashes[at]), ids[at])
                before = first.setdefault(key, at)
                if before != at and (found is None or at < found[2]):
                    found = (key[1], before, at)
        return found
