"""One search behind both framework retrievers: in process, or over lexir's HTTP API.

:class:`LocalSearch` answers through the service's own functions (:func:`lexir.service.core.search`
over a :class:`~lexir.service.state.ServiceState`), so a hit in LangChain or LlamaIndex has the
citation, breadcrumbs and scores a hit of ``lexir serve`` has. :class:`RemoteSearch` asks a
running ``lexir serve`` (``GET /v1/{corpus}/search``; for a corpus with a history also
``POST /v1/{corpus}/validity`` for the hits' ``valid_from``/``valid_to``). Either raises
:class:`LexirSearchError` (a ``ValueError``) with the service's message for a refused search.

Every request :class:`RemoteSearch` sends reads and changes nothing, so where it is lost on the way
(a replica or a proxy that died under it, a connection that dropped) it is sent again, ``retries``
times at most, as docs/ray.md asks of a client: on a status no lexir service answers of itself but
what stands in front of it does (500 from Ray Serve's proxy for a replica that died, 502 and 504
from a load balancer, 503 from a front or shard with none alive, 429 from a server at its limit of
requests in flight) and on a connection that failed or dropped before an answer came. Never on a
read timeout (the server may still be at work; sending again doubles its load) nor on another 4xx
(sending again would be refused again), nor on lexir's own 503 for a system still being built
(``preparing``: that takes minutes, and its message names what is ready now). Each resend waits
0.1 s, 0.2 s, 0.4 s, ... or the ``Retry-After`` the server asked for, and is given up when that
asks for more than :data:`MAX_RETRY_AFTER_S`. All sends of one search carry one
``X-Request-ID``, so the server's log ties them together.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from lexir.datasets.registry import DatasetError
from lexir.service.state import LoadedCorpus, ServiceError, ServiceState, Settings


class LexirSearchError(ValueError):
    """A search lexir refused (unknown corpus or system, bad date, ...) or could not reach."""

    def __init__(self, message: str, status: int | None = None, code: str | None = None,
                 field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.field = field


@dataclass(frozen=True)
class Hit:
    """One ranked provision: id, full text, score and lexir's metadata."""

    id: str
    text: str
    score: float
    metadata: dict[str, Any] = field(default_factory=dict)


def to_hit(hit: Mapping[str, Any], corpus: str, system: str, as_of: str | None,
           validity: Mapping[str, Any] | None) -> Hit:
    """A hit of the one shape (``lexir.structure.hits.format_hits``) as a :class:`Hit`."""
    meta: dict[str, Any] = {
        "id": hit["id"],
        "citation": hit["citation"],
        "title": hit["title"],
        "act": hit["act"]["id"],
        "act_title": hit["act"]["title"],
        "breadcrumbs": [crumb["label"] for crumb in hit["path"]],
        "breadcrumb_ids": [crumb["id"] for crumb in hit["path"]],
        "score": hit["score"],
        "rank": hit["rank"],
        "system": system,
        "corpus": corpus,
        "source": "lexir",
    }
    if as_of:
        meta["as_of"] = as_of
    if validity is not None:
        version = validity.get(hit["id"]) or {}
        meta["version"] = version.get("version")
        meta["valid_from"] = version.get("valid_from")
        meta["valid_to"] = version.get("valid_to")
    if "explain" in hit:  # a fused system: each part's rank and score
        meta["explain"] = hit["explain"]
    return Hit(hit["id"], hit.get("text", ""), float(hit["score"]), meta)


class LocalSearch:
    """Search in process: over a registered corpus by name (loaded once, ``system`` built through the
    index cache), or over a ``retriever`` already built on a given ``corpus`` object."""

    def __init__(self, corpus: Any, system: str | None = None, retriever: Any = None,
                 params: Mapping[str, Any] | None = None, language: str | None = None,
                 data_dir: str | None = None) -> None:
        from lexir.types import Benchmark

        self.params = dict(params or {})
        self.given = retriever is not None
        if self.given:
            if isinstance(corpus, Benchmark):
                corpus = corpus.corpus
            if corpus is None or isinstance(corpus, str) or not hasattr(corpus, "documents"):
                raise LexirSearchError("a given retriever needs the Corpus it was built on (corpus=...)",
                                       field="corpus")
            if self.params:
                raise LexirSearchError("params apply to a system lexir builds, not to a given retriever",
                                       field="params")
            self.system = system or getattr(retriever, "name", None) or type(retriever).__name__
            loaded = LoadedCorpus(corpus.name, corpus, {"fingerprint": corpus.fingerprint})
            loaded.index_units()
            self.state = GivenState(Settings(systems=(self.system,)), loaded, retriever)
            self.name = corpus.name
        else:
            if not isinstance(corpus, str) or not corpus:
                raise LexirSearchError("corpus is a registered name or a path (or pass retriever= with "
                                       "the Corpus it was built on)", field="corpus")
            self.system = system or "bm25"
            # the system with these parameters is built with the corpus (a service builds none per request)
            variants = (_with_params(self.system, self.params),) if self.params else ()
            self.state = ServiceState(Settings(systems=(self.system,), variants=variants, data_dir=data_dir))
            try:
                self.name = self.state.add(corpus, language, graph=False).name
            except ServiceError as exc:  # a system or parameter that cannot be built: named by its field
                raise LexirSearchError(exc.message, exc.status, exc.code, exc.field or "system") from None
            except (DatasetError, ValueError, KeyError, TypeError, OSError) as exc:  # an unknown name, a bad spec
                raise LexirSearchError(f"cannot load corpus {corpus!r} with system {self.system!r}: {exc}",
                                       field="corpus") from exc
        self.dated = self.state.corpora[self.name].dates is not None

    def search(self, query: str, k: int, as_of: str | None = None) -> list[Hit]:
        from lexir.service import core, history

        if as_of and self.given:
            raise LexirSearchError("as_of needs a corpus with a history named by its dataset "
                                   "(corpus='de-gesetze-history'); a given retriever searches the corpus "
                                   "it was built on", field="as_of")
        try:
            result = core.search(self.state, self.name, [("q", query)], k, self.system, self.params,
                                 with_text=True, as_of=as_of or None)[0]
            validity = None
            if self.dated and result["hits"]:
                validity = history.validity(self.state, self.name, [h["id"] for h in result["hits"]],
                                            as_of)["versions"]
        except ServiceError as exc:
            raise LexirSearchError(exc.message, exc.status, exc.code, exc.field) from None
        return [to_hit(h, self.name, result["system"], as_of, validity) for h in result["hits"]]

    async def asearch(self, query: str, k: int, as_of: str | None = None) -> list[Hit]:
        return await asyncio.to_thread(self.search, query, k, as_of)


def _with_params(system: str, params: Mapping[str, Any]) -> str:
    """``system``'s spec with ``params`` written into it: ``bm25`` + k1=0.9 -> ``bm25(k1=0.9)``."""
    from lexir.retrieval.spec import Spec, parse_spec

    spec = parse_spec(system)
    return str(Spec(spec.name, tuple({**spec.param_dict, **{k: str(v) for k, v in params.items()}}.items())))


class GivenState(ServiceState):
    """A service state of one corpus and one retriever the caller built."""

    def __init__(self, settings: Settings, loaded: LoadedCorpus, retriever: Any) -> None:
        super().__init__(settings)
        self.corpora[loaded.name] = loaded
        self._given = retriever

    def retriever(self, loaded: LoadedCorpus, system: str | None, params: Mapping[str, Any]) -> Any:
        if params or (system and system != self.settings.systems[0]):
            raise ServiceError("a given retriever has no other systems or parameters", field="system")
        return self._given


#: The longest question sent in a GET's URL; a longer one goes in a POST's body.
LONGEST_GET_QUERY = 2_000
#: The statuses a read-only request is sent again on (see the module's docstring).
RESEND_STATUSES = frozenset({429, 500, 502, 503, 504})
#: lexir's own 503 for a system still being built (minutes; its message names what is ready now)
NOT_RESENT_CODES = frozenset({"preparing"})
#: A ``Retry-After`` longer than this is not waited for: the search fails with the server's message.
MAX_RETRY_AFTER_S = 10.0
#: The wait before the first resend; each next one waits twice as long.
FIRST_BACKOFF_S = 0.1


def resend_wait(attempt: int, retries: int, status: int | None = None, retry_after: str | None = None,
                error: Exception | None = None, code: str | None = None) -> float | None:
    """Seconds to wait before sending a read-only request again after its ``attempt``-th try (0 the
    first) answered ``status`` (with ``retry_after``, and lexir's error ``code`` where the answer is
    lexir's) or failed with ``error``; None: not again."""
    import httpx

    if attempt >= retries:
        return None
    if error is not None:
        # a connection refused, reset or closed before an answer, or one that could not be opened in
        # time; a read timeout is not among them (the server may still be at work)
        if not isinstance(error, httpx.NetworkError | httpx.RemoteProtocolError | httpx.ConnectTimeout):
            return None
    elif status not in RESEND_STATUSES or code in NOT_RESENT_CODES:
        return None
    wait = FIRST_BACKOFF_S * 2 ** attempt
    if retry_after is not None:
        try:
            asked = float(retry_after)
        except ValueError:  # an HTTP date: not sent by lexir; the back-off stands
            asked = wait
        if asked > MAX_RETRY_AFTER_S:
            return None
        wait = max(wait, asked)
    return wait


def _error_code(response) -> str | None:
    """lexir's error code in a refusal's JSON (``{"error": {"code": ...}}``), None in anything else."""
    if response.status_code < 400 or "json" not in response.headers.get("content-type", ""):
        return None
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return None
    return error.get("code") if isinstance(error, dict) else None


class RemoteSearch:
    """Search a running ``lexir serve`` at ``url`` (``http://127.0.0.1:8000``); a request lost on
    the way is sent again, ``retries`` times at most (see the module's docstring). ``resent``
    counts the requests sent again. Its sync searches share one client, whose connections are kept
    alive between them (:meth:`close`, or ``with``, closes them)."""

    def __init__(self, url: str, corpus: str, system: str | None = None,
                 params: Mapping[str, Any] | None = None, api_key: str | None = None,
                 timeout: float = 60.0, retries: int = 2) -> None:
        if not isinstance(corpus, str) or not corpus:
            raise LexirSearchError("over HTTP, corpus is the name the server serves it under", field="corpus")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise LexirSearchError(f"retries must be a whole number, 0 or more; got {retries!r}", field="retries")
        self.url = url.rstrip("/")
        self.name = corpus
        self.system = system
        self.params = dict(params or {})
        self.headers = {"X-API-Key": api_key} if api_key else {}
        self.timeout = timeout
        self.retries = retries
        self.resent = 0
        self._dated: bool | None = None
        self._lock = threading.Lock()
        self._client = None  # httpx.Client, made at the first search
        self._tls_context = None
        self._path = f"/v1/{quote(corpus, safe='')}"

    def _search_request(self, query: str, k: int, as_of: str | None) -> tuple[str, dict[str, Any]]:
        """The search request: a GET with the question in the URL, or, for a question longer than
        :data:`LONGEST_GET_QUERY` (URLs are cut at a few kB by proxies, and httpx refuses a query
        string over 64 kB), a POST of one query with the same fields."""
        if len(query) <= LONGEST_GET_QUERY:
            return "GET", {"params": self._query(query, k, as_of)}
        body: dict[str, Any] = {"queries": [{"id": "q", "text": query}], "k": k, "params": self.params}
        if self.system:
            body["system"] = self.system
        if as_of:
            body["as_of"] = as_of
        return "POST", {"json": body}

    @staticmethod
    def _answer(method: str, body: dict[str, Any]) -> dict[str, Any]:
        return body["results"][0] if method == "POST" else body

    def _query(self, query: str, k: int, as_of: str | None) -> list[tuple[str, str]]:
        args = [("q", query), ("k", str(k))]
        if self.system:
            args.append(("system", self.system))
        args += [("param", f"{key}:{value}") for key, value in self.params.items()]
        if as_of:
            args.append(("as_of", as_of))
        return args

    @staticmethod
    def _body(response, attempts: int = 1) -> dict[str, Any]:
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code >= 400 or not isinstance(body, dict):
            error = (body or {}).get("error", {}) if isinstance(body, dict) else {}
            message = error.get("message") if isinstance(error, dict) else None
            tries = f" (the last of {attempts} attempts)" if attempts > 1 else ""
            raise LexirSearchError(f"lexir at {response.url.host}:{response.url.port} answered "
                                   f"{response.status_code}{tries}: {message or response.text[:200]}",
                                   response.status_code, error.get("code") if isinstance(error, dict) else None,
                                   error.get("field") if isinstance(error, dict) else None)
        return body

    def _hits(self, body: dict[str, Any], as_of: str | None, validity) -> list[Hit]:
        return [to_hit(h, self.name, body["system"], as_of, validity) for h in body["hits"]]

    def _dated_from(self, corpora: dict[str, Any]) -> bool:
        entry = next((c for c in corpora.get("corpora", []) if c.get("name") == self.name), None)
        return bool(entry and entry.get("dates"))

    def _send(self, client, method: str, path: str, request_id: str, **kwargs):
        """One read-only request, sent again while :func:`resend_wait` says so."""
        import httpx

        headers = {"X-Request-ID": request_id}
        for attempt in range(self.retries + 1):
            try:
                response = client.request(method, path, headers=headers, **kwargs)
            except httpx.HTTPError as exc:
                wait = resend_wait(attempt, self.retries, error=exc)
                if wait is None:
                    raise self._unreachable(exc, attempt) from exc
            else:
                wait = resend_wait(attempt, self.retries, response.status_code, response.headers.get("retry-after"),
                                   code=_error_code(response))
                if wait is None:
                    return self._body(response, attempt + 1)
            with self._lock:  # a retriever's batch searches from several threads
                self.resent += 1
            time.sleep(wait)
        raise AssertionError("unreachable: the last attempt returns or raises")  # pragma: no cover

    async def _asend(self, client, method: str, path: str, request_id: str, **kwargs):
        """:meth:`_send` with httpx's async client."""
        import httpx

        headers = {"X-Request-ID": request_id}
        for attempt in range(self.retries + 1):
            try:
                response = await client.request(method, path, headers=headers, **kwargs)
            except httpx.HTTPError as exc:
                wait = resend_wait(attempt, self.retries, error=exc)
                if wait is None:
                    raise self._unreachable(exc, attempt) from exc
            else:
                wait = resend_wait(attempt, self.retries, response.status_code, response.headers.get("retry-after"),
                                   code=_error_code(response))
                if wait is None:
                    return self._body(response, attempt + 1)
            with self._lock:  # a retriever's batch searches from several threads
                self.resent += 1
            await asyncio.sleep(wait)
        raise AssertionError("unreachable: the last attempt returns or raises")  # pragma: no cover

    def _unreachable(self, exc: Exception, attempt: int) -> LexirSearchError:
        tries = f" ({attempt + 1} attempts)" if attempt else ""
        return LexirSearchError(f"cannot reach lexir at {self.url}{tries}: {type(exc).__name__}: {exc}")

    def _tls(self):
        """One TLS context for every client this search makes: httpx builds one per client
        otherwise (about 30 ms, even for http://, where a search takes 2)."""
        import httpx

        with self._lock:
            if self._tls_context is None:
                self._tls_context = httpx.create_ssl_context()
            return self._tls_context

    def _sync_client(self):
        """The one sync client of this search (thread-safe), its connections kept alive between searches."""
        import httpx

        tls = self._tls()
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(base_url=self.url, headers=self.headers, timeout=self.timeout, verify=tls)
            return self._client

    def close(self) -> None:
        """Close the connections kept alive (a later search opens new ones)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> RemoteSearch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def search(self, query: str, k: int, as_of: str | None = None) -> list[Hit]:
        rid = uuid.uuid4().hex
        client = self._sync_client()
        method, request = self._search_request(query, k, as_of)
        body = self._answer(method, self._send(client, method, f"{self._path}/search", rid, **request))
        if self._dated is None:
            self._dated = self._dated_from(self._send(client, "GET", "/v1/corpora", rid))
        validity = None
        if self._dated and body["hits"]:
            validity = self._send(client, "POST", f"{self._path}/validity", rid, json={
                "ids": [h["id"] for h in body["hits"]], "as_of": as_of})["versions"]
        return self._hits(body, as_of, validity)

    async def asearch(self, query: str, k: int, as_of: str | None = None) -> list[Hit]:
        import httpx

        rid = uuid.uuid4().hex
        # a client per call (an async client belongs to the event loop it was first used in, and
        # asyncio.run makes a new one each time), cheap with the one TLS context
        async with httpx.AsyncClient(base_url=self.url, headers=self.headers, timeout=self.timeout,
                                     verify=self._tls()) as client:
            method, request = self._search_request(query, k, as_of)
            body = self._answer(method, await self._asend(client, method, f"{self._path}/search", rid, **request))
            if self._dated is None:
                self._dated = self._dated_from(await self._asend(client, "GET", "/v1/corpora", rid))
            validity = None
            if self._dated and body["hits"]:
                validity = (await self._asend(client, "POST", f"{self._path}/validity", rid, json={
                    "ids": [h["id"] for h in body["hits"]], "as_of": as_of}))["versions"]
        return self._hits(body, as_of, validity)


def searcher(corpus: Any = None, system: str | None = None, *, url: str | None = None,
             retriever: Any = None, params: Mapping[str, Any] | None = None, api_key: str | None = None,
             language: str | None = None, data_dir: str | None = None,
             timeout: float = 60.0, retries: int = 2) -> LocalSearch | RemoteSearch:
    """A :class:`RemoteSearch` when ``url`` is given, else a :class:`LocalSearch`."""
    if url:
        if retriever is not None:
            raise LexirSearchError("give url (a lexir server) or retriever (in process), not both", field="url")
        return RemoteSearch(url, corpus, system, params, api_key, timeout, retries)
    return LocalSearch(corpus, system, retriever, params, language, data_dir)


def check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise LexirSearchError(f"k must be a positive integer; got {k!r}", field="k")
    return k
