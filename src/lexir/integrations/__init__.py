"""lexir as a retriever of the RAG frameworks: LangChain (:mod:`lexir.integrations.langchain`,
extra ``langchain``) and LlamaIndex (:mod:`lexir.integrations.llamaindex`, extra ``llamaindex``).

Both search the same way (:mod:`lexir.integrations.search`): in process over a lexir corpus
(a registered name, loaded once, with a system built through the index cache; or a retriever and
corpus already built), or over a running ``lexir serve`` (its ``/v1/{corpus}/search`` route). A
hit carries lexir's metadata either way: id, citation, breadcrumbs, act, score, rank, system,
corpus, and for a corpus with a history ``valid_from``/``valid_to`` and the ``as_of`` asked for.

This package sits at the top beside the service; nothing in lexir imports it.
"""
