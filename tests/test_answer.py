"""Answer evaluation end to end on the shipped exam questions, against the scripted loopback chat server.

The scripted model behaves like a reader who answers right exactly when a gold provision is in
the prompt: so closed book is always wrong, the oracle always right, and a retrieval system as
good as its top k. Every fourth question gets an unusable answer twice (counted wrong, never
dropped), and every fourth (offset 3) one unusable answer and then a good one after the retry.
"""

from __future__ import annotations

import json
import re

import pytest

from lexir.evaluation.answers import AnsweredQuestion, summarise, to_markdown
from lexir.llm.answer import evaluate_answers, questions_from
from lexir.llm.client import BudgetExhausted, LLMClient, LLMConfig
from lexir.llm.parsing import Status, parse_answer
from lexir.llm.testing import ScriptedChatServer
from lexir.types import Query, QuerySet

N = 12


@pytest.fixture(scope="module")
def exam(demo_bench):
    queries = demo_bench.queries.split("test")
    return demo_bench, queries, questions_from(queries)[:N]


class Reader:
    """Answers from the prompt: right iff a gold provision is listed; logs what it saw per condition."""

    def __init__(self, questions) -> None:
        self.by_text = {q.question.strip(): (i, q) for i, q in enumerate(questions)}
        self.saw_gold: dict[tuple[str, str], bool] = {}

    def __call__(self, body: dict) -> str:
        messages = body["messages"]
        first_user = next(m["content"] for m in messages if m["role"] == "user")
        question = re.search(r"Question:\n(.+?)\n\nOptions:", first_user, re.S).group(1).strip()
        i, q = self.by_text[question]
        listed = re.findall(r"^\[(\d+)\] (\S+?):? ", first_user, re.M)
        gold_numbers = [int(n) for n, doc in listed if doc in q.gold]
        self.saw_gold[(q.qid, "context" if listed else "closed")] = bool(gold_numbers)
        retry = any(m["role"] == "assistant" for m in messages)
        if i % 4 == 2:
            return "Nie wiem, to zależy od okoliczności."
        if i % 4 == 3 and not retry:
            return '```json\n{"answer": "Z"}\n```'
        if gold_numbers:
            answer = {"answer": q.expected, "cite": gold_numbers}
        else:
            wrong = next(letter for letter in q.letters if letter != q.expected)
            answer = {"answer": wrong, **({"cite": [1]} if listed else {})}
        return json.dumps(answer)


def client_for(server, path, **kw) -> LLMClient:
    return LLMClient(LLMConfig(base_url=server.url, model="scripted", cache_path=str(path), concurrency=3,
                               backoff=0.01, timeout=10.0, **kw))


def test_parse_answer_classifies_every_kind_of_answer():
    ids = ["kk::1", "kk::2", "kk::3"]
    assert parse_answer('{"answer": "B", "cite": [2, 3]}', "ABC", ids).value == ("B", ["kk::2", "kk::3"])
    assert parse_answer('{"answer": "b) tylko", "cite": ["kk::3"]}', "ABC", ids).value == ("B", ["kk::3"])
    assert parse_answer('{"answer": "(C)"}', "ABC").status is Status.OK
    assert parse_answer("Odpowiedź B.", "ABC", ids).status is Status.WRONG_FORMAT
    bad = parse_answer('{"answer": "D", "cite": [1]}', "ABC", ids)
    assert bad.status is Status.WRONG_FORMAT and bad.value == (None, ["kk::1"])
    missing = parse_answer('{"answer": "A"}', "ABC", ids)
    assert missing.status is Status.MISSING_ITEMS and missing.value == ("A", [])
    assert parse_answer('{"answer": "A", "cite": [7, 9]}', "ABC", ids).status is Status.WRONG_FORMAT
    assert parse_answer('{"answer": "A", "cite": [1, 1, 2, 2]}', "ABC", ids).status is Status.REPETITION
    assert parse_answer("A A A A A A A A A A", "ABC").status is Status.REPETITION


def test_questions_keep_options_and_answer_apart_from_the_query_text(exam):
    _bench, queries, questions = exam
    q = questions[0]
    assert q.letters == ("A", "B", "C") and q.expected in q.letters
    assert q.query.text.startswith(q.question) and all(text.strip() in q.query.text for _, text in q.options)
    assert q.gold == tuple(queries.qrels[q.qid]) and q.code == "kk"


def test_questions_without_options_are_refused_by_name():
    queries = QuerySet("plain", [Query("q7", "Kto odpowiada za szkodę?", {"answer": "A"})], {"q7": {"kk::1": 1}})
    with pytest.raises(ValueError, match="plain: query q7 has no options"):
        questions_from(queries)
    wrong = QuerySet("x", [Query("q8", "?", {"answer": "D", "options": {"A": "a", "B": "b"}})], {})
    with pytest.raises(ValueError, match="q8: correct answer 'D' is not one of its options"):
        questions_from(wrong)


def test_right_wrong_and_malformed_answers_per_condition(exam, tmp_path):
    bench, queries, questions = exam
    reader = Reader(questions)
    with ScriptedChatServer(default=reader) as server:
        client = client_for(server, tmp_path / "calls.sqlite")
        result = evaluate_answers(bench.corpus, queries, ["none", "bm25", "oracle"], client, k=5, limit=N)
        requests = server.count
    table = result.table
    broken = [q for i, q in enumerate(questions) if i % 4 == 2]
    usable = [q for i, q in enumerate(questions) if i % 4 != 2]
    # the corrective retry: one extra call for the two malformed kinds, per condition
    assert requests == 3 * (N + N // 2)
    closed, bm25, oracle = (table.summaries[c] for c in ("none", "bm25", "oracle"))
    assert closed.correct == 0 and oracle.correct == len(usable)
    bm25_right = sum(reader.saw_gold[(q.qid, "context")] for q in usable)
    assert bm25.correct == bm25_right
    assert bm25.context_hit.mean == sum(reader.saw_gold[(q.qid, "context")] for q in questions) / N
    # malformed answers are counted, not dropped: every condition still has N questions
    for s in (closed, bm25, oracle):
        assert s.n == N and s.answered == N - len(broken)
        assert dict(s.malformed) == {"wrong_format": len(broken)}
        assert s.calls == 1.5 and s.tokens > 0
    assert {a.status for a in result.answers["oracle"] if a.qid in {q.qid for q in broken}} == {"wrong_format"}
    # the oracle cites only gold (precision 1), and cites it whenever it answered usably
    assert oracle.cite_precision.mean == 1.0 and oracle.cite_recall.mean == len(usable) / N
    assert closed.cite_precision is None and closed.context_hit is None
    # exact McNemar: closed book vs oracle differ on every usable question, all in the oracle's favour
    test = table.test("none", "oracle")
    assert (test.only_a, test.only_b) == (0, len(usable))
    assert test.p == pytest.approx(2 * 0.5 ** len(usable))
    assert test.p_adjusted >= test.p and table.significant("oracle")
    assert table.per_code == {"kk": {"none": (0, N), "bm25": (bm25_right, N), "oracle": (len(usable), N)}}
    text = to_markdown(table)
    assert "| oracle | " in text and "exact McNemar" in text and "| kk | 12 |" in text
    # accounting per condition adds up to the requests the server saw
    per_system = client.accounting.by_system()
    assert {k: v.calls for k, v in per_system.items()} == {f"answer/{c}": N + N // 2 for c in ("none", "bm25",
                                                                                                  "oracle")}
    client.close()


def test_a_killed_run_resumes_without_repeating_a_call(exam, tmp_path):
    bench, queries, questions = exam
    cache = tmp_path / "calls.sqlite"
    with ScriptedChatServer(default=Reader(questions)) as server:
        killed = client_for(server, cache, budget=7)
        with pytest.raises(BudgetExhausted):
            evaluate_answers(bench.corpus, queries, ["none", "oracle"], killed, limit=N)
        assert server.count == 7
        killed.close()
        resumed = client_for(server, cache)
        result = evaluate_answers(bench.corpus, queries, ["none", "oracle"], resumed, limit=N)
        total = 2 * (N + N // 2)
        assert server.count == total
        bodies = [json.dumps(b, sort_keys=True) for b in server.requests]
        assert len(set(bodies)) == len(bodies)  # no request sent twice
        usage = resumed.accounting.total()
        assert usage.calls == total and usage.cached == 7 and usage.requests == total - 7
        resumed.close()
    assert result.table.summaries["oracle"].correct == sum(1 for i in range(N) if i % 4 != 2)


def test_summarise_refuses_unpaired_conditions():
    a = AnsweredQuestion("q1", "kk", "A", "A", ("kk::1",))
    b = AnsweredQuestion("q2", "kk", "A", "B", ("kk::1",))
    with pytest.raises(ValueError, match="answered different questions"):
        summarise({"none": [a], "oracle": [b]})


def test_cli_answer_eval_writes_table_json_and_plot(exam, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    # the call cache is keyed by model and prompt, not by server: other tests' "scripted" answers stay out
    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path / "cache"))
    from lexir.cli.main import app

    _bench, _queries, questions = exam
    with ScriptedChatServer(default=Reader(questions)) as server:
        out = tmp_path / "answers"
        plot = tmp_path / "accuracy.png"
        result = CliRunner().invoke(app, [
            "answer-eval", "demo", "--split", "test", "--limit", "8", "-c", "none", "-c", "bm25(mode=stem)",
            "-c", "oracle", "-k", "3", "--base-url", server.url, "--model", "scripted", "--format", "markdown",
            "-o", str(out), "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    assert "| bm25(mode=stem) |" in result.stdout and "| none (baseline) |" in result.stdout
    data = json.loads((tmp_path / "answers.json").read_text(encoding="utf-8"))
    assert set(data["answers"]) == {"none", "bm25(mode=stem)", "oracle"}
    assert all(len(a["context"]) == 3 for a in data["answers"]["bm25(mode=stem)"])
    assert data["conditions"]["oracle"]["correct"] == 6 and data["chance"] == pytest.approx(1 / 3)
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_answer_eval_errors_are_one_clear_line(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path / "cache"))
    from lexir.cli.main import app

    runner = CliRunner()
    with ScriptedChatServer(default='{"answer": "A"}') as server:
        bad = runner.invoke(app, ["answer-eval", "demo", "-c", "no-such-system", "--limit", "2",
                                  "--base-url", server.url])
        assert bad.exit_code == 2 and "no-such-system" in bad.output and "Traceback" not in bad.output
        split = runner.invoke(app, ["answer-eval", "demo", "--split", "dev", "--base-url", server.url])
        assert split.exit_code == 2 and "no split 'dev'" in split.output
        spent = runner.invoke(app, ["answer-eval", "demo", "-c", "none", "--limit", "4", "--budget", "2",
                                    "--base-url", server.url, "--concurrency", "1"])
        assert spent.exit_code == 2 and "run the same command again to resume" in spent.output


def test_orycore_questions_carry_their_options_and_correct_answer(data_dir):
    from lexir.datasets import open as open_data

    bench = open_data("pl-orycore-sample", data_dir=data_dir)
    questions = questions_from(bench.queries)
    raw = json.loads((data_dir / "pl" / "orycore" / "exam-adw-2024-sample.json").read_text(encoding="utf-8"))
    by_id = {str(item["id"]): item for item in raw["questions"]}
    assert questions
    for q in questions:
        item = by_id[q.qid]
        assert q.expected == item["correct"] and dict(q.options) == item["options"]
        assert q.query.text.startswith(item["question"].strip())
