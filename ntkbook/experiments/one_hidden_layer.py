"""Chapter 2, second half — the one-hidden-layer network of Eq. (8) (Section 3.1).

f(w; x) = (1/√m) Σᵢ vᵢ σ(wᵢ x), x ∈ ℝ, wᵢ ~ N(0, 1) trained, vᵢ ∈ {±1} fixed.

* :func:`hessian_against_closed_form` — autodiff Hessian vs diag(vᵢ σ''(wᵢx) x² / √m) (Eq. 9);
* :func:`eq13_tensor` — ∂²α/∂w² (Eq. 13) by autodiff, for the (2,2,1)-norm bound Eq. (12);
* :func:`width_sweep` — ‖H‖ (matrix-free Lanczos and closed form), the bound β_σ x²/√m, K(x, x) and
  its infinite-width limit x² E[σ'(wx)²] (Eq. 10), ‖∂f/∂α‖_∞ = 1/√m and ‖∂f/∂α‖ = 1 (Eq. 15), across
  widths, seeds and inputs; :func:`width_sweep_figure` draws it (the chapter and the command line).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cache
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validation as V
from .. import plotting
from ..activations import Activation, get_activation
from ..eigen import spectral_norm
from ..fitting import SlopeLaw, power_law_fit, slope_law_window, slope_standard_error
from ..hessian import dense_hessian, hessian_spectral_norm, second_derivative_tensor, shallow_hessian_eigenvalues
from ..models import ShallowNetwork, shallow_network
from ..norms import norm_221
from ..progress import progress
from ..quadrature import gaussian_expectation
from ..scales import OneHiddenLayer
from ..tables import Table, quantities, show

Array = jax.Array


@cache
def output_fn(activation: Activation):
    """(params, x, v) ↦ f(w; x) for scalar x — one function per activation, so it compiles once per shape."""

    def f(params: Any, x: Array, v: Array) -> Array:
        w = params["w"][:, 0]
        return jnp.dot(v, activation(w * x)) / math.sqrt(v.shape[0])

    return f


def closed_form_hessian_diagonal(model: ShallowNetwork, params: Any, x: float) -> Array:
    """H_ii = vᵢ σ''(wᵢx) x² / √m (Eq. 9, :func:`ntkbook.hessian.shallow_hessian_eigenvalues`); the
    off-diagonal entries are 0."""
    xs = jnp.reshape(jnp.asarray(x, params["w"].dtype), (1,))
    return shallow_hessian_eigenvalues(model.activation, model.v, params["w"], xs, math.sqrt(model.width))


def hessian_against_closed_form(key: Array, *, width: int, x: float, activation: str = "tanh") -> dict[str, float]:
    """Dense autodiff Hessian (float64) against the closed form of Eq. (9).

    Returns the largest deviation on the diagonal and the largest off-diagonal entry.
    """
    with jax.enable_x64(True):
        model, params = shallow_network(key, width, activation=activation, dtype=jnp.float64)
        f = output_fn(model.activation)
        h = np.asarray(dense_hessian(f, params, jnp.asarray(x, jnp.float64), model.v))
        closed = np.asarray(closed_form_hessian_diagonal(model, params, x))
        off = h - np.diag(np.diag(h))
        return {
            "max_diagonal_error": float(np.max(np.abs(np.diag(h) - closed))),
            "max_off_diagonal": float(np.max(np.abs(off))),
            "hessian_norm": float(np.max(np.abs(closed))),
        }


def hessian_check_table(check: Mapping[str, float], *, width: int, x: float) -> Table:
    """The numbers of :func:`hessian_against_closed_form` (run at ``width``, ``x``), one row each.

    Raises:
        TypeError: if ``check`` is not a mapping, ``width`` not an integer or ``x`` not a real number.
        ValueError: if ``check`` lacks a number of :func:`hessian_against_closed_form` or ``width`` < 1.
    """
    V.mapping("check", check, ("max_diagonal_error", "max_off_diagonal", "hessian_norm"))
    width, x = V.positive_int("width", width), float(V.numpy_array("x", x, ndim=0))
    return quantities(check, caption=f"Dense float64 autodiff Hessian against Eq. (9), m = {width}, x = {x}.")


def eq13_tensor(model: ShallowNetwork, params: Any, x: float) -> np.ndarray:
    """T_ijk = ∂²α_k / ∂w_i ∂w_j (Eq. 13, shape (m, m, m)) by forward-over-reverse autodiff
    (:func:`ntkbook.hessian.second_derivative_tensor`, output index moved last).

    Differentiating αₖ = σ(wₖx) twice gives σ''(wₖx) x² on i = j = k (Eq. 13 of the paper prints
    σ'(wₖx) x, a typo: its own Eq. 9 uses σ'').
    """

    def alpha(w: Array) -> Array:
        return model.activation(w * x)

    w = params["w"][:, 0]
    t = second_derivative_tensor(alpha, w)  # (k, i, j)
    return np.transpose(np.asarray(t), (1, 2, 0))


def dfdalpha_norms(model: ShallowNetwork) -> tuple[float, float]:
    """(‖∂f/∂α‖_∞, ‖∂f/∂α‖₂) with ∂f/∂α = v/√m, by autodiff of α ↦ vᵀα/√m (Eq. 15)."""
    g = jax.grad(lambda a: jnp.dot(model.v, a) / math.sqrt(model.width))(jnp.zeros(model.width, model.v.dtype))
    return float(jnp.max(jnp.abs(g))), float(jnp.linalg.norm(g))


@cache
def _first_derivative(activation: Activation):
    return jax.jit(lambda z: activation.derivative(z, 1))


@cache
def kernel_limit(activation: Activation, x: float) -> tuple[float, float]:
    """x² E[σ'(wx)²] (Eq. 10, m → ∞) and the standard deviation of one term x²σ'(wx)², w ~ N(0, 1).

    The kernel at width m is the mean of m such terms, so it fluctuates by sd/√m around the limit.
    """
    d1 = _first_derivative(activation)

    def term(w: np.ndarray) -> np.ndarray:
        return x**2 * np.asarray(d1(jnp.asarray(w * x))) ** 2

    mean = gaussian_expectation(term)
    second = gaussian_expectation(lambda w: term(w) ** 2)
    return mean, math.sqrt(max(second - mean**2, 0.0))


SWEEP_FIELDS = ("width", "seed", "x", "hessian", "hessian_closed", "residual", "iterations", "bound", "kernel",
                "kernel_limit", "kernel_sd", "dfdalpha_inf", "dfdalpha_2")


def sweep_pieces(settings: OneHiddenLayer) -> list[dict[str, int]]:
    """The independent pieces of the sweep: one per (width, seed)."""
    return [{"width": int(m), "seed": s} for m in settings.widths for s in range(settings.seeds)]


PAD_WIDTH = 1024
"""Widths m ≤ PAD_WIDTH are computed in networks of PAD_WIDTH units, the last PAD_WIDTH − m with wᵢ = vᵢ = 0 (so
that every width of a ci sweep shares one compiled Hessian–vector product, Lanczos loop and measurement instead
of one per width; larger widths are computed at their own size).  The padding changes no quantity: the padded
units add vᵢσ(0) = 0 to f, and the padded Hessian is diag(H, 0) — the same non-zero spectrum — with the 1/√m of
Eq. (8) taken from the true m.  The draws are those of :func:`ntkbook.models.dense.shallow_network` at width m (JAX's
counter-based generator gives the first m entries of a longer draw), and the Lanczos start vector is the solver's
default N(0, 1) start at width m, zero on the padding, so the Krylov spaces are those of the unpadded H."""


@cache
def _padded_output_fn(activation: Activation):
    """(params, x, v, √m) ↦ (1/√m) Σᵢ vᵢ σ(wᵢx) — :func:`output_fn` with m passed as a number, for padded v."""

    def f(params: Any, x: Array, v: Array, root_m: Array) -> Array:
        w = params["w"][:, 0]
        return jnp.dot(v, activation(w * x)) / root_m

    return f


@cache
def _piece_measures(activation: Activation):
    """One compiled function per activation: for a (padded) network and inputs xs, the kernel ‖∇_w f‖², the
    closed-form ‖H‖ = max_i |H_ii| (Eq. 9) and (‖∂f/∂α‖_∞, ‖∂f/∂α‖₂) with ∂f/∂α by autodiff (Eq. 15)."""
    grad = jax.grad(_padded_output_fn(activation))

    def kernel_and_closed(params, x, v, root_m):
        g = grad(params, x, v, root_m)
        closed = shallow_hessian_eigenvalues(activation, v, params["w"], x[None], root_m)
        return jnp.sum(g["w"] ** 2), jnp.max(jnp.abs(closed))

    def measures(params, xs, v, root_m):
        kernel, closed = jax.vmap(kernel_and_closed, in_axes=(None, 0, None, None))(params, xs, v, root_m)
        da = jax.grad(lambda a: jnp.dot(v, a) / root_m)(jnp.zeros_like(v))
        return kernel, closed, jnp.max(jnp.abs(da)), jnp.linalg.norm(da)

    return jax.jit(measures)


def sweep_piece(piece: Mapping[str, int], settings: OneHiddenLayer, *, activation: str = "tanh",
                key: Array | None = None) -> dict[str, list]:
    """One (width, seed): the network of Eq. (8) and, for every input x, the row of :func:`width_sweep`.

    Widths up to :data:`PAD_WIDTH` are computed in a padded network (see there; no quantity changes)."""
    act = get_activation(activation)
    m, s = piece["width"], piece["seed"]
    size = max(m, PAD_WIDTH)
    key = jax.random.key(0) if key is None else key
    model, params = shallow_network(jax.random.fold_in(key, s * 1_000_003 + m), size, activation=act)
    dtype = params["w"].dtype
    live = np.arange(size) < m
    params = {"w": jnp.where(live[:, None], params["w"], 0)}
    v = jnp.where(live, model.v, 0)
    root_m = jnp.asarray(math.sqrt(m), dtype)
    xs = jnp.asarray(settings.inputs, dtype)
    kernels, closed, inf_norm, two_norm = (np.asarray(a) for a in _piece_measures(act)(params, xs, v, root_m))
    start = {"w": jnp.where(live[:, None], jax.random.normal(jax.random.key(0), (size, 1), dtype), 0)}
    f = _padded_output_fn(act)
    rows: dict[str, list] = {k: [] for k in SWEEP_FIELDS}
    for j, x in enumerate(settings.inputs):
        res = hessian_spectral_norm(f, params, args=(xs[j], v, root_m), tol=settings.tol, max_iter=20_000,
                                    start=start)
        mean, sd = kernel_limit(act, float(x))
        values = (m, s, x, res.value, float(closed[j]), res.residual, res.iterations,
                  act.smoothness * x**2 / math.sqrt(m), float(kernels[j]), mean, sd / math.sqrt(m),
                  float(inf_norm), float(two_norm))
        for k, val in zip(SWEEP_FIELDS, values, strict=True):
            rows[k].append(val)
    return rows


def assemble_sweep(pieces: list, results: list[Mapping[str, list]]) -> dict[str, np.ndarray]:
    """Concatenate the rows of all pieces into equal-length arrays."""
    return {k: np.asarray([v for r in results for v in r[k]]) for k in SWEEP_FIELDS}


def width_sweep(settings: OneHiddenLayer, key: Array, *, activation: str = "tanh") -> dict[str, np.ndarray]:
    """Hessian norm and kernel of Eq. (8) across widths, seeds and inputs.

    Returns equal-length arrays, one entry per (width, seed, input):
    ``width``, ``seed``, ``x``, ``hessian`` (Lanczos), ``hessian_closed`` (max |H_ii|), ``residual``,
    ``iterations``, ``bound`` (β_σ x² / √m), ``kernel`` (‖∇_w f‖² by autodiff), ``kernel_limit``,
    ``kernel_sd`` (sd/√m of the kernel at this width), ``dfdalpha_inf``, ``dfdalpha_2``.
    """
    pieces = sweep_pieces(settings)
    results = [sweep_piece(p, settings, activation=activation, key=key)
               for p in progress(pieces, desc="width × seed", total=len(pieces))]
    return assemble_sweep(pieces, results)


def eq12_pieces(key: Array, *, width: int, x: float, activation: str = "tanh") -> dict[str, float]:
    """Every factor of Eq. (12)–(15) for one small network (the tensor T is m × m × m).

    Returns ``t221`` (‖∂²α/∂w²‖₂,₂,₁ by enumeration, so width ≤ 16), ``t221_closed``
    (max_k |σ''(w_k x)| x²), ``dfdalpha_inf``, ``dfdalpha_2``, ``hessian`` (dense ‖H‖) and ``bound``
    (the right-hand side of Eq. 12).
    """
    model, params = shallow_network(key, width, activation=activation)
    t221 = norm_221(eq13_tensor(model, params, x))
    if not t221.exact:
        raise ValueError(f"width={width}: the (2,2,1)-norm of an m × m × m tensor is enumerated only for m <= 16")
    inf_norm, two_norm = dfdalpha_norms(model)
    hess = dense_hessian(output_fn(model.activation), params, jnp.asarray(x, params["w"].dtype), model.v)
    return {
        "t221": t221.value,
        "t221_closed": float(jnp.max(jnp.abs(model.activation.derivative(params["w"][:, 0] * x, 2)))) * x**2,
        "dfdalpha_inf": inf_norm,
        "dfdalpha_2": two_norm,
        "hessian": spectral_norm(hess),
        "bound": t221.value * inf_norm,
    }


EQ12_NAMES = {"t221": "‖∂²α/∂w²‖₂,₂,₁ (enumeration)", "t221_closed": "max_k |σ''(w_k x)| x²",
              "dfdalpha_inf": "‖∂f/∂α‖∞", "dfdalpha_2": "‖∂f/∂α‖₂", "hessian": "‖H‖ (dense)",
              "bound": "Eq. 12 bound"}
"""The rows of :func:`eq12_table`: key of :func:`eq12_pieces` → what it is."""


def eq12_table(pieces: Mapping[str, float], *, width: int, x: float) -> Table:
    """The pieces of Eq. (12)–(15) of :func:`eq12_pieces` (run at ``width``, ``x``), 7 digits; the
    caption gives 1/√m, the value ‖∂f/∂α‖∞ should take.

    Raises:
        TypeError: if ``pieces`` is not a mapping, ``width`` not an integer or ``x`` not a real number.
        ValueError: if ``pieces`` lacks a key of :data:`EQ12_NAMES` or ``width`` < 1.
    """
    V.mapping("pieces", pieces, EQ12_NAMES)
    width, x = V.positive_int("width", width), float(V.numpy_array("x", x, ndim=0))
    return show({"quantity": list(EQ12_NAMES.values()), "value": [pieces[k] for k in EQ12_NAMES]},
                caption=f"The pieces of Eq. (12)–(15) for m = {width}, x = {x} (float32 network, "
                f"exact (2,2,1)-norm); 1/√{width} = {1 / math.sqrt(width):.7f}.", digits=7)


def max_curvature_log_moments(widths: Any, x: float, *, activation: str = "tanh",
                              grid: int = 400_001, span: float = 12.0) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of log M_m, M_m = max_{i≤m} |σ''(w_i x)| with w_i iid N(0, 1), for each m in ``widths``.

    For the network of Eq. (8), ‖H‖ = M_m·x²/√m (Eq. 9's Hessian is diagonal), so these moments give the
    law of log ‖H‖ before anything is measured.  The law of G = |σ''(w x)| is the Gaussian weight of a
    uniform grid of ``grid`` points w in [−``span``, ``span``], and P(M_m ≤ t) = P(G ≤ t)^m.  For tanh,
    x ∈ {0.5, 2} and m from 10 to 10⁵ the default grid's mean differs from a 4× finer grid on [−16, 16] by
    less than 3e-9 (variance: 3e-10).

    Returns:
        ``(mean, variance)``, arrays of the shape of ``widths``.
    """
    ms = V.numpy_array("widths", widths, integers=True)
    if np.any(ms < 1):
        raise ValueError(f"widths must be positive integers, got {ms.ravel().tolist()}")
    x = V.positive_float("x", x)
    w = np.linspace(-span, span, V.positive_int("grid", grid))
    weight = np.exp(-0.5 * w * w)
    g = np.abs(get_activation(activation).numpy(w * x, 2))
    order = np.argsort(g)
    log_g = np.log(np.maximum(g[order], np.finfo(float).tiny))
    cdf = np.cumsum(weight[order]) / weight.sum()
    cdf_below = np.concatenate([[0.0], cdf[:-1]])
    mean, var = np.empty(ms.shape), np.empty(ms.shape)
    for idx, m in np.ndenumerate(ms):
        mass = cdf ** int(m) - cdf_below ** int(m)  # P(M_m = g_k)
        mean[idx] = float(np.sum(mass * log_g))
        var[idx] = float(np.sum(mass * (log_g - mean[idx]) ** 2))
    return mean, var


def hessian_slope_window(widths: Any, x: float, *, activation: str = "tanh", sds: float = 4.0,
                         lanczos_rtol: float = 1e-3) -> SlopeLaw:
    """The window of the Eq. (9) rate claim, fixed from the law of the maximum before measuring.

    ``widths`` are the widths of the fitted points (one per network, e.g. each width repeated per
    seed; independent networks).  With log ‖H‖_i = log x² − ½ log m_i + log M_{m_i}, the fitted slope is
    −½ + Σ c_i log M_{m_i}; :func:`ntkbook.fitting.slope_law_window` turns the moments of
    :func:`max_curvature_log_moments` into the window (mean ± ``sds`` sd), widened because the fitted
    values are Lanczos estimates within ``lanczos_rtol`` of the closed form (a separate claim checks that):
    |log(‖H‖_Lanczos/‖H‖)| ≤ −log(1 − ``lanczos_rtol``).
    """
    pts = V.numpy_array("widths", widths, integers=True).ravel()
    mean, var = max_curvature_log_moments(pts, x, activation=activation)
    return slope_law_window(pts, mean - 0.5 * np.log(pts), var, sds=sds,
                            log_tolerance=-math.log1p(-V.positive_float("lanczos_rtol", lanczos_rtol)),
                            law="the exact law of max_i |σ''(w_i x)|")


def sweep_fits(sweep: dict[str, np.ndarray]) -> dict[float, dict[str, Any]]:
    """Per input x: log–log fits of ‖H‖ and K(x, x) against m, and the CLT standard error of the
    kernel's slope (see :func:`ntkbook.fitting.slope_standard_error`)."""
    out = {}
    for x in np.unique(sweep["x"]):
        sel = sweep["x"] == x
        out[float(x)] = {
            "hessian": power_law_fit(sweep["width"][sel], sweep["hessian"][sel]),
            "kernel": power_law_fit(sweep["width"][sel], sweep["kernel"][sel]),
            "kernel_slope_se": slope_standard_error(sweep["width"][sel],
                                                    sweep["kernel_sd"][sel] / sweep["kernel_limit"][sel]),
            "kernel_limit": float(sweep["kernel_limit"][sel][0]),
        }
    return out


def width_sweep_figure(sweep: Mapping[str, Any], fits: Mapping[float, Mapping[str, Any]] | None = None, *,
                       activation: str = "tanh") -> Any:
    """The figure of :func:`width_sweep` (chapter 2 and ``python -m ntkbook reproduce one-hidden-layer``).

    Left: ‖H‖ against the width per input x (points: seeds; :func:`ntkbook.plotting.power_law` with the
    fitted power law and the slope −1/2 drawn for the largest x), with the bound β_σ x²/√m dotted.  Right:
    K_{(x,x)}(w₀) at the same networks, its infinite-width limit (lines) and a band of ±3 sd/√m.

    Args:
        sweep: the columns of :func:`width_sweep` (arrays or lists).
        fits: :func:`sweep_fits` of ``sweep`` (computed when omitted).
        activation: the activation of the network (for β_σ).

    Returns:
        the matplotlib figure.
    """
    sweep = {k: np.asarray(v) for k, v in sweep.items()}
    fits = sweep_fits(sweep) if fits is None else fits
    beta = get_activation(activation).smoothness
    inputs = np.unique(sweep["x"])
    fig, (ax_h, ax_k) = plotting.subplots(2, width=5.0, height=4.0)
    for x, color in zip(inputs, plotting.PALETTE, strict=False):
        sel = sweep["x"] == x
        plotting.power_law(ax_h, sweep["width"][sel], sweep["hessian"][sel], label=f"x = {float(x)}", color=color,
                           reference_slope=-0.5 if x == inputs[-1] else None, fit=fits[float(x)]["hessian"])
        ws = np.unique(sweep["width"][sel])
        ax_h.plot(ws, beta * x**2 / np.sqrt(ws), ":", color=color)
        ax_k.scatter(sweep["width"][sel], sweep["kernel"][sel], s=10, alpha=0.5, color=color, label=f"x = {float(x)}")
        lim = sweep["kernel_limit"][sel][0]
        sd = np.array([sweep["kernel_sd"][sel][sweep["width"][sel] == w][0] for w in ws])
        ax_k.axhline(lim, color=color, linewidth=1)
        ax_k.fill_between(ws, lim - 3 * sd, lim + 3 * sd, color=color, alpha=0.15)
    ax_h.set_xlabel("width $m$")
    ax_h.set_ylabel(r"$\|H\|$")
    ax_h.legend()
    ax_k.set_xscale("log")
    ax_k.set_xlabel("width $m$")
    ax_k.set_ylabel(r"$K_{(x,x)}(w_0)$")
    ax_k.legend()
    fig.tight_layout()
    return fig


def sweep_table(sweep: dict[str, np.ndarray], fits: dict[float, dict[str, Any]],
                activation: str = "tanh") -> list[dict[str, Any]]:
    """Per input: fitted slopes, the drift of max_i |σ''(w_i x)| towards β_σ, and the Lanczos accuracy."""
    beta = get_activation(activation).smoothness
    drift = sweep["hessian_closed"] * np.sqrt(sweep["width"]) / sweep["x"] ** 2
    rel_err = np.abs(sweep["hessian_closed"] - sweep["hessian"]) / sweep["hessian_closed"]
    m_lo, m_hi = sweep["width"].min(), sweep["width"].max()
    rows = []
    for x, f in fits.items():
        sel = sweep["x"] == x
        h = f["hessian"]
        rows.append({"x": x, "slope of ‖H‖": h.slope, "95% CI": f"[{h.ci_low:.3f}, {h.ci_high:.3f}]",
                     "slope of K(x,x)": f["kernel"].slope, "K limit": f["kernel_limit"],
                     "max|σ''| at smallest m": float(drift[sel & (sweep["width"] == m_lo)].mean()),
                     "at largest m": float(drift[sel & (sweep["width"] == m_hi)].mean()), "β_σ": beta,
                     "worst Lanczos rel. error": float(rel_err[sel].max()),
                     "most products": int(sweep["iterations"][sel].max())})
    return rows


def slopes_table(sweep: dict[str, np.ndarray], fits: dict[float, dict[str, Any]], settings: OneHiddenLayer,
                 activation: str = "tanh") -> Table:
    """Per input x of :func:`width_sweep`: the fitted slopes of ‖H‖ (with its 95% interval) and of
    K(x, x), and the kernel's infinite-width limit.

    Raises:
        TypeError: if ``sweep`` or ``fits`` is not a mapping or ``settings`` not a ``OneHiddenLayer``.
        ValueError: if ``sweep`` lacks a column of :func:`width_sweep`.
    """
    V.instance("settings", settings, OneHiddenLayer)
    V.mapping("sweep", sweep, ("width", "x", "hessian", "hessian_closed", "iterations", "kernel", "kernel_limit"))
    V.mapping("fits", fits)
    rows = [{k: row[k] for k in ("x", "slope of ‖H‖", "95% CI", "slope of K(x,x)", "K limit")}
            for row in sweep_table(sweep, fits, activation)]
    return show(rows, caption=f"Fitted log–log slopes over widths {min(settings.widths)}–{max(settings.widths):,} "
                f"({settings.seeds} seeds each; on {jax.default_backend()}).")


def drift_table(sweep: dict[str, np.ndarray], fits: dict[float, dict[str, Any]], activation: str = "tanh") -> Table:
    """Per input x of :func:`width_sweep`: max_i |σ''(w_i x)| at the smallest and largest width against
    β_σ, and the accuracy of the matrix-free ‖H‖ (see :func:`sweep_table`).

    Raises:
        TypeError: if ``sweep`` or ``fits`` is not a mapping.
        ValueError: if ``sweep`` lacks a column of :func:`width_sweep`.
    """
    V.mapping("sweep", sweep, ("width", "x", "hessian", "hessian_closed", "iterations", "kernel", "kernel_limit"))
    V.mapping("fits", fits)
    rows = [{k: row[k] for k in ("x", "max|σ''| at smallest m", "at largest m", "β_σ", "worst Lanczos rel. error",
                                 "most products")}
            for row in sweep_table(sweep, fits, activation)]
    return show(rows, caption="Drift of ‖H‖√m / x² = max_i |σ''(w_i x)| towards β_σ, and "
                "matrix-free against closed form.")
