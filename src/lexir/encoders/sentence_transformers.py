"""sentence-transformers models from a local folder only (never downloaded from a hub).

sentence-transformers (and torch) are optional: installing them is the user's choice, and
lexir imports them only when this encoder is built. e5-family models get their
``query: ``/``passage: `` prefixes automatically (pass prefixes to override).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lexir.encoders.base import normalize


class SentenceTransformerEncoder:
    def __init__(self, path: str, batch_size: int = 32, query_prefix: str | None = None,
                 passage_prefix: str | None = None, device: str = "cpu") -> None:
        if not path or not Path(path).expanduser().is_dir():
            raise ValueError(f"the st encoder needs model=<a local sentence-transformers folder> (got {path!r}); "
                             "lexir never downloads models")
        try:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer
        except ImportError as err:
            raise ImportError("the st encoder needs sentence-transformers: pip install sentence-transformers") from err
        folder = Path(path).expanduser().resolve()
        self._model = SentenceTransformer(str(folder), device=device, local_files_only=True)
        self.dim = int(self._model.get_sentence_embedding_dimension())
        is_e5 = "e5" in folder.name.lower()
        self.query_prefix = query_prefix if query_prefix is not None else ("query: " if is_e5 else "")
        self.passage_prefix = passage_prefix if passage_prefix is not None else ("passage: " if is_e5 else "")
        self.batch_size = int(batch_size)
        self.name = f"st-{folder.name}"

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode([self.query_prefix + t for t in texts])

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode([self.passage_prefix + t for t in texts])

    def _encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                     normalize_embeddings=True, show_progress_bar=False)
        return normalize(vectors)
