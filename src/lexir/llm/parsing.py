"""Reading model answers defensively.

:func:`extract_json` finds the first JSON value in an answer: code fences are stripped,
text before and after is ignored, and a truncated object is not accepted. Each parser
classifies the answer with a :class:`Status`:

* ``ok``: the answer is what was asked;
* ``wrong_format``: no JSON, or JSON of the wrong shape (missing key, wrong types);
* ``repetition``: the model looped: an item named twice, or the same text over and over;
* ``missing_items``: a ranking that leaves out some of the candidates.

Systems ask once more after a malformed answer (showing the model what was wrong); when the
second answer is malformed too they fall back as each parser documents — never a crash.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    OK = "ok"
    WRONG_FORMAT = "wrong_format"
    REPETITION = "repetition"
    MISSING_ITEMS = "missing_items"

    def __str__(self) -> str:
        return self.value


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)
_DECODER = json.JSONDecoder()


def extract_json(text: str) -> Any | None:
    """The first JSON object (or array) in ``text``; None when there is none."""
    if not text:
        return None
    candidates = [m.group(1) for m in _FENCE.finditer(text)]
    candidates.append(text)
    for chunk in candidates:
        for i, ch in enumerate(chunk):
            if ch in "{[":
                try:
                    value, _end = _DECODER.raw_decode(chunk, i)
                except ValueError:
                    continue
                return value
    return None


def looks_repetitive(text: str, min_repeats: int = 4) -> bool:
    """True when a line or a short phrase repeats ``min_repeats`` times or more in a row (a loop)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    run = 1
    for a, b in zip(lines, lines[1:], strict=False):
        run = run + 1 if a == b else 1
        if run >= min_repeats:
            return True
    # a phrase of 3-60 characters repeated back to back
    pattern = r"(.{3,60}?)(?:\s*\1){" + str(min_repeats - 1) + ",}"
    return re.search(pattern, text, re.S) is not None


@dataclass
class Parsed:
    value: Any
    status: Status
    detail: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status is Status.OK


def _as_int(x: Any) -> int | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, str):
        m = re.fullmatch(r"\s*\[?\s*(\d+)\s*\]?\s*", x)
        if m:
            return int(m.group(1))
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return None


def parse_ranking(text: str, n: int, key: str = "ranking") -> Parsed:
    """A permutation of candidate numbers 1..n, from ``{"ranking": [3, 1, 2, ...]}``.

    ``value`` is always a full permutation (0-based indices), usable even when the answer is
    malformed: valid numbers first in the model's order (repeats dropped), then the
    candidates it left out in input order; with no usable numbers the input order itself.
    """
    data = extract_json(text)
    items = data.get(key) if isinstance(data, dict) else data if isinstance(data, list) else None
    if not isinstance(items, list):
        status = Status.REPETITION if looks_repetitive(text) else Status.WRONG_FORMAT
        return Parsed(list(range(n)), status, f"no '{key}' list in the answer")
    order: list[int] = []
    seen: set[int] = set()
    repeats = invalid = 0
    for x in items:
        i = _as_int(x)
        if i is None or not 1 <= i <= n:
            invalid += 1
            continue
        if i - 1 in seen:
            repeats += 1
            continue
        seen.add(i - 1)
        order.append(i - 1)
    missing = [i for i in range(n) if i not in seen]
    full = order + missing
    extra = {"repeats": repeats, "invalid": invalid, "missing": len(missing)}
    if not order:
        return Parsed(full, Status.WRONG_FORMAT, "no valid candidate numbers", extra)
    if repeats:
        return Parsed(full, Status.REPETITION, f"{repeats} candidates named twice", extra)
    if missing:
        return Parsed(full, Status.MISSING_ITEMS, f"{len(missing)} of {n} candidates left out", extra)
    if invalid:
        return Parsed(full, Status.WRONG_FORMAT, f"{invalid} entries are not candidate numbers", extra)
    return Parsed(full, Status.OK, "", extra)


def parse_selection(text: str, n: int, key: str = "keep") -> Parsed:
    """A subset of candidate numbers 1..n, from ``{"keep": [2, 5]}``; ``value`` is 0-based, sorted.

    An empty list is a valid answer (nothing useful). Fallback on malformed answers: the
    valid numbers found (none when there is no list).
    """
    data = extract_json(text)
    items = data.get(key) if isinstance(data, dict) else data if isinstance(data, list) else None
    if not isinstance(items, list):
        status = Status.REPETITION if looks_repetitive(text) else Status.WRONG_FORMAT
        return Parsed([], status, f"no '{key}' list in the answer")
    chosen: list[int] = []
    repeats = invalid = 0
    for x in items:
        i = _as_int(x)
        if i is None or not 1 <= i <= n:
            invalid += 1
        elif i - 1 in chosen:
            repeats += 1
        else:
            chosen.append(i - 1)
    extra = {"repeats": repeats, "invalid": invalid}
    if repeats > 1 or (repeats and repeats >= len(chosen)):
        return Parsed(sorted(chosen), Status.REPETITION, f"{repeats} candidates named twice", extra)
    if invalid and not chosen:
        return Parsed([], Status.WRONG_FORMAT, "no valid candidate numbers", extra)
    return Parsed(sorted(chosen), Status.OK, "", extra)


def parse_text_field(text: str, key: str) -> Parsed:
    """A non-empty string (or list of strings, joined) under ``key``; fallback value "" .

    A keyword list may come as a list or as one string; both are accepted.
    """
    data = extract_json(text)
    if not isinstance(data, dict) or key not in data:
        status = Status.REPETITION if looks_repetitive(text) else Status.WRONG_FORMAT
        return Parsed("", status, f"no '{key}' in the answer")
    value = data[key]
    if isinstance(value, list):
        parts = [str(v).strip() for v in value if isinstance(v, str | int | float) and str(v).strip()]
        if len(parts) != len(set(parts)) and len(parts) - len(set(parts)) >= 3:
            return Parsed(" ".join(dict.fromkeys(parts)), Status.REPETITION, "the same item many times")
        value = " ".join(parts)
    if not isinstance(value, str) or not value.strip():
        return Parsed("", Status.WRONG_FORMAT, f"'{key}' is empty or not text")
    value = value.strip()
    if looks_repetitive(value, 5):
        return Parsed(value, Status.REPETITION, "repeated text")
    return Parsed(value, Status.OK)


def parse_object(text: str, required: Sequence[str]) -> Parsed:
    """A JSON object with every key of ``required``; fallback value: whatever object was found ({})."""
    data = extract_json(text)
    if not isinstance(data, dict):
        status = Status.REPETITION if looks_repetitive(text) else Status.WRONG_FORMAT
        return Parsed({}, status, "no JSON object in the answer")
    missing = [k for k in required if k not in data or data[k] in (None, "", [])]
    if missing:
        return Parsed(data, Status.MISSING_ITEMS, "missing " + ", ".join(missing))
    return Parsed(data, Status.OK)


# JSON schemas sent as response_format --------------------------------------------------------


def ranking_schema(n: int) -> dict:
    return {"type": "object", "properties": {"ranking": {
        "type": "array", "items": {"type": "integer", "minimum": 1, "maximum": n}, "maxItems": n}},
        "required": ["ranking"]}


def selection_schema(n: int) -> dict:
    return {"type": "object", "properties": {"keep": {
        "type": "array", "items": {"type": "integer", "minimum": 1, "maximum": n}, "maxItems": n}},
        "required": ["keep"]}


def text_schema(key: str, as_list: bool = False) -> dict:
    item = {"type": "array", "items": {"type": "string"}, "maxItems": 40} if as_list else {"type": "string"}
    return {"type": "object", "properties": {key: item}, "required": [key]}


SURROGATE_SCHEMA = {"type": "object", "properties": {
    "summary": {"type": "string"}, "theme": {"type": "string"},
    "concepts": {"type": "array", "items": {"type": "string"}, "maxItems": 12},
    "questions": {"type": "array", "items": {"type": "string"}, "maxItems": 8}},
    "required": ["summary", "theme", "concepts", "questions"]}

ANALYSIS_SCHEMA = {"type": "object", "properties": {
    "domain": {"type": "string"},
    "acts": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
    "provisions": {"type": "array", "items": {"type": "string"}, "maxItems": 10}},
    "required": ["domain", "acts", "provisions"]}


# multiple-choice answers ----------------------------------------------------------------------

_LETTER = re.compile(r"^\W*([A-Za-z])(?:\W*$|[).:]\s)")


def _option_letter(value: Any, letters: Sequence[str]) -> str | None:
    """``"B"``, ``"b"``, ``"(B)"``, ``"B) text of the option"`` -> ``"B"``; None when it names no option."""
    if not isinstance(value, str):
        return None
    m = _LETTER.match(value.strip() + " ")
    letter = m.group(1).upper() if m else None
    return letter if letter in letters else None


def parse_answer(text: str, letters: Sequence[str], ids: Sequence[str] = ()) -> Parsed:
    """A chosen option and cited provisions, from ``{"answer": "B", "cite": [2, 1]}``.

    ``ids`` are the provisions in the prompt, numbered 1..n; a citation may be a number or the
    id itself. ``value`` is ``(letter or None, [cited ids])`` even for malformed answers: the
    letter when one names an option, and the valid citations. ``wrong_format``: no JSON, no
    option named, or only citations outside 1..n; ``missing_items``: provisions were given but
    no ``cite`` list came back; ``repetition``: a looping answer, or a provision cited twice
    more than once.
    """
    data = extract_json(text)
    if not isinstance(data, dict):
        status = Status.REPETITION if looks_repetitive(text) else Status.WRONG_FORMAT
        return Parsed((None, []), status, "no JSON object in the answer")
    letter = _option_letter(data.get("answer"), letters)
    cited: list[str] = []
    repeats = invalid = 0
    raw = data.get("cite")
    if isinstance(raw, int | str) and not isinstance(raw, bool):
        raw = [raw]
    for x in raw if isinstance(raw, list) else []:
        i = _as_int(x)
        doc = ids[i - 1] if i is not None and 1 <= i <= len(ids) else x if isinstance(x, str) and x in ids else None
        if doc is None:
            invalid += 1
        elif doc in cited:
            repeats += 1
        else:
            cited.append(doc)
    value = (letter, cited)
    extra = {"repeats": repeats, "invalid": invalid}
    if letter is None:
        return Parsed(value, Status.WRONG_FORMAT,
                      f"'answer' must be one of {', '.join(letters)}, got {data.get('answer')!r}", extra)
    if ids and not isinstance(raw, list):
        return Parsed(value, Status.MISSING_ITEMS, "no 'cite' list of provision numbers", extra)
    if repeats > 1:
        return Parsed(value, Status.REPETITION, f"{repeats} provisions cited twice", extra)
    if invalid and not cited:
        return Parsed(value, Status.WRONG_FORMAT, f"cited numbers must lie in 1..{len(ids)}", extra)
    return Parsed(value, Status.OK, "", extra)


def answer_schema(letters: Sequence[str], n: int) -> dict:
    """``{"answer": one of letters, "cite": [1..n]}``; without provisions (closed book) no ``cite``."""
    props: dict[str, Any] = {"answer": {"type": "string", "enum": list(letters)}}
    if n:
        props["cite"] = {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": n}, "maxItems": n}
    return {"type": "object", "properties": props, "required": list(props)}
