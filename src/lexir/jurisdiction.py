"""Legal orders (jurisdictions): what lexir knows of one country's law, as one record.

A :class:`Jurisdiction` says which law a corpus holds (``de``: German federal law, ``at``: Austrian
federal law), apart from the language its text is analysed in (both are ``de``). Everything that
knows one legal order lives in that order's folder, ``lexir/jurisdictions/<code>/``: its statute
parsers, citation finder and act table, how its units are written, its datasets and defaults. The
folder makes its record and registers it here; the layers below the folders (citations, structure,
datasets, retrieval, the service) ask this registry and never name an order.

The registry is filled as :mod:`lexir.systems` fills the catalogue of systems: the catalogue above
(:mod:`lexir.jurisdictions`) names the folder modules with :func:`add_jurisdiction_modules`, and they
are imported on the first lookup. So adding an order is its folder plus one catalogue line.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def plain_label(label: str) -> str:
    """A unit label as printed: as stored (the default of :attr:`Jurisdiction.label`)."""
    return label


def superscript_label(label: str) -> str:
    """``4^1`` -> ``4¹``: an inserted article written with its superscript (Polish, ...)."""
    head, sep, sup = label.partition("^")
    return head + sup.translate(_SUPERSCRIPT) if sep else label


@dataclass(frozen=True)
class Jurisdiction:
    """One legal order: its code, language and how its law is written and cited.

    ``article`` and ``levels`` say how a unit is written inside a citation (``{}`` is the label):
    ``"§ {}"`` and ``{"abs": "Abs. {}"}`` give ``§ 823 Abs. 1 BGB``. ``article_head`` overrides
    ``article`` where the head depends on the article (German ``Art.`` laws, annexes): it takes the
    label as printed and the article's level. ``acts`` is the act table (``source<TAB>abbreviations
    <TAB>names``, :func:`lexir.citations.model.read_act_table`); its first abbreviation is how
    citations write an act. ``files``: the table of data files the order's datasets read (``dataset
    <TAB>path<TAB>repository<TAB>commit<TAB>upstream path<TAB>sha256``, read by
    :mod:`lexir.datasets`). ``find_citations(text, known=None, default_act=None, *, kinds=...)``
    finds the order's citations (see :mod:`lexir.citations.extract`). ``graph_default_act``: whether
    a reference that names no act cites the act being read when the statute graph is built.
    ``cited_first``: whether the LLM systems put the articles a question cites first by default
    (the Polish paper's exam questions cite their legal basis). ``recommended_cites_first``: whether
    ``recommended`` does (where the order has a citation finder; every order here does, chosen on
    development data: docs/systems.md). ``query_formats`` maps a query-file
    format name to ``loader(path, corpus) -> QuerySet``; ``corpus_reader(path) -> Corpus | None``
    reads a folder or file of this order's own format (None: not its format).
    ``home_of_language``: a corpus in this language with no jurisdiction is read as this order's
    (German text as German law; Austria, also German-language, is chosen by name).
    ``id_prefix`` is put before every act id of the order where its abbreviations would collide
    with another order's (Austria: ``AT-StGB``). ``recommended``: the order's own ``recommended``
    pipeline, where one was chosen on the order's development data (say on which beside it), else
    "" and a corpus of the order gets its language's (``lexir/analysis/data/defaults.tsv``).
    """

    code: str
    name: str
    language: str
    article: str = "{}"
    levels: Mapping[str, str] = field(default_factory=dict)
    acts: Any = None  # a path or Traversable of the act table, or None
    files: Any = None  # a path or Traversable of the data files table, or None
    find_citations: Callable[..., list] | None = None
    may_cite: Any = None  # a compiled pattern a text must match to hold a citation (None: any text may)
    label: Callable[[str], str] = plain_label
    article_head: Callable[[str, str], str] | None = None
    graph_default_act: bool = True
    cited_first: bool = False
    acts_named: Callable[[str], set[str]] | None = None  # acts a text names without citing an article
    query_formats: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    corpus_reader: Callable[[Any], Any] | None = None
    home_of_language: bool = True
    id_prefix: str = ""
    datasets: tuple[str, ...] = ()
    recommended: str = ""
    recommended_cites_first: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels", MappingProxyType(dict(self.levels)))
        object.__setattr__(self, "query_formats", MappingProxyType(dict(self.query_formats)))

    def head(self, label: str, level: str = "article") -> str:
        """How the article part of a citation is written (``§ 823``, ``art. 4¹``, ``article 1240``)."""
        printed = self.label(label)
        if self.article_head is not None:
            return self.article_head(printed, level)
        return self.article.format(printed)

    def unit(self, level: str, label: str) -> str:
        """How a unit below the article is written (``Abs. 1``, ``§ 2``, ``alinéa 2``)."""
        return self.levels.get(level, f"{level} {{}}").format(self.label(label))


_REGISTRY: dict[str, Jurisdiction] = {}
JURISDICTION_MODULES: list[str] = []
_ORDERED: list[Jurisdiction] = []  # the registry in catalogue order; made again after any change


def add_jurisdiction_modules(*modules: str) -> None:
    """Registers ``modules`` (dotted names) as ones whose import registers a jurisdiction; they are
    imported on the first lookup (:func:`get_jurisdiction`, :func:`jurisdictions`)."""
    JURISDICTION_MODULES.extend(m for m in modules if m not in JURISDICTION_MODULES)
    _ORDERED.clear()


def register_jurisdiction(jurisdiction: Jurisdiction) -> Jurisdiction:
    known = _REGISTRY.get(jurisdiction.code)
    if known is not None and known is not jurisdiction:
        raise ValueError(f"jurisdiction {jurisdiction.code!r} registered twice")
    if jurisdiction.home_of_language:
        home = next((j for j in _REGISTRY.values() if j.language == jurisdiction.language and j.home_of_language
                     and j.code != jurisdiction.code), None)
        if home is not None:
            raise ValueError(f"jurisdiction {jurisdiction.code!r}: {home.code!r} is already the home order of "
                             f"language {jurisdiction.language!r} (its text with no jurisdiction is read as "
                             f"{home.code!r} law); register it with home_of_language=False, as Austria is")
    _REGISTRY[jurisdiction.code] = jurisdiction
    _ORDERED.clear()
    return jurisdiction


def load_jurisdictions() -> None:
    """Imports every catalogue module not imported yet (each registers its order and datasets)."""
    for module in tuple(JURISDICTION_MODULES):
        if module not in sys.modules:
            importlib.import_module(module)


def _catalogue_position(order: Jurisdiction) -> int:
    """Where the catalogue names the order's folder (``lexir.jurisdictions.<code>``); orders
    registered from elsewhere come after, in the order they registered."""
    for i, module in enumerate(JURISDICTION_MODULES):
        if module.rsplit(".", 1)[-1] == order.code:
            return i
    return len(JURISDICTION_MODULES)


def jurisdictions() -> list[Jurisdiction]:
    """Every registered order, in catalogue order (whichever folder happened to be imported first)."""
    load_jurisdictions()
    if len(_ORDERED) != len(_REGISTRY):  # hit on every lookup: sorted once, not per call
        _ORDERED[:] = sorted(_REGISTRY.values(), key=_catalogue_position)
    return list(_ORDERED)


def codes() -> list[str]:
    return [j.code for j in jurisdictions()]


def get_jurisdiction(code: str) -> Jurisdiction:
    """The order of ``code``; an unknown code is a ValueError naming the valid ones."""
    load_jurisdictions()
    try:
        return _REGISTRY[code]
    except KeyError:
        raise ValueError(f"unknown jurisdiction {code!r}; valid: {', '.join(codes())}") from None


def find_jurisdiction(code: str | None = None, language: str | None = None) -> Jurisdiction | None:
    """The order named by ``code``, else the order at home in ``language`` (German text: German
    law), else None (a corpus of a language no order claims: no citations, ids as they are)."""
    if code:
        return get_jurisdiction(code)
    for j in jurisdictions():
        if language and j.language == language and j.home_of_language:
            return j
    return None


def jurisdiction_of(corpus: Any) -> Jurisdiction | None:
    """The order of a corpus (or an act): its ``jurisdiction``, else the home order of its language."""
    return find_jurisdiction(getattr(corpus, "jurisdiction", "") or None, getattr(corpus, "language", "") or None)


def named_order(corpus: Any) -> str:
    """The code of a corpus's order where its language alone would not give it (Austrian law, in
    German), else "": what caches of things an order shapes (the statute graph, indexes) add to
    their keys, so that one folder read as two orders' law is cached twice."""
    code = getattr(corpus, "jurisdiction", "") or ""
    home = find_jurisdiction(None, getattr(corpus, "language", "") or None)
    return code if code and (home is None or home.code != code) else ""


def code_of(corpus: Any) -> str:
    """The code of a corpus's legal order (:func:`jurisdiction_of`), "" when no order claims it."""
    order = jurisdiction_of(corpus)
    return order.code if order is not None else ""
