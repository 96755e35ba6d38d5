"""How a provision changed: its versions with what made them, and the word-level diff between
two dates. ``lexir diff``, the service's history routes and the MCP tools all answer from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from lexir.structure.history import HistoryError, ProvisionVersion, StatuteHistory, word_diff


@dataclass(frozen=True)
class ProvisionDiff:
    """``pid`` on ``old`` and on ``new``: each side its version, or None when not in force then."""

    id: str
    old: str
    new: str
    before: ProvisionVersion | None
    after: ProvisionVersion | None

    @property
    def changed(self) -> bool:
        if self.before is None or self.after is None:
            return True
        return self.before.valid_from != self.after.valid_from

    @property
    def diff(self) -> str:
        """``[-removed-] {+added+}`` word by word over title and text; empty when unchanged."""
        if not self.changed:
            return ""
        return word_diff(_shown(self.before), _shown(self.after))


def _shown(version: ProvisionVersion | None) -> str:
    return f"{version.title}\n{version.text}" if version is not None else ""


def diff_provision(history: StatuteHistory, pid: str, old: str, new: str) -> ProvisionDiff:
    """The versions of ``pid`` in force on ``old`` and ``new`` (a side is None where it was not in
    force that day); a HistoryError for an unknown id, a bad date, or neither side in force."""
    if history.check_date(old) > history.check_date(new):
        raise HistoryError(f"the earlier date comes first: {old} is after {new} (swap them to see what changed "
                           f"from {new} to {old})")
    sides = []
    for day in (old, new):
        try:
            sides.append(history.version(pid, day))
        except HistoryError as exc:
            if "not in force" not in str(exc) or "any date" in str(exc):
                raise
            sides.append(None)  # not in force that day: everything on the other side is new / gone
    before, after = sides
    if before is None and after is None:
        raise HistoryError(f"{pid} is in force on neither {old} nor {new}")
    return ProvisionDiff(pid, history.check_date(old), history.check_date(new), before, after)


def provision_timeline(history: StatuteHistory, pid: str) -> list[dict[str, object]]:
    """Every version of ``pid``, oldest first: ``version``, ``valid_from``, ``valid_to``
    (exclusive; None while in force in the latest law version), ``title``, the law version it was
    read from (``source``), and what the data says made it: ``changed_by``, the message of the
    law version on its first day (None for a version in force since the data's first day of
    that law), and for a version no other follows, ``ended_by`` on its last."""
    versions = history.versions(pid)
    act = pid.split("::", 1)[0]
    messages = history.law_messages(act)
    first = min(messages) if messages else None
    out = []
    for i, v in enumerate(versions):
        follows = i + 1 < len(versions) and versions[i + 1].valid_from == v.valid_to
        out.append({
            "version": v.version,
            "valid_from": v.valid_from,
            "valid_to": v.valid_to,
            "title": v.title,
            "source": v.source,
            "changed_by": messages.get(v.valid_from) if v.valid_from != first else None,
            "ended_by": messages.get(v.valid_to) if v.valid_to and not follows else None,
        })
    return out
