"""``one-hidden-layer``: ‖H‖ and K(x, x) of the network of Eq. (8) across widths (Section 3.1, chapter 2).

f(w; x) = (1/√m) Σᵢ vᵢ σ(wᵢ x), x ∈ ℝ, wᵢ ~ N(0, 1) trained, vᵢ ∈ {±1} fixed (``nb.models.shallow_network``).
A piece is one network (width m, seed; its key from the sweep engine) measured at every input x of the
settings (:func:`network`); :func:`figure` draws the sweep.  Chapter 2 runs the same sweep
(``nb.sweep.run(SWEEP, settings)``) and calls the same :func:`figure`, so the book and
``python -m ntkbook reproduce one-hidden-layer`` cannot drift apart.  The JSON holds the sweep's table and,
per input x, the fitted log–log slopes of ‖H‖ and K(x, x) (:func:`slopes`).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from .. import plotting
from ..activations import get_activation
from ..fitting import power_law_fit
from ..hessian import hessian_spectral_norm, shallow_hessian_eigenvalues
from ..models import shallow_network
from ..quadrature import gaussian_expectation
from ..random import normal
from ..reproduce import Reproduction, register
from ..scales import OneHiddenLayer
from ..sweep import Sweep, grid

COLUMNS = {
    "x": "the input x ∈ ℝ",
    "hessian": "‖H‖ by Lanczos on Hessian-vector products (matrix-free)",
    "hessian_closed": "‖H‖ = maxᵢ |vᵢσ''(wᵢx)| x²/√m, the closed form of Eq. (9)",
    "residual": "relative residual ‖Hu − θu‖/|θ| of the Lanczos pair",
    "iterations": "Hessian-vector products Lanczos used",
    "bound": "β_σ x²/√m, the bound of Eq. (9)",
    "kernel": "K(x, x) = ‖∇_w f(w₀; x)‖² by autodiff (Eq. 10)",
    "kernel_limit": "x² E[σ'(wx)²], w ~ N(0, 1): the limit m → ∞ of Eq. (10) (Gauss–Hermite)",
    "kernel_sd": "sd of one term x²σ'(wx)², divided by √m: the CLT spread of K(x, x) at width m",
    "dfdalpha_inf": "‖∂f/∂α‖∞ of ∂f/∂α = v/√m by autodiff (Eq. 15: 1/√m)",
    "dfdalpha_2": "‖∂f/∂α‖₂ (Eq. 15: 1)",
}


PAD = 1024
"""Widths m ≤ PAD are computed in networks of PAD units: the first m units of a network drawn at width PAD (i.i.d.
draws, so a network of width m), the other PAD − m units with wᵢ = vᵢ = 0.  All such widths then share one
compiled draw, solver and measurement (compiled once per width, they were most of the ``ci`` sweep's time).  No
number changes: a zero unit adds vᵢσ(wᵢx) = 0 to f and a zero row and column to H (the same non-zero spectrum),
and the 1/√m of Eq. (8) is that of the true m."""
TANH = get_activation("tanh")


def output(params: Any, x: jax.Array, v: jax.Array, root_m: jax.Array) -> jax.Array:
    """f(w; x) = (1/√m) Σᵢ vᵢ tanh(wᵢx) (Eq. 8), x ∈ ℝ, with √m given (a padded network's true width)."""
    return jnp.dot(v, TANH(params["w"][:, 0] * x)) / root_m


@jax.jit
def _measures(params: Any, xs: jax.Array, v: jax.Array, root_m: jax.Array) -> tuple[jax.Array, ...]:
    """Per input: ‖H‖ in closed form (Eq. 9) and K(x, x) = ‖∇_w f‖²; and ‖∂f/∂α‖∞, ‖∂f/∂α‖₂ of ∂f/∂α = v/√m,
    all by autodiff but Eq. 9."""
    closed = jax.vmap(lambda x: jnp.abs(shallow_hessian_eigenvalues(TANH, v, params["w"], x[None], root_m)).max())
    kernel = jax.vmap(lambda x: jnp.sum(jax.grad(output)(params, x, v, root_m)["w"] ** 2))
    da = jax.grad(lambda a: jnp.dot(v, a) / root_m)(jnp.zeros_like(v))
    return closed(xs), kernel(xs), jnp.abs(da).max(), jnp.linalg.norm(da)


def network(coords: dict[str, Any], settings: OneHiddenLayer, key: jax.Array) -> list[dict[str, Any]]:
    """One tanh network of Eq. (8) at width m = ``coords["width"]`` (``nb.models.shallow_network``), measured at
    every input x of ``settings``.

    ‖H‖ twice: matrix-free (``nb.hessian_spectral_norm``, Lanczos to ``settings.tol``) and in closed form
    (Eq. 9); the bound β_σx²/√m; K(x, x) with its Gauss–Hermite limit and CLT spread (Eq. 10); ‖∂f/∂α‖∞ and
    ‖∂f/∂α‖₂ (Eq. 15).  Returns one row per input (the columns of ``COLUMNS``).  Widths up to :data:`PAD`
    are computed in a padded network (see there).
    """
    m = coords["width"]
    size = max(m, PAD)
    model, w0 = shallow_network(key, size)
    live = np.arange(size) < m  # the network's m units; the rest are zero (see PAD)
    params, v = {"w": np.where(live[:, None], w0["w"], 0)}, np.where(live, model.v, 0)
    start = {"w": np.where(live[:, None], normal(jax.random.key(0), (size, 1)), 0)}  # Lanczos start
    root_m = np.float32(math.sqrt(m))
    xs = np.asarray(settings.inputs, np.float32)
    lanczos = [hessian_spectral_norm(output, params, args=(x, v, root_m), tol=settings.tol, max_iter=20_000,
                                     start=start) for x in xs]
    closed, kernel, inf_norm, two_norm = (np.asarray(a) for a in _measures(params, xs, v, root_m))
    rows = []
    for x, res, h, k in zip(settings.inputs, lanczos, closed, kernel, strict=True):
        mean = gaussian_expectation(lambda w, x=x: x**2 * TANH.numpy(w * x, 1) ** 2)
        second = gaussian_expectation(lambda w, x=x: x**4 * TANH.numpy(w * x, 1) ** 4)
        rows.append({"x": x, "hessian": res.value, "hessian_closed": float(h), "residual": res.residual,
                     "iterations": res.iterations, "bound": TANH.smoothness * x**2 / math.sqrt(m),
                     "kernel": float(k), "kernel_limit": mean,
                     "kernel_sd": math.sqrt(max(second - mean**2, 0.0) / m),
                     "dfdalpha_inf": float(inf_norm), "dfdalpha_2": float(two_norm)})
    return rows


SWEEP = Sweep("one_hidden_layer", lambda s: grid(width=s.widths, seed=range(s.seeds)), network, columns=COLUMNS,
              version="1")
"""The sweep: one piece per (width, seed), one row per input x."""


def slopes(table: pd.DataFrame, settings: OneHiddenLayer | None = None) -> dict[str, Any]:
    """Per input x: the fitted log–log slopes of ‖H‖ (with its 95% interval) and of K(x, x) against m (the JSON's
    ``summary``; ``settings`` is not needed)."""
    out = {}
    for x, part in table.groupby("x"):
        h, k = power_law_fit(part["width"], part["hessian"]), power_law_fit(part["width"], part["kernel"])
        out[str(float(x))] = {"hessian": h.slope, "hessian_ci": [h.ci_low, h.ci_high], "kernel": k.slope}
    return out


def figure(table: pd.DataFrame, settings: OneHiddenLayer | None = None) -> Any:
    """The figure of the sweep (chapter 2 and the command line); ``settings`` is not needed (the signature
    every reproduction's figure has).

    Left: ‖H‖ against the width per input x (points: seeds; markers: geometric means; solid: the fitted
    power law; dashed: slope −1/2 for the largest x), with the bound β_σx²/√m dotted.  Right: K(x, x) at
    the same networks, its infinite-width limit (lines) and a band of ±3 sd/√m.
    """
    fig, (ax_h, ax_k) = plotting.subplots(2, width=5.0, height=4.0)
    inputs = sorted(table["x"].unique())
    for x, color in zip(inputs, plotting.PALETTE, strict=False):
        part = table[table["x"] == x]
        plotting.power_law(ax_h, part["width"], part["hessian"], label=f"x = {x:g}", color=color,
                           reference_slope=-0.5 if x == inputs[-1] else None)
        per_width = part.groupby("width")[["bound", "kernel_limit", "kernel_sd"]].first()
        ax_h.plot(per_width.index, per_width["bound"], ":", color=color)
        ax_k.scatter(part["width"], part["kernel"], s=10, alpha=0.5, color=color, label=f"x = {x:g}")
        ax_k.axhline(per_width["kernel_limit"].iloc[0], color=color, linewidth=1)
        ax_k.fill_between(per_width.index, per_width["kernel_limit"] - 3 * per_width["kernel_sd"],
                          per_width["kernel_limit"] + 3 * per_width["kernel_sd"], color=color, alpha=0.15)
    ax_h.set(xlabel="width $m$", ylabel=r"$\|H\|$")
    ax_k.set(xscale="log", xlabel="width $m$", ylabel=r"$K_{(x,x)}(w_0)$")
    ax_h.legend()
    ax_k.legend()
    fig.tight_layout()
    return fig


register(Reproduction(
    name="one-hidden-layer",
    experiment="one_hidden_layer",
    description="‖H‖ = Θ(1/√m) and K(x,x) = Θ(1) for the network of Eq. (8) (Liu et al. 2020, Section 3.1)",
    sweep=SWEEP,
    figure=figure,
    summary=slopes,
))
