"""Intervals, paired significance tests and multiple-comparison correction.

Everything here takes plain lists so it can be reused outside ``compare``;
resampling is seeded so a report is reproducible run to run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import binom, norm

# resamples are drawn in blocks so memory stays bounded for large query sets
_BLOCK = 1000


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    return float(norm.ppf(0.5 + confidence / 2.0))


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion.

    Preferred over the normal approximation because it stays inside [0, 1]
    and behaves at 0 and n successes, which Hit@1 on small sets often hits.
    """
    if n <= 0:
        raise ValueError("wilson_interval needs n > 0")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in [0, {n}], got {successes}")
    z = _z(confidence)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # the interval always holds p; rounding can push a bound past it (e.g. to
    # 0.9999999999999998 at n successes), which would misreport "mean outside CI"
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


@dataclass(frozen=True)
class McNemar:
    """Exact McNemar test: ``b`` = only A succeeded, ``c`` = only B succeeded."""

    b: int
    c: int
    p: float


def mcnemar_exact(hits_a: Sequence[bool], hits_b: Sequence[bool]) -> McNemar:
    """Two-sided exact (binomial) McNemar test on paired successes.

    Only discordant pairs carry information; under the null each is equally
    likely to favour A or B, so min(b, c) is Binomial(b + c, 1/2).
    """
    if len(hits_a) != len(hits_b):
        raise ValueError(f"paired inputs differ in length: {len(hits_a)} vs {len(hits_b)}")
    b = sum(1 for a, o in zip(hits_a, hits_b, strict=True) if a and not o)
    c = sum(1 for a, o in zip(hits_a, hits_b, strict=True) if o and not a)
    if b + c == 0:
        return McNemar(b, c, 1.0)
    p = min(1.0, 2.0 * float(binom.cdf(min(b, c), b + c, 0.5)))
    return McNemar(b, c, p)


def _check_resamples(n_resamples: int) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")


def _paired_differences(x: Sequence[float], y: Sequence[float]) -> np.ndarray:
    if len(x) != len(y):
        raise ValueError(f"paired inputs differ in length: {len(x)} vs {len(y)}")
    if len(x) == 0:
        raise ValueError("paired inputs are empty")
    return np.asarray(x, dtype=float) - np.asarray(y, dtype=float)


def randomisation_test(
    x: Sequence[float], y: Sequence[float], n_resamples: int = 10_000, seed: int = 0
) -> float:
    """Two-sided paired randomisation (sign-flip) test on the mean difference.

    Under the null the system labels of each query are exchangeable, i.e. each
    per-query difference may flip sign. The +1 in numerator and denominator
    counts the observed assignment, so p is never 0 (Phipson & Smyth 2010).
    """
    _check_resamples(n_resamples)
    d = _paired_differences(x, y)
    observed = abs(d.mean())
    # sums in another order round differently; without slack the observed
    # assignment itself could fail to count as "at least as extreme"
    threshold = observed - 1e-12 * max(1.0, observed)
    rng = np.random.default_rng(seed)
    extreme = 0
    for start in range(0, n_resamples, _BLOCK):
        size = min(_BLOCK, n_resamples - start)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(size, d.size))
        extreme += int(np.count_nonzero(np.abs(signs @ d) / d.size >= threshold))
    return (extreme + 1) / (n_resamples + 1)


def bootstrap_interval(
    values: Sequence[float], confidence: float = 0.95, n_resamples: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval for the mean of per-query values."""
    _z(confidence)  # validates confidence
    _check_resamples(n_resamples)
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("bootstrap_interval needs at least one value")
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    for start in range(0, n_resamples, _BLOCK):
        size = min(_BLOCK, n_resamples - start)
        idx = rng.integers(0, data.size, size=(size, data.size))
        means[start : start + size] = data[idx].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in the input order.

    The i-th smallest p (0-based) is multiplied by (m - i); a running maximum
    keeps the adjusted values monotone in the raw ones, and they are capped at 1.
    """
    if any(not 0.0 <= p <= 1.0 for p in pvalues):
        raise ValueError(f"p-values must lie in [0, 1]: {list(pvalues)}")
    m = len(pvalues)
    adjusted = [0.0] * m
    running = 0.0
    for i, idx in enumerate(sorted(range(m), key=lambda j: pvalues[j])):
        running = max(running, min(1.0, (m - i) * pvalues[idx]))
        adjusted[idx] = running
    return adjusted
