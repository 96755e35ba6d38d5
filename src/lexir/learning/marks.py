"""Relevance marks of several judges as training and held-out data (``lexir serve --learn``).

A mark is ``(qid, query text, provision id, judge, grade, time)``. What the learner makes of them:

- **Held out by question.** A question is held out when the hash of its id falls under the
  held-out share (:func:`held_out`): the same question is always on the same side, so a model the
  learner trained never saw a held-out question, and the held-out marks that judge a candidate are
  never among its training marks.
- **A cap per judge** (:func:`cap_judges`): no judge contributes more than ``cap`` of the marks
  (their oldest beyond it are left out); a judge alone contributes nothing, so nothing is learned
  from one judge alone.
- **Consensus** (:func:`consensus`): a (question, provision) is relevant when more than half of the
  judges who marked it marked it relevant; its training grade is ``2 · mean relevant grade ·
  share agreeing`` (at least 1), so an uncontested mark weighs ``2 · grade`` and one contradicted
  by a third of its judges weighs a third less; one contradicted by half or more is not learned.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from lexir.types import Qrels, Query

Row = tuple[str, str, str, str, int, float]  # qid, query, doc id, judge, grade, time


def held_out(qid: str, share: float) -> bool:
    """Whether question ``qid`` is held out (a stable hash of the id, under ``share``)."""
    return int(hashlib.sha256(qid.encode()).hexdigest()[:8], 16) / 0x1_0000_0000 < share


def cap_judges(rows: Sequence[Row], cap: float) -> tuple[list[Row], int]:
    """The rows left when no judge contributes more than ``cap`` (0-1) of them: a judge keeps at
    most ``cap / (1 - cap)`` times the marks of all the other judges together, its newest. Returns
    (kept rows, number left out)."""
    if not 0 < cap < 1:
        raise ValueError(f"the cap per judge is a share between 0 and 1; got {cap}")
    by_judge: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_judge[row[3]].append(row)
    total = len(rows)
    kept: list[Row] = []
    for judge_rows in by_judge.values():
        allowed = int(cap / (1 - cap) * (total - len(judge_rows)) + 1e-9)
        kept.extend(sorted(judge_rows, key=lambda r: r[5])[-allowed:] if allowed else [])
    kept.sort(key=lambda r: (r[5], r[0], r[2], r[3]))
    return kept, total - len(kept)


def consensus(rows: Iterable[Row], *, training: bool) -> tuple[Qrels, int]:
    """Qrels from several judges' marks: (question -> provision -> grade, the number of
    (question, provision) pairs with contradicting marks). ``training``: the weighted training
    grade (module docstring); else the rounded mean relevant grade (for held-out scoring)."""
    votes: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for qid, _text, doc, judge, grade, _time in sorted(rows, key=lambda r: r[5]):
        votes[(qid, doc)][judge] = int(grade)  # a judge's latest mark
    qrels: Qrels = defaultdict(dict)
    contradicted = 0
    for (qid, doc), by_judge in votes.items():
        grades = list(by_judge.values())
        relevant = [g for g in grades if g > 0]
        if relevant and len(relevant) < len(grades):
            contradicted += 1
        share = len(relevant) / len(grades)
        if share <= 0.5:
            continue
        mean = sum(relevant) / len(relevant)
        qrels[qid][doc] = max(1, round(2 * mean * share)) if training else max(1, int(mean + 0.5))
    return dict(qrels), contradicted


@dataclass
class MarkData:
    """The marks of a corpus as training questions and held-out questions."""

    train_queries: list[Query] = field(default_factory=list)
    train_qrels: Qrels = field(default_factory=dict)
    heldout_queries: list[Query] = field(default_factory=list)
    heldout_qrels: Qrels = field(default_factory=dict)
    stats: dict = field(default_factory=dict)


def mark_data(rows: Sequence[Row], *, cap: float, heldout: float) -> MarkData:
    """Split ``rows`` by question (:func:`held_out`), cap each judge's share of the training side
    (:func:`cap_judges`) and take the consensus of each side (:func:`consensus`). The held-out side
    is not capped: it only scores, and every judge's marks count there."""
    texts = {r[0]: r[1] for r in rows}
    train_rows = [r for r in rows if not held_out(r[0], heldout)]
    test_rows = [r for r in rows if held_out(r[0], heldout)]
    kept, left_out = cap_judges(train_rows, cap) if train_rows else ([], 0)
    train_qrels, contradicted = consensus(kept, training=True)
    test_qrels, test_contradicted = consensus(test_rows, training=False)
    judges = sorted({r[3] for r in kept})
    return MarkData(
        [Query(q, texts[q]) for q in sorted(train_qrels)], train_qrels,
        [Query(q, texts[q]) for q in sorted(test_qrels)], test_qrels,
        {"marks": len(rows), "train_marks": len(train_rows), "used": len(kept), "left_out_by_cap": left_out,
         "judges": len(judges), "contradicted": contradicted + test_contradicted,
         "train_questions": len(train_qrels), "heldout_questions": len(test_qrels),
         "heldout_marks": len(test_rows)})
