"""Prompt templates, one file each: a system message, a line ``---``, then the user message.

Placeholders are ``$name`` (:class:`string.Template`), so JSON braces need no escaping.
A template may be replaced by a file of the user's own: pass its path instead of the name.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path
from string import Template

NAMES = ("reform_sparse", "reform_dense", "react_planner", "react_observer", "rerank", "surrogate",
         "query_analysis", "translate", "answer", "answer_closed")


@functools.lru_cache(maxsize=64)
def load(name: str) -> tuple[Template, Template]:
    if name in NAMES:
        text = (resources.files(__name__) / f"{name}.txt").read_text(encoding="utf-8")
    else:
        text = Path(name).expanduser().read_text(encoding="utf-8")
    system, sep, user = text.partition("\n---\n")
    if not sep:
        system, user = "", text
    return Template(system.strip()), Template(user.strip())


def placeholders(name: str) -> set[str]:
    found = set()
    for template in load(name):
        for match in template.pattern.finditer(template.template):
            key = match.group("named") or match.group("braced")
            if key:
                found.add(key)
    return found


def render(name: str, **values: object) -> list[dict[str, str]]:
    """The chat messages of template ``name`` with ``values`` filled in (all are required)."""
    missing = placeholders(name) - set(values)
    if missing:
        raise KeyError(f"prompt {name!r} needs {', '.join(sorted(missing))}")
    system, user = load(name)
    strs = {k: str(v) for k, v in values.items()}
    messages = []
    if system.template:
        messages.append({"role": "system", "content": system.substitute(strs)})
    messages.append({"role": "user", "content": user.substitute(strs)})
    return messages
