"""What a system is built with beyond its parameters, and how a composite builds its parts.

:func:`lexir.retrieval.build.build_retriever` makes one :class:`BuildContext` per build: the gold
(``qrels``, for the oracle controls), the LLM ``client``, the ``progress`` callback and whether the
index cache is used. A factory that declares a ``context`` parameter receives it, and a composite
(fusion, feedback, cascade, controls, LLM and trained systems) builds each part with
:meth:`BuildContext.build`, so every part goes through the same door: the index cache (or not),
the same gold, the same client.

This module sits at the bottom of retrieval and imports nothing that builds: the builder (the
front door itself) is handed in by ``build_retriever``, so a composite never imports
``lexir.retrieval.build``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lexir.types import Corpus, Qrels

if TYPE_CHECKING:
    from lexir.retrieval.base import Retriever

Progress = Callable[[int], None]


@dataclass(frozen=True)
class BuildContext:
    """The context of one build, handed to every part of a composite.

    ``qrels``: the gold of the queries the system will answer (``oracle``, ``oracle-act``);
    ``client``: the LLM client the LLM systems share (so their calls add up in one accounting);
    ``progress``: called with a count of documents indexed; ``cache``: whether indexes are read
    from and saved to the index cache. ``builder`` is ``build_retriever`` (set by it)."""

    qrels: Qrels | None = None
    client: Any = None
    progress: Progress | None = None
    cache: bool = True
    builder: Callable[..., Retriever] | None = field(default=None, repr=False, compare=False)

    def build(self, spec: str, corpus: Corpus, progress: Progress | None = None) -> Retriever:
        """The part ``spec`` (``bm25(mode=stem)``) over ``corpus``, with this context's gold, client
        and cache setting. ``progress`` is the part's own callback (None: the part reports nothing;
        a composite passes ``context.progress`` to the part whose indexing the caller counts)."""
        if self.builder is None:
            raise RuntimeError(f"cannot build the part {spec!r}: this context has no builder "
                               "(build systems with lexir.retrieval.build.build_retriever)")
        return self.builder(corpus, str(spec), context=replace(self, progress=progress))

    def build_all(self, specs: Iterable[Any], corpus: Corpus) -> list[Retriever]:
        """Several parts over the same ``corpus`` (a fusion's), this context's progress shared
        between them: each indexes the whole corpus, so each reports its share of what it counts
        and the caller's count ends at the corpus size."""
        specs = [str(spec) for spec in specs]
        share = shared_progress(self.progress, len(specs))
        return [self.build(spec, corpus, share) for spec in specs]


def shared_progress(progress: Progress | None, parts: int) -> Progress | None:
    """A callback for ``parts`` builds that each count the same total: it passes on one
    ``parts``-th of everything it is told (the remainder carried, so the sum comes out whole)."""
    if progress is None or parts <= 1:
        return progress
    lock = threading.Lock()
    told = reported = 0

    def report(n: int) -> None:
        nonlocal told, reported
        with lock:
            told += n
            due = told // parts - reported
            reported += due
        if due:
            progress(due)

    return report
