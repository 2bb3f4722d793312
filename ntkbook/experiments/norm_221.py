"""Chapter 2, first half — the (2,2,1)-norm (Definition 2.2) and Proposition 2.1.

* :func:`landscape` — the objective Σ_k |xᵀT_k z| over all unit x, z ∈ ℝ² (a picture of Eq. 5);
* :func:`enumeration_timing` — cost of exact enumeration against d3 (2^{d3−1} spectral norms);
* :func:`bounds_against_exact` — the certified interval [lower, upper] next to the exact value;
* :func:`proposition_2_1` — ‖Σ_k T_k v_k‖ ≤ ‖T‖_{2,2,1}‖v‖_∞ on random tensors and vectors, and the
  equality case v = c·s*.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import _validation as V
from ..norms import contract_third, norm_221
from ..progress import progress
from ..scales import Norm221Timing, Prop21


def landscape(t: Any, *, points: int = 361) -> dict[str, np.ndarray]:
    """Σ_k |xᵀT_k z| for x = (cos a, sin a), z = (cos b, sin b) on a grid of a, b ∈ [0, π).

    ``t`` must have shape (2, 2, d3).  Returns ``angles`` (points,) and ``objective`` (points, points);
    its maximum approaches ‖T‖_{2,2,1} as the grid is refined.
    """
    t = V.numpy_array("t", t, ndim=3)
    if t.shape[:2] != (2, 2):
        raise ValueError(f"t must have shape (2, 2, d3) to be drawn, got {t.shape}")
    points = V.positive_int("points", points, minimum=2)
    a = np.linspace(0.0, np.pi, points, endpoint=False)
    unit = np.stack([np.cos(a), np.sin(a)], axis=1)
    obj = np.abs(np.einsum("ai,ijk,bj->abk", unit, t, unit)).sum(axis=2)
    return {"angles": a, "objective": obj}


def enumeration_timing(settings: Norm221Timing, *, seed: int = 0) -> dict[str, np.ndarray]:
    """Median wall time of exact :func:`ntkbook.norm_221` for a random (d1, d2, d3) tensor, per d3."""
    rng = np.random.default_rng(seed)
    d1, d2 = settings.d1, settings.d2
    rows: dict[str, list] = {"d3": [], "sign_vectors": [], "seconds": []}
    for d3 in progress(settings.d3_values, desc="d3"):
        t = rng.normal(size=(d1, d2, d3))
        times = []
        for _ in range(settings.repeats):
            start = time.perf_counter()
            norm_221(t)
            times.append(time.perf_counter() - start)
        rows["d3"].append(d3)
        rows["sign_vectors"].append(2 ** (d3 - 1))
        rows["seconds"].append(float(np.median(times)))
    return {k: np.asarray(v) for k, v in rows.items()}


def bounds_against_exact(shape: tuple[int, int, int], *, samples: int, bounds_d3: int = 4,
                         seed: int = 0) -> dict[str, np.ndarray]:
    """Exact value (enumeration) next to the interval the bounds mode certifies.

    The bounds mode is forced by ``max_exact_d3 = bounds_d3`` (< d3), as it would run for d3 > 16.
    Slices are scaled by random factors so the tensors are not all alike.
    """
    rng = np.random.default_rng(seed)
    d3 = shape[2]
    rows: dict[str, list] = {"exact": [], "lower": [], "upper": []}
    for _ in range(samples):
        t = rng.normal(size=shape) * rng.uniform(0.1, 2.0, size=d3)
        rows["exact"].append(norm_221(t).value)
        b = norm_221(t, max_exact_d3=bounds_d3, group_size=bounds_d3)
        rows["lower"].append(b.lower)
        rows["upper"].append(b.upper)
    return {k: np.asarray(v) for k, v in rows.items()}


def proposition_2_1(settings: Prop21, *, seed: int = 0) -> dict[str, np.ndarray]:
    """‖A‖ / (‖T‖_{2,2,1} ‖v‖_∞) with A = Σ_k T_k v_k for random tensors T and vectors v.

    For each tensor, four vectors: Gaussian, uniform on [−1, 1], a random sign vector and the
    maximizing sign vector s* scaled by a random c (the equality case).  Returns arrays ``kind``
    (0–3, see :data:`VECTOR_KINDS`) and ``ratio`` (≤ 1 by the proposition).
    """
    rng = np.random.default_rng(seed)
    shape = tuple(settings.shape)
    kinds, ratios = [], []
    for _ in progress(range(settings.num_tensors), desc="tensors"):
        t = rng.normal(size=shape)
        res = norm_221(t)
        vectors = [rng.normal(size=shape[2]), rng.uniform(-1, 1, size=shape[2]),
                   rng.choice([-1.0, 1.0], size=shape[2]), rng.uniform(0.5, 3.0) * res.signs]
        for kind, v in enumerate(vectors):
            a = contract_third(t, v)
            kinds.append(kind)
            ratios.append(np.linalg.norm(a, 2) / (res.value * np.max(np.abs(v))))
    return {"kind": np.asarray(kinds), "ratio": np.asarray(ratios)}


VECTOR_KINDS = ("Gaussian", "uniform", "random signs", "c·s* (maximizing signs)")
"""The kinds of vector v of :func:`proposition_2_1`, in the order of their ``kind`` index."""


def bounds_summary(bounds: Mapping[str, np.ndarray]) -> dict[str, list]:
    """Statistics of :func:`bounds_against_exact`: how often the lower bound is the exact value, and
    the ratios exact/lower and upper/exact (median and worst)."""
    found = np.isclose(bounds["lower"], bounds["exact"], rtol=1e-12)
    low, up = bounds["exact"] / bounds["lower"], bounds["upper"] / bounds["exact"]
    return {
        "statistic": ["samples", "lower bound = exact value", "median exact / lower", "worst exact / lower",
                      "median upper / exact", "worst upper / exact"],
        "value": [float(found.size), float(found.mean()), float(np.median(low)), float(np.max(low)),
                  float(np.median(up)), float(np.max(up))],
    }


def proposition_2_1_table(p21: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
    """Per kind of vector of :func:`proposition_2_1`: samples and the range of ‖A‖/(‖T‖₂,₂,₁‖v‖∞)."""
    return [{"vector v": name, "samples": int((p21["kind"] == k).sum()),
             "min ratio": float(p21["ratio"][p21["kind"] == k].min()),
             "max ratio": float(p21["ratio"][p21["kind"] == k].max())}
            for k, name in enumerate(VECTOR_KINDS)]
