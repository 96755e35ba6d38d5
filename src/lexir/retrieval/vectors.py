"""Inner-product vector search on faiss: exact (flat) or approximate (HNSW).

Vectors are L2-normalised by the encoders, so inner product is cosine similarity.
``kind="auto"`` picks exact search up to :data:`HNSW_THRESHOLD` vectors and HNSW above it.
An index is saved as a folder (a generation of it, :mod:`lexir.io.generations`): ``vectors.faiss``
(faiss.write_index) and ``vectors.json`` (the configuration).
"""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np

from lexir.io.generations import loads, new_generation
from lexir.io.markers import read_marker, write_marker

KINDS = ("flat", "hnsw", "auto")
HNSW_THRESHOLD = 200_000


class VectorIndex:
    def __init__(self, dim: int, kind: str = "auto", hnsw_m: int = 32, ef_construction: int = 200,
                 ef_search: int = 128) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown vector index {kind!r}; valid: {', '.join(KINDS)}")
        self.dim = int(dim)
        self.kind = kind
        self.hnsw_m, self.ef_construction, self.ef_search = int(hnsw_m), int(ef_construction), int(ef_search)
        self._index: faiss.Index | None = None

    @property
    def resolved_kind(self) -> str:
        if self._index is not None:
            return "hnsw" if isinstance(self._index, faiss.IndexHNSW) else "flat"
        return self.kind

    def __len__(self) -> int:
        return 0 if self._index is None else int(self._index.ntotal)

    def build(self, vectors: np.ndarray) -> VectorIndex:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise ValueError(f"expected vectors of shape (n, {self.dim}), got {vectors.shape}")
        kind = self.kind
        if kind == "auto":
            kind = "hnsw" if len(vectors) > HNSW_THRESHOLD else "flat"
        if kind == "hnsw":
            index = faiss.IndexHNSWFlat(self.dim, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = self.ef_construction
            index.hnsw.efSearch = self.ef_search
        else:
            index = faiss.IndexFlatIP(self.dim)
        index.add(vectors)
        self._index = index
        return self

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, positions), each ``(n_queries, k)``, best first; position -1 pads a short list."""
        if self._index is None:
            raise RuntimeError("vector index not built: call build() or load() first")
        queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        k = max(1, min(int(k), len(self)))
        if isinstance(self._index, faiss.IndexHNSW):
            self._index.hnsw.efSearch = max(self.ef_search, k)
        return self._index.search(queries, k)

    def reconstruct_all(self) -> np.ndarray:
        return self._index.reconstruct_n(0, len(self))

    def config(self) -> dict:
        return {"dim": self.dim, "kind": self.kind, "resolved": self.resolved_kind, "hnsw_m": self.hnsw_m,
                "ef_construction": self.ef_construction, "ef_search": self.ef_search, "ntotal": len(self)}

    def save(self, folder: str | Path) -> Path:
        folder = Path(folder)
        with new_generation(folder) as gen:
            faiss.write_index(self._index, str(gen / "vectors.faiss"))
            write_marker(gen / "vectors.json", self.config())
        return folder

    @classmethod
    @loads
    def load(cls, folder: str | Path, mmap: bool = False) -> VectorIndex:
        folder = Path(folder)
        meta = read_marker(folder / "vectors.json", "vector index")
        index = cls(meta["dim"], meta["kind"], meta["hnsw_m"], meta["ef_construction"], meta["ef_search"])
        flags = faiss.IO_FLAG_MMAP if mmap else 0
        index._index = faiss.read_index(str(folder / "vectors.faiss"), flags)
        if index._index.d != index.dim or index._index.ntotal != meta["ntotal"]:
            raise ValueError(f"{folder}: vectors.faiss does not match vectors.json")
        return index
