"""End-to-end answer evaluation: exam questions answered by an LLM with or without provisions.

For each multiple-choice question the prompt (``prompts/answer.txt``, or ``answer_closed.txt``
for the closed book) holds the question, its options and the context provisions (numbered, id
and text); the model answers ``{"answer": "B", "cite": [2]}``. Conditions:

* ``none``: closed book, no provisions;
* ``oracle``: the gold provisions only (what a perfect retriever would hand over);
* anything else: a system spec (``bm25``, ``bm25(mode=stem)``, ``react-bm25(rounds=2)``) whose
  top ``k`` results for the query are shown, or a run given by the caller (an experiment's).

Calls go through :class:`~lexir.llm.client.LLMClient`, so every answer is cached as it arrives
and a killed run resumes where it stopped; malformed answers get one corrective retry
(:func:`lexir.llm.base.ask`) and are then counted by status, never dropped: a question without
a usable option counts as wrong. Scores and tests: :mod:`lexir.evaluation.answers`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lexir.evaluation.answers import AnsweredQuestion, AnswerTable, summarise
from lexir.llm.base import ask, clip
from lexir.llm.client import LLMClient
from lexir.llm.parsing import answer_schema, parse_answer
from lexir.retrieval.build import build_retriever
from lexir.types import Corpus, Query, QuerySet, Run, act_of, ranked

CLOSED = "none"
ORACLE = "oracle"
DEFAULT_CONDITIONS = (CLOSED, "bm25", ORACLE)
DEFAULT_K = 5
DEFAULT_CHARS = 800  # characters of each provision in the prompt
DEFAULT_MAX_TOKENS = 256


@dataclass(frozen=True)
class Question:
    qid: str
    question: str
    options: tuple[tuple[str, str], ...]  # (letter, text), in letter order
    expected: str
    gold: tuple[str, ...]
    query: Query = field(repr=False, compare=False)

    @property
    def letters(self) -> tuple[str, ...]:
        return tuple(letter for letter, _ in self.options)

    @property
    def code(self) -> str:
        return "+".join(sorted({act_of(g) for g in self.gold})) or "-"


def questions_from(queries: QuerySet) -> list[Question]:
    """The multiple-choice questions of a query set; their loader keeps question, options and
    answer in ``Query.meta`` (pl-exams, OryCore exams). Anything missing is an error naming it."""
    out = []
    for q in queries.queries:
        meta = q.meta or {}
        options = meta.get("options")
        where = f"{queries.name}: query {q.id}"
        if not isinstance(options, Mapping) or not options:
            raise ValueError(f"{where} has no options in its meta: answer evaluation needs multiple-choice "
                             "questions (pl-exams, an OryCore exam)")
        expected = str(meta.get("answer") or "").strip().upper()
        letters = sorted(str(k).upper() for k in options)
        if expected not in letters:
            raise ValueError(f"{where}: correct answer {meta.get('answer')!r} is not one of its options "
                             f"({', '.join(letters)})")
        gold = tuple(doc for doc, grade in sorted(queries.qrels.get(q.id, {}).items()) if grade > 0)
        out.append(Question(q.id, str(meta.get("question") or q.text),
                            tuple((str(k).upper(), str(v)) for k, v in sorted(options.items())), expected, gold, q))
    return out


def contexts_from_run(run: Run, questions: Sequence[Question], k: int) -> dict[str, tuple[str, ...]]:
    """The top ``k`` of each question's ranking (ties by id, as everywhere in lexir)."""
    return {q.qid: tuple(doc for doc, _ in ranked(run.get(q.qid, {}))[:k]) for q in questions}


def oracle_contexts(questions: Sequence[Question]) -> dict[str, tuple[str, ...]]:
    return {q.qid: q.gold for q in questions}


def _provisions(corpus: Corpus, ids: Sequence[str], chars: int) -> str:
    lines = []
    for i, doc_id in enumerate(ids, 1):
        doc = corpus.get(doc_id)
        if doc is None:
            raise ValueError(f"provision {doc_id!r} is not in corpus {corpus.name!r}")
        head = f"[{i}] {doc.id}" + (f" ({doc.title})" if doc.title else "")
        lines.append(f"{head}: {clip(doc.text, chars)}")
    return "\n".join(lines)


def answer_questions(questions: Sequence[Question], corpus: Corpus, client: LLMClient, condition: str,
                     contexts: Mapping[str, Sequence[str]] | None = None, *, chars: int = DEFAULT_CHARS,
                     max_tokens: int = DEFAULT_MAX_TOKENS, prompt: str | None = None,
                     progress: Callable[[int], None] | None = None) -> list[AnsweredQuestion]:
    """Ask the model every question under one condition (``contexts`` None: closed book).

    Calls are accounted under the system ``answer/<condition>``; each record carries the
    calls, tokens and seconds of its own question (the corrective retry included).
    """
    system = f"answer/{condition}"
    start = len(client.accounting.records)

    def one(q: Question) -> tuple[str | None, list[str], str, tuple[str, ...]]:
        ids = tuple(contexts.get(q.qid, ())) if contexts is not None else ()
        options = "\n".join(f"{letter}) {text.strip()}" for letter, text in q.options)
        values: dict[str, Any] = {"question": q.question.strip(), "options": options}
        name = prompt or ("answer" if contexts is not None else "answer_closed")
        if contexts is not None:
            values.update(n=len(ids), provisions=_provisions(corpus, ids, chars) or "(none found)")
        parsed = ask(client, system, name, values, lambda text: parse_answer(text, q.letters, ids),
                     schema=answer_schema(q.letters, len(ids)), qid=q.qid, role="answer", max_tokens=max_tokens)
        letter, cited = parsed.value
        return letter, cited, str(parsed.status), ids

    def done(_q, _r) -> None:
        if progress:
            progress(1)

    results = client.map(one, list(questions), on_done=done)
    usage: dict[str, list[float]] = {}
    for r in client.accounting.records[start:]:
        if r.system == system:
            row = usage.setdefault(r.qid, [0, 0, 0.0])
            row[0] += 1
            row[1] += r.prompt_tokens + r.completion_tokens
            row[2] += r.seconds
    out = []
    for q, (letter, cited, status, ids) in zip(questions, results, strict=True):
        calls, tokens, seconds = usage.get(q.qid, [0, 0, 0.0])
        out.append(AnsweredQuestion(q.qid, q.code, q.expected, letter, q.gold, ids, tuple(cited), status,
                                    int(calls), int(tokens), float(seconds)))
    return out


@dataclass
class AnswerEval:
    """Answers per condition and their table."""

    answers: dict[str, list[AnsweredQuestion]]
    table: AnswerTable
    runs: dict[str, Run] = field(default_factory=dict)  # the retrieval runs behind system conditions
    chance: float = 0.0  # expected accuracy of guessing (mean of 1 / number of options)

    def to_dict(self) -> dict:
        return {**self.table.to_dict(), "chance": self.chance,
                "answers": {c: [a.to_dict() for a in rows] for c, rows in self.answers.items()}}


def evaluate_answers(corpus: Corpus, queries: QuerySet, conditions: Sequence[str], client: LLMClient, *,
                     k: int = DEFAULT_K, runs: Mapping[str, Run] | None = None,
                     params: Mapping[str, Any] | None = None, limit: int | None = None,
                     chars: int = DEFAULT_CHARS, max_tokens: int = DEFAULT_MAX_TOKENS, baseline: str | None = None,
                     prompt: str | None = None, title: str = "",
                     progress_factory: Callable[[str, int], Callable[[int], None]] | None = None) -> AnswerEval:
    """Answer the questions of ``queries`` under each condition and summarise.

    A condition that is neither ``none`` nor ``oracle`` names a run in ``runs`` or else a
    system spec, built on ``corpus`` (with ``params`` added) and run on the questions' query
    text; its top ``k`` are the context. ``limit`` keeps the first N questions.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not conditions:
        raise ValueError("no conditions: give none, oracle and/or system specs")
    if len(set(conditions)) != len(conditions):
        raise ValueError(f"conditions repeat: {', '.join(conditions)}")
    questions = questions_from(queries)[:limit] if limit else questions_from(queries)
    if not questions:
        raise ValueError(f"{queries.name}: no questions to answer")
    runs = dict(runs or {})
    used_runs: dict[str, Run] = {}
    answers: dict[str, list[AnsweredQuestion]] = {}
    for condition in conditions:
        if condition == CLOSED:
            contexts = None
        elif condition == ORACLE:
            contexts = oracle_contexts(questions)
        else:
            if condition not in runs:
                asked = QuerySet(queries.name, [q.query for q in questions], queries.qrels)
                runs[condition] = _retrieve(corpus, condition, params or {}, asked, k)
            used_runs[condition] = runs[condition]
            contexts = contexts_from_run(runs[condition], questions, k)
        progress = progress_factory(condition, len(questions)) if progress_factory else None
        answers[condition] = answer_questions(questions, corpus, client, condition, contexts, chars=chars,
                                              max_tokens=max_tokens, prompt=prompt, progress=progress)
    table = summarise(answers, baseline or conditions[0], title=title)
    chance = sum(1 / len(q.options) for q in questions) / len(questions)
    return AnswerEval(answers, table, used_runs, chance)


def _retrieve(corpus: Corpus, spec_text: str, params: Mapping[str, Any], queries: QuerySet, k: int) -> Run:
    return build_retriever(corpus, spec_text, params, qrels=queries.qrels).search_many(queries.queries, k)


# ---------------------------------------------------------------------------
# the ``answer:`` section of an experiment file


@dataclass
class AnswerSettings:
    """What an experiment's ``answer:`` section asks for (see docs/llm.md)::

        answer:
          conditions: [none, bm25-stem, oracle]   # none, oracle, or names of the systems above
          k: 5                                    # provisions shown from each system's run
          limit: 100                              # first N questions (default: all)
          baseline: none                          # default: the first condition
          dataset: pl-exams                       # default: the first dataset
          llm: {model: qwen3-8b}                  # default: LEXIR_LLM_* and the config file
    """

    conditions: tuple[str, ...]
    k: int = DEFAULT_K
    limit: int | None = None
    baseline: str | None = None
    dataset: str | None = None
    chars: int = DEFAULT_CHARS
    max_tokens: int = DEFAULT_MAX_TOKENS
    llm: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, raw: Any, systems: Sequence[str], datasets: Sequence[str]) -> AnswerSettings:
        """Checked settings; a ValueError names the field (``answer.k``) and what is wrong."""
        from lexir.llm.base import LLM_PARAMS

        def fail(name: str, message: str):
            raise ValueError(f"field 'answer.{name}': {message}")

        if not isinstance(raw, dict):
            fail("", "expected a mapping")
        known = {"conditions", "k", "limit", "baseline", "dataset", "chars", "max_tokens", "llm"}
        unknown = sorted(set(raw) - known)
        if unknown:
            fail(unknown[0], f"unknown setting; valid: {', '.join(sorted(known))}")
        valid = [CLOSED, ORACLE, *systems]
        conditions = raw.get("conditions") or [CLOSED, systems[0], ORACLE]
        if not isinstance(conditions, list) or not all(isinstance(c, str) for c in conditions):
            fail("conditions", "expected a list of names")
        for i, c in enumerate(conditions):
            if c not in valid:
                fail(f"conditions[{i}]", f"{c!r} is not none, oracle or a system above ({', '.join(systems)})")
        if len(set(conditions)) != len(conditions):
            fail("conditions", "a condition is listed twice")
        numbers = {}
        for name, default in (("k", DEFAULT_K), ("limit", None), ("chars", DEFAULT_CHARS),
                              ("max_tokens", DEFAULT_MAX_TOKENS)):
            value = raw.get(name, default)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                fail(name, f"expected a positive integer, got {value!r}")
            numbers[name] = value
        baseline = raw.get("baseline")
        if baseline is not None and baseline not in conditions:
            fail("baseline", f"{baseline!r} is not one of the conditions ({', '.join(conditions)})")
        dataset = raw.get("dataset")
        if dataset is not None and dataset not in datasets:
            fail("dataset", f"{dataset!r} is not one of the experiment's datasets ({', '.join(datasets)})")
        llm = raw.get("llm") or {}
        if not isinstance(llm, dict):
            fail("llm", "expected a mapping of LLM settings")
        bad = sorted(set(llm) - set(LLM_PARAMS))
        if bad:
            fail(f"llm.{bad[0]}", f"unknown LLM setting; valid: {', '.join(sorted(LLM_PARAMS))}")
        return cls(tuple(conditions), numbers["k"], numbers["limit"], baseline, dataset, numbers["chars"],
                   numbers["max_tokens"], dict(llm))


def run_answer_settings(settings: AnswerSettings, corpus: Corpus, queries: QuerySet, runs: Mapping[str, Run], *,
                        title: str = "", client: LLMClient | None = None,
                        progress_factory: Callable[[str, int], Callable[[int], None]] | None = None) -> AnswerEval:
    """An experiment's answer section over the runs it already made (system conditions name them)."""
    from lexir.llm.base import client_from_params

    client = client_from_params(settings.llm, client)
    return evaluate_answers(corpus, queries, settings.conditions, client, k=settings.k,
                            runs={c: runs[c] for c in settings.conditions if c in runs}, limit=settings.limit,
                            chars=settings.chars, max_tokens=settings.max_tokens, baseline=settings.baseline,
                            title=title, progress_factory=progress_factory)


def write_answer_files(result: AnswerEval, stem: str | Path) -> list[Path]:
    """``<stem>.md`` (the tables) and ``<stem>.json`` (the table and every answer)."""
    import json

    from lexir.evaluation.answers import to_markdown

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    md, js = Path(f"{stem}.md"), Path(f"{stem}.json")
    md.write_text(to_markdown(result.table), encoding="utf-8")
    js.write_text(json.dumps(result.to_dict(), indent=1, ensure_ascii=False), encoding="utf-8")
    return [md, js]
