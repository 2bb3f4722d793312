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
from ..tables import Table, show


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


def landscape_against_formula(t: Any, *, points: int = 361) -> dict[str, Any]:
    """:func:`landscape` of a (2, 2, d3) tensor next to the exact sign-vector formula of ‖T‖_{2,2,1}.

    Returns the ``angles`` (points,) and ``objective`` (points, points) of :func:`landscape`, and
    ``grid_max`` (the largest objective value on the grid), ``formula`` (``norm_221(t).value``, exact by
    enumeration), ``signs`` (the maximizing sign vector, (d3,)) and ``points``.

    Raises:
        TypeError: if ``t`` is not an array of real numbers or ``points`` not an integer.
        ValueError: if ``t`` does not have shape (2, 2, d3) or ``points`` < 2.
    """
    land = landscape(t, points=points)
    exact = norm_221(t)
    return {**land, "grid_max": land["objective"].max(), "formula": exact.value, "signs": exact.signs,
            "points": points}


def landscape_table(land: Mapping[str, Any]) -> Table:
    """The sign-vector formula, the grid maximum and the best signs of :func:`landscape_against_formula`
    (9 digits).

    Raises:
        TypeError: if ``land`` is not a mapping.
        ValueError: if it lacks a key of :func:`landscape_against_formula`.
    """
    V.mapping("land", land, ("formula", "grid_max", "signs", "points"))
    n = land["points"]
    return show({"sign-vector formula": [land["formula"]], f"max over a {n} × {n} grid of angles": [land["grid_max"]],
                 "best signs": ["(" + ", ".join("+1" if x > 0 else "−1" for x in land["signs"]) + ")"]}, digits=9)


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


def timing_table(timing: Mapping[str, np.ndarray]) -> Table:
    """The times of :func:`enumeration_timing`, one row per d3.

    Raises:
        TypeError: if ``timing`` is not a mapping.
        ValueError: if it lacks a column of :func:`enumeration_timing`.
    """
    V.mapping("timing", timing, ("d3", "sign_vectors", "seconds"))
    return show(timing, caption="Median wall time of exact enumeration (this machine; timings are "
                "measured, never asserted).")


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


def structured_tensors(c: Any) -> dict[str, Any]:
    """‖T‖_{2,2,1} of two tensors built from a vector c ∈ ℝ^d whose norms have closed forms.

    * diagonal, T_ijk = c_k 𝟙{i = j = k}, shape (d, d, d): ‖T‖_{2,2,1} = max_k |c_k|;
    * a line, shape (1, 1, d): ‖T‖_{2,2,1} = Σ_k |c_k|.

    Returns ``d``, ``diagonal`` and ``line`` (the :func:`ntkbook.norm_221` results), ``bounds`` (the four
    floats [diagonal lower, diagonal upper, line lower, line upper]) and ``closed_forms`` (the four values
    they should equal: [max|c|, max|c|, Σ|c|, Σ|c|]).

    Raises:
        TypeError: if ``c`` is not an array of real numbers.
        ValueError: if ``c`` is not a non-empty finite vector (shape (d,)).
    """
    c = V.numpy_array("c", c, ndim=1)
    d = c.size
    t_diag = np.zeros((d, d, d))
    t_diag[np.arange(d), np.arange(d), np.arange(d)] = c
    diag, line = norm_221(t_diag), norm_221(c.reshape(1, 1, d))
    return {"d": d, "diagonal": diag, "line": line,
            "bounds": [diag.lower, diag.upper, line.lower, line.upper],
            "closed_forms": [np.abs(c).max()] * 2 + [np.abs(c).sum()] * 2}


def structured_table(structured: Mapping[str, Any]) -> Table:
    """Lower and upper bound, closed form and exactness flag of both tensors of :func:`structured_tensors`
    (10 digits).

    Raises:
        TypeError: if ``structured`` is not a mapping.
        ValueError: if it lacks a key of :func:`structured_tensors`.
    """
    V.mapping("structured", structured, ("d", "diagonal", "line", "closed_forms"))
    d, diag, line = structured["d"], structured["diagonal"], structured["line"]
    closed = structured["closed_forms"]
    return show({"tensor": [f"diagonal {d}×{d}×{d}", f"1×1×{d}"], "lower": [diag.lower, line.lower],
                 "upper": [diag.upper, line.upper], "closed form": [closed[0], closed[2]],
                 "exact": [diag.exact, line.exact]}, digits=10)


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


def bounds_summary(bounds: Mapping[str, np.ndarray], shape: tuple[int, int, int]) -> Table:
    """Statistics of :func:`bounds_against_exact` on tensors of ``shape``: how often the lower bound is the
    exact value, and the ratios exact/lower and upper/exact (median and worst).

    Raises:
        TypeError: if ``bounds`` is not a mapping or ``shape`` not a tuple of integers.
        ValueError: if ``bounds`` lacks a column of :func:`bounds_against_exact`.
    """
    V.mapping("bounds", bounds, ("exact", "lower", "upper"))
    shape = V.int_tuple("shape", shape)
    found = np.isclose(bounds["lower"], bounds["exact"], rtol=1e-12)
    low, up = bounds["exact"] / bounds["lower"], bounds["upper"] / bounds["exact"]
    data = {
        "statistic": ["samples", "lower bound = exact value", "median exact / lower", "worst exact / lower",
                      "median upper / exact", "worst upper / exact"],
        "value": [int(found.size), float(found.mean()), float(np.median(low)), float(np.max(low)),
                  float(np.median(up)), float(np.max(up))],
    }
    return show(data, caption=f"Bounds mode against enumeration on random {'×'.join(map(str, shape))} tensors.")


def proposition_2_1_table(p21: Mapping[str, np.ndarray]) -> Table:
    """Per kind of vector of :func:`proposition_2_1`: samples and the range of ‖A‖/(‖T‖₂,₂,₁‖v‖∞) (12 digits).

    Raises:
        TypeError: if ``p21`` is not a mapping.
        ValueError: if it lacks ``kind`` or ``ratio``.
    """
    V.mapping("p21", p21, ("kind", "ratio"))
    rows = [{"vector v": name, "samples": int((p21["kind"] == k).sum()),
             "min ratio": float(p21["ratio"][p21["kind"] == k].min()),
             "max ratio": float(p21["ratio"][p21["kind"] == k].max())}
            for k, name in enumerate(VECTOR_KINDS)]
    return show(rows, caption="‖A‖ / (‖T‖₂,₂,₁ ‖v‖∞) for random Gaussian tensors; Proposition "
                "2.1 says every ratio is ≤ 1.", digits=12)
