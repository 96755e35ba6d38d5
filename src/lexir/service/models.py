"""The shapes of the HTTP API: request bodies (typed strictly) and the responses the routes
answer with, so ``/openapi.json`` documents them.

Routes return their JSON directly (:func:`lexir.service.http.json_response`): a response model
documents a body, it does not walk it on every request. ``Hit`` documents what
:func:`lexir.structure.hits.format_hits` makes (the CLI's ``search --format json`` prints the
same); tests check every answer against these models, extra fields refused.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

# -- requests ----------------------------------------------------------------------------------


def _lone_surrogate(value: Any, where: tuple) -> tuple | None:
    """The place of the first string (key or value) in ``value`` that no UTF-8 can carry."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _lone_surrogate(key, (*where, key)) or _lone_surrogate(item, (*where, key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _lone_surrogate(item, (*where, i))
            if found is not None:
                return found
    return None


class Body(BaseModel):
    """A JSON request body: strict types, and every string valid Unicode."""

    model_config = ConfigDict(strict=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _unicode(cls, data: Any) -> Any:
        where = _lone_surrogate(data, ())
        if where is not None:
            field = ".".join(str(p).encode("utf-8", "backslashreplace").decode() for p in where) or "body"
            raise PydanticCustomError("surrogate", "{field}: not valid Unicode (a lone surrogate)",
                                      {"field": field})
        return data


class SearchQuery(Body):
    id: str = Field(default="", max_length=200)
    text: str


class SearchBatch(Body):
    queries: list[SearchQuery]
    k: int = 10
    system: str | None = None
    params: dict[str, str | int | float | bool] = Field(default_factory=dict)
    text: bool = True
    as_of: str | None = None


class CiteRequest(Body):
    """``jurisdiction``: the legal order whose citations to find (a registered order's code:
    ``lexir.jurisdiction.codes()``; left out: the order of the served corpora, where they are all
    one order's law); ``language`` is its old name, still accepted."""

    text: str
    jurisdiction: str | None = None
    language: str | None = None
    annotate: bool = False  # also the text as HTML with its citations marked (``annotated``)


class VerifyRequest(Body):
    quote: str
    id: str | None = None
    citation: str | None = None
    corpus: str | None = None
    threshold: float = 0.85


# -- responses ---------------------------------------------------------------------------------


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Crumb(Answer):
    """One step of a provision's place: the act, a division (``division``: no text of its own) or a unit."""

    id: str
    level: str
    label: str
    division: bool | None = None


class ActRef(Answer):
    id: str
    title: str


class PartRank(Answer):
    rank: int
    score: float


class HitDoc(Answer):
    """Anserini / Pyserini REST candidate fields."""

    id: str
    title: str
    contents: str


class Hit(Answer):
    """One ranked provision (:func:`lexir.structure.hits.format_hits`)."""

    rank: int
    score: float
    id: str
    act: ActRef
    path: list[Crumb]
    citation: str = Field(description="the unit as lawyers cite it: art. 148 § 1 k.k., § 823 Abs. 1 BGB")
    title: str
    snippet: str = Field(description="HTML-escaped window of the text, the query's words in <mark>")
    explain: dict[str, PartRank] | None = Field(None, description="a fused system: each part's rank and score")
    text: str | None = Field(None, description="the full text (unless text=false)")
    docid: str | None = None
    doc: HitDoc | None = None


class QueryEcho(Answer):
    id: str
    text: str


class SearchResult(Answer):
    query: QueryEcho
    corpus: str
    system: str
    hits: list[Hit]
    model: str | None = Field(None, description="the learned model's version that answered (lexir serve --learn)")


class SearchResults(Answer):
    results: list[SearchResult]


class Health(Answer):
    status: str
    corpora: list[str]


class Preparing(Answer):
    system: str
    done: int = Field(description="provisions indexed so far")
    total: int
    eta_s: float | None = Field(description="seconds left at the rate so far")
    error: str | None = Field(description="why the build failed (then the system stays unavailable)")


class CorpusInfo(Answer):
    name: str
    language: str
    jurisdiction: str = Field(description="the legal order whose law the corpus holds (its code); empty when none")
    acts: int
    provisions: int
    units: int
    systems: list[str]
    default_system: str = Field(description="the system that answers a request naming none: the first served one "
                                            "that is ready")
    preparing: list[Preparing] = Field(description="served systems still being built in the background")
    graph: dict[str, int] | None = Field(description="statute graph edges by kind; null without structure")
    provenance: dict[str, Any]
    dates: dict[str, Any] | None = Field(description="a corpus with a history: its version dates (for as_of)")


class Corpora(Answer):
    corpora: list[CorpusInfo]


class Ref(Answer):
    """Another provision (or an act) named from this one."""

    id: str
    citation: str
    title: str
    level: str | None = None
    label: str | None = None


class DivisionHeading(Answer):
    id: str
    depth: int
    label: str


class ProvisionAnswer(Answer):
    """A provision in its act: its place, text, neighbours, what it cites and what cites it, and
    the context asked for (parent, children, siblings, toc)."""

    corpus: str
    id: str
    level: str
    label: str
    title: str
    act: ActRef
    path: list[Crumb]
    citation: str
    text: str
    article: str
    prev: Ref | None
    next: Ref | None
    cites: list[Ref] | None
    cited_by: list[Ref] | None
    parent: Ref | None = None
    children: list[Ref] | None = None
    siblings: list[Ref] | None = None
    toc: list[Ref] | None = None
    toc_divisions: dict[str, list[DivisionHeading]] | None = None


class Span(Answer):
    start: int
    end: int
    text: str


class FoundCitation(Answer):
    """A citation found in the text; ``unit_ids`` / ``citations``: every unit it names (``§ 5 Abs. 1
    Satz 1 und 4``: two), ``unit_id`` / ``citation`` the first."""

    span: Span
    act_raw: str
    act: str | None
    article: str | None
    path: dict[str, str]
    id: str | None
    kind: str
    resolved_from: str | None
    repealed: bool
    also: list[dict[str, str]]
    instrument: str | None
    following: bool = False
    unit_id: str | None
    citation: str | None
    unit_ids: list[str]
    citations: list[str]
    corpora: list[str]


class Citations(Answer):
    jurisdiction: str
    language: str  # the same code (its old name)
    citations: list[FoundCitation]
    annotated: str | None = Field(default=None, description="with annotate: the text as HTML, each citation a "
                                  "<cite data-id=...>, linked to its page where a served corpus holds it")


class Verification(Answer):
    corpus: str
    id: str
    citation: str
    verified: bool
    match: str
    score: float
    span: Span | None
    reason: str | None = None
