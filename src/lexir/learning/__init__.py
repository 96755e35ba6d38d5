"""Learning from judged questions: folds, model folders, and the systems trained on them.

``lexir train SYSTEM DATA --output DIR`` (:func:`lexir.learning.train.train_system`) writes a
model folder (:mod:`lexir.learning.model`) that a system spec loads with ``model=DIR``
(``bm25-qa``, ``recommended``). Folds (:mod:`lexir.learning.folds`) are made from a hash of the
query id, so experiments, benchmarks and tests cut the same ones.

This package sits beside :mod:`lexir.retrieval` and below the CLI, service and API: it imports
retrieval, analysis and evaluation, never the layers above them.
"""
