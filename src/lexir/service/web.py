"""The web page: search (``/?q=...&corpus=...``, so a search is a link), a provision in its act
(table of contents, previous/next, cites and cited-by, the citation with a copy button), and
relevance marks saved in SQLite (:mod:`lexir.service.judgements`) and exported as TREC qrels.

Server-rendered Jinja2 templates with one small script (marks, copy); no build step.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from importlib import resources
from urllib.parse import quote

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from pydantic import Field

from lexir.service import core
from lexir.service.http import PAGE_KEY_COOKIE, state_of
from lexir.service.judgements import Judgements
from lexir.service.models import Body
from lexir.service.state import NotFound, ServiceError

PAGE_K = 20
JUDGE_COOKIE = "lexir_judge"  # the page's session: who marks (a random token, never a name)
_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,64}")
FOLDER = resources.files("lexir.service")
templates = Jinja2Templates(directory=str(FOLDER / "templates"))
router = APIRouter(include_in_schema=False)


class Mark(Body):
    corpus: str
    query: str = Field(max_length=10_000)
    id: str = Field(max_length=500)
    grade: int = Field(ge=0, le=3)


def mount_page(app: FastAPI, judgements: Judgements | None = None) -> None:
    """The page's routes, its static files and its relevance marks (``app.state.judgements``) on ``app``."""
    app.mount("/static", StaticFiles(directory=str(FOLDER / "static")), name="static")
    app.state.judgements = judgements or Judgements()
    app.include_router(router)


def _store(request: Request) -> Judgements:
    return request.app.state.judgements


def judge_of(request: Request) -> str:
    """Who makes a mark: the page's session (``page-`` + a digest of its cookie), else the API key
    given with the request (``key-`` + a digest of it), else ``anonymous``. Digests, so the judges
    a database or an export lists are no credentials."""
    token = request.cookies.get(JUDGE_COOKIE, "")
    if _TOKEN.fullmatch(token):
        return "page-" + hashlib.sha256(token.encode()).hexdigest()[:12]
    key = request.headers.get("x-api-key", "")
    auth = request.headers.get("authorization", "")
    if not key and auth.lower().startswith("bearer "):
        key = auth[7:].strip()
    if key:
        return "key-" + hashlib.sha256(key.encode()).hexdigest()[:12]
    return "anonymous"


def _session(request: Request, response):
    """``response`` with a new page session (judge cookie) where the request had none."""
    if not _TOKEN.fullmatch(request.cookies.get(JUDGE_COOKIE, "")):
        response.set_cookie(JUDGE_COOKIE, secrets.token_urlsafe(24), httponly=True, samesite="strict",
                            secure=request.url.scheme == "https", max_age=365 * 86400)
    return response


def page(request: Request, name: str, status: int = 200, **context) -> HTMLResponse:
    state = state_of(request)
    corpus = context.get("corpus") or state.default_corpus()
    loaded = state.corpora.get(corpus) if corpus else None
    ready = state.default_system(loaded) if loaded is not None else state.settings.systems[0]
    base = {"corpora": list(state.corpora), "systems": list(state.settings.systems), "corpus": corpus,
            "system": context.get("system") or ready, "ready_system": ready, "q": "", "error": None,
            "preparing": list(loaded.preparing.values()) if loaded is not None else [],
            "lang": state.corpora[corpus].language if corpus in state.corpora else "en"}
    # a None the caller passes for one of these (no system asked for, an unknown corpus) keeps the
    # default: the form then shows the system that answers, not the first listed (maybe not ready)
    given = {key: value for key, value in context.items() if value is not None or key not in base}
    response = templates.TemplateResponse(request, name, {**base, **given}, status_code=status)
    # Never from the browser's cache: Back would show a results page with the marks it had when
    # first loaded, not the ones made since.
    response.headers["Cache-Control"] = "no-store"
    return _session(request, response)


@router.get("/", response_class=HTMLResponse)
def search_page(request: Request, q: str = "", corpus: str | None = None, system: str | None = None):
    state = state_of(request)
    corpus = corpus or state.default_corpus()
    if not q.strip():
        return page(request, "search.html", corpus=corpus, system=system, results=None)
    try:
        found = core.search(state, corpus, [("q", q)], PAGE_K, system, {}, with_text=False)[0]
    except ServiceError as exc:
        return page(request, "search.html", exc.status, corpus=corpus if corpus in state.corpora else None,
                    q=q, system=system, results=None, error=exc.message)
    marks = _store(request).marks_for(corpus, q, judge_of(request))
    return page(request, "search.html", corpus=corpus, q=q, system=found["system"], results=found["hits"],
                marks=marks, model=found.get("model"))


@router.get("/p/{corpus}/{unit_id:path}", response_class=HTMLResponse)
def provision_page(request: Request, corpus: str, unit_id: str, q: str = ""):
    state = state_of(request)
    try:
        found = core.provision(state, corpus, unit_id, ["children", "toc"])
    except ServiceError as exc:
        served = corpus in state.corpora
        # an unknown id of a known act: its close ids as links, not only named in the message
        close = [{"id": v, "citation": core.citation(state.corpora[corpus], v)} for v in exc.valid or ()
                 if served and exc.field == "id" and "::" in v and v in state.corpora[corpus].units]
        return page(request, "search.html", exc.status, corpus=corpus if served else None,
                    results=None, error=exc.message, suggestions=close)
    if q:  # checked as a search checks it: every link here would carry it
        try:
            core.check_query(state, q, "q")
        except ServiceError as exc:
            return page(request, "search.html", exc.status, corpus=corpus if corpus in state.corpora else None,
                        results=None, error=exc.message)
    qs = f"?q={quote(q)}" if q else ""
    found["annotated"] = core.annotated_text(state, corpus, found["id"], found["text"], q)
    return page(request, "provision.html", corpus=corpus, p=found, q=q, qs=qs,
                marks=_store(request).marks_for(corpus, q, judge_of(request)) if q else {})


@router.post("/judgements")
def mark(body: Mark, request: Request) -> dict:
    state = state_of(request)
    loaded = state.get(body.corpus)
    if body.id not in loaded.units:
        raise NotFound(f"no provision {body.id!r} in corpus {body.corpus!r}", field="id")
    core.check_query(state, body.query, "query")
    judge = judge_of(request)
    qid = _store(request).mark(body.corpus, body.query, body.id, body.grade, judge)
    return {"qid": qid, "id": body.id, "grade": body.grade, "judge": judge}


@router.get("/judgements/qrels", response_class=PlainTextResponse)
def export(request: Request, corpus: str | None = None) -> str:
    return "".join(line + "\n" for line in _store(request).qrels_lines(corpus))


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request):
    return page(request, "login.html")


@router.post("/login")
async def login(request: Request):
    form = (await request.body()).decode("utf-8", "replace")
    given = dict(p.partition("=")[::2] for p in form.split("&")).get("key", "")
    from urllib.parse import unquote_plus

    given = unquote_plus(given)
    key = state_of(request).settings.api_key or ""
    if not key or not hmac.compare_digest(given.encode(), key.encode()):
        return page(request, "login.html", 401, error="wrong key")
    response = RedirectResponse("/", status_code=303)
    # Secure where the page is served over TLS (uvicorn's --ssl-*, or a proxy's X-Forwarded-Proto
    # from an address uvicorn trusts): the browser then never sends the key in clear.
    response.set_cookie(PAGE_KEY_COOKIE, given, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")
    return response
