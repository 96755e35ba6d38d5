"""lexir's compiled kernels (BM25's, the build's analysis, the shards' merge, the snippets') index
flat arrays by offsets they compute; compiled code does not check an index, so one past an array's
end reads or writes memory silently: a wrong answer, or a crash. Here the kernels' own tests run
again with numba's bounds checks on (``NUMBA_BOUNDSCHECK=1``) and nothing taken from numba's
cache, so such an index is an ``IndexError`` that fails them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
KERNEL_TESTS = ["tests/test_bm25.py", "tests/test_bm25_build.py", "tests/test_bm25_pruning.py",
                "tests/test_bm25_shards.py", "tests/test_incremental.py", "tests/test_snippets.py",
                "tests/test_doc_ids.py", "tests/test_saved_arrays.py"]
CHECKED = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "LEXIR_NUMBA_CACHE": "0", "PYTHONPATH": str(REPO / "src")}


def test_a_kernel_compiled_with_bounds_checks_refuses_an_index_past_the_end():
    """What the test below relies on: under these settings a kernel compiled by lexir
    (:func:`lexir.kernels.compiled`) raises at an index past an array's end."""
    probe = ("import numpy as np\n"
             "from lexir.kernels import compiled\n"
             "def past_end(a):\n"
             "    return a[len(a)]\n"
             "try:\n"
             "    compiled(past_end)(np.zeros(3, np.int32))\n"
             "except IndexError:\n"
             "    print('refused')\n")
    out = subprocess.run([sys.executable, "-c", probe], env=CHECKED, cwd=REPO, capture_output=True, text=True,
                         timeout=300)
    assert out.stdout.strip() == "refused", out.stderr[-2000:]


@pytest.mark.slow
def test_the_kernels_tests_pass_with_bounds_checked():
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-m", "not slow",
                          *KERNEL_TESTS], env=CHECKED, cwd=REPO, capture_output=True, text=True, timeout=3600)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
