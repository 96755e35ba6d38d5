"""The web page (filled in below)."""

from __future__ import annotations


def add_page_routes(app, state) -> None:
    return None
