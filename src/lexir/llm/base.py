"""What every LLM system shares: building a client from system parameters, asking for JSON
with one corrective retry, and running queries concurrently with per-query accounting."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lexir.llm import prompts
from lexir.llm.accounting import Accounting
from lexir.llm.client import LLMClient, LLMConfig
from lexir.llm.parsing import Parsed, Status
from lexir.retrieval.base import Retriever
from lexir.types import Corpus, Document, Query, Run

# parameters every LLM system takes (the API key only ever comes from the environment or the config file)
LLM_PARAMS: dict[str, Any] = {
    "base_url": "", "model": "", "config": "", "api_key_env": "", "concurrency": 4, "cache": True,
    "timeout": 120.0, "json_mode": "", "max_tokens": 1024,
}


_CLIENTS: dict[tuple, LLMClient] = {}
_CLIENTS_LOCK = threading.Lock()


def language_name(code: str) -> str:
    """``"pl"`` -> ``"Polish"`` (for prompts); an unknown code as it is."""
    from lexir.analysis.languages import SNOWBALL

    name = SNOWBALL.get((code or "").lower())
    return name.capitalize() if name else (code or "the statutes' language")


def client_from_params(params: Mapping[str, Any], client: LLMClient | None = None) -> LLMClient:
    """The shared client for these settings (one per distinct configuration, so accounting adds up)."""
    if client is not None:
        return client
    import os

    overrides: dict[str, Any] = {"concurrency": int(params.get("concurrency", 4)),
                                 "cache": bool(params.get("cache", True)),
                                 "timeout": float(params.get("timeout", 120.0)),
                                 "max_tokens": int(params.get("max_tokens", 1024))}
    if params.get("json_mode"):
        overrides["json_mode"] = params["json_mode"]
    api_key = os.environ.get(params["api_key_env"], "") if params.get("api_key_env") else None
    config = LLMConfig.resolve(params.get("base_url") or None, params.get("model") or None, api_key,
                               params.get("config") or None, **overrides)
    key = (config.base_url, config.model, config.api_key, config.concurrency, config.cache, config.timeout,
           config.json_mode, config.max_tokens, config.cache_path)
    with _CLIENTS_LOCK:
        if key not in _CLIENTS:
            _CLIENTS[key] = LLMClient(config)
        return _CLIENTS[key]


def clip(text: str, chars: int) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= chars else text[:chars].rstrip() + " …"


def numbered(docs: Sequence[Document], chars: int) -> str:
    lines = []
    for i, doc in enumerate(docs, 1):
        head = f"[{i}] {doc.id}" + (f" ({doc.title})" if doc.title else "")
        lines.append(f"{head}: {clip(doc.text, chars)}")
    return "\n".join(lines)


def ask(client: LLMClient, system: str, prompt: str, values: Mapping[str, Any], parse: Callable[[str], Parsed], *,
        schema: Mapping[str, Any] | None, qid: str, role: str, max_tokens: int | None = None,
        step: int = 0) -> Parsed:
    """One call, parsed; a malformed answer is shown to the model once with what was wrong.

    The second answer is used even when malformed: its ``value`` is the parser's documented
    fallback. ``<system>:retry`` and ``<system>:fallback`` count both events.
    """
    messages = prompts.render(prompt, **values)
    result = client.chat(messages, schema=schema, system=system, qid=qid, role=role,
                         max_tokens=max_tokens, step=step)
    parsed = parse(result.text)
    result.record.status = str(parsed.status)
    if parsed.status is Status.OK:
        return parsed
    client.accounting.note(system, "retry")
    messages = [*messages, {"role": "assistant", "content": result.text[:4000]},
                {"role": "user", "content": f"That answer could not be used ({parsed.detail or parsed.status}). "
                                            "Answer again with only the JSON object asked for."}]
    result = client.chat(messages, schema=schema, system=system, qid=qid, role=role + ":retry",
                         max_tokens=max_tokens, step=step)
    second = parse(result.text)
    result.record.status = str(second.status)
    if second.status is not Status.OK:
        client.accounting.note(system, "fallback")
    return second


class LLMRetriever(Retriever):
    """A retriever that asks an LLM; ``accounting`` holds this system's calls only."""

    name = "llm"

    def __init__(self, corpus: Corpus, client: LLMClient) -> None:
        self.corpus = corpus
        self.client = client
        self.language = language_name(corpus.language)

    @property
    def accounting(self) -> Accounting:
        mine = Accounting(r for r in self.client.accounting.records if r.system == self.name)
        mine.events.update({k: v for k, v in self.client.accounting.events.items()
                            if k.startswith(self.name + ":")})
        return mine

    def ask(self, prompt: str, values: Mapping[str, Any], parse: Callable[[str], Parsed], *,
            schema: Mapping[str, Any] | None, qid: str, role: str, max_tokens: int | None = None,
            step: int = 0) -> Parsed:
        """One call, parsed, with one corrective retry (see :func:`ask`)."""
        return ask(self.client, self.name, prompt, values, parse, schema=schema, qid=qid, role=role,
                   max_tokens=max_tokens, step=step)

    # -- running --------------------------------------------------------------------------------

    def search_query(self, query: Query, k: int) -> list[tuple[str, float]]:
        raise NotImplementedError

    def search_many(self, queries: Sequence[Query], k: int = 100,
                    progress: Callable[[int], None] | None = None) -> Run:
        def one(query: Query) -> list[tuple[str, float]]:
            return self.search_query(query, k)

        def done(_query: Query, _result) -> None:
            if progress:
                progress(1)

        results = self.client.map(one, list(queries), on_done=done)
        return {q.id: dict(res) for q, res in zip(queries, results, strict=True)}
