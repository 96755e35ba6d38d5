"""LLM access for lexir: one client for any OpenAI-compatible chat endpoint, defensive parsing
of its answers, prompts kept as files, and the systems built on them (query reformulation,
ReAct-BM25, listwise reranking, document surrogates, DTF, translation).

Nothing here needs a third-party package: HTTP goes through ``urllib``, the cache is SQLite.
The systems module registers its systems when :mod:`lexir.retrieval.base` loads it.
"""

from lexir.llm.accounting import Accounting, CallRecord, Usage
from lexir.llm.client import BudgetExhausted, LLMClient, LLMConfig, LLMError
from lexir.llm.parsing import Status

__all__ = [
    "Accounting", "BudgetExhausted", "CallRecord", "LLMClient", "LLMConfig", "LLMError", "Status", "Usage",
]
