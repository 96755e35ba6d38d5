#!/usr/bin/env python
"""The cost of quote verification (``POST /v1/verify``, MCP ``verify_quote``): CPU seconds of
``lexir.service.hits.verify_quote`` for quotes of growing length against a real long article,
in-process, best of ``--repeat`` runs, with the verdict each gives.

Quotes: (a) a passage of the article itself, lightly altered (a word dropped every 12: a
paraphrase, found fuzzy); (b) a phrase of the article repeated to the length (the worst case a
client can send within the service's 5,000-character cap: repetitive text is difflib's slowest).

    PYTHONPATH=src LEXIR_DATA=../shared/data python benchmarks/bench_verify.py
"""

from __future__ import annotations

import argparse
import json
import time


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="pl-codes")
    parser.add_argument("--id", default="kk::115", help="the article quoted (a long one)")
    parser.add_argument("--lengths", default="250,500,1000,2000,5000")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)

    import lexir
    from lexir.service.hits import verify_quote

    corpus = lexir.load(args.corpus)
    corpus = getattr(corpus, "corpus", corpus)
    text = corpus[args.id].text
    words = text.split()
    out = {"corpus": args.corpus, "id": args.id, "article_chars": len(text), "rows": []}
    phrase = "zabija człowieka podlega karze pozbawienia wolności"
    for length in [int(n) for n in args.lengths.split(",")]:
        start = len(words) // 4
        passage = " ".join(w for i, w in enumerate(words[start:]) if i % 12 != 11)[:length]
        repeated = " ".join([phrase] * (length // len(phrase) + 1))[:length]
        for kind, quote in (("paraphrase", passage), ("repeated", repeated)):
            best, verdict = float("inf"), None
            for _ in range(args.repeat):
                t0 = time.process_time()
                verdict = verify_quote(quote, text)
                best = min(best, time.process_time() - t0)
            row = {"chars": len(quote), "quote": kind, "cpu_s": round(best, 3), "verified": verdict["verified"],
                   "match": verdict["match"], "score": verdict["score"]}
            out["rows"].append(row)
            print(json.dumps(row), flush=True)
    return out


if __name__ == "__main__":
    main()
