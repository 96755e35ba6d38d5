"""numba kernels, compiled on first use: the one place lexir compiles a kernel, whatever the layer
that owns its source (the BM25 kernels in ``retrieval``, the snippets' window in ``structure``).
Compiled kernels are kept in numba's on-disk cache unless ``LEXIR_NUMBA_CACHE=0``."""

from __future__ import annotations

import os

_COMPILED: dict = {}  # a numba source function -> its compiled kernel


def compiled(source):
    """``source`` compiled (``nogil``) on first use, the same kernel on every later call."""
    kernel = _COMPILED.get(source)
    if kernel is None:
        from numba import njit

        kernel = _COMPILED[source] = njit(nogil=True, cache=os.environ.get("LEXIR_NUMBA_CACHE") != "0")(source)
    return kernel
