"""lexir as a service: an HTTP API (FastAPI), an MCP server for agents and a web page.

Everything here is the public face over the library: it loads corpora through
:func:`lexir.datasets.open` and builds systems through
:func:`lexir.retrieval.build.build_retriever`, and nothing below imports it. The web
framework, the server and the MCP SDK are the ``serve`` extra; :func:`require` says how to
install them instead of failing with a bare ``ImportError``.
"""

from __future__ import annotations

import importlib.util

SERVE_PACKAGES = {"fastapi": "fastapi", "uvicorn": "uvicorn", "jinja2": "jinja2", "httpx": "httpx",
                   "prometheus_client": "prometheus-client"}
MCP_PACKAGES = {"mcp": "mcp"}


class MissingExtra(RuntimeError):
    """A package of the ``serve`` extra is not installed."""


def require(packages: dict[str, str] = SERVE_PACKAGES) -> None:
    missing = [dist for module, dist in packages.items() if importlib.util.find_spec(module) is None]
    if missing:
        raise MissingExtra(f"lexir's service needs {', '.join(missing)}: install them with "
                           "pip install 'lexir[serve]'")
