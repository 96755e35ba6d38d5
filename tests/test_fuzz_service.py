"""Fuzzing the service's own OpenAPI schema with schemathesis (v4, its Python API) against a real
``lexir serve`` on a loopback port over the shipped demo corpus.

Every operation of ``/openapi.json`` gets a fixed number of generated requests, valid ones and
invalid ones (``LEXIR_FUZZ_EXAMPLES`` per operation and mode, default 25), under one time cap for
the whole run (``LEXIR_FUZZ_SECONDS``, default 35), with a fixed seed (``LEXIR_FUZZ_SEED``) so a
failure replays. What must hold for every response: no 5xx, and every 4xx is lexir's JSON error
``{"error": {"code", "message", ...}}`` naming no file of the server.
"""

from __future__ import annotations

import os
import time

import pytest

schemathesis = pytest.importorskip("schemathesis")
pytest.importorskip("fastapi")
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402
from test_service import Server, no_paths  # noqa: E402

EXAMPLES = int(os.environ.get("LEXIR_FUZZ_EXAMPLES", "25"))
SECONDS = float(os.environ.get("LEXIR_FUZZ_SECONDS", "35"))
SEED = int(os.environ.get("LEXIR_FUZZ_SEED", "19"))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(["demo", "--system", "bm25"], tmp_path_factory.mktemp("fuzz-cache"))
    yield srv
    srv.stop()


def check(case, response) -> None:
    where = f"{case.method} {case.formatted_path} query={case.query} body={str(case.body)[:300]}"
    assert response.status_code < 500, f"{response.status_code} for {where}: {response.text[:300]}"
    if 400 <= response.status_code < 500:
        content_type = {k.lower(): v for k, v in response.headers.items()}.get("content-type", [""])
        assert content_type[0].startswith("application/json"), where
        error = response.json()["error"]
        assert isinstance(error["code"], str) and isinstance(error["message"], str), where
        no_paths(response.text)


def test_no_5xx_and_every_4xx_is_a_json_error(server):
    schema = schemathesis.openapi.from_url(server.url + "/openapi.json")
    deadline = time.monotonic() + SECONDS
    counts: dict[str, int] = {}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 6  # search (GET, POST), provisions, cite, verify, corpora, health
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            if time.monotonic() > deadline:  # the cap holds for generation too, not only for requests
                break

            @seed(SEED)
            @settings(max_examples=EXAMPLES, deadline=None, database=None, phases=[Phase.generate],
                      suppress_health_check=list(HealthCheck))
            @given(case=operation.as_strategy(generation_mode=mode))
            def fuzz(case):
                if time.monotonic() > deadline:
                    return
                check(case, case.call(base_url=server.url, timeout=30))
                counts[case.operation.label] = counts.get(case.operation.label, 0) + 1

            try:
                fuzz()
            except Unsatisfiable:  # no invalid request exists (an operation without parameters)
                assert mode is GenerationMode.NEGATIVE, operation.label
    assert sum(counts.values()) >= min(50, len(operations) * 2), counts  # it really ran
    assert server.proc.poll() is None  # still serving
