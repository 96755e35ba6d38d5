"""The catalogue of every system: retrieval's, and those of the layers above it.

:mod:`lexir.retrieval.base` holds the registry (``register_system``, ``get_system``) and the
modules of retrieval's own systems; it never names the layers above it. This module, above
``retrieval``, ``llm`` and ``learning``, adds the modules of theirs, so that ``get_system``,
``build_retriever`` (and a composite's parts) and ``lexir systems`` see the whole catalogue.
``import lexir`` loads it (every ``lexir.*`` import runs ``lexir/__init__`` first); the system
modules themselves are imported on the first lookup, not here.
"""

from __future__ import annotations

from lexir.retrieval.base import add_system_modules, get_system, system_names

add_system_modules(
    "lexir.learning.recommended",
    "lexir.learning.systems",
    "lexir.llm.systems",
)

__all__ = ["get_system", "system_names"]
