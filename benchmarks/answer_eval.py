#!/usr/bin/env python
"""Answer accuracy by context condition (closed book, a system's top k, the gold provisions).

Against a model of your own (settings also from LEXIR_LLM_* or ~/.config/lexir/llm.toml)::

    python benchmarks/answer_eval.py --dataset pl-exams --split test --limit 200 \\
        --base-url http://127.0.0.1:8000/v1 --model qwen3-8b -c none -c bm25 -c oracle

Without any model (this machine has none): ``--overlap-reader`` serves a transparent
stand-in over the same OpenAI protocol on loopback, so the whole path runs: it picks the
option sharing the most content words with the provisions shown (closed book: with the
question) and cites the provision sharing most with that option. It is a reader a lawyer would
call naive; what it measures is how much the *provisions shown* move a lexical reader, not
what an LLM would do::

    python benchmarks/answer_eval.py --overlap-reader --dataset pl-exams --split test \\
        --plot docs/answer_accuracy_overlap.png

Prints the table (markdown) and the wall time; ``--output STEM`` writes STEM.md / STEM.json.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

_WORD = re.compile(r"\w{4,}")


def _words(text: str) -> set[str]:
    # a crude stem: the first 6 letters, so that Polish inflection still matches
    return {w.lower()[:6] for w in _WORD.findall(text)}


def overlap_reader(body: dict) -> str:
    """The stand-in reader (see the module docstring); answers in the JSON asked for."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    question = re.search(r"Question:\n(.+?)\n\nOptions:", user, re.S)
    options = dict(re.findall(r"^([A-Z])\) (.*)$", user.split("\nOptions:\n", 1)[1], re.M))
    provisions = re.findall(r"^\[(\d+)\] \S+?:? (.*)$", user, re.M)
    source = " ".join(text for _, text in provisions) if provisions else (question.group(1) if question else "")
    pool = _words(source)
    letter = max(options, key=lambda k: (len(_words(options[k]) & pool), -ord(k)))
    answer: dict = {"answer": letter}
    if "Statute provisions" in user:
        chosen = _words(options[letter])
        best = max(provisions, key=lambda p: len(_words(p[1]) & chosen), default=None)
        answer["cite"] = [int(best[0])] if best and _words(best[1]) & chosen else []
    return json.dumps(answer)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="pl-exams")
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=0, help="first N questions (0 = all)")
    parser.add_argument("-c", "--context", action="append", dest="contexts", help="none | oracle | system spec")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--base-url")
    parser.add_argument("--model")
    parser.add_argument("--config", help="LLM config file (TOML or YAML)")
    parser.add_argument("--concurrency", type=int, default=None)
    parser.add_argument("--overlap-reader", action="store_true", help="serve the lexical stand-in reader")
    parser.add_argument("--output", help="write OUTPUT.md and OUTPUT.json")
    parser.add_argument("--plot", help="accuracy plot (.png/.svg)")
    args = parser.parse_args(argv)
    contexts = args.contexts or ["none", "bm25", "oracle"]

    from lexir.datasets import open as open_data
    from lexir.evaluation.answers import to_markdown
    from lexir.llm.answer import evaluate_answers, write_answer_files
    from lexir.llm.client import LLMClient, LLMConfig

    bench = open_data(args.dataset)
    queries = bench.queries.split(args.split)
    server = None
    if args.overlap_reader:
        from lexir.llm.testing import ScriptedChatServer

        server = ScriptedChatServer(default=overlap_reader, model="overlap-reader").start()
        args.base_url, args.model = server.url, "overlap-reader"
    try:
        client = LLMClient(LLMConfig.resolve(args.base_url, args.model, None, args.config,
                                             concurrency=args.concurrency))
        start = time.perf_counter()
        result = evaluate_answers(bench.corpus, queries, contexts, client, k=args.k, limit=args.limit or None,
                                  title=f"{args.dataset}/{args.split}, reader {client.config.model}")
        seconds = time.perf_counter() - start
    finally:
        if server is not None:
            server.stop()
    print(to_markdown(result.table))
    print(f"LLM usage: {client.accounting.total()}")
    print(f"wall time: {seconds:.1f} s for {result.table.n_questions} questions x {len(contexts)} conditions")
    if args.output:
        write_answer_files(result, args.output)
    if args.plot:
        from lexir.evaluation.plots import plot_accuracy

        plot_accuracy(result.table, Path(args.plot), chance=result.chance)
        print(f"plot: {args.plot}")
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
