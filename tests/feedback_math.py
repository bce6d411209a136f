"""Dense float64 linear algebra for the feedback tests: explicit unit vectors, z-scores and row similarities, against
which `rise_core.feedback`'s updates are checked (`unit_row_scores` works in float32, whose rounding would set the
tolerance)."""

from __future__ import annotations

import numpy as np

TOL = 1e-10
"""float64 throughout: the only error is summation order, far below 1e-10 at these sizes."""


def unit_rows(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """(n, d) rows of unit length, Gaussian directions."""
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def z(v: np.ndarray) -> np.ndarray:
    """Standardised over the pool (mean 0, standard deviation 1)."""
    return (v - v.mean()) / v.std()


def dense_rows(pool: np.ndarray):
    """RowScores in float64: the pool's inner products with the given rows."""
    return lambda rows: pool[rows] @ pool.T
