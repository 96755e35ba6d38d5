"""Index folders saved as generations: a crash at any moment leaves the old or the new one.

Lucene's ``segments_N`` is the model. A saved folder holds

* ``gen-000007/``: one complete generation, every file of one save;
* ``lexir-current.json``: the manifest, naming the generation readers use, with the size and
  CRC-32 of each of its files (a reader checks the sizes, :func:`verified`; ``lexir index check``
  reads every byte against the checksums, :func:`check`, as Lucene's ``CheckIndex`` does);
* ``lexir.lock``: the writers' lock file (its content: the pid of the last writer).

A save (:func:`new_generation`) takes the lock, writes the new generation beside the current
one, fsyncs its files and folders, writes the manifest to a side file, fsyncs it, renames it over
the old manifest (the one atomic switch) and fsyncs the folder. Only then are older generations
removed, all but the one just replaced, which stays until the next save for a reader that
resolved it before the switch; a reader that still finds a file gone retries once on the
generation the manifest names now (:func:`read_current`). A killed save leaves a generation the
manifest does not name; the next save removes it.

One writer at a time: an OS lock (``fcntl.flock``) on ``lexir.lock``, released by the kernel when
its process dies, so a killed writer never leaves a stale lock. A second writer waits up to
``timeout`` seconds, then gets :class:`FolderLocked` naming the folder and the holder's pid.
Within a process the lock is re-entrant per thread (``lexir index update`` holds it from loading
the index to saving it, and the save inside takes it again).

Saves nest: a saver that writes into a folder inside a generation being written (the BM25 index
of a chunk index, a retriever saved by :func:`lexir.retrieval.build.save_index` beside its
marker) writes there directly, with no lock, manifest or generation of its own.

A folder saved before generations (the files directly in it) still loads: :func:`current` gives
the folder itself when it has no manifest. Its first save as generations removes, after the
switch, the old files the new generation holds again.

Testing hook: with ``LEXIR_SAVE_FAULT=N`` in the environment the process kills itself (SIGKILL)
at the N-th step of its saves (each step is a point where a crash leaves a different state on
disk); ``tests/test_atomic_index.py`` kills saves at every step and checks the folder.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from lexir.arrays import missing

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no OS lock, saves are still atomic
    fcntl = None  # type: ignore[assignment]

MANIFEST = "lexir-current.json"
LOCK = "lexir.lock"
PREFIX = "gen-"
FORMAT = 1
RESERVED = (MANIFEST, LOCK)
DEFAULT_TIMEOUT = 60.0

T = TypeVar("T")


class FolderLocked(RuntimeError):
    """Another process is writing the folder."""

    def __init__(self, folder: Path, pid: str, timeout: float | None) -> None:
        self.folder, self.pid = folder, pid
        waited = f" (waited {timeout:g} s)" if timeout else ""
        holder = f" (pid {pid})" if pid else ""
        super().__init__(f"{folder} is being written by another process{holder}{waited}; "
                         "try again when it has finished")


# -- reading ----------------------------------------------------------------------------------

def current(folder: str | Path) -> Path:
    """The folder holding the complete generation to read: the one the manifest names, or
    ``folder`` itself when it has no manifest (saved before generations, or inside one)."""
    return _manifest(Path(folder))[0]


def _manifest(folder: Path) -> tuple[Path, dict]:
    """The current generation's folder and the manifest naming it (checked: its ``files``, the
    sizes its save wrote by path inside it, and ``crc32``, their checksums, are mappings); for a
    folder without a manifest, the folder itself and an empty record."""
    manifest = folder / MANIFEST
    try:
        text = manifest.read_text(encoding="utf-8")
    except FileNotFoundError:
        return folder, {}
    try:
        record = json.loads(text)
        name = record["folder"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{manifest}: not a lexir manifest ({exc}); rebuild the index") from None
    if not (isinstance(name, str) and name.startswith(PREFIX) and "/" not in name):
        raise ValueError(f"{manifest}: field 'folder' is not a generation: {name!r}")
    for field in ("files", "crc32"):
        if not isinstance(record.get(field, {}), dict):
            raise ValueError(f"{manifest}: field {field!r} is not a mapping by file; rebuild the index")
    return folder / name, record


def _resized(path: Path, files: dict[str, int]) -> Iterator[tuple[Path, int | None, int]]:
    """Each file of ``files`` (paths inside ``path``, the sizes a save wrote) that is gone or of
    another size: (the file, its size now or None, the size written)."""
    for name, size in files.items():
        file = path / name
        try:
            actual = os.stat(file).st_size
        except FileNotFoundError:
            actual = None
        if actual != size:
            yield file, actual, size


def verified(folder: str | Path) -> Path:
    """:func:`current`, each file of the generation checked against the size its save wrote (a
    few ``stat`` calls): a file cut short, grown or replaced since is refused (ValueError naming
    it), a file gone is :class:`FileNotFoundError` (a save may have switched generations and
    removed it: :func:`read_current` then reads the new one)."""
    path, record = _manifest(Path(folder))
    for file, actual, size in _resized(path, record.get("files", {})):
        if actual is None:
            raise missing(file)
        raise ValueError(f"{file}: {actual} bytes, but its save wrote {size} (damaged or changed since; "
                         "rebuild the index)")
    return path


def read_current(folder: str | Path, read: Callable[[Path], T]) -> T:
    """``read(verified(folder))``; if a file was gone because a save switched generations
    meanwhile (and removed the one read), once more on the generation the manifest names now."""
    path = None
    try:
        path = verified(folder)
        return read(path)
    except FileNotFoundError:
        if path is not None and current(folder) == path:
            raise
        return read(verified(folder))


def loads(method):
    """Decorate a ``load(cls, folder, ...)`` classmethod body: it reads the current generation."""
    @functools.wraps(method)
    def load(cls, folder, *args, **kwargs):
        return read_current(folder, lambda path: method(cls, path, *args, **kwargs))

    return load


# -- the writers' lock ------------------------------------------------------------------------

_held: dict[tuple[str, int, int], list] = {}  # (lock path, pid, thread id) -> [fd, depth]


@contextmanager
def writer_lock(folder: str | Path, timeout: float | None = DEFAULT_TIMEOUT) -> Iterator[Path]:
    """Hold the folder's writer lock (creating the folder): wait up to ``timeout`` seconds
    (``None``: for ever; 0: not at all), then raise :class:`FolderLocked`."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK
    key = (os.path.realpath(path), os.getpid(), threading.get_ident())  # a forked child holds nothing
    if key in _held:
        _held[key][1] += 1
        try:
            yield folder
        finally:
            _held[key][1] -= 1
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _acquire(fd, folder, timeout)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        _held[key] = [fd, 1]
        try:
            yield folder
        finally:
            del _held[key]
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _acquire(fd: int, folder: Path, timeout: float | None) -> None:
    if fcntl is None:  # pragma: no cover
        return
    if timeout is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                try:
                    pid = os.pread(fd, 32, 0).decode(errors="replace").strip()
                except OSError:
                    pid = ""
                raise FolderLocked(folder, pid, timeout) from None
            time.sleep(0.02)


# -- writing ----------------------------------------------------------------------------------

class Generation:
    """The folder a save writes into, and where the same folder was in the generation it replaces
    (``previous``; None for a first save), whose unchanged files :meth:`keep` links in."""

    def __init__(self, path: Path, previous: Path | None, linked: set[str] | None = None) -> None:
        self.path, self.previous = path, previous
        self.linked = linked if linked is not None else set()  # files already on disk, synced when written

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    def keep(self, name: str) -> bool:
        """Hard-link file ``name`` of the previous generation into this one (a copy where links
        are not possible): an unchanged file is not written again. False if there is none."""
        if self.previous is None or not (self.previous / name).is_file():
            return False
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(self.previous / name, target)
            self.linked.add(os.path.realpath(target))
        except OSError:
            shutil.copy2(self.previous / name, target)
        step("kept a file")
        return True


_writing = threading.local()  # the generations this thread is writing: [Generation]


@contextmanager
def new_generation(folder: str | Path, timeout: float | None = DEFAULT_TIMEOUT) -> Iterator[Generation]:
    """Write a new generation of ``folder``: yields the :class:`Generation` to write into; when the
    block ends without an exception, switches readers to it (see the module docstring). Inside
    another generation being written, yields ``folder`` itself to write into."""
    folder = Path(folder)
    stack = getattr(_writing, "stack", None)
    if stack is None:
        stack = _writing.stack = []
    outer = _enclosing(folder, stack)
    if outer is not None:
        folder.mkdir(parents=True, exist_ok=True)
        rel = os.path.relpath(os.path.realpath(folder), os.path.realpath(outer.path))
        before = outer.previous / rel if outer.previous is not None and (outer.previous / rel).is_dir() else None
        yield Generation(folder, before, outer.linked)
        return
    with writer_lock(folder, timeout):
        try:
            old, record = _manifest(folder)
        except ValueError:
            old, record = None, {}  # a damaged manifest: the new generation replaces whatever it named
        legacy = old == folder
        if legacy and not any(p.name not in RESERVED and not _is_generation(p) for p in folder.iterdir()):
            old = None  # a new, empty folder
        number = 1 + max((_number(p) for p in folder.iterdir() if _is_generation(p)), default=0)
        staging = folder / f"{PREFIX}{number:06d}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        step("made the new generation's folder")
        gen = Generation(staging, old)
        stack.append(gen)
        try:
            yield gen
        except BaseException:
            stack.pop()
            shutil.rmtree(staging, ignore_errors=True)
            raise
        stack.pop()
        files, sums = _sync_tree(staging, gen.linked, record.get("crc32", {}))
        _switch(folder, staging, number, files, sums)
        _prune(folder, keep={staging.name, old.name if old is not None and not legacy else ""})
        if legacy and old is not None:
            _remove_legacy(folder, staging)


def _enclosing(folder: Path, stack: list[Generation]) -> Generation | None:
    real = os.path.realpath(folder)
    for gen in reversed(stack):
        base = os.path.realpath(gen.path)
        if real == base or real.startswith(base + os.sep):
            return gen
    return None


def _is_generation(path: Path) -> bool:
    return path.name.startswith(PREFIX) and path.name[len(PREFIX):].isdigit() and path.is_dir()


def _number(path: Path) -> int:
    return int(path.name[len(PREFIX):])


def _sync_tree(root: Path, linked: set[str], known: dict[str, str]) -> tuple[dict[str, int], dict[str, str]]:
    """fsync every file (but those ``linked`` from the previous generation, synced when written),
    then every folder (deepest first), below ``root``: the files' sizes and CRC-32 checksums by
    path (a linked file keeps the checksum ``known`` from the manifest it was linked from)."""
    files: dict[str, int] = {}
    sums: dict[str, str] = {}
    folders = []
    for here, _dirs, names in os.walk(root):
        folders.append(here)
        for name in sorted(names):
            path = os.path.join(here, name)
            rel = os.path.relpath(path, root)
            if os.path.realpath(path) in linked:
                files[rel] = os.stat(path).st_size
                sums[rel] = known.get(rel) or checksum(path)
                continue
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
                files[rel] = os.fstat(fd).st_size
                sums[rel] = _crc(fd)
            finally:
                os.close(fd)
            step("synced a file")
    for here in reversed(folders):
        fsync_dir(here)
    step("synced the new generation")
    return files, sums


def _crc(fd: int) -> str:
    crc = 0
    while block := os.read(fd, 1 << 20):
        crc = zlib.crc32(block, crc)
    return f"{crc:08x}"


def checksum(path: str | Path) -> str:
    """The CRC-32 of a file's bytes, as the manifest records it (8 hex digits)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return _crc(fd)
    finally:
        os.close(fd)


def check(folder: str | Path) -> tuple[Path, dict[str, int], list[str]]:
    """Every file of ``folder``'s current generation read and checked against its manifest: the
    generation, the files' sizes, and a line for each file gone, of another size or whose CRC-32
    is not the one its save recorded (empty: sound). A folder without a manifest, or saved before
    checksums were recorded, is checked as far as its manifest goes."""
    path, record = _manifest(Path(folder))
    files, sums = record.get("files", {}), record.get("crc32", {})
    resized = {file: (actual, size) for file, actual, size in _resized(path, files)}
    problems = [f"{file}: missing" if actual is None else f"{file}: {actual} bytes, but its save wrote {size}"
                for file, (actual, size) in resized.items()]
    for name, crc in sums.items():
        file = path / name
        if file not in resized and name in files and (now := checksum(file)) != crc:
            problems.append(f"{file}: its bytes changed since its save (CRC-32 {now}, recorded {crc})")
    return path, files, problems


def fsync_dir(path: str | Path) -> None:
    """Make a folder's entries (a rename into it) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _switch(folder: Path, staging: Path, number: int, files: dict[str, int], sums: dict[str, str]) -> None:
    tmp = folder / f"{MANIFEST}.{os.getpid()}.part"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"format": FORMAT, "generation": number, "folder": staging.name, "files": files, "crc32": sums}, fh)
        step("wrote the manifest's side file")
        fh.flush()
        os.fsync(fh.fileno())
    step("synced the manifest's side file")
    os.replace(tmp, folder / MANIFEST)
    step("renamed the manifest")
    fsync_dir(folder)
    step("synced the folder")


def _prune(folder: Path, keep: set[str]) -> None:
    for path in sorted(folder.iterdir()):
        if (_is_generation(path) and path.name not in keep) or path.name.startswith(f"{MANIFEST}."):
            shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
            step("removed an old generation")


def _remove_legacy(folder: Path, staging: Path) -> None:
    """The files of a save from before generations that the new generation holds again."""
    for path in sorted(staging.iterdir()):
        old = folder / path.name
        if path.name in RESERVED or _is_generation(old) or not (old.exists() or old.is_symlink()):
            continue
        shutil.rmtree(old) if old.is_dir() and not old.is_symlink() else old.unlink()
        step("removed an old-layout file")


# -- fault injection (tests) --------------------------------------------------------------------

_steps = [0]


def step(what: str) -> None:
    """A point in a save where a crash leaves a distinct state; ``LEXIR_SAVE_FAULT=N`` kills the
    process at the N-th (counted over the process's saves)."""
    fault = os.environ.get("LEXIR_SAVE_FAULT")
    if not fault:
        return
    _steps[0] += 1
    if _steps[0] == int(fault):
        os.kill(os.getpid(), signal.SIGKILL)
