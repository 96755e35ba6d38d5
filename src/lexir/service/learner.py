"""Learning while serving (``lexir serve --learn``): the page's marks train ``recommended``'s model
in the background, and a better-or-equal model is swapped in without dropping a request.

For each served corpus a learner thread

1. **watches** ``MODELS/<corpus>/current`` (:mod:`lexir.learning.versions`) every ``watch_s``
   seconds and serves the version it names (``lexir models use`` writes it; every worker process of
   a server watches the same file);
2. **counts** the marks made since the last version it tried (``every_s``); once there are at
   least ``min_marks`` new marks on at least ``min_questions`` new questions, and the marks come
   from at least ``min_judges`` judges, it trains ``recommended`` (``lexir train recommended``,
   base: the first served system) on the corpus's own judged questions, if it has some
   (``data=auto``; ``data=none``: the marks only; or a dataset named) plus the marks of the
   training side (:mod:`lexir.learning.marks`: split by question, a cap per judge, contradicted
   marks weighed down);
3. **compares** the candidate with the served model by nDCG@10 on the held-out questions' marks
   (neither model trained on them) and keeps it as the next version either way (``learn.json``
   records the verdict); it serves the candidate only where it is not worse (``candidate >=
   served - margin``): it points ``current`` at it and swaps the retriever.

The swap replaces the served system's retriever in the corpus's retriever table under the
corpus's build lock; a request holds the retriever it started with, so requests in flight finish on
the old model and later ones get the new one. Each retriever carries its ``model_version``, which
every search answer names (``"model"``) and the page shows.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request

from lexir.learning.versions import BASE, Busy, ModelVersions
from lexir.service.http import json_response, state_of
from lexir.service.state import LoadedCorpus, ServiceState, _param_key

log = logging.getLogger("lexir.service.learner")
MEASURE = "nDCG@10"


@dataclass
class LearnSettings:
    """``lexir serve --learn`` and its ``--learn-option KEY=VALUE``s."""

    models: str = ""  # the models folder (default: the cache's models/)
    min_marks: int = 50  # new marks before a retrain
    min_questions: int = 10  # ... on at least this many distinct questions
    min_judges: int = 2  # judges whose marks are learned from (after the cap)
    cap: float = 0.5  # the largest share of the training marks one judge may contribute
    heldout: float = 0.3  # share of the questions held out to compare models (by a hash of the question)
    margin: float = 0.0  # a candidate is served when its held-out nDCG@10 >= the served one's - margin
    every_s: float = 30.0  # how often the new marks are counted
    watch_s: float = 2.0  # how often `current` is read
    data: str = "auto"  # the corpus's own training questions: auto | none | a registered dataset
    params: dict = field(default_factory=dict)  # lexir train's -p for the candidates (e.g. dense=off)

    @classmethod
    def parse(cls, options: list[str], models: str = "") -> LearnSettings:
        """From ``KEY=VALUE`` strings; ``train.KEY=VALUE`` goes to lexir train's ``-p``."""
        types = {f.name: f.type for f in fields(cls)}
        values: dict[str, Any] = {"models": models, "params": {}}
        for option in options:
            key, sep, value = option.partition("=")
            key = key.strip()
            if not sep:
                raise ValueError(f"--learn-option {option!r}: expected KEY=VALUE")
            if key.startswith("train."):
                values["params"][key[6:]] = value
                continue
            if key not in types or key in ("models", "params"):
                valid = [n for n in types if n not in ("models", "params")] + ["train.PARAM"]
                raise ValueError(f"--learn-option {key!r}: no such option; valid: {', '.join(valid)}")
            kind = {"int": int, "float": float, "str": str}[str(types[key])]
            try:
                values[key] = kind(value)
            except ValueError:
                raise ValueError(f"--learn-option {key}={value!r}: expected {kind.__name__}") from None
        settings = cls(**values)
        if not 0 < settings.cap < 1 or not 0 < settings.heldout < 1:
            raise ValueError("--learn-option cap and heldout are shares between 0 and 1 (exclusive)")
        if min(settings.min_marks, settings.min_questions, settings.min_judges) < 1 or settings.every_s <= 0 \
                or settings.watch_s <= 0:
            raise ValueError("--learn-option min_* must be >= 1 and every_s, watch_s > 0")
        return settings

    def root(self) -> Path:
        from lexir.io.paths import cache_dir

        return Path(self.models) if self.models else cache_dir() / "models"


class Learner:
    """The learner of a server: one daemon thread for all served corpora."""

    def __init__(self, state: ServiceState, judgements, settings: LearnSettings) -> None:
        self.state, self.judgements, self.settings = state, judgements, settings
        self.system = state.settings.systems[0]
        self.served: dict[str, str] = {}  # corpus -> version served in this process
        self.training: set[str] = set()
        self.failed: dict[str, float] = {}  # corpus -> marks time of a training that failed (wait for newer)
        self.last_error: dict[str, str] = {}
        self.refused: dict[str, tuple] = {}  # corpus -> (version, its files' stamps) that could not be served
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._base_data: dict[str, Any] = {}

    # -- serving a version ------------------------------------------------------------------

    def store(self, name: str) -> ModelVersions:
        return ModelVersions(self.settings.root(), name)

    def build(self, loaded: LoadedCorpus, version: str, seen: str = "refuse"):
        """The retriever of ``version`` over ``loaded`` (``base``: the served system itself)."""
        from lexir.retrieval.build import build_retriever

        if version == BASE:
            return build_retriever(loaded.corpus, self.system)
        path = self.store(loaded.name).path(version)
        return build_retriever(loaded.corpus, "recommended", {"model": str(path), "seen": seen})

    def swap(self, loaded: LoadedCorpus, version: str, retriever=None) -> None:
        """Serve ``version``: its retriever replaces the served one in one assignment under the
        corpus's build lock; requests that hold the old one finish on it."""
        retriever = retriever if retriever is not None else self.build(loaded, version)
        retriever.model_version = version
        with loaded.build_lock:
            loaded.retrievers[_param_key(self.system, {})] = retriever
            self.served[loaded.name] = version
        log.info("corpus %s: serving model %s", loaded.name, version)

    def sync(self, name: str) -> None:
        """Serve the version ``current`` names, where it is not the one served."""
        loaded = self.state.corpora[name]
        if self.system in loaded.preparing:  # still built in the background (lexir.service.preparing)
            return
        wanted = self.store(name).current()
        if self.served.get(name) == wanted:
            return
        if wanted == BASE and name not in self.served:  # at start-up, with no learned model: as built
            self.swap(loaded, BASE, loaded.retrievers[_param_key(self.system, {})])
            return
        refused = (wanted, self._stamp(name, wanted))
        if self.refused.get(name) == refused and name in self.served:
            return  # refused already, and neither the pointer nor that version changed since
        try:
            self.swap(loaded, wanted)
        except Exception as exc:  # noqa: BLE001 - a bad pointer or model must not stop serving the old one
            self.last_error[name] = f"cannot serve {wanted}: {exc}"
            if self.refused.get(name, ("",))[0] != wanted:  # once per pointer value, not every watch interval
                log.error("corpus %s: cannot serve model %s: %s", name, wanted, exc)
            self.refused[name] = refused
            if name not in self.served:  # at start-up: the plain system, named base
                self.swap(loaded, BASE, loaded.retrievers[_param_key(self.system, {})])
        else:
            self.refused.pop(name, None)

    def _stamp(self, name: str, version: str) -> tuple:
        """When the files of ``version`` last changed (a refused version is tried again after)."""
        try:
            folder = self.store(name).path(version)
        except ValueError:
            return ()
        stamps = []
        try:  # every file of the version (its manifest, questions, ranker, adapter, learn.json)
            paths = [folder, *sorted(p for p in folder.iterdir() if p.is_file())]
        except OSError:
            paths = [folder]
        for path in paths:
            try:
                stat = path.stat()
                stamps.append((path.name, stat.st_mtime_ns, stat.st_size))
            except OSError:
                stamps.append((path.name, None, None))
        return tuple(stamps)

    def start(self) -> Learner:
        for name in self.state.corpora:
            self.sync(name)  # before the first request: the version current names
        self._thread = threading.Thread(target=self._loop, name="lexir-learner", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        next_count = 0.0
        while not self._stop.wait(self.settings.watch_s if next_count else 0):
            for name in list(self.state.corpora):
                try:
                    self.sync(name)
                    if time.monotonic() >= next_count:
                        self.maybe_train(name)
                except Exception as exc:  # noqa: BLE001 - the learner never takes the server down
                    self.last_error[name] = str(exc)
                    log.exception("learner: corpus %s", name)
            if time.monotonic() >= next_count:
                next_count = time.monotonic() + self.settings.every_s

    # -- learning ---------------------------------------------------------------------------

    def pending(self, name: str) -> dict[str, Any]:
        """The marks since the last version tried: how many, on how many questions."""
        since = max(self.store(name).last_record().get("marks_until", 0.0), self.failed.get(name, 0.0))
        rows = self.judgements.rows(name, since)
        return {"marks": len(rows), "questions": len({r[0] for r in rows}), "since": since}

    def ready(self, name: str) -> bool:
        new = self.pending(name)
        return new["marks"] >= self.settings.min_marks and new["questions"] >= self.settings.min_questions

    def maybe_train(self, name: str) -> dict[str, Any] | None:
        """Train, compare and maybe serve a candidate, where enough new marks wait (else None)."""
        if not self.ready(name):
            return None
        try:
            with self.store(name).locked() as store:
                if not self.ready(name):  # another process trained meanwhile
                    return None
                return self._train(name, store)
        except Busy:
            return None

    def _train(self, name: str, store: ModelVersions) -> dict[str, Any] | None:
        from lexir.learning.marks import mark_data
        from lexir.learning.model import text_fingerprint
        from lexir.learning.train import train_system
        from lexir.types import QuerySet

        loaded = self.state.corpora[name]
        rows = self.judgements.rows(name)
        until = max(r[5] for r in rows)
        data = mark_data(rows, cap=self.settings.cap, heldout=self.settings.heldout)
        why = ""
        if data.stats["judges"] < self.settings.min_judges:
            why = f"marks of {data.stats['judges']} judge(s) after the cap; {self.settings.min_judges} needed"
        elif not data.heldout_queries:
            why = "no held-out question has a relevant mark yet: nothing to compare the models on"
        if why:  # asked again at the next count, when more marks (or judges) may have come
            if self.last_error.get(name) != why:
                log.info("corpus %s: no retrain: %s", name, why)
            self.last_error[name] = why
            return None
        held_texts = {text_fingerprint(q.text) for q in data.heldout_queries}
        base_queries, base_qrels, described = self.base_data(loaded)
        kept = [q for q in base_queries if text_fingerprint(q.text) not in held_texts]  # held out stays held out
        queries = kept + data.train_queries
        qrels = {**{q.id: {d: 2 * g for d, g in base_qrels[q.id].items()} for q in kept}, **data.train_qrels}
        qset = QuerySet(f"{name}-marks", queries, qrels)
        candidate = store.candidate_dir()
        self.training.add(name)
        try:
            started = time.perf_counter()
            manifest = train_system("recommended", loaded.corpus, qset, candidate,
                                    data={"marks": data.stats, "base_data": described},
                                    params={"base": self.system, **self.settings.params})
            seconds = time.perf_counter() - started
            served = self.served.get(name, store.current())
            scores = {"candidate": self.score(self.build_candidate(loaded, candidate), data),
                      "served": self.score(self.build(loaded, served, seen="allow"), data)}
        except ValueError as exc:  # too few usable questions, a base that cannot be built ...
            self.failed[name], self.last_error[name] = until, f"training failed: {exc}"
            log.warning("corpus %s: training failed: %s", name, exc)
            return None
        finally:
            self.training.discard(name)
        accepted = scores["candidate"] >= scores["served"] - self.settings.margin
        record = {
            "verdict": "accepted" if accepted else "refused",
            "heldout": {"measure": MEASURE, "questions": len(data.heldout_queries), "candidate": scores["candidate"],
                        "served": scores["served"], "served_version": served, "margin": self.settings.margin},
            "marks": data.stats, "marks_until": until, "base_data": described,
            "training_questions": manifest["training"]["queries"], "train_seconds": round(seconds, 2),
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        version = store.add(candidate, record)
        record["version"] = version
        log.info("corpus %s: candidate %s %s (held-out %s %.4f vs %.4f of %s)", name, version, record["verdict"],
                 MEASURE, scores["candidate"], scores["served"], served)
        if accepted:
            retriever = self.build(loaded, version)  # built before the pointer moves: a failure serves the old
            store.use(version)
            self.swap(loaded, version, retriever)
        self.last_error.pop(name, None)
        return record

    def build_candidate(self, loaded: LoadedCorpus, folder: Path):
        from lexir.retrieval.build import build_retriever

        return build_retriever(loaded.corpus, "recommended", {"model": str(folder), "seen": "allow"})

    def score(self, retriever, data) -> float:
        from lexir.evaluation import evaluate

        run = retriever.search_many(data.heldout_queries, 100)
        return round(evaluate(run, data.heldout_qrels, [MEASURE]).mean(MEASURE), 6)

    def base_data(self, loaded: LoadedCorpus) -> tuple[list, Mapping[str, Mapping[str, int]], dict[str, Any]]:
        """The corpus's own judged questions (``data``), loaded once: (queries, qrels, description)."""
        if loaded.name in self._base_data:
            return self._base_data[loaded.name]
        from lexir.datasets import open as open_data
        from lexir.types import Benchmark

        source = self.settings.data
        found: tuple = ([], {}, {"data": "none"})
        if source != "none":
            name = loaded.name if source == "auto" else source
            try:
                bench = open_data(name, data_dir=self.state.settings.data_dir, want="queries")
            except Exception as exc:  # noqa: BLE001 - auto: a corpus without questions
                if source != "auto":
                    raise ValueError(f"learn data {source!r}: {exc}") from None
                bench = None
            if isinstance(bench, Benchmark) and bench.queries.qrels:
                known = set(loaded.corpus.ids)
                queries = [q for q in bench.queries.queries
                           if any(g > 0 and d in known for d, g in bench.queries.qrels.get(q.id, {}).items())]
                found = (queries, bench.queries.qrels, {"data": name, "questions": len(queries)})
        self._base_data[loaded.name] = found
        return found

    def status(self, name: str) -> dict[str, Any]:
        store = self.store(name)
        return {"corpus": name, "model": self.served.get(name, BASE), "current": store.current(),
                "training": name in self.training, "pending": self.pending(name),
                "thresholds": {"min_marks": self.settings.min_marks, "min_questions": self.settings.min_questions,
                               "min_judges": self.settings.min_judges, "cap": self.settings.cap,
                               "heldout": self.settings.heldout, "margin": self.settings.margin},
                "last_error": self.last_error.get(name), "versions": store.describe()}


router = APIRouter(tags=["learning"])


@router.get("/v1/{corpus}/model")
def model_status(corpus: str, request: Request):
    """The learned model a corpus serves, its versions and the marks waiting (lexir serve --learn)."""
    state_of(request).get(corpus)  # 404 for a corpus not served
    return json_response(request.app.state.learner.status(corpus))


def mount_learning(app, state: ServiceState) -> Learner:
    """Start the learner of ``state`` (serving each corpus's ``current`` version before the first
    request) and add ``GET /v1/{corpus}/model``, what it serves and what it learned."""
    app.state.learner = Learner(state, app.state.judgements, state.settings.learn).start()
    app.include_router(router)
    return app.state.learner
