"""What the service does, whatever the transport: search, provisions in context, citations and
quote checks. The HTTP API, the web page and the MCP server all call these functions, so a
hit or a provision has one shape everywhere and every limit is checked once.

Every function checks its input and raises :class:`~lexir.service.state.ServiceError` (400)
or :class:`~lexir.service.state.NotFound` (404) with what would have been valid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lexir.citations.format import division_heading, division_starts, format_citation
from lexir.jurisdiction import code_of
from lexir.retrieval.base import explains
from lexir.service.hits import verify_quote
from lexir.service.state import LoadedCorpus, NotFound, Seen, ServiceError, ServiceState
from lexir.structure.hits import breadcrumbs, citation, format_hits, hit_analyzer, matched_words, query_terms
from lexir.types import Query, ranked

# The longest id (or written citation) a request may name: the longest real id is far shorter; a
# longer one is refused, not looked up (nor echoed back in a 404).
MAX_ID_CHARS = 500

CONTEXTS = ("parent", "children", "siblings", "toc")


def check_text(text: Any, where: str) -> str:
    """``text`` if it is a string that is valid Unicode; a lone surrogate (JSON ``"\\ud800"``,
    which no UTF-8 can carry) is refused here, before analysis or an echo in a response."""
    if not isinstance(text, str):
        raise ServiceError(f"{where} must be a string", field=where)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ServiceError(f"{where} is not valid Unicode: a lone surrogate at character {err.start}",
                           field=where) from None
    return text


def check_query(state: ServiceState, text: Any, where: str = "q") -> str:
    if not isinstance(text, str):
        raise ServiceError("a query must be a string", field=where)
    check_text(text, where)
    if not text.strip():
        raise ServiceError("the query is empty", field=where)
    limit = state.settings.max_query_chars
    if len(text) > limit:
        raise ServiceError(f"the query has {len(text)} characters; at most {limit} are accepted", field=where)
    return text


def check_k(state: ServiceState, k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, int):
        raise ServiceError("k must be an integer", field="k")
    if not 1 <= k <= state.settings.max_k:
        raise ServiceError(f"k must be between 1 and {state.settings.max_k}; got {k}", field="k")
    return k


def request_retriever(state: ServiceState, loaded: LoadedCorpus, system: str | None,
                      params: Mapping[str, Any] | None = None, typed: Mapping[str, Any] | None = None):
    """The retriever a request asks for: a served ``system`` (or an allowed variant) with the
    request's parameters, built by nobody. ``params`` are strings (a URL's ``param=k1:0.9``);
    ``typed`` are JSON values, taken only as their own type (``true`` is no number, ``"5"`` none).

    A parameter that changes the index (``k1``, ``title_weight``, ``mode`` ...) may differ from the
    served system's only where the operator named that variant at start-up (``lexir serve
    --variant``); query-time parameters (``dedupe_query``, fusion ``k``/``k0``/``weights``/``depth``,
    feedback ``docs``) are applied to the built retriever (:meth:`Retriever.with_params`)."""
    from lexir.retrieval.base import get_system
    from lexir.retrieval.spec import parse_spec

    served = state.retriever(loaded, system, {})  # refuses a system that is not served
    if not params and not typed:
        return served
    system = system or state.default_system(loaded)
    spec = parse_spec(system)
    definition = get_system(spec.name)
    try:
        base = definition.resolve(spec.param_dict)
        wanted = definition.resolve({**spec.param_dict, **dict(params or {})}, strict=typed)
    except ValueError as exc:
        raise ServiceError(str(exc), field="params",
                           valid=sorted(definition.params) if "has no parameter" in str(exc) else None) from None
    query_time = set(definition.query_time())
    fixed = sorted(k for k, v in wanted.items() if v != base[k] and k not in query_time)
    retriever = served
    if fixed:
        for variant in state.settings.variants:
            vspec = parse_spec(variant)
            if vspec.name != spec.name:
                continue
            values = definition.resolve(vspec.param_dict)
            if all(values[k] == wanted[k] for k in values if k not in query_time):
                retriever, base = state.retriever(loaded, variant, {}), values
                break
        else:
            shown = ", ".join(f"{k}={wanted[k]!r}" for k in fixed)
            allowed = ", ".join(sorted(query_time)) or "none"
            raise ServiceError(f"{shown}: fixed on this server for {system!r} (another value needs a new index); "
                               f"query-time parameters: {allowed}; other values only as variants the operator "
                               "allows at start-up (lexir serve --variant)", field="params", valid=sorted(query_time))
    changes = {k: v for k, v in wanted.items() if k in query_time and v != base[k]}
    if not changes:
        return retriever
    try:
        varied = retriever.with_params(changes)
    except ValueError as exc:
        raise ServiceError(f"{', '.join(sorted(changes))}: fixed on this server for {system!r} ({exc})",
                           field="params") from None
    if getattr(served, "model_version", None) is not None:
        varied.model_version = served.model_version
    return varied


def parse_param_pairs(pairs: Sequence[str]) -> dict[str, str]:
    """``["k1:0.9", "b=0.4"]`` -> ``{"k1": "0.9", "b": "0.4"}`` (``:`` or ``=``)."""
    out = {}
    for pair in pairs:
        for sep in (":", "="):
            key, found, value = pair.partition(sep)
            if found and key.strip():
                out[key.strip()] = value.strip()
                break
        else:
            raise ServiceError(f"bad parameter {pair!r}: expected key:value", field="param")
    return out


def search(state: ServiceState, corpus: str, queries: Sequence[tuple[str, str]], k: int = 10,
           system: str | None = None, params: Mapping[str, Any] | None = None,
           with_text: bool = True, as_of: str | None = None,
           typed: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Ranked hits for each ``(query id, text)``; one ``{"query", "hits"}`` per query. With
    ``as_of``, among the provisions in force on that date only (a corpus with a history).
    ``params`` (strings) and ``typed`` (JSON values): see :func:`request_retriever`."""
    loaded = state.get(corpus, as_of)
    k = check_k(state, k)
    if len(queries) > state.settings.max_batch:
        raise ServiceError(f"{len(queries)} queries in one batch; at most {state.settings.max_batch}",
                           field="queries")
    if len(queries) * k > state.settings.max_hits:
        raise ServiceError(f"{len(queries)} queries at k={k} ask for up to {len(queries) * k:,} hits; at most "
                           f"{state.settings.max_hits:,} a request (fewer queries a request, or a smaller k)",
                           field="k")
    texts = [check_query(state, text, f"queries[{i}].text") for i, (_, text) in enumerate(queries)]
    for i, (qid, _) in enumerate(queries):
        check_text(qid, f"queries[{i}].id")
    system = system or state.default_system(loaded)  # once: a background build may end meanwhile
    retriever = request_retriever(state, loaded, system, params, typed)
    analyze = hit_analyzer(retriever, loaded.language)
    # One batch through the retriever (its own batched search), under ids of our own: two queries
    # of a batch may carry the same id.
    batch = [Query(str(i), text) for i, text in enumerate(texts)]
    explained = None
    try:
        if explains(retriever):  # a fused system: each part's rank and score beside the hit
            run, explained = retriever.explain_many(batch, k)
        else:
            run = retriever.search_many(batch, k)
    except ValueError as exc:  # a served model refuses the questions it was trained on (409)
        from lexir.learning.qa import SeenQueryError

        if not isinstance(exc, SeenQueryError):
            raise
        version = getattr(retriever, "model_version", None) or "served"
        raise Seen(f"the {version} model was trained on this question ({exc.args[0].split(' questions (')[0]} "
                   "questions of the request): its answer would measure memory, not retrieval", field="q") from None
    shown = system
    model = getattr(retriever, "model_version", None)  # the learned model that answered (lexir serve --learn)
    out = []
    for (qid, _), q in zip(queries, batch, strict=True):
        results = ranked(run.get(q.id, {}))[:k]
        hits = format_hits(loaded, results, q.text, analyze, with_text,
                           explained.get(q.id, {}) if explained is not None else None)
        answer = {"query": {"id": qid, "text": q.text}, "corpus": loaded.name, "system": shown, "hits": hits}
        if model is not None:
            answer["model"] = model
        out.append(answer)
    return out


def _ref(loaded: LoadedCorpus, unit_id: str) -> dict[str, Any]:
    unit = loaded.units.get(unit_id)
    if unit is None:  # an act node of the graph
        act = loaded.corpus.acts.get(unit_id)
        return {"id": unit_id, "citation": unit_id, "title": act.title if act else ""}
    p = unit.provision
    return {"id": unit_id, "citation": citation(loaded, unit_id), "level": p.level, "label": p.label,
            "title": p.title}


def provision(state: ServiceState, corpus: str, unit_id: str, context: Sequence[str] = (),
              as_of: str | None = None) -> dict[str, Any]:
    """A provision with its place in the act, what it cites and what cites it, and the context
    asked for: ``parent``, ``children``, ``siblings`` (all units under the same parent), ``toc``
    (the act's articles). With ``as_of``, the provision as it stood on that date."""
    loaded = state.get(corpus, as_of)
    if not isinstance(unit_id, str) or len(unit_id) > MAX_ID_CHARS:
        raise ServiceError(f"an id is a string of at most {MAX_ID_CHARS} characters", field="id")
    bad = [c for c in context if c not in CONTEXTS]
    if bad:
        raise ServiceError(f"unknown context {bad[0]!r}; valid: {', '.join(CONTEXTS)}", valid=CONTEXTS,
                           field="context")
    unit = loaded.unit(unit_id)
    p = unit.provision
    article_id = unit_id.split("/", 1)[0]
    order = loaded.article_order.get(unit.act.id, [])
    position = order.index(article_id) if article_id in order else -1
    out: dict[str, Any] = {
        "corpus": loaded.name,
        "id": unit_id,
        "level": p.level,
        "label": p.label,
        "title": p.title,
        "act": {"id": unit.act.id, "title": unit.act.title},
        "path": breadcrumbs(loaded, unit_id),
        "citation": citation(loaded, unit_id),
        "text": p.text,
        "article": article_id,
        "prev": _ref(loaded, order[position - 1]) if position > 0 else None,
        "next": _ref(loaded, order[position + 1]) if 0 <= position < len(order) - 1 else None,
        "cites": None,
        "cited_by": None,
    }
    graph = loaded.graph
    if graph is not None and unit_id in graph:
        out["cites"] = [_ref(loaded, t) for t in graph.cites_within(unit_id)]
        out["cited_by"] = [_ref(loaded, s) for s in cited_by_within(graph, unit_id)]
    if "parent" in context:
        out["parent"] = _ref(loaded, unit.parent) if unit.parent else {"id": unit.act.id, "level": "act",
                                                                       "title": unit.act.title}
    if "children" in context:
        out["children"] = [_ref(loaded, c.id) for c in p.children]
    if "siblings" in context:
        if unit.parent:
            out["siblings"] = [_ref(loaded, c.id) for c in loaded.units[unit.parent].provision.children]
        else:
            out["siblings"] = [_ref(loaded, a) for a in order[max(0, position - 5):position + 6]]
    if "toc" in context:
        out["toc"] = [_ref(loaded, a) for a in order]
        # the headings of the divisions (Buch, Abschnitt, ...) that open at each article of the toc
        out["toc_divisions"] = {a: [{"id": d.id, "depth": depth, "label": division_heading(d)} for depth, d in ds]
                                for a, ds in division_starts(unit.act).items()}
    return out


def cited_by_within(graph, node: str) -> list[str]:
    """Units outside ``node``'s subtree that cite ``node`` or any unit inside it, in graph order."""
    start = graph.index[node]
    inside = set(graph._subtree(start))
    seen: dict[int, None] = {}
    for i in graph._subtree(start):
        for j in graph.neighbour_indices(i, "cited_by").tolist():
            if j not in inside:
                seen.setdefault(j, None)
    return [graph.ids[j] for j in sorted(seen)]


def cite(state: ServiceState, text: Any, jurisdiction: Any, annotated: bool = False) -> dict[str, Any]:
    """The citations in ``text``: span, act as written, canonical id (or null), the cited unit's id
    and citation, every unit one citation names (``§ 5 Abs. 1 Satz 1 und 4``: two; ``unit_ids``,
    ``citations``), and the served corpora holding the cited article; with ``annotated``, the text
    as HTML with its citations marked, each linked to its page where a served corpus holds it."""

    from lexir.citations.annotate import annotate
    from lexir.citations.extract import citation_codes, find_citations

    if not isinstance(text, str):
        raise ServiceError("text must be a string", field="text")
    if len(text) > state.settings.max_text_chars:
        raise ServiceError(f"text has {len(text)} characters; at most {state.settings.max_text_chars}",
                           field="text")
    valid = citation_codes()
    if jurisdiction is None:  # not named: the order of the served corpora, where they are all one order's law
        served = sorted({code_of(lc.corpus) for lc in state.corpora.values()} - {""})
        if len(served) != 1:
            raise ServiceError("give jurisdiction: the legal order whose citations to find"
                               + (f" (the served corpora are the law of {', '.join(served)})" if served else ""),
                               valid=valid, field="jurisdiction")
        jurisdiction = served[0]
    if jurisdiction not in valid:
        raise ServiceError(f"no citation finder for jurisdiction {jurisdiction!r}", valid=valid, field="jurisdiction")
    out = []
    found = find_citations(text, jurisdiction)
    for c in found:
        item = c.to_json()
        item["act_raw"] = c.act_raw
        item["unit_id"] = c.unit_id
        item["citation"] = format_citation(c.unit_id, jurisdiction) if c.unit_id else None
        item["unit_ids"] = list(c.unit_ids)
        item["citations"] = [format_citation(uid, jurisdiction) for uid in c.unit_ids]
        item["corpora"] = [name for name, lc in state.corpora.items() if c.id and c.id in lc.units]
        out.append(item)
    answer = {"jurisdiction": jurisdiction, "language": jurisdiction, "citations": out}
    if annotated:
        answer["annotated"] = annotate(text, found, lambda c: next(
            (page_link(lc, c.unit_id) for lc in state.corpora.values() if c.id in lc.units), None))
    return answer


def deepest_unit(loaded: LoadedCorpus, unit_id: str) -> str | None:
    """The deepest unit of ``unit_id``'s path that ``loaded`` holds (``kk::148/par:9`` -> ``kk::148``
    where § 9 does not exist), None when not even its article is there."""
    while unit_id not in loaded.units and "/" in unit_id:
        unit_id = unit_id.rsplit("/", 1)[0]
    return unit_id if unit_id in loaded.units else None


def page_link(loaded: LoadedCorpus, unit_id: str) -> str | None:
    """The page of the deepest unit of ``unit_id`` that ``loaded`` holds (``/p/CORPUS/ID``), or None."""
    from urllib.parse import quote

    uid = deepest_unit(loaded, unit_id)
    return f"/p/{quote(loaded.name, safe='')}/{quote(uid, safe=':/@')}" if uid else None


def annotated_text(state: ServiceState, corpus: str, unit_id: str, text: str, query: str = "") -> str:
    """A provision's text as HTML with the citations in it marked (its legal order's finder, the
    provision's own act for references naming none where the order reads them so), each linked to
    the cited unit's page in ``corpus`` where it is there, and the words ``query`` matches in
    ``<mark>`` as a search's snippet marks them (the default system's analyzer): what the page shows."""

    from lexir.citations.annotate import annotate
    from lexir.jurisdiction import find_jurisdiction

    loaded = state.get(corpus)
    marks: list[tuple[int, int]] = []
    if query:
        try:
            analyze = hit_analyzer(state.retriever(loaded, None, {}), loaded.language)
        except ServiceError:  # the default system still building: the language's own analyzer
            analyze = hit_analyzer(None, loaded.language)
        marks = matched_words(text, query_terms(query, analyze), analyze)
    order = find_jurisdiction(loaded.jurisdiction or None)
    if order is None or order.find_citations is None:
        return annotate(text, [], marks=marks)
    act = unit_id.split("::", 1)[0]
    found = order.find_citations(text, default_act=act if order.graph_default_act else None)

    return annotate(text, found, lambda c: page_link(loaded, c.unit_id) if c.unit_id else None, marks=marks)


def resolve_target(state: ServiceState, id_or_citation: str, corpus: str | None,
                   is_citation: bool | None = None, as_of: str | None = None) -> tuple[LoadedCorpus, str]:
    """A served unit from an id (``kc::415``) or a written citation (``art. 415 k.c.``), each at
    most :data:`MAX_ID_CHARS` characters (an over-long one is refused, never echoed). With
    ``as_of``, a citation is read against the law in force on that date (corpora with a history:
    § 651 BGB of 2013 is no § of today's BGB); the corpus returned is the served one, undated."""
    from lexir.citations.extract import citation_codes, find_citations

    if is_citation is None:
        is_citation = isinstance(id_or_citation, str) and "::" not in id_or_citation
    if not isinstance(id_or_citation, str) or len(id_or_citation) > MAX_ID_CHARS:
        raise ServiceError(f"{'a citation' if is_citation else 'an id'} is a string of at most {MAX_ID_CHARS} "
                           "characters", field="citation" if is_citation else "id")
    text = id_or_citation.strip()
    if not is_citation:
        loaded = state.find_act(text.split("::", 1)[0], corpus)
        loaded.unit(text)  # 404 with close ids when absent
        return loaded, text
    if corpus:
        names = [state.get(corpus).name]
    elif as_of:  # only corpora with a history have a date
        names = [name for name, c in state.corpora.items() if c.dates is not None]
        if not names:
            raise ServiceError("no served corpus has a history, so no as_of", field="as_of")
    else:
        names = list(state.corpora)
    tried = []
    for name in names:
        order = state.get(name).jurisdiction  # a citation is read as the law of the corpus it is looked up in
        found = [c.unit_id for c in find_citations(text, order) if c.unit_id] if order in citation_codes() else []
        if not found:
            continue  # neither the law nor the date of this corpus can make it cite anything
        try:  # with as_of: the corpus as in force on that date, loaded only for a citation it reads
            loaded = state.get(name, as_of)
        except ServiceError:
            if len(names) == 1:
                raise  # the one corpus named: its own refusal (a date before its first version)
            continue  # another served history may hold the date
        for unit_id in found:
            tried.append(unit_id)
            uid = deepest_unit(loaded, unit_id)
            if uid:
                return state.get(name), uid
    served = "the served corpora" + (f" as of {as_of}" if as_of else "")
    raise NotFound(f"the citation {text!r} names no provision of {served}"
                   + (f" (read as {', '.join(tried)})" if tried else ""), valid=list(state.corpora), field="citation")


def verify(state: ServiceState, quote: Any, unit_id: str | None = None, citation_text: str | None = None,
           corpus: str | None = None, threshold: float = 0.85) -> dict[str, Any]:
    if not isinstance(quote, str) or not quote.strip():
        raise ServiceError("quote must be a non-empty string", field="quote")
    if len(quote) > state.settings.max_quote_chars:
        raise ServiceError(f"quote has {len(quote)} characters; at most {state.settings.max_quote_chars}",
                           field="quote")
    if not (0.0 < threshold <= 1.0):
        raise ServiceError("threshold must be in (0, 1]", field="threshold")
    if bool(unit_id) == bool(citation_text):
        raise ServiceError("give exactly one of 'id' and 'citation'", field="id")
    loaded, uid = resolve_target(state, unit_id or citation_text or "", corpus, is_citation=bool(citation_text))
    text = loaded.units[uid].provision.text
    result = verify_quote(quote, text, threshold)
    return {"corpus": loaded.name, "id": uid, "citation": citation(loaded, uid), **result}
