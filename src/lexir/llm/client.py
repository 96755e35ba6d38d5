"""One client for any OpenAI-compatible chat endpoint (vLLM, llama.cpp server, Ollama, hosted APIs).

Configuration never lives in code. :meth:`LLMConfig.resolve` takes, in order of precedence,
explicit arguments, the environment (``LEXIR_LLM_BASE_URL``, ``LEXIR_LLM_MODEL``,
``LEXIR_LLM_API_KEY``) and a config file (TOML or YAML; the path given, else
``$LEXIR_LLM_CONFIG``, else ``~/.config/lexir/llm.toml``)::

    base_url = "http://127.0.0.1:8080/v1"
    model = "qwen3-8b"
    api_key_env = "OPENAI_API_KEY"   # or api_key = "..." (better kept out of files)
    concurrency = 8
    timeout = 120
    json_mode = "json_schema"        # json_schema | json_object | none

Every request and answer is kept in a SQLite cache (WAL mode, one row written as each answer
arrives) keyed by a hash of model, messages and sampling parameters, so a rerun makes no call
it made before and a run killed half-way resumes where it stopped. Timeouts, 429 and 5xx are
retried with exponential backoff (``Retry-After`` honoured). Each call is recorded in an
:class:`~lexir.llm.accounting.Accounting`.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import socket
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar

from lexir.llm.accounting import Accounting, CallRecord

ENV_BASE_URL = "LEXIR_LLM_BASE_URL"
ENV_MODEL = "LEXIR_LLM_MODEL"
ENV_API_KEY = "LEXIR_LLM_API_KEY"
ENV_CONFIG = "LEXIR_LLM_CONFIG"
JSON_MODES = ("json_schema", "json_object", "none")
# 2: the endpoint is part of the key (two servers naming their models alike no longer share answers)
CACHE_VERSION = 2

T = TypeVar("T")
R = TypeVar("R")


class LLMError(RuntimeError):
    """A call failed for good: retries exhausted, a 4xx other than 429, or an unusable answer."""


class BudgetExhausted(RuntimeError):
    """The client's budget of new (uncached) calls is spent; the run can be resumed later."""


def default_config_path() -> Path:
    env = os.environ.get(ENV_CONFIG)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return (Path(xdg) if xdg else Path.home() / ".config") / "lexir" / "llm.toml"


def read_config_file(path: str | Path) -> dict[str, Any]:
    path = Path(path).expanduser()
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        data = yaml.safe_load(text) or {}
    else:
        import tomllib

        data = tomllib.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: an LLM config must be a table of settings")
    # a file may keep its settings under [llm]
    if isinstance(data.get("llm"), dict):
        data = data["llm"]
    return data


def default_cache_path() -> Path:
    from lexir.io.paths import cache_dir

    return cache_dir() / "llm" / "calls.sqlite"


@dataclass
class LLMConfig:
    base_url: str = ""
    model: str = ""
    api_key: str = field(default="", repr=False)
    timeout: float = 120.0
    max_retries: int = 5
    backoff: float = 1.0  # first wait in seconds; doubles each retry (with jitter)
    max_backoff: float = 60.0
    concurrency: int = 4
    cache: bool = True
    cache_path: str = ""  # "" = <lexir cache dir>/llm/calls.sqlite
    json_mode: str = "json_schema"
    temperature: float = 0.0
    max_tokens: int = 1024
    seed: int | None = 0
    budget: int | None = None  # at most this many new (uncached) calls, then BudgetExhausted
    extra_body: dict[str, Any] = field(default_factory=dict)  # merged into every request body

    @classmethod
    def resolve(cls, base_url: str | None = None, model: str | None = None, api_key: str | None = None,
                config_file: str | Path | None = None, **overrides: Any) -> LLMConfig:
        """Settings from arguments, then environment, then the config file (explicit path or default)."""
        data: dict[str, Any] = {}
        path = Path(config_file).expanduser() if config_file else default_config_path()
        if config_file and not path.is_file():
            raise FileNotFoundError(f"LLM config file {path} not found")
        if path.is_file():
            data.update(read_config_file(path))
        key_env = data.pop("api_key_env", None)
        if key_env and not data.get("api_key"):
            data["api_key"] = os.environ.get(str(key_env), "")
        env = {"base_url": os.environ.get(ENV_BASE_URL), "model": os.environ.get(ENV_MODEL),
               "api_key": os.environ.get(ENV_API_KEY)}
        data.update({k: v for k, v in env.items() if v})
        explicit = {"base_url": base_url, "model": model, "api_key": api_key,
                    **{k: v for k, v in overrides.items() if v is not None}}
        data.update({k: v for k, v in explicit.items() if v not in (None, "")})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown LLM setting(s) {', '.join(unknown)}; valid: {', '.join(sorted(known))}")
        config = cls(**data)
        if not config.base_url:
            raise ValueError(f"no LLM endpoint: pass base_url=…, set {ENV_BASE_URL}, or write base_url in "
                             f"{default_config_path()}")
        if config.json_mode not in JSON_MODES:
            raise ValueError(f"json_mode {config.json_mode!r}; valid: {', '.join(JSON_MODES)}")
        return config

    @property
    def chat_url(self) -> str:
        url = self.base_url.rstrip("/")
        if url.endswith("/chat/completions"):
            return url
        if not url.endswith("/v1"):
            url += "/v1"
        return url + "/chat/completions"


@dataclass
class ChatResult:
    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    cached: bool
    finish_reason: str = ""
    requests: int = 0
    record: CallRecord | None = field(default=None, repr=False)  # its entry in the accounting


# ---------------------------------------------------------------------------
# cache


class CallCache:
    """request hash -> answer, in SQLite (WAL); safe to share between threads."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, model TEXT, request TEXT, answer TEXT, "
            "finish_reason TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, seconds REAL, created REAL)")
        self._db.commit()

    def get(self, key: str) -> ChatResult | None:
        with self._lock:
            row = self._db.execute(
                "SELECT answer, prompt_tokens, completion_tokens, seconds, finish_reason FROM calls WHERE key=?",
                (key,)).fetchone()
        if row is None:
            return None
        return ChatResult(row[0], row[1], row[2], row[3], True, row[4] or "")

    def put(self, key: str, model: str, request: Mapping[str, Any], result: ChatResult) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO calls VALUES (?,?,?,?,?,?,?,?,?)",
                (key, model, json.dumps(request, ensure_ascii=False), result.text, result.finish_reason,
                 result.prompt_tokens, result.completion_tokens, result.seconds, time.time()))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def request_key(model: str, messages: Sequence[Mapping[str, str]], params: Mapping[str, Any],
                base_url: str = "") -> str:
    """The cache key of one request: endpoint, model, messages and sampling parameters."""
    blob = json.dumps({"v": CACHE_VERSION, "endpoint": base_url.rstrip("/"), "model": model,
                       "messages": list(messages), "params": dict(params)},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------
# the client


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class LLMClient:
    """Chat completions with cache, retries, a concurrency limit and accounting.

    ``client.chat(messages, schema=..., system="rerank", qid="q1", role="rerank")`` returns a
    :class:`ChatResult`; :meth:`map` runs a function over items on ``concurrency`` threads.
    """

    def __init__(self, config: LLMConfig | None = None, accounting: Accounting | None = None, **settings: Any):
        self.config = config if config is not None else LLMConfig.resolve(**settings)
        if config is not None and settings:
            self.config = replace(config, **settings)
        self.accounting = accounting if accounting is not None else Accounting()
        self.cache = None
        if self.config.cache:
            self.cache = CallCache(self.config.cache_path or default_cache_path())
        self._http = threading.BoundedSemaphore(max(1, int(self.config.concurrency)))
        self._budget_lock = threading.Lock()
        self.new_calls = 0  # uncached calls made by this client object
        self._format_level = 0  # 0: as configured, 1: json_object + schema, 2: no response_format

    # -- public API -------------------------------------------------------------------------

    def chat(self, messages: Sequence[Mapping[str, str]], *, schema: Mapping[str, Any] | None = None,
             system: str = "", qid: str = "", role: str = "", max_tokens: int | None = None,
             temperature: float | None = None, status: str = "", step: int = 0) -> ChatResult:
        cfg = self.config
        params: dict[str, Any] = {
            "temperature": cfg.temperature if temperature is None else temperature,
            "max_tokens": cfg.max_tokens if max_tokens is None else max_tokens,
        }
        if cfg.seed is not None:
            params["seed"] = cfg.seed
        if schema is not None and cfg.json_mode != "none":
            params["response_format"] = self._response_format(schema)
        params.update(cfg.extra_body)
        messages = [dict(m) for m in messages]
        key = request_key(cfg.model, messages, params, cfg.base_url)
        result = self.cache.get(key) if self.cache is not None else None
        if result is None:
            with self._budget_lock:
                if cfg.budget is not None and self.new_calls >= cfg.budget:
                    raise BudgetExhausted(f"budget of {cfg.budget} new LLM calls spent")
                self.new_calls += 1
            result = self._post(messages, params)
            if self.cache is not None:
                self.cache.put(key, cfg.model, {"messages": messages, **params}, result)
        record = CallRecord(system, qid, role, result.cached, result.prompt_tokens, result.completion_tokens,
                            result.seconds, result.requests, status, step)
        self.accounting.add(record)
        return replace(result, record=record)

    def map(self, fn: Callable[[T], R], items: Iterable[T], on_done: Callable[[T, R], None] | None = None) -> list[R]:
        """``[fn(x) for x in items]`` on ``concurrency`` threads, in input order.

        ``on_done(item, result)`` runs in the calling thread as each finishes. The first
        exception cancels what has not started and is raised (finished answers stay cached).
        """
        items = list(items)
        workers = max(1, int(self.config.concurrency))
        if workers == 1 or len(items) <= 1:
            out = []
            for x in items:
                r = fn(x)
                if on_done:
                    on_done(x, r)
                out.append(r)
            return out
        from concurrent.futures import as_completed

        results: dict[int, R] = {}
        with ThreadPoolExecutor(workers) as pool:
            futures = {pool.submit(fn, x): i for i, x in enumerate(items)}
            try:
                for fut in as_completed(futures):
                    i = futures[fut]
                    results[i] = fut.result()
                    if on_done:
                        on_done(items[i], results[i])
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
        return [results[i] for i in range(len(items))]

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------------

    def _response_format(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        if self.config.json_mode == "json_object":
            # llama-cpp-python's server: a JSON object, constrained by the schema given beside it
            return {"type": "json_object", "schema": dict(schema)}
        # OpenAI, vLLM, Ollama, llama.cpp's llama-server
        return {"type": "json_schema", "json_schema": {"name": "answer", "schema": dict(schema)}}

    def _downgrade(self, body: dict) -> bool:
        """After a server refused ``response_format``: json_schema -> json_object -> none.
        Returns False when there is nothing left to drop. The cache key keeps the asked-for
        format, so answers stay cached under the request the caller made."""
        rf = body.get("response_format")
        if not rf:
            return False
        with self._budget_lock:
            if rf.get("type") == "json_schema" and self._format_level == 0:
                self._format_level = 1
            elif self._format_level < 2:
                self._format_level = 2
        return True

    def _with_format(self, body: dict) -> dict:
        rf = body.get("response_format")
        if not rf or self._format_level == 0:
            return body
        if self._format_level == 1:
            schema = rf.get("schema") or (rf.get("json_schema") or {}).get("schema")
            return {**body, "response_format": {"type": "json_object", "schema": schema}}
        return {k: v for k, v in body.items() if k != "response_format"}

    def _post(self, messages: list[dict], params: dict[str, Any]) -> ChatResult:
        cfg = self.config
        body = {"model": cfg.model, "messages": messages, **params}
        body = self._with_format(body)
        headers = {"Content-Type": "application/json"}
        if cfg.api_key:
            headers["Authorization"] = f"Bearer {cfg.api_key}"
        attempt = 0
        requests = 0
        start = time.monotonic()
        while True:
            requests += 1
            try:
                with self._http:
                    data = self._once(body, headers)
                break
            except _Retryable as err:
                if "response_format" in str(err) and self._downgrade(body):
                    body = self._with_format(body)
                    continue
                if attempt >= cfg.max_retries:
                    raise LLMError(f"{cfg.chat_url}: giving up after {requests} requests: {err}") from None
                wait = err.retry_after
                if wait is None:
                    wait = min(cfg.max_backoff, cfg.backoff * 2 ** attempt) * (0.5 + random.random() / 2)
                time.sleep(min(wait, cfg.max_backoff))
                attempt += 1
            except urllib.error.HTTPError as err:
                detail = _read_error(err)
                if ("response_format" in detail or err.code in (400, 422)) and self._downgrade(body):
                    body = self._with_format(body)
                    continue
                raise LLMError(f"{cfg.chat_url}: HTTP {err.code}: {detail}") from None
        seconds = time.monotonic() - start
        try:
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise LLMError(f"{cfg.chat_url}: answer is not a chat completion: {str(data)[:300]}") from None
        usage = data.get("usage") or {}
        return ChatResult(text, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                          seconds, False, choice.get("finish_reason") or "", requests)

    def _once(self, body: dict, headers: dict) -> dict:
        req = urllib.request.Request(self.config.chat_url, json.dumps(body).encode("utf-8"), headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.config.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as err:
            if err.code == 429 or err.code >= 500:
                detail = _read_error(err)
                raise _Retryable(f"HTTP {err.code}: {detail}", _retry_after(err.headers)) from None
            raise
        except TimeoutError as err:
            raise _Retryable(f"timed out after {self.config.timeout} s") from err
        except urllib.error.URLError as err:
            if isinstance(err.reason, TimeoutError | socket.timeout | ConnectionError):
                raise _Retryable(f"{err.reason}") from err
            raise LLMError(f"{self.config.chat_url}: {err.reason}") from None
        except ConnectionError as err:
            raise _Retryable(str(err)) from err
        try:
            return json.loads(raw)
        except ValueError:
            raise _Retryable(f"answer is not JSON: {raw[:200]!r}") from None


def _read_error(err: urllib.error.HTTPError) -> str:
    try:
        return err.read().decode("utf-8", "replace")[:300]
    except Exception:  # noqa: BLE001 - the body is only for the message
        return ""


def _retry_after(headers) -> float | None:
    value = headers.get("Retry-After") if headers else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None
