"""What a running service holds: its settings, the corpora it serves, their retrievers and graphs.

Corpora are named at start-up (``lexir serve pl-codes de-gesetze``) and loaded once, with
their statute graphs and the configured systems built (or loaded from the index cache)
before the server listens, so no request pays for a parse. A request names a corpus by the
name it was served under, never by a path: nothing in a request reaches the file system.

A request builds no index: it may vary a served system's query-time parameters, or ask for
one of the variants the operator allowed at start-up (``lexir serve --variant``), built with
the served systems (:func:`lexir.service.core.request_retriever`).
"""

from __future__ import annotations

import difflib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lexir.jurisdiction import code_of
from lexir.retrieval.base import Retriever
from lexir.service.dated import SizedCache, estimate_bytes
from lexir.structure.graph import cached_graph
from lexir.structure.hits import Unit, ancestors, index_units
from lexir.types import Act, Corpus, Provision, act_of, article_of


class ServiceError(Exception):
    """A request the service refuses: ``status`` is the HTTP status, ``valid`` what would work."""

    status = 400
    code = "bad_request"

    def __init__(self, message: str, valid: Iterable[str] | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.valid = list(valid) if valid is not None else None
        self.field = field

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.field:
            body["field"] = self.field
        if self.valid is not None:
            body["valid"] = self.valid
        return {"error": body}


class NotFound(ServiceError):
    status = 404
    code = "not_found"


class Unavailable(ServiceError):
    """A served system not ready yet (built in the background, :mod:`lexir.service.preparing`)."""

    status = 503
    code = "preparing"
    retry_after_s = 5


class Seen(ServiceError):
    """A served learned model refuses a question it was trained on (its answer would be memory)."""

    status = 409
    code = "seen"


@dataclass
class Settings:
    """Limits and switches; the defaults are the safe ones (loopback, no CORS, bounded work)."""

    host: str = "127.0.0.1"
    port: int = 8000
    api_key: str | None = None  # LEXIR_API_KEY
    systems: tuple[str, ...] = ("bm25",)  # the systems requests may choose (first: default)
    variants: tuple[str, ...] = ()  # specs of served systems with other index-time parameters, built too
    max_k: int = 1000
    max_query_chars: int = 10_000
    max_text_chars: int = 200_000  # /v1/cite input
    max_quote_chars: int = 5_000  # /v1/verify: fuzzy matching is quadratic in the quote
    max_batch: int = 100
    # hits one request may ask for (queries x k), as Elasticsearch's index.max_result_window bounds
    # one search: 100 queries at k=1000 over long statutes would be an answer of hundreds of MB
    max_hits: int = 10_000
    max_body_bytes: int = 1 << 20
    max_in_flight: int = 32
    retry_after_s: int = 1
    cors_origins: tuple[str, ...] = ()
    extra_retrievers: int = 4  # on-demand parameter variants kept per corpus
    dated_cache_mb: int = 1024  # LEXIR_DATED_CACHE_MB: memory for corpora as of a date (estimated)
    dated_loads: int = 1  # intervals of a history loaded at once (the others wait their turn)
    data_dir: str | None = None
    # With several systems: when the first (default) takes longer than this many seconds to build
    # (a dense encoding not cached yet), it goes on in the background while the others answer
    # (lexir.service.preparing). None: every system is built before the corpus is served.
    prepare_after_s: float | None = None
    learn: Any = None  # lexir.service.learner.LearnSettings: learn from the marks (lexir serve --learn)

    @classmethod
    def from_env(cls, **overrides: Any) -> Settings:
        env_key = os.environ.get("LEXIR_API_KEY") or None
        origins = tuple(o.strip() for o in os.environ.get("LEXIR_CORS_ORIGINS", "").split(",") if o.strip())
        values: dict[str, Any] = {"api_key": env_key, "cors_origins": origins}
        budget = os.environ.get("LEXIR_DATED_CACHE_MB", "").strip()
        if budget:
            if not budget.isdigit():
                raise ValueError(f"LEXIR_DATED_CACHE_MB must be a whole number of MiB; got {budget!r}")
            values["dated_cache_mb"] = int(budget)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


@dataclass
class LoadedCorpus:
    """One served corpus: documents, units by id, article order, graph and retrievers."""

    name: str
    corpus: Corpus
    provenance: dict[str, Any]
    units: dict[str, Unit] = field(default_factory=dict)
    article_order: dict[str, list[str]] = field(default_factory=dict)  # act id -> article ids
    graph: Any = None  # lexir.structure.graph.StatuteGraph, or None without structure
    retrievers: OrderedDict = field(default_factory=OrderedDict)
    build_lock: threading.Lock = field(default_factory=threading.Lock)
    history: Any = None  # for a corpus as of a date: the history it was cut from
    as_of: str | None = None
    dates: dict[str, Any] | None = None  # for a corpus with a history: its version dates
    dated_key: tuple[str, str] | None = None  # for a corpus as of a date: (corpus, interval start)
    kept: dict[str, dict[str, Any]] = field(default_factory=dict)  # hit fields (lexir.structure.hits)
    preparing: dict[str, Any] = field(default_factory=dict)  # system -> Preparation, built in the background

    @property
    def language(self) -> str:
        return self.corpus.language

    @property
    def jurisdiction(self) -> str:
        """The code of the corpus's legal order ("" when none claims it)."""
        return code_of(self.corpus)

    def index_units(self) -> None:
        self.units, self.article_order = index_units(self.corpus)

    def ancestors(self, unit_id: str) -> list[str]:
        """Ids from the article down to the parent of ``unit_id``."""
        return ancestors(self.units, unit_id)

    def unit(self, unit_id: str) -> Unit:
        found = self.units.get(unit_id)
        if found is not None:
            return found
        if self.history is not None and "::" in unit_id:
            try:  # say why: not yet in force, repealed, or unknown (with the nearest ids)
                self.history.version(unit_id, self.as_of)
            except ValueError as err:
                raise NotFound(str(err), field="id") from None
        act = act_of(unit_id) if "::" in unit_id else ""
        if act in self.article_order:
            near = difflib.get_close_matches(article_of(unit_id), self.article_order[act], n=5, cutoff=0.5)
            raise NotFound(f"no provision {unit_id!r} in corpus {self.name!r}; close ids in {act}: "
                           f"{', '.join(near) or 'none'}", valid=near, field="id")
        acts = sorted(self.article_order)
        shown = acts[:50]
        more = f" (and {len(acts) - 50} more)" if len(acts) > 50 else ""
        raise NotFound(f"no provision {unit_id!r} in corpus {self.name!r}: ids look like ACT::ARTICLE"
                       f"[/level:label]; acts: {', '.join(shown)}{more}", valid=shown, field="id")


def _param_key(system: str, params: Mapping[str, Any]) -> tuple:
    return (system, tuple(sorted((str(k), str(v)) for k, v in params.items())))


class ServiceState:
    """The corpora a service serves, loaded once; shared by the API, the page and the MCP server."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.corpora: dict[str, LoadedCorpus] = {}
        # Served corpora with a history, as of a date (``as_of``): loaded on first use per interval
        # of versions in force, kept within ``dated_cache_mb`` (least recently used go first).
        self.dated = SizedCache(settings.dated_cache_mb << 20, settings.dated_loads)
        self._served_latest: dict[str, bool] = {}  # corpus -> is it its history's latest interval

    # -- loading ------------------------------------------------------------------------

    def add(self, spec: str, language: str | None = None, notify: Callable[[str], None] | None = None,
            graph: bool = True, made: Mapping[str, Callable[[Corpus], Retriever]] | None = None,
            jurisdiction: str | None = None) -> LoadedCorpus:
        """Load a corpus (registered name or path), index its units, load or build its graph and
        the configured systems. Served under the registered name, or the path's corpus name.
        ``language`` and ``jurisdiction``: how a corpus given by path is read (see
        :func:`lexir.datasets.open`). ``made``: served systems whose retriever is made otherwise
        (system -> a function of the corpus), not built here (the ``bm25`` of a sharded index,
        :mod:`lexir.ray_serve`)."""
        from lexir.datasets import is_path
        from lexir.datasets import open as open_data

        corpus = open_data(spec, language=language, data_dir=self.settings.data_dir, notify=notify, want="corpus",
                           jurisdiction=jurisdiction)
        name = corpus.name if is_path(spec) else spec
        if name in self.corpora:
            raise ValueError(f"corpus {name!r} given twice")
        loaded = LoadedCorpus(name, corpus, _provenance(spec, corpus, self.settings.data_dir))
        loaded.index_units()
        loaded.dates = None if is_path(spec) else _dates(spec, self.settings.data_dir)
        if graph and corpus.acts:
            loaded.graph = cached_graph(corpus, notify=notify)
        for system, make in (made or {}).items():
            loaded.retrievers[_param_key(system, {})] = make(corpus)
        systems = tuple(s for s in (*self.settings.systems, *self.settings.variants) if s not in (made or {}))
        background = (self.settings.prepare_after_s is not None
                      and len([s for s in self.settings.systems if s not in (made or {})]) > 1)
        for system in systems[1:] if background else systems:
            self.retriever(loaded, system, {})
        if background:
            self._prepare(loaded, systems[0], notify)
        self.corpora[name] = loaded
        return loaded

    def _prepare(self, loaded: LoadedCorpus, system: str, notify: Callable[[str], None] | None) -> None:
        """Build ``system`` over ``loaded``; when that takes longer than ``prepare_after_s``, let it
        go on in a thread while the other served systems answer (:mod:`lexir.service.preparing`)."""
        from lexir.retrieval.build import build_retriever
        from lexir.service.preparing import Preparation

        prep = Preparation(system, len(loaded.corpus), notify, loaded.name)
        loaded.preparing[system] = prep

        def build() -> None:
            try:
                retriever = build_retriever(loaded.corpus, system, {}, progress=prep.advance)
            except Exception as exc:  # noqa: BLE001 - said on the console and to every request for it
                prep.fail(f"{type(exc).__name__}: {exc}")
                if notify is not None:
                    notify(f"{system} over {loaded.name} {prep.status()}; answers come from "
                           f"{self.default_system(loaded)}")
                return
            with loaded.build_lock:
                loaded.retrievers[_param_key(system, {})] = retriever
            loaded.preparing.pop(system, None)
            if notify is not None and time.monotonic() - prep.started >= (self.settings.prepare_after_s or 0):
                notify(f"{system} over {loaded.name} is ready: requests that name no system get it now")

        thread = prep.thread = threading.Thread(target=build, name=f"lexir-prepare-{loaded.name}-{system}",
                                                daemon=True)
        thread.start()
        thread.join(self.settings.prepare_after_s)
        if thread.is_alive() and notify is not None:
            notify(f"{system} over {loaded.name} takes longer (an encoding not cached yet): it is built in the "
                   f"background; until it is ready, requests that name no system get "
                   f"{self.default_system(loaded)}, and /v1/corpora shows the progress")

    def wait_prepared(self) -> None:
        """Wait for every background build (before forking workers: a thread does not survive a fork)."""
        for loaded in self.corpora.values():
            for prep in list(loaded.preparing.values()):
                if prep.thread is not None:
                    prep.thread.join()

    def default_system(self, loaded: LoadedCorpus) -> str:
        """The system that answers a request naming none: the first served one that is ready."""
        return next((s for s in self.settings.systems if s not in loaded.preparing), self.settings.systems[0])

    def settle(self) -> None:
        """Call once everything is loaded: a collection, then the loaded objects moved to the
        permanent generation (``gc.freeze``). A served German corpus is millions of objects (units,
        graph ids, index maps) that never die; without this, the collector's full passes walk them
        all, pausing requests for tens to hundreds of milliseconds."""
        import gc

        gc.collect()
        gc.freeze()

    # -- lookups ------------------------------------------------------------------------

    def get(self, name: str, as_of: str | None = None) -> LoadedCorpus:
        """A served corpus; with ``as_of``, that corpus as in force on the date (only for a
        corpus with a history, such as ``de-gesetze-history``)."""
        try:
            loaded = self.corpora[name]
        except KeyError:
            raise NotFound(f"no corpus {name!r}; served: {', '.join(self.corpora) or 'none'}",
                           valid=list(self.corpora), field="corpus") from None
        if not as_of:
            return loaded
        return self._dated(loaded, as_of)

    def _dated(self, loaded: LoadedCorpus, as_of: str) -> LoadedCorpus:
        """``loaded`` as in force on ``as_of``: the interval of versions holding that day, loaded
        once (its corpus, units, graph and the served systems) and kept in the memory-bounded
        cache (:mod:`lexir.service.dated`); handed out as a view named for the day asked."""
        from lexir.datasets import open as open_data

        try:
            history = open_data(loaded.name, data_dir=self.settings.data_dir)
        except Exception:  # noqa: BLE001 - a path corpus or any dataset without one
            history = None
        if not hasattr(history, "interval"):
            dated = [n for n, c in self.corpora.items() if n != loaded.name and "history" in n]
            raise ServiceError(f"corpus {loaded.name!r} has no history, so no as_of", field="as_of",
                               valid=dated or None)
        try:
            day = history.check_date(as_of)
            start, end = history.interval(day)
        except ValueError as err:  # before the first version, or not a date
            raise ServiceError(str(err), field="as_of") from None
        key = (loaded.name, start)
        if end is None and self._is_latest(loaded, history, start):
            found = replace(loaded, history=history)  # the latest interval: the served corpus itself
        else:
            found = self.dated.get(key, lambda: self._load_dated(loaded, history, key))
        # The same units, graph, retrievers and build lock; only the name and day are the request's.
        return replace(found, name=f"{loaded.name}@{day}", as_of=day)

    def _is_latest(self, loaded: LoadedCorpus, history: Any, start: str) -> bool:
        """Whether the served corpus is the history's latest interval (compared once)."""
        same = self._served_latest.get(loaded.name)
        if same is None:
            same = self._served_latest[loaded.name] = history.as_of(start).fingerprint == loaded.corpus.fingerprint
        return same

    def _load_dated(self, loaded: LoadedCorpus, history: Any, key: tuple[str, str]) -> tuple[LoadedCorpus, int]:
        name, start = key
        corpus = history.as_of(start)
        found = LoadedCorpus(f"{name}@{start}", corpus, loaded.provenance, history=history, as_of=start,
                             dated_key=key)
        found.index_units()
        found.graph = cached_graph(corpus) if corpus.acts else None
        for system in (*self.settings.systems, *self.settings.variants):  # so a search never waits
            self.retriever(found, system, {})
        return found, dated_bytes(found)

    def default_corpus(self) -> str | None:
        return next(iter(self.corpora), None)

    def retriever(self, loaded: LoadedCorpus, system: str | None, params: Mapping[str, Any]) -> Retriever:
        """The retriever of an allowed ``system`` with ``params`` over ``loaded``, built once."""
        from lexir.retrieval.build import build_retriever

        system = system or self.default_system(loaded)
        if system not in self.settings.systems and system not in self.settings.variants:
            raise ServiceError(f"system {system!r} is not served; served: {', '.join(self.settings.systems)}",
                               valid=list(self.settings.systems), field="system")
        prep = loaded.preparing.get(system)
        if prep is not None:
            ready = [s for s in self.settings.systems if s not in loaded.preparing]
            raise Unavailable(f"system {system!r} over {loaded.name!r} is {prep.status()}; ready now: "
                              f"{', '.join(ready) or 'none'}", valid=ready, field="system")
        key = _param_key(system, params)
        found = loaded.retrievers.get(key)
        if found is not None:
            return found
        with loaded.build_lock:  # one build at a time per corpus; a second asker waits for it
            found = loaded.retrievers.get(key)
            if found is not None:
                return found
            try:
                retriever = build_retriever(loaded.corpus, system, dict(params))
            except (ValueError, TypeError, KeyError) as exc:
                shown = f" with {dict(params)}" if params else ""
                raise ServiceError(f"cannot build {system!r}{shown}: {exc}", field="params" if params else "system") \
                    from None
            loaded.retrievers[key] = retriever
            if loaded.dated_key is not None and self.dated.nbytes(loaded.dated_key) is not None:
                # a variant built on a cached dated corpus: count it
                self.dated.resize(loaded.dated_key, dated_bytes(loaded))
            defaults = {_param_key(s, {}) for s in (*self.settings.systems, *self.settings.variants)}
            extra = [k for k in loaded.retrievers if k not in defaults]
            while len(extra) > self.settings.extra_retrievers:
                loaded.retrievers.pop(extra.pop(0))
            return retriever

    def is_fast(self, loaded: LoadedCorpus, system: str | None, params: Mapping[str, Any]) -> bool:
        """Whether a search with this system is already built and lexical (BM25, or fused BM25s): about
        a millisecond, cheaper to run in place than to hand to a worker thread."""
        from lexir.retrieval.bm25 import BM25Retriever

        retriever = loaded.retrievers.get(_param_key(system or self.settings.systems[0], params))
        if retriever is None:
            return False
        parts = getattr(retriever, "parts", None)
        return all(isinstance(p, BM25Retriever) for p in parts) if parts else isinstance(retriever, BM25Retriever)

    def find_act(self, act: str, corpus: str | None) -> LoadedCorpus:
        """The served corpus holding ``act``; ``corpus`` must be given when several do."""
        if corpus:
            return self.get(corpus)
        holders = [c for c in self.corpora.values() if act in c.article_order]
        if len(holders) == 1:
            return holders[0]
        if not holders:
            raise NotFound(f"no served corpus has act {act!r}", valid=list(self.corpora), field="id")
        raise ServiceError(f"act {act!r} is in several served corpora; name one with 'corpus'",
                           valid=[c.name for c in holders], field="corpus")

    def describe(self) -> list[dict[str, Any]]:
        out = []
        for loaded in self.corpora.values():
            corpus = loaded.corpus
            out.append({
                "name": loaded.name,
                "language": corpus.language,
                "jurisdiction": loaded.jurisdiction,
                "acts": len(loaded.article_order),
                "provisions": len(corpus),
                "units": len(loaded.units),
                "systems": list(self.settings.systems),
                "default_system": self.default_system(loaded),
                "preparing": [p.describe() for p in list(loaded.preparing.values())],
                "graph": loaded.graph.stats()["edges"] if loaded.graph is not None else None,
                "provenance": loaded.provenance,
                "dates": loaded.dates,
            })
        return out


def dated_bytes(loaded: LoadedCorpus) -> int:
    """The estimated bytes a dated corpus holds beyond its history: the corpus's lists and maps,
    the units, the graph and the retrievers' indexes. Provisions, acts and documents are not
    walked: their texts and trees are the history's own objects, kept loaded anyway (and so are
    the analyzers' tables, shared by every corpus of a language)."""
    from lexir.analysis import Analyzer
    from lexir.structure.history import StatuteHistory
    from lexir.types import Document

    return estimate_bytes(loaded, skip=(Provision, Act, Document, StatuteHistory, Analyzer, threading.Lock().__class__))


def _dates(name: str, data_dir: str | None) -> dict[str, Any] | None:
    """For a registered corpus with a history: the version dates that ``as_of`` can ask about
    (None for any other corpus, which is not loaded again to find that out)."""
    from lexir.datasets import open as open_data
    from lexir.datasets import registry

    base, day = registry.split_dated(name)
    if day is not None or base not in registry.names() or not registry.get(base).has("history"):
        return None
    history = open_data(base, data_dir=data_dir)
    dates = getattr(history, "dates", None)
    if not dates or not hasattr(history, "as_of"):
        return None
    return {"first": dates[0], "latest": dates[-1], "versions": list(dates)}


def _provenance(spec: str, corpus: Corpus, data_dir: str | None) -> dict[str, Any]:
    """Where the corpus comes from: its data files (relative paths, upstream and sha256) for a
    registered dataset; for a corpus given by path only its fingerprint (the path stays private)."""
    from lexir.datasets import is_path, registry

    info: dict[str, Any] = {"fingerprint": corpus.fingerprint}
    if is_path(spec):
        info["source"] = "local files given at start-up"
        return info
    dataset = registry.get(registry.split_dated(spec)[0])
    info["dataset"] = dataset.name
    info["description"] = dataset.description
    info["files"] = [{"path": f.path, "repository": f.repository, "commit": f.commit,
                      "upstream_path": f.upstream_path, "sha256": f.sha256} for f in dataset.all_files()]
    if dataset.name == "demo":
        info["files"] = [{"path": "lexir/jurisdictions/pl/demo/kk.json", "shipped": True}]
    return info


