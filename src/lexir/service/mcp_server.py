"""lexir's tools for agents over MCP (the official SDK): search statutes, read a provision in
context, resolve citations, verify a quote, list corpora; for a corpus with a history, a
provision's versions and the diff between two dates.

Results are compact (ids, citations, snippets; no full texts in search results). A provision's
text comes in pages of :data:`PAGE_CHARS` characters with a cursor, never cut silently. A
refused call is a tool error whose text is JSON: ``{"error", "retryable", "valid"}``, so an
agent can tell a wrong argument (fix it, do not retry) from a busy or transient failure.
"""

from __future__ import annotations

import functools
import html
import json
import re
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent

from lexir.jurisdiction import codes, jurisdictions
from lexir.service import core, history
from lexir.service.state import ServiceError, ServiceState

PAGE_CHARS = 4000
MAX_K = 50
MAX_LIST = 50  # entries of a list (toc, cited_by, ...) in one answer; the rest is counted, not dropped silently
_MARK = re.compile(r"</?mark>")


def _plain(snippet_html: str) -> str:
    """A snippet for an agent: matched words in «», no HTML."""
    return html.unescape(snippet_html.replace("<mark>", "«").replace("</mark>", "»"))


class Refusal(Exception):
    """A call a tool refuses; its text is the JSON ``{error, retryable, valid}`` the client gets."""


def _fail(message: str, retryable: bool = False, valid: list[str] | None = None) -> Refusal:
    body: dict[str, Any] = {"error": message, "retryable": retryable}
    if valid is not None:
        body["valid"] = valid
    return Refusal(json.dumps(body, ensure_ascii=False))


def _refusing(fn):
    """``fn`` as a tool whose refusals reach the client as an error result whose text is exactly
    the JSON (the SDK would put "Error executing tool NAME: " before a ToolError's text)."""
    @functools.wraps(fn)
    def tool(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Refusal as exc:
            return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)
    return tool


def _call(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except ServiceError as exc:
        raise _fail(exc.message, False, exc.valid) from None
    except MemoryError:
        raise _fail("the server is out of memory; retry later", True) from None


def create_mcp(state: ServiceState) -> MCPServer:
    server = MCPServer(
        "lexir",
        instructions="Find the statutory provisions governing a legal question (the law of "
                     f"{', '.join(j.name for j in jurisdictions())}), read them in their act, resolve "
                     "citations in text and check quotes against the law.",
        log_level="WARNING",
    )

    def corpus_or_default(corpus: str | None) -> str:
        if corpus:
            return corpus
        default = state.default_corpus()
        if default is None:
            raise _fail("no corpus is served")
        return default

    @server.tool()
    @_refusing
    def list_corpora() -> dict:
        """The corpora this server holds: name, language, number of acts and provisions, systems, and for
        a corpus with a history the version dates that as_of can ask about (null otherwise)."""
        return {"corpora": [{k: c[k] for k in ("name", "language", "acts", "provisions", "systems", "dates")}
                            for c in state.describe()]}

    @server.tool()
    @_refusing
    def search_statutes(query: str, corpus: str | None = None, k: int = 10, system: str | None = None,
                        as_of: str | None = None) -> dict:
        """Rank the provisions of a corpus for a legal question or case description. Returns for each
        hit: rank, score, id (use it with get_provision), citation, act title and a snippet with the
        matched words in «». corpus defaults to the first served; k is 1-50. as_of (YYYY-MM-DD, only
        for a corpus with a history, see list_corpora's dates): the law as it stood on that date."""
        if not 1 <= k <= MAX_K:
            raise _fail(f"k must be between 1 and {MAX_K}; got {k}")
        result = _call(core.search, state, corpus_or_default(corpus), [("q", query)], k, system, {},
                       with_text=False, as_of=as_of or None)[0]
        return {"corpus": result["corpus"], "system": result["system"], "hits": [
            {"rank": h["rank"], "score": h["score"], "id": h["id"], "citation": h["citation"],
             "act": h["act"]["title"] or h["act"]["id"], "snippet": _plain(h["snippet"])} for h in result["hits"]]}

    @server.tool()
    @_refusing
    def get_provision(id: str = "", corpus: str | None = None, context: str = "", cursor: str | None = None,
                      as_of: str | None = None, citation: str = "") -> dict:
        """A provision by id (e.g. kk::148, BGB::823/abs:1) or by citation as the law writes it (e.g.
        art. 148 § 1 k.k., § 823 Abs. 1 BGB; give one of the two): its citation, place in the act, text,
        what it cites and what cites it. context: comma-separated parent, children, siblings, toc. The
        text comes in pages: pass next_cursor back as cursor for the rest. Lists longer than 50 (the toc
        of a large act) show the 50 around this provision, with <list>_total and <list>_from. as_of
        (YYYY-MM-DD, a corpus with a history only): the provision as it stood on that date."""
        wanted = [c.strip() for c in context.split(",") if c.strip()]
        if bool(id.strip()) == bool(citation.strip()):
            raise _fail("give id or citation (one of the two)", valid=["id", "citation"])
        if citation.strip():
            loaded, id = _call(core.resolve_target, state, citation, corpus, is_citation=True, as_of=as_of or None)
            corpus = loaded.name
        found = _call(core.provision, state, corpus_or_default(corpus), id, wanted, as_of or None)
        try:
            start = int(cursor or 0)
        except ValueError:
            raise _fail(f"bad cursor {cursor!r}: pass back next_cursor unchanged") from None
        text = found.pop("text")
        if not 0 <= start <= len(text):
            raise _fail(f"cursor {start} is outside the text (0-{len(text)})")
        end = min(len(text), start + PAGE_CHARS)
        found.update(text=text[start:end], text_start=start, total_chars=len(text),
                     next_cursor=str(end) if end < len(text) else None)
        if start > 0:  # later pages: only the text
            return {k: found[k] for k in ("id", "citation", "text", "text_start", "total_chars", "next_cursor")}
        found["path"] = " > ".join(p["label"] for p in found["path"])
        for key in ("cites", "cited_by", "children", "siblings", "toc"):
            if found.get(key) is not None:
                refs = [{"id": r["id"], "citation": r["citation"]} for r in found[key]]
                if len(refs) > MAX_LIST:  # a long act: the part around this provision, and how many in all
                    here = next((i for i, r in enumerate(refs) if r["id"] in (id, found["article"])), 0)
                    first = max(0, min(here - MAX_LIST // 2, len(refs) - MAX_LIST))
                    found[f"{key}_total"], found[f"{key}_from"] = len(refs), first
                    refs = refs[first:first + MAX_LIST]
                found[key] = refs
        for key in ("prev", "next", "parent"):
            if found.get(key):
                found[key] = {"id": found[key]["id"], "citation": found[key].get("citation", found[key]["id"])}
        return found

    @server.tool(description=(
        "The statutory citations written in text as a legal order writes them (jurisdiction: "
        f"{', '.join(codes())}; may be left out where every served corpus is one order's law), each with its "
        "span, the act as written and the canonical id (null when the act or article is unknown); ids and "
        "citations list every unit one citation names (§ 5 Abs. 1 Satz 1 und 4 SGB V: two)."))
    def resolve_citations(text: str, jurisdiction: str | None = None) -> dict:
        """The citations of ``text`` in the order ``jurisdiction`` (the description above, which
        names the registered orders, is what a client sees)."""
        found = _call(core.cite, state, text, jurisdiction)
        return {"citations": [{"text": c["span"]["text"], "start": c["span"]["start"], "end": c["span"]["end"],
                               "act_as_written": c["act_raw"], "id": c["unit_id"], "citation": c["citation"],
                               "ids": c["unit_ids"], "citations": c["citations"],
                               "in_corpora": c["corpora"]} for c in found["citations"]]}

    @server.tool()
    @_refusing
    def verify_quote(quote: str, id_or_citation: str, corpus: str | None = None) -> dict:
        """Does the provision (an id like kc::415 or a citation like 'art. 415 k.c.') contain the quote?
        verified, match (exact, fuzzy or none), score 0-1 and the best-matching span of the law's text."""
        is_citation = "::" not in id_or_citation
        return _call(core.verify, state, quote, None if is_citation else id_or_citation,
                     id_or_citation if is_citation else None, corpus)

    def provision_history(id: str, corpus: str | None = None) -> dict:
        """Every version of a provision (e.g. BGB::1631d, BGB::823/abs:1) in a corpus with a history (see
        list_corpora's dates), oldest first: version id, valid_from, valid_to (exclusive; null while in
        force in the latest version), title, and changed_by: what the data says made that version (the
        amending act's name), null for a version in force since the first date; ended_by for the last
        version of a provision that was repealed or removed. More than 50 versions: the latest 50, with
        versions_total."""
        found = _call(history.provision_history, state, corpus_or_default(corpus), id)
        if len(found["versions"]) > MAX_LIST:
            found["versions_total"] = len(found["versions"])
            found["versions"] = found["versions"][-MAX_LIST:]
        return found

    def diff_provision(id: str, from_date: str, to_date: str, corpus: str | None = None,
                       cursor: str | None = None) -> dict:
        """What changed in a provision between two dates (YYYY-MM-DD), word by word: removed words as
        [-...-], added ones as {+...+} (as lexir diff). before / after are the versions in force on each
        date (null where it was not in force: then the whole text is added or removed); changed is false
        when the same version is in force on both. The diff comes in pages of 4,000 characters: pass
        next_cursor back as cursor for the rest."""
        found = _call(history.diff_provision, state, corpus_or_default(corpus), id, from_date, to_date)
        try:
            start = int(cursor or 0)
        except ValueError:
            raise _fail(f"bad cursor {cursor!r}: pass back next_cursor unchanged") from None
        text = found["diff"]
        if not 0 <= start <= len(text):
            raise _fail(f"cursor {start} is outside the diff (0-{len(text)})")
        end = min(len(text), start + PAGE_CHARS)
        found.update(diff=text[start:end], diff_start=start, total_chars=len(text),
                     next_cursor=str(end) if end < len(text) else None)
        return found

    # The history tools only where a served corpus has one (lexir mcp de-gesetze-history): elsewhere
    # each call would only say there is none.
    if any(loaded.dates for loaded in state.corpora.values()):
        for tool in (provision_history, diff_provision):
            server.tool()(_refusing(tool))
    return server


def run_http(server: MCPServer, host: str, port: int) -> None:
    server.run("streamable-http", host=host, port=port)
