"""The LLM client against a real HTTP server on loopback: retries, cache, resumption, accounting, parsing."""

from __future__ import annotations

import json
import threading

import pytest

from lexir.llm import prompts
from lexir.llm.accounting import Accounting, CallRecord
from lexir.llm.client import BudgetExhausted, LLMClient, LLMConfig, LLMError
from lexir.llm.parsing import Status, extract_json, parse_ranking, parse_selection, parse_text_field
from lexir.llm.testing import ScriptedChatServer, broken, fail, slow

MSG = [{"role": "user", "content": "hello there"}]


def make(server, tmp_path, **kw) -> LLMClient:
    settings = {"backoff": 0.01, "max_backoff": 0.2, "timeout": 5.0, "cache_path": str(tmp_path / "calls.sqlite"),
                "concurrency": 2, **kw}
    return LLMClient(LLMConfig(base_url=server.url, model="test-model", **settings))


def test_plain_call_and_usage(tmp_path):
    with ScriptedChatServer(["hi you"]) as server:
        client = make(server, tmp_path)
        result = client.chat(MSG, system="s", qid="q1", role="r")
        assert result.text == "hi you" and not result.cached
        assert (result.prompt_tokens, result.completion_tokens) == (2, 2)
        body = server.requests[0]
        assert body["model"] == "test-model" and body["messages"] == MSG and body["temperature"] == 0.0
        assert client.accounting.total().calls == 1


@pytest.mark.parametrize("failure", [fail(429, retry_after=0), fail(500), fail(503), broken()])
def test_retries_transient_failures(tmp_path, failure):
    with ScriptedChatServer([failure, failure, "ok"]) as server:
        client = make(server, tmp_path)
        result = client.chat(MSG)
        assert result.text == "ok" and result.requests == 3 and server.count == 3


def test_retry_after_is_honoured(tmp_path):
    import time

    with ScriptedChatServer([fail(429, retry_after=0.5), "ok"]) as server:
        client = make(server, tmp_path, max_backoff=5.0)
        start = time.monotonic()
        client.chat(MSG)
        assert time.monotonic() - start >= 0.45


def test_timeout_is_retried(tmp_path):
    with ScriptedChatServer([slow(1.5, "late"), "fast"]) as server:
        client = make(server, tmp_path, timeout=0.3)
        assert client.chat(MSG).text == "fast"
        assert server.count == 2


def test_gives_up_after_max_retries(tmp_path):
    with ScriptedChatServer([fail(500)] * 10) as server:
        client = make(server, tmp_path, max_retries=2)
        with pytest.raises(LLMError, match="giving up after 3 requests"):
            client.chat(MSG)
        assert server.count == 3


def test_client_error_is_not_retried(tmp_path):
    with ScriptedChatServer([fail(401, message="bad key")]) as server:
        client = make(server, tmp_path)
        with pytest.raises(LLMError, match="401"):
            client.chat(MSG)
        assert server.count == 1


def test_server_refusing_response_format_is_asked_with_less(tmp_path):
    schema = {"type": "object"}
    script = [fail(500, message="body.response_format.type: Input should be 'text' or 'json_object'"),
              fail(400, message="response_format is not supported"), '{"a": 1}', '{"b": 2}']
    with ScriptedChatServer(script) as server:
        client = make(server, tmp_path, max_retries=0)
        assert extract_json(client.chat(MSG, schema=schema).text) == {"a": 1}
        first, second, third = (r.get("response_format") for r in server.requests)
        assert first["type"] == "json_schema"
        assert second == {"type": "json_object", "schema": schema}
        assert third is None
        # the client remembers: the next call goes without response_format at once
        client.chat([{"role": "user", "content": "again"}], schema=schema)
        assert server.count == 4 and "response_format" not in server.requests[3]


def test_response_format_modes(tmp_path):
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    with ScriptedChatServer(default="{}") as server:
        make(server, tmp_path, cache=False).chat(MSG, schema=schema)
        make(server, tmp_path, cache=False, json_mode="json_object").chat(MSG, schema=schema)
        make(server, tmp_path, cache=False, json_mode="none").chat(MSG, schema=schema)
        a, b, c = server.requests
        assert a["response_format"] == {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
        assert b["response_format"] == {"type": "json_object", "schema": schema}
        assert "response_format" not in c


def test_cache_hit_on_rerun_makes_no_request(tmp_path):
    with ScriptedChatServer(default="same answer") as server:
        first = make(server, tmp_path)
        for i in range(5):
            first.chat([{"role": "user", "content": f"question {i}"}], qid=f"q{i}", system="s")
        first.close()
        assert server.count == 5
        second = make(server, tmp_path)
        for i in range(5):
            r = second.chat([{"role": "user", "content": f"question {i}"}], qid=f"q{i}", system="s")
            assert r.cached and r.text == "same answer"
        assert server.count == 5  # zero new requests
        total = second.accounting.total()
        assert (total.calls, total.cached, total.requests) == (5, 5, 0)
        # tokens of cached answers are what they cost when made
        assert total.prompt_tokens == first.accounting.total().prompt_tokens


def test_cache_key_covers_model_messages_and_params(tmp_path):
    with ScriptedChatServer(default="x") as server:
        client = make(server, tmp_path)
        client.chat(MSG)
        client.chat(MSG, max_tokens=7)
        client.chat(MSG, temperature=0.5)
        client.chat([{"role": "user", "content": "other"}])
        other_model = LLMClient(LLMConfig(base_url=server.url, model="other", cache_path=str(tmp_path / "calls.sqlite")))
        other_model.chat(MSG)
        assert server.count == 5
        client.chat(MSG)
        assert server.count == 5


def test_cache_uses_wal(tmp_path):
    import sqlite3

    with ScriptedChatServer(default="x") as server:
        make(server, tmp_path).chat(MSG)
    mode = sqlite3.connect(tmp_path / "calls.sqlite").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode.lower() == "wal"


def test_killed_run_resumes_without_repeating_calls(tmp_path):
    """A run stopped after 4 calls (by an exception) is resumed: only the other 6 are made."""
    questions = [[{"role": "user", "content": f"q{i}"}] for i in range(10)]
    with ScriptedChatServer(default="answer") as server:
        killed = make(server, tmp_path, budget=4, concurrency=1)
        with pytest.raises(BudgetExhausted):
            killed.map(lambda m: killed.chat(m), questions)
        assert server.count == 4
        resumed = make(server, tmp_path, concurrency=3)
        texts = resumed.map(lambda m: resumed.chat(m), questions)
        assert texts and all(t.text == "answer" for t in texts)
        assert server.count == 10  # 4 + 6: nothing repeated
        total = resumed.accounting.total()
        assert (total.calls, total.cached, total.requests) == (10, 4, 6)


def test_concurrency_limit(tmp_path):
    active, peak, lock = [0], [0], threading.Lock()

    def responder(body):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        import time

        time.sleep(0.1)
        with lock:
            active[0] -= 1
        return "x"

    with ScriptedChatServer(default=responder) as server:
        client = make(server, tmp_path, concurrency=3, cache=False)
        client.map(lambda i: client.chat([{"role": "user", "content": str(i)}]), range(12))
        assert server.count == 12 and peak[0] <= 3 and peak[0] >= 2


def test_config_precedence(tmp_path, monkeypatch):
    toml = tmp_path / "llm.toml"
    toml.write_text('base_url = "http://file:1/v1"\nmodel = "file-model"\napi_key_env = "MY_KEY"\nconcurrency = 7\n')
    yaml_file = tmp_path / "llm.yaml"
    yaml_file.write_text("llm:\n  base_url: http://yaml:2\n  model: yaml-model\n")
    for var in ("LEXIR_LLM_BASE_URL", "LEXIR_LLM_MODEL", "LEXIR_LLM_API_KEY", "LEXIR_LLM_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "nowhere"))
    monkeypatch.setenv("MY_KEY", "secret")
    c = LLMConfig.resolve(config_file=toml)
    assert (c.base_url, c.model, c.api_key, c.concurrency) == ("http://file:1/v1", "file-model", "secret", 7)
    monkeypatch.setenv("LEXIR_LLM_MODEL", "env-model")
    assert LLMConfig.resolve(config_file=toml).model == "env-model"
    assert LLMConfig.resolve(config_file=toml, model="arg-model").model == "arg-model"
    y = LLMConfig.resolve(config_file=yaml_file)
    assert y.base_url == "http://yaml:2" and y.chat_url == "http://yaml:2/v1/chat/completions"
    monkeypatch.setenv("LEXIR_LLM_CONFIG", str(toml))
    assert LLMConfig.resolve().concurrency == 7
    monkeypatch.delenv("LEXIR_LLM_CONFIG")
    with pytest.raises(ValueError, match="no LLM endpoint"):
        LLMConfig.resolve()
    with pytest.raises(ValueError, match="unknown LLM setting"):
        LLMConfig.resolve(base_url="http://x", colour="red")
    assert "secret" not in repr(c)


def test_accounting_sums_and_prints():
    a = Accounting([CallRecord("s1", "q1", "r", False, 10, 2, 1.0, 1, "ok"),
                    CallRecord("s1", "q2", "r", True, 5, 1, 0.5, 0, "repetition")])
    b = Accounting([CallRecord("s2", "q1", "r", False, 7, 3, 2.0, 2, "ok")])
    both = a + b
    assert both.total().calls == 3 and both.total().prompt_tokens == 22 and both.total().requests == 3
    assert both.by_system()["s1"].completion_tokens == 3
    assert both.by_query()["q1"].calls == 2
    assert both.total("s1").statuses == {"ok": 1, "repetition": 1}
    assert (a.total() + b.total()).tokens == both.total().tokens
    assert both.per_query_mean("s1")["calls"] == 1.0
    assert "s2: 1 calls" in both.summary() and "repetition=1" in both.summary()
    both.print()


def test_parsing_classifies_answers():
    assert extract_json('Here:\n```json\n{"ranking": [2, 1]}\n```\nHope it helps {') == {"ranking": [2, 1]}
    assert extract_json('{"a": [1, 2} then {"b": 2} and more') == {"b": 2}
    assert extract_json("no json at all") is None
    assert parse_ranking('{"ranking": [3, 1, 2]}', 3).status is Status.OK
    assert parse_ranking('{"ranking": [3, 1, 2]}', 3).value == [2, 0, 1]
    rep = parse_ranking('{"ranking": [3, 3, 3, 1]}', 3)
    assert rep.status is Status.REPETITION and rep.value == [2, 0, 1]
    miss = parse_ranking('{"ranking": [2]}', 3)
    assert miss.status is Status.MISSING_ITEMS and miss.value == [1, 0, 2]
    bad = parse_ranking("I think the second one.", 3)
    assert bad.status is Status.WRONG_FORMAT and bad.value == [0, 1, 2]
    loop = parse_ranking("1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2", 3)
    assert loop.status is Status.REPETITION
    assert parse_ranking('{"ranking": ["[2]", "1", 3]}', 3).status is Status.OK
    assert parse_selection('{"keep": []}', 4).status is Status.OK
    assert parse_selection('{"keep": [4, 1]}', 4).value == [0, 3]
    assert parse_selection('{"keep": [9]}', 4).status is Status.WRONG_FORMAT
    assert parse_text_field('{"keywords": ["a", "b"]}', "keywords").value == "a b"
    assert parse_text_field('{"query": ""}', "query").status is Status.WRONG_FORMAT


def test_prompts_render_all_templates():
    for name in prompts.NAMES:
        values = {k: f"<{k}>" for k in prompts.placeholders(name)}
        messages = prompts.render(name, **values)
        assert messages[-1]["role"] == "user"
        text = json.dumps(messages)
        assert all(f"<{k}>" in text for k in values) and "$" not in messages[-1]["content"]
    with pytest.raises(KeyError):
        prompts.render("rerank", query="q")


def test_cache_key_includes_the_endpoint():
    from lexir.llm.client import request_key

    messages = [{"role": "user", "content": "Który artykuł?"}]
    a = request_key("qwen", messages, {"temperature": 0}, "http://127.0.0.1:8001/v1")
    b = request_key("qwen", messages, {"temperature": 0}, "http://127.0.0.1:8002/v1")
    assert a != b and a == request_key("qwen", messages, {"temperature": 0}, "http://127.0.0.1:8001/v1/")
