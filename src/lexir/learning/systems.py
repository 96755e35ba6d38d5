"""The trained systems: ``bm25-qa(model=DIR)``, and what ``recommended(model=DIR)`` builds.

A model folder is read once per process (:func:`cached_model`, keyed by the folder and its
manifest's sha256); the evidence indexes are built over the corpus the system is built for, from
the model's training questions whose provisions that corpus has (a model trained over one copy
of the BGB serves another copy with the same ids). A model trained for another language is
refused.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from lexir.learning.model import Model, load_model
from lexir.learning.qa import DEPTH, SEEN, QuestionAugmented, Weights, lightgbm, load_adapter, uses_dense
from lexir.retrieval.base import register_system
from lexir.retrieval.context import BuildContext
from lexir.retrieval.params import Param
from lexir.types import Corpus

log = logging.getLogger(__name__)
_MODELS: dict[tuple[str, str], Model] = {}


def cached_model(folder: str | Path) -> Model:
    """The model folder, loaded once per process for each content of its manifest."""
    path = Path(folder).resolve()
    try:
        digest = hashlib.sha256((path / "lexir-model.json").read_bytes()).hexdigest()
    except FileNotFoundError:
        raise FileNotFoundError(f"{folder} is not a lexir model folder (no lexir-model.json; "
                                "write one with lexir train)") from None
    key = (str(path), digest)
    if key not in _MODELS:
        _MODELS[key] = load_model(path)
    return _MODELS[key]


def build_trained(corpus: Corpus, model_dir: str, context: BuildContext, *, seen: str = "refuse", digest: str = "",
                  base: str = "", expect: tuple[str, ...] = ("bm25-qa", "recommended")) -> QuestionAugmented:
    """The trained system of ``model_dir`` over ``corpus`` (base: the model's, unless ``base``), its
    parts built through ``context``."""
    if not model_dir:
        raise ValueError("needs model=DIR: a folder written by `lexir train` (see docs/train.md)")
    model = cached_model(model_dir)
    if digest and digest != model.digest:
        raise ValueError(f"model {model_dir}: its manifest changed since this spec was made (digest "
                         f"{model.digest[:12]}…, expected {digest[:12]}…); rerun with the new model")
    if model.system not in expect:
        raise ValueError(f"model {model_dir} was trained for {model.system!r}, not {' or '.join(expect)}")
    if corpus.language and model.manifest["language"] and corpus.language != model.manifest["language"]:
        raise ValueError(f"model {model_dir} was trained on {model.manifest['language']!r} questions; "
                         f"corpus {corpus.name!r} is {corpus.language!r}")
    cited = sorted({d for q in model.questions for d, grade in q.relevant.items() if grade > 0})
    ids = set(corpus.ids)
    missing = [d for d in cited if d not in ids]
    if cited and len(missing) == len(cited):
        raise ValueError(f"model {model_dir}: none of the {len(cited)} provisions its training questions cite is "
                         f"in corpus {corpus.name!r} (e.g. {missing[0]!r}); it was trained over corpus "
                         f"{model.manifest.get('corpus', {}).get('name', '?')!r}: use it over that corpus or "
                         "a copy with the same provision ids")
    if missing:
        log.warning("model %s: %d of the %d provisions its training questions cite are not in corpus %r "
                    "(e.g. %r); the questions citing only those are not used", model_dir, len(missing),
                    len(cited), corpus.name, missing[0])
    params = model.params
    base_spec = base or params["base"]
    weights = Weights.from_dict(params)
    recall = Weights.from_dict(params["recall"]) if params.get("recall") else None
    dense = adapter = None
    if uses_dense(weights, recall):
        dense = context.build(params["dense"], corpus)
        adapter = load_adapter(model.folder / params["adapter_file"], corpus.ids, dense)
    ranker = None
    if params.get("ranker"):
        ranker = lightgbm().Booster(model_str=(model.folder / params["ranker"]).read_text(encoding="utf-8"))
    return QuestionAugmented(corpus, context.build(base_spec, corpus, context.progress), model, weights,
                             depth=int(params.get("depth", DEPTH)), seen=seen, base_spec=base_spec, ranker=ranker,
                             dense=dense, adapter=adapter, recall=recall)


def trained_spec(model_dir: str, seen: str = "refuse", *, base: str = "", digest: str = "") -> str:
    """The full spec a trained model stands for: ``bm25-qa`` with the model's base and digest
    (so a cached run follows a retrained model, not only its path). ``base``/``digest``: given
    ones are kept (a digest given is checked when the system is built)."""
    model = cached_model(model_dir)
    return (f"bm25-qa(model={model.folder};digest={digest or model.digest};base={base or model.params['base']};"
            f"seen={seen})")


def _bm25_qa_stands_for(language: str, *, jurisdiction: str = "", model: str = "", base: str = "",
                        seen: str = "refuse", digest: str = "") -> str:
    """What ``bm25-qa(model=DIR)`` stands for: itself with the model's digest and base filled in, so
    a run cached under it follows the model's content, not only its folder
    (:func:`lexir.retrieval.build.effective_spec`)."""
    if not model:
        given = "".join(f";{k}={v}" for k, v in (("base", base), ("digest", digest)) if v)
        return f"bm25-qa(seen={seen}{given})"  # refused when built: it needs model=DIR
    return trained_spec(model, seen, base=base, digest=digest)


@register_system(
    "bm25-qa",
    "a base system (default: the model's, e.g. bm25) plus each provision's training questions as a second "
    "BM25 field, the votes of the most similar training questions and a citation prior; weights learned "
    "on inner folds by `lexir train bm25-qa` (docs/train.md)",
    stands_for=_bm25_qa_stands_for,
    model=Param("", "a model folder written by `lexir train bm25-qa|recommended`", type=str),
    base=Param("", "the base system (empty: the one the model was trained with)", names_systems="spec", type=str),
    seen=Param("refuse", "questions the model was trained on: refuse the run, warn, or allow", choices=SEEN),
    digest=Param("", "the model manifest's sha256, checked when given (set by recommended's spec)", type=str),
)
def build_bm25_qa(corpus: Corpus, *, model, base, seen, digest, context: BuildContext) -> QuestionAugmented:
    return build_trained(corpus, model, context, seen=seen, digest=digest, base=base)
