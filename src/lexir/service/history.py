"""Provisions through time, whatever the transport: a provision's versions, the diff between two
dates, and the validity of a list of ids on a date. The MCP tools, the HTTP routes
(:mod:`lexir.service.routes.history`) and the framework retrievers (:mod:`lexir.integrations`) answer from here;
the work itself is :mod:`lexir.structure.changes` (as ``lexir diff``).

Only a served corpus with a history (``de-gesetze-history``) has versions; any other is a 400
naming the ones that do. An unknown id or a provision in force on neither date is a 404 that
says why; a malformed date or one before the first version is a 400 on its field.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from lexir.service.state import LoadedCorpus, NotFound, ServiceError, ServiceState
from lexir.structure.history import HistoryError

MAX_IDS = 1000  # ids in one validity request (a search's k at most)
_BAD_DATE = ("not a date", "no version on")


def history_of(state: ServiceState, corpus: str) -> tuple[LoadedCorpus, Any]:
    """The served corpus and its :class:`~lexir.structure.history.StatuteHistory`."""
    from lexir.datasets import open as open_data

    loaded = state.get(corpus)
    if loaded.dates is None:
        dated = [n for n, c in state.corpora.items() if c.dates is not None]
        raise ServiceError(f"corpus {loaded.name!r} has no history of provision versions"
                           + (f"; served corpora with one: {', '.join(dated)}" if dated else ""),
                           valid=dated, field="corpus")
    return loaded, open_data(loaded.name, data_dir=state.settings.data_dir)  # parsed once, kept by the registry


def _refused(exc: HistoryError, date_field: str) -> ServiceError:
    message = str(exc)
    if message.startswith(_BAD_DATE):
        return ServiceError(message, field=date_field)
    return NotFound(message, field="id")


def _check_id(unit_id: Any) -> str:
    from lexir.service.core import check_text

    if not isinstance(unit_id, str) or not unit_id or len(unit_id) > 500:
        raise ServiceError("an id is a non-empty string of at most 500 characters", field="id")
    return check_text(unit_id, "id")  # a lone surrogate would fail the response (ids are echoed)


def _check_date(value: Any, name: str) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip()):
        raise ServiceError(f"{name} must be a date YYYY-MM-DD; got {str(value)[:20]!r}", field=name)
    return value.strip()


def provision_history(state: ServiceState, corpus: str, unit_id: str) -> dict[str, Any]:
    """Every version of a provision: dates, title, and what changed it where the data says."""
    from lexir.structure.changes import provision_timeline

    loaded, history = history_of(state, corpus)
    unit_id = _check_id(unit_id)
    try:
        versions = provision_timeline(history, unit_id)
    except HistoryError as exc:
        raise _refused(exc, "id") from None
    for v in versions:
        v["commit"] = _commit(v.pop("source"))
    return {"corpus": loaded.name, "id": unit_id, "first": history.first, "latest": history.latest,
            "versions": versions}


def diff_provision(state: ServiceState, corpus: str, unit_id: str, old: str, new: str) -> dict[str, Any]:
    """The word-level diff of a provision between two dates (``[-removed-] {+added+}``)."""
    from lexir.structure.changes import diff_provision as diff

    loaded, history = history_of(state, corpus)
    unit_id = _check_id(unit_id)
    for day, name in ((old, "from"), (new, "to")):
        try:
            history.check_date(_check_date(day, name))
        except HistoryError as exc:
            raise ServiceError(str(exc), field=name) from None
    if old.strip() > new.strip():
        raise ServiceError(f"from is the earlier date: {old.strip()} is after to={new.strip()}", field="from")
    try:
        found = diff(history, unit_id, old.strip(), new.strip())
    except HistoryError as exc:
        raise _refused(exc, "id") from None
    side = lambda v: None if v is None else {"version": v.version, "valid_from": v.valid_from,  # noqa: E731
                                             "valid_to": v.valid_to, "title": v.title}
    return {"corpus": loaded.name, "id": unit_id, "from": found.old, "to": found.new,
            "before": side(found.before), "after": side(found.after), "changed": found.changed,
            "diff": found.diff}


def validity(state: ServiceState, corpus: str, ids: Sequence[str], as_of: str | None = None) -> dict[str, Any]:
    """For each id, the version in force on ``as_of`` (default: the latest date): ``version``,
    ``valid_from``, ``valid_to``; null for an id not in force then (or unknown), and then
    ``not_in_force[id]`` says why (``… is not in force on 2012-09-01; in force from 2013-01-11``)."""
    loaded, history = history_of(state, corpus)
    if not isinstance(ids, list | tuple) or len(ids) > MAX_IDS:
        raise ServiceError(f"ids is a list of at most {MAX_IDS} ids", field="ids")
    day = None
    if as_of:
        try:
            day = history.check_date(_check_date(as_of, "as_of"))
        except HistoryError as exc:
            raise ServiceError(str(exc), field="as_of") from None
    out: dict[str, Any] = {}
    why: dict[str, str] = {}
    for unit_id in ids:
        try:
            v = history.version(_check_id(unit_id), day)
        except HistoryError as exc:
            out[unit_id] = None
            why[unit_id] = str(exc)
            continue
        out[unit_id] = {"version": v.version, "valid_from": v.valid_from, "valid_to": v.valid_to}
    return {"corpus": loaded.name, "as_of": day or history.latest, "versions": out, "not_in_force": why}


def _commit(source: str) -> str | None:
    """The commit a law version was read from, out of its archive member name
    (``bgb/2013-01-11_6e103c98.md``); the name itself is not shown."""
    found = re.search(r"_([0-9a-f]{7,40})\.md$", source or "")
    return found.group(1) if found else None
