"""Chapter 2, exercise ``ex-2-relu`` — the kernel change of the one-hidden-layer network (Eq. 8)
between w₀ and w₀ + R·u for a uniformly random unit direction u ∈ ℝᵐ.

For K = K_{(x,x)} (Eq. 10) and ΔK = K(w₀ + Ru) − K(w₀):

* ReLU: K = (x²/m)·#{i: w_i x > 0}; weight i crosses zero with probability p_i ≈ φ(0)R|u_i|, up
  or down with equal probability, so E ΔK = 0 and Var ΔK = (x⁴/m²)Σ p_i ≈ x⁴R/(π m^{3/2})
  (Σ|u_i| ≈ √(2m/π)): the root-mean-square change is :func:`relu_rms_prediction`,
  x²·√(R/π)·m^{-3/4} — not the worst-case R/√m of a smooth activation;
* a smooth activation (tanh): the first-order term (2x³R/m)Σ σ'σ''(w_i x)u_i has random signs and
  the second-order term is O(R²/m), so ΔK = O(m^{-1}) in a random direction.

* :data:`RANDOM_DIRECTION` — the sweep (activation × width; seeds vmapped inside a piece);
* :func:`rms_by_width` — the root mean square of ΔK over seeds, one row per (activation, width);
  :func:`rms_table` shows it next to the ReLU prediction.

Everything is computed in float64 (``jax.enable_x64``): at m = 16384 the tanh change is ≈ 10⁻⁵ of
K, below float32 summation noise of K itself.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from .. import _validation as V
from ..kernels import kernel_diagonal
from ..models.dense import shallow_network
from ..scales import RandomDirection
from ..sweep import Sweep, grid
from ..tables import Table, show

COLUMNS = {
    "seed": "index of the (w₀, u) draw",
    "K(w₀)": "K_(x,x) at initialization",
    "ΔK": "K_(x,x)(w₀ + Ru) − K_(x,x)(w₀), signed",
}


def _pieces(settings: RandomDirection) -> list[dict[str, Any]]:
    return grid(activation=settings.activations, width=settings.widths)


def _compute(coords: dict[str, Any], settings: RandomDirection, key: jax.Array) -> dict[str, Any]:
    m = int(coords["width"])
    with jax.enable_x64(True):
        k_model, k_w, k_u = jax.random.split(key, 3)
        model, _ = shallow_network(k_model, m, activation=coords["activation"], dtype=jnp.float64)
        x = jnp.full((1, 1), settings.x, jnp.float64)
        w0 = jax.random.normal(k_w, (settings.seeds, m, 1), jnp.float64)
        g = jax.random.normal(k_u, (settings.seeds, m, 1), jnp.float64)
        u = g / jnp.linalg.norm(g, axis=(1, 2), keepdims=True)

        def change(w, d):
            k0 = kernel_diagonal(model.apply, {"w": w}, x)[0]
            k1 = kernel_diagonal(model.apply, {"w": w + settings.radius * d}, x)[0]
            return k0, k1 - k0

        k0, dk = jax.vmap(change)(w0, u)
        k0, dk = np.asarray(k0), np.asarray(dk)
    return {"seed": np.arange(settings.seeds), "K(w₀)": k0, "ΔK": dk}


#: The sweep of exercise ex-2-relu — activation × width, ``seeds`` draws of (w₀, u) per piece.
RANDOM_DIRECTION = Sweep("random_direction", _pieces, _compute, columns=COLUMNS, version="1")


def relu_rms_prediction(width: Any, radius: float, x: float) -> np.ndarray:
    """x²·√(R/π)·m^{-3/4}: the root-mean-square ReLU kernel change in a random direction (leading order)."""
    return x**2 * math.sqrt(radius / math.pi) * np.asarray(width, dtype=float) ** -0.75


def rms_by_width(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (activation, width): seeds, root mean square of ΔK and mean K(w₀)."""
    grouped = table.groupby(["activation", "width"], sort=False)
    out = grouped.agg(seeds=("ΔK", "size"), rms=("ΔK", lambda d: float(np.sqrt(np.mean(np.square(d))))),
                      kernel=("K(w₀)", "mean"))
    return out.reset_index().rename(columns={"rms": "rms ΔK", "kernel": "mean K(w₀)"})


def rms_table(rms: pd.DataFrame, settings: RandomDirection) -> Table:
    """:func:`rms_by_width` with a last column, the ReLU prediction :func:`relu_rms_prediction` at each
    width (``rms`` itself is not changed).

    Raises:
        TypeError: if ``rms`` is not a DataFrame or ``settings`` not a ``RandomDirection``.
        ValueError: if ``rms`` has no column ``width``.
    """
    V.instance("settings", settings, RandomDirection)
    V.instance("rms", rms, pd.DataFrame)
    if "width" not in rms.columns:
        raise ValueError(f"rms must have a column 'width' (see rms_by_width), got {list(rms.columns)}")
    shown = rms.copy()
    shown["x²√(R/π) m^-3/4"] = relu_rms_prediction(shown["width"], settings.radius, settings.x)
    return show(shown, caption=f"Root-mean-square kernel change between w₀ and w₀ + Ru, R = {settings.radius:g}, "
                f"x = {settings.x:g} (float64); the last column is the ReLU prediction.")
