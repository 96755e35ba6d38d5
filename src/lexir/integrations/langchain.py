"""lexir as a LangChain retriever (extra ``langchain``: ``pip install 'lexir[langchain]'``).

::

    from lexir.integrations.langchain import LexirRetriever

    retriever = LexirRetriever(corpus="pl-codes", system="recommended", k=5)     # in process
    docs = retriever.invoke("Kto zabija człowieka, podlega karze")
    docs[0].metadata["citation"]                                               # 'art. 148 k.k.'

    remote = LexirRetriever(url="http://127.0.0.1:8000", corpus="de-gesetze-history", api_key="...")
    remote.invoke("Beschneidung des männlichen Kindes", as_of="2013-06-01")    # the law on that date

    built = LexirRetriever(retriever=lexir.build(bench, "bm25"), corpus=bench.corpus)  # a retriever you built

Each result is a ``langchain_core.documents.Document`` with the provision's text as
``page_content``, its id as ``id`` and lexir's metadata (``id``, ``citation``, ``title``,
``act``, ``act_title``, ``breadcrumbs``, ``score``, ``rank``, ``system``, ``corpus``; ``as_of``
when asked; ``version``, ``valid_from``, ``valid_to`` on a corpus with a history). ``k`` and
``as_of`` may also be given per call (``invoke(query, k=3, as_of=...)``). ``ainvoke`` is native
over HTTP (httpx's async client) and runs the search in a worker thread in process.
"""

from __future__ import annotations

from typing import Any

try:
    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from pydantic import ConfigDict, Field, PrivateAttr
except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
    raise ImportError("lexir.integrations.langchain needs langchain-core: "
                      "pip install 'lexir[langchain]'") from exc

from lexir.integrations.search import Hit, LexirSearchError, check_k, searcher

__all__ = ["LexirRetriever", "LexirSearchError"]


class LexirRetriever(BaseRetriever):
    """Statutory provisions for a question, from lexir in process or over its HTTP API."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    corpus: Any = None
    """A registered corpus name (``pl-codes``) or path; over HTTP the name it is served under; with
    ``retriever``, the Corpus it was built on."""
    system: str | None = None
    """A system name or spec (``bm25``, ``recommended``, ``bm25(mode=stem)``); in process the default
    is ``bm25``, over HTTP the server's first system."""
    k: int = 5
    as_of: str | None = None
    """YYYY-MM-DD: the law as it stood that day (a corpus with a history)."""
    url: str | None = None
    """A running ``lexir serve`` (``http://127.0.0.1:8000``): search over HTTP instead of in process."""
    api_key: str | None = Field(default=None, repr=False)
    retriever: Any = None
    """A lexir retriever already built (``lexir.build(...)``), searched over ``corpus``."""
    params: dict[str, Any] = Field(default_factory=dict)
    language: str | None = None
    data_dir: str | None = None
    timeout: float = 60.0
    retries: int = 2
    """Over HTTP: how many times a request lost on the way (a dropped connection, a 500/502/503/504
    from a proxy, a 429) is sent again."""

    _search: Any = PrivateAttr(default=None)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # after validation, so that a refusal is a LexirSearchError, not wrapped by pydantic
        check_k(self.k)
        self._search = searcher(self.corpus, self.system, url=self.url, retriever=self.retriever,
                                params=self.params, api_key=self.api_key, language=self.language,
                                data_dir=self.data_dir, timeout=self.timeout, retries=self.retries)

    def _args(self, kwargs: dict[str, Any]) -> tuple[int, str | None]:
        unknown = set(kwargs) - {"k", "as_of"}
        if unknown:
            raise LexirSearchError(f"unknown search argument(s) {', '.join(sorted(unknown))}; valid: k, as_of")
        return check_k(kwargs.get("k", self.k)), kwargs.get("as_of", self.as_of)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        k, as_of = self._args(kwargs)
        return [_document(hit) for hit in self._search.search(query, k, as_of)]

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **kwargs: Any) -> list[Document]:
        k, as_of = self._args(kwargs)
        return [_document(hit) for hit in await self._search.asearch(query, k, as_of)]


def _document(hit: Hit) -> Document:
    return Document(page_content=hit.text, metadata=dict(hit.metadata), id=hit.id)
