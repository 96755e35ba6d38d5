"""Versioned model folders of a served corpus: what ``lexir serve --learn`` writes and serves,
and what ``lexir models list|use`` shows and switches.

``ROOT/<corpus>/`` holds one folder per version (``v0001``, ``v0002``, ...; each a complete model
folder of :mod:`lexir.learning.model` plus ``learn.json``, the learner's record: the marks it
learned from, the held-out comparison and the verdict), the pointer file ``current`` (the version
served; absent or ``base``: the served system without a learned model) and ``.lock``.

Every write is atomic: a version is trained into ``.candidates/`` and renamed into place whole
(with its ``learn.json``); ``current`` is written beside itself and renamed over. A crash leaves
the versions that were complete and the pointer as it was, and at most a stray folder in
``.candidates/``, removed by the next writer. Writers (a learner, ``lexir models use``) take the
``.lock`` (``flock``), so two learners, or a learner and an operator, never write at once. A server
reads ``current`` (without the lock: its rename is atomic) and swaps to the version it names.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lexir.io.generations import fsync_dir
from lexir.learning.model import MANIFEST

BASE = "base"  # the served system without a learned model
LEARN_FILE = "learn.json"
POINTER = "current"
_VERSION = re.compile(r"v(\d{4,})")
_CORPUS = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,127}")


class Busy(RuntimeError):
    """Another writer holds the corpus's lock."""


def write_atomic(path: Path, text: str) -> None:
    """``text`` into ``path``: written beside it, flushed, renamed over it."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


class ModelVersions:
    """The versions of one corpus's learned models under ``root/<corpus>``."""

    def __init__(self, root: str | Path, corpus: str) -> None:
        if not _CORPUS.fullmatch(corpus):
            raise ValueError(f"corpus name {corpus!r} cannot name a models folder")
        self.corpus = corpus
        self.folder = Path(root) / corpus

    # -- reading (no lock) ----------------------------------------------------------------

    def versions(self) -> list[str]:
        """The complete versions, oldest first."""
        if not self.folder.is_dir():
            return []
        found = [p.name for p in self.folder.iterdir() if _VERSION.fullmatch(p.name) and (p / MANIFEST).is_file()]
        return sorted(found, key=lambda v: int(v[1:]))

    def path(self, version: str) -> Path:
        return self.folder / self.normalise(version)

    def normalise(self, version: str) -> str:
        """``3``, ``v3`` or ``v0003`` -> ``v0003``; ``base`` stays; anything else is refused."""
        version = version.strip()
        if version == BASE:
            return BASE
        digits = version[1:] if version[:1] in ("v", "V") else version
        if not digits.isdigit():
            raise ValueError(f"{version!r} is no version: give base, or N / vN (lexir models list {self.corpus})")
        return f"v{int(digits):04d}"

    def current(self) -> str:
        """The version the pointer names (``base`` where there is none)."""
        try:
            name = (self.folder / POINTER).read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return BASE
        return name or BASE

    def pointer_problem(self) -> str:
        """What is wrong with ``current`` ("" where nothing is): it names no complete version here,
        or one whose files do not load (a server then keeps serving what it served)."""
        name = self.current()
        if name == BASE:
            return ""
        pointer = self.folder / POINTER
        try:
            version = self.normalise(name)
        except ValueError:
            return f"{pointer} names {name!r}, which is no version; point it at one with lexir models use"
        if version not in self.versions():
            return (f"{pointer} names {version}, which is not a complete version here; point it at one with "
                    f"lexir models use {self.corpus} N")
        broken = next((row["broken"] for row in self.describe() if row["version"] == version and row.get("broken")), "")
        return f"{pointer} names {version}, which does not load: {broken}" if broken else ""

    def record(self, version: str) -> dict[str, Any]:
        """A version's ``learn.json`` ({} for a model put there by hand, or for ``base``); one that
        does not load is a ValueError naming the file."""
        if version == BASE:
            return {}
        path = self.path(version) / LEARN_FILE
        try:
            return _json_object(path)
        except FileNotFoundError:
            return {}

    def describe(self) -> list[dict[str, Any]]:
        """One row per version (and ``base``): whether it is current, its verdict and scores; a
        version whose ``learn.json`` or manifest does not load is listed with ``broken`` (the file
        and the error) instead."""
        current = self.current()
        rows = [{"version": BASE, "current": current == BASE, "verdict": "", "created": "",
                 "questions": None, "heldout": None}]
        for version in self.versions():
            try:
                rec = self.record(version)
                manifest = _json_object(self.path(version) / MANIFEST)
                questions = manifest.get("training", {}).get("queries")
                if not isinstance(questions, int):
                    raise ValueError(f"{self.path(version) / MANIFEST}: field 'training.queries' is missing "
                                     "or not a number")
                marks = rec.get("marks") if isinstance(rec.get("marks"), dict) else {}
                rows.append({"version": version, "current": version == current, "verdict": rec.get("verdict", ""),
                             "created": manifest.get("created", ""), "questions": questions,
                             "heldout": rec.get("heldout"), "marks": marks.get("used"), "judges": marks.get("judges")})
            except (OSError, ValueError, AttributeError) as exc:
                rows.append({"version": version, "current": version == current, "verdict": "", "created": "",
                             "questions": None, "heldout": None, "broken": str(exc)})
        return rows

    # -- writing (under the lock) ---------------------------------------------------------

    @contextlib.contextmanager
    def locked(self, wait_s: float = 0.0) -> Iterator[ModelVersions]:
        """Hold the corpus's writer lock (``Busy`` where another holds it for longer than ``wait_s``;
        not re-entrant: a second ``locked`` in the same thread is another writer too)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        handle = open(self.folder / ".lock", "a+")
        deadline = time.monotonic() + wait_s
        try:
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise Busy(f"models of {self.corpus!r}: another learner or `lexir models use` "
                                   "is writing; try again") from None
                    time.sleep(0.1)
            shutil.rmtree(self.folder / ".candidates", ignore_errors=True)  # a crashed writer's leftovers
            yield self
        finally:
            handle.close()  # releases the lock

    def candidate_dir(self) -> Path:
        """A fresh path for a candidate model (under ``.candidates``; call while locked)."""
        scratch = self.folder / ".candidates"
        scratch.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix="c-", dir=scratch)) / "model"

    def add(self, candidate: Path, record: dict[str, Any]) -> str:
        """Move a complete candidate model folder in as the next version, with its ``learn.json``
        (written inside it before the rename, so the version appears whole). Call while locked."""
        write_atomic(candidate / LEARN_FILE, json.dumps(record, ensure_ascii=False, indent=1))
        taken = self.versions()
        version = f"v{int(taken[-1][1:]) + 1 if taken else 1:04d}"
        os.rename(candidate, self.folder / version)
        fsync_dir(self.folder)
        shutil.rmtree(candidate.parent, ignore_errors=True)
        return version

    def use(self, version: str) -> str:
        """Point ``current`` at ``version`` (``base``: no learned model). Call while locked."""
        version = self.normalise(version)
        if version != BASE and version not in self.versions():
            raise ValueError(f"no version {version!r} of {self.corpus!r}; versions: "
                             f"{', '.join([BASE, *self.versions()])}")
        write_atomic(self.folder / POINTER, version + "\n")
        return version

    def last_record(self) -> dict[str, Any]:
        """The newest version's ``learn.json`` (what the learner last tried), or {} (also where it
        does not load: the marks are then counted from the start)."""
        versions = self.versions()
        try:
            return self.record(versions[-1]) if versions else {}
        except ValueError:
            return {}


def _json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; a ValueError naming the file where it is not one."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: not a JSON object")
    return value
