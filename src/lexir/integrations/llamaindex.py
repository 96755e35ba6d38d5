"""lexir as a LlamaIndex retriever (extra ``llamaindex``: ``pip install 'lexir[llamaindex]'``).

::

    from lexir.integrations.llamaindex import LexirRetriever

    retriever = LexirRetriever(corpus="pl-codes", system="recommended", k=5)     # in process
    nodes = retriever.retrieve("Kto zabija człowieka, podlega karze")
    nodes[0].node.metadata["citation"], nodes[0].score                         # 'art. 148 k.k.', 12.3

    remote = LexirRetriever(url="http://127.0.0.1:8000", corpus="de-gesetze-history", as_of="2013-06-01")
    RetrieverQueryEngine.from_args(remote, llm=...)                            # any LlamaIndex pipeline

Each result is a ``NodeWithScore`` over a ``TextNode`` whose ``id_`` is the provision id, ``text``
its text and ``metadata`` lexir's (as :mod:`lexir.integrations.langchain`). The citation,
breadcrumbs and act reach the LLM with the text; scores, ranks and ids are kept from the LLM and
embedding views. ``aretrieve`` is native over HTTP. ``at(date)`` gives the same retriever for
the law as of another date (LlamaIndex passes no per-call arguments).
"""

from __future__ import annotations

from typing import Any

try:
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
    raise ImportError("lexir.integrations.llamaindex needs llama-index-core: "
                      "pip install 'lexir[llamaindex]'") from exc

from lexir.integrations.search import Hit, LexirSearchError, check_k, searcher

__all__ = ["LexirRetriever", "LexirSearchError"]

# metadata an LLM prompt or an embedding gains nothing from
_HIDDEN = ["id", "breadcrumb_ids", "score", "rank", "system", "corpus", "source", "version", "explain"]


class LexirRetriever(BaseRetriever):
    """Statutory provisions for a question, from lexir in process or over its HTTP API.

    ``corpus``: a registered name or path (over HTTP: the name it is served under; with
    ``retriever``: the Corpus that retriever was built on). ``system``: a name or spec (in
    process the default is ``bm25``; over HTTP the server's first). ``url``: a running
    ``lexir serve``. ``as_of``: YYYY-MM-DD, the law as it stood that day. ``retries``: over HTTP,
    how many times a request lost on the way is sent again (docs/integrations.md).
    """

    def __init__(self, corpus: Any = None, system: str | None = None, k: int = 5, as_of: str | None = None,
                 *, url: str | None = None, api_key: str | None = None, retriever: Any = None,
                 params: dict[str, Any] | None = None, language: str | None = None,
                 data_dir: str | None = None, timeout: float = 60.0, retries: int = 2,
                 callback_manager: CallbackManager | None = None, verbose: bool = False,
                 _search: Any = None) -> None:
        self.k = check_k(k)
        self.as_of = as_of
        self._search = _search or searcher(corpus, system, url=url, retriever=retriever, params=params,
                                           api_key=api_key, language=language, data_dir=data_dir,
                                           timeout=timeout, retries=retries)
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def at(self, as_of: str | None) -> LexirRetriever:
        """This retriever for the law as of ``as_of`` (the same corpus and indexes, nothing reloaded)."""
        return LexirRetriever(k=self.k, as_of=as_of, callback_manager=self.callback_manager, _search=self._search)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [_node(hit) for hit in self._search.search(query_bundle.query_str, self.k, self.as_of)]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [_node(hit) for hit in await self._search.asearch(query_bundle.query_str, self.k, self.as_of)]


def _node(hit: Hit) -> NodeWithScore:
    hidden = [key for key in _HIDDEN if key in hit.metadata]
    node = TextNode(id_=hit.id, text=hit.text, metadata=dict(hit.metadata),
                    excluded_llm_metadata_keys=hidden, excluded_embed_metadata_keys=hidden)
    return NodeWithScore(node=node, score=hit.score)
