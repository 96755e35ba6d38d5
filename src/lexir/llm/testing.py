"""A real OpenAI-compatible chat server on loopback, answering from a script you control.

Use it to test a pipeline end to end — HTTP, retries, caching, parsing — without a model::

    from lexir.llm.testing import ScriptedChatServer, reply, fail, slow

    with ScriptedChatServer([fail(429, retry_after=0), reply('{"ranking": [2, 1]}')]) as server:
        client = LLMClient(base_url=server.url, model="test", cache=False)
        ...
        assert server.count == 2

The script is a list of actions consumed one per request: a string (the answer's content),
:func:`reply`, :func:`fail` (an HTTP error, optionally with ``Retry-After``), :func:`slow`
(answer after a delay, to provoke client timeouts) or :func:`broken` (a body that is not a
chat completion). When the script is used up, ``default`` answers: a string, or a function
of the request body returning an action. :func:`schema_answer` is such a function: it reads
the JSON schema of the request's ``response_format`` and answers with a valid object, so any
lexir LLM system runs against it. ``usage`` is filled in (whitespace tokens).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Action:
    content: str = ""
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # sent as the body instead of a chat completion
    finish_reason: str = "stop"


def reply(content: str | dict | list, delay: float = 0.0, finish_reason: str = "stop") -> Action:
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    return Action(content, delay=delay, finish_reason=finish_reason)


def fail(status: int = 500, retry_after: float | None = None, message: str = "scripted failure") -> Action:
    headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
    return Action(status=status, headers=headers, raw=json.dumps({"error": {"message": message}}).encode())


def slow(seconds: float, content: str | dict = "") -> Action:
    return reply(content, delay=seconds)


def broken(raw: bytes = b"<html>bad gateway</html>") -> Action:
    return Action(raw=raw)


Responder = Callable[[dict], "Action | str | dict"]


def _tokens(text: str) -> int:
    return len(text.split())


class ScriptedChatServer:
    """``/v1/chat/completions`` on 127.0.0.1 at a free port, in a background thread."""

    def __init__(self, script: Iterable[Action | str] = (), default: Responder | str | None = None,
                 model: str = "scripted") -> None:
        self.script: list[Action | str] = list(script)
        self.default = default
        self.model = model
        self.requests: list[dict] = []  # request bodies, in arrival order
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- control ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def push(self, *actions: Action | str) -> None:
        with self._lock:
            self.script.extend(actions)

    def start(self) -> ScriptedChatServer:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, json.dumps({"data": [{"id": outer.model, "object": "model"}]}).encode())
                else:
                    self._send(404, b'{"error": "not found"}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, b'{"error": "not found"}')
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(400, b'{"error": "bad json"}')
                    return
                action = outer._next(body)
                if action.delay:
                    time.sleep(action.delay)
                if action.raw is not None:
                    self._send(action.status, action.raw, action.headers)
                    return
                prompt = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
                answer = {
                    "id": f"chatcmpl-{outer.count}", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", outer.model),
                    "choices": [{"index": 0, "finish_reason": action.finish_reason,
                                 "message": {"role": "assistant", "content": action.content}}],
                    "usage": {"prompt_tokens": _tokens(prompt), "completion_tokens": _tokens(action.content),
                              "total_tokens": _tokens(prompt) + _tokens(action.content)},
                }
                self._send(action.status, json.dumps(answer, ensure_ascii=False).encode(), action.headers)

            def _send(self, status: int, payload: bytes, headers: dict | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): nothing to do

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ScriptedChatServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- answering --------------------------------------------------------------------------

    def _next(self, body: dict) -> Action:
        with self._lock:
            self.requests.append(body)
            item = self.script.pop(0) if self.script else None
        if item is None:
            if self.default is None:
                return fail(500, message="script exhausted")
            item = self.default(body) if callable(self.default) else self.default
        if isinstance(item, Action):
            return item
        if isinstance(item, dict | list):
            return reply(item)
        return reply(str(item))


# ---------------------------------------------------------------------------
# answering from the request's JSON schema


def request_schema(body: dict) -> dict | None:
    rf = body.get("response_format") or {}
    if "json_schema" in rf:
        return (rf["json_schema"] or {}).get("schema")
    return rf.get("schema")


def last_user_text(body: dict) -> str:
    for m in reversed(body.get("messages", [])):
        if m.get("role") == "user":
            return str(m.get("content", ""))
    return ""


def schema_answer(body: dict) -> str:
    """A valid answer for the request's schema: rankings reversed, the first two candidates kept,
    queries made of the prompt's longer words, surrogate fields filled from the article."""
    schema = request_schema(body) or {}
    props = schema.get("properties", {})
    text = last_user_text(body)
    # the question follows a line like "Question:" in every lexir prompt; else use the whole text
    m = re.search(r"question:\s*\n(.+?)(?:\n\s*\n|$)", text, re.I | re.S)
    if m:
        text = m.group(1)
    words = [w for w in re.findall(r"\w+", text) if len(w) > 5][:12]
    out: dict[str, Any] = {}
    for key, spec in props.items():
        if key == "ranking":
            n = spec.get("items", {}).get("maximum") or spec.get("maxItems") or 1
            out[key] = list(range(n, 0, -1))
        elif key == "keep":
            n = spec.get("items", {}).get("maximum") or 1
            out[key] = list(range(1, min(n, 2) + 1))
        elif spec.get("type") == "array":
            out[key] = words[:4] or ["prawo"]
        else:
            out[key] = " ".join(words) or "prawo karne"
    return json.dumps(out, ensure_ascii=False)
