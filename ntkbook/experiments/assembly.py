"""Chapter 7, first half — assembling independent weak models (Liu, Zhu & Belkin 2022, Section 2, App. A).

For the assembly model f(θ; x) = (1/s(m)) Σᵢ vᵢ g(wᵢ; x) of Eq. (4) (:mod:`ntkbook.models.assembly`):

* :func:`theorem1_sweep` — the quadratic Taylor term as the exact remainder
  r(Δ) = f(θ₀+Δ) − f(θ₀) − ∇f(θ₀)ᵀΔ, along random directions and in the worst case over the ball
  ‖Δ‖ ≤ R, and ½R²‖H(θ₀)‖, against m, with Theorem 1's bound βR²max|vᵢ|/(2s(m)) (and Lemma 2's
  β log(m) R²/(2√m) for Gaussian weights);
* :func:`smoothness` — β of a sub-model family (closed form, and multi-start projected ascent of the
  Hessian norm over the domain D_R);
* :func:`lemma2_frequency` — how often max|vᵢ| > log m for m standard Gaussians (Lemma 2);
* :func:`median_max_ratios` — Assumption 1 for the neurons of a deep tanh network;
* :func:`dominating_sweep` — an assembly in which one sub-model dominates (Assumption 1 fails);
* :func:`two_layer_as_assembly` — the two-layer network of Eq. (7) as an assembly of neurons.

Everything in this module runs in float64 (``jax.enable_x64`` locally): the remainders along random
directions are differences of O(1) numbers that are themselves as small as 10⁻⁶.

Worst case over the ball.  Because the sub-models are independent, r(Δ) = (1/s) Σᵢ vᵢ rᵢ(Δᵢ) with rᵢ the
remainder of gᵢ.  For each sub-model we maximize ±rᵢ over ‖Δᵢ‖ ≤ R by projected gradient ascent in its
q-dimensional active subspace (:func:`ntkbook.models.assembly.active_basis`; components outside it change
nothing), from the extreme eigenvectors of its Hessian.  Putting the whole radius on the sub-model with the
largest |vᵢ|ψᵢ gives a candidate; projected gradient ascent on the whole assembly, started from it and from a
start spread over the best sub-models, refines it.  The value reported is recomputed from the definition,
f(θ₀+Δ) − f(θ₀) − ∇f(θ₀)ᵀΔ, on the assembly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats
from scipy.optimize import brentq
from scipy.special import log_ndtr

from .. import _validation as V
from ..eigen import extreme_eigenpairs, spectral_norm
from ..fitting import power_law_fit, slope_standard_error
from ..hessian import dense_hessian
from ..models import assembly as asm
from ..models import mlp
from ..models.assembly import Assembly, SubModelFamily
from ..progress import progress
from ..quadrature import gaussian_expectation
from ..random import fold_key
from ..scales import AssemblyAssumption1, AssemblySmoothness, AssemblyTheorem1

Array = jax.Array
HIGHEST = jax.lax.Precision.HIGHEST


# ---------------------------------------------------------------------------------------------
# Remainders of one sub-model, in its active subspace
# ---------------------------------------------------------------------------------------------


def sub_model_remainder(family: SubModelFamily, w: Array, x: Array, delta: Array) -> Array:
    """g(w + Δ) − g(w) − ∇g(w)ᵀΔ for one sub-model (Δ in parameter space, shape (p,))."""
    g = partial(family.apply_one, x=x)
    g0, dg = jax.jvp(g, (w,), (delta,))
    return g(w + delta) - g0 - dg


def _reduced_hessian(family: SubModelFamily, w: Array, x: Array, q_basis: Array) -> Array:
    """Q H_g(w) Qᵀ (q × q), symmetrized: the Hessian restricted to the active subspace (same norm as H_g)."""
    h = dense_hessian(lambda t: family.apply_one(w + t @ q_basis, x), jnp.zeros(q_basis.shape[0], w.dtype))
    return 0.5 * (h + h.T)


def _project_ball(t: Array, radius: float) -> Array:
    n = jnp.linalg.norm(t)
    return jnp.where(n > radius, t * (radius / jnp.where(n > 0, n, 1.0)), t)


@partial(jax.jit, static_argnames=("family", "steps"))
def sub_model_worst(family: SubModelFamily, w_all: Array, x: Array, q_basis: Array, radius: float, lr: float,
                     steps: int) -> dict[str, Array]:
    """For every sub-model: max over ‖t‖ ≤ R of +rᵢ and −rᵢ (Δ = Qᵀt) with the maximizers, and the extreme
    eigenpairs of its reduced Hessian at w₀ (whose largest |λ| is ‖Hᵢ(w₀)‖).

    Projected gradient ascent from ±R times the two extreme eigenvectors, ``steps`` steps of length
    min(1/‖Hᵢ(w₀)‖, 4·``lr``) (``lr`` = 1/β), keeping the best iterate.
    """

    def one(w):
        hq = _reduced_hessian(family, w, x, q_basis)
        top = extreme_eigenpairs(hq, which="LA", method="dense")
        bottom = extreme_eigenpairs(hq, which="SA", method="dense")
        u_max, u_min, norm = top.eigenvector, bottom.eigenvector, jnp.maximum(top.value, -bottom.value)
        four = jnp.stack([u_max, -u_max, u_min, -u_min]) * radius
        starts = jnp.concatenate([four, four])
        signs = jnp.array([1.0, 1.0, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0], x.dtype)
        # step 1/(local curvature), but never longer than 4/β: faster than 1/β where the sub-model is flat
        step = jnp.minimum(1.0 / jnp.maximum(norm, 1e-12), 4.0 * lr)

        def ascend(sign, t0):
            return _projected_ascent(lambda t: sign * sub_model_remainder(family, w, x, t @ q_basis), t0, step,
                                     radius, steps)

        vals, ts = jax.vmap(ascend)(signs, starts)
        ip, im = jnp.argmax(vals[:4]), 4 + jnp.argmax(vals[4:])
        return {"plus": vals[ip], "t_plus": ts[ip], "minus": vals[im], "t_minus": ts[im],
                "lam_max": top.value, "u_max": u_max, "lam_min": bottom.value, "u_min": u_min, "hess_norm": norm}

    return jax.vmap(one)(w_all)


def _projected_ascent(obj: Callable[[Array], Array], t0: Array, step: Any, radius: float,
                      steps: int) -> tuple[Array, Array]:
    """``steps`` steps of projected gradient ascent t ← Π_{‖t‖≤R}(t + step·∇obj(t)) from ``t0``;
    returns the best value seen (``t0`` included) and the point where it was attained."""
    grad = jax.grad(obj)

    def body(_, carry):
        t, best, best_t = carry
        t = _project_ball(t + step * grad(t), radius)
        val = obj(t)
        better = val > best
        return t, jnp.where(better, val, best), jnp.where(better, t, best_t)

    _, best, best_t = jax.lax.fori_loop(0, steps, body, (t0, obj(t0), t0))
    return best, best_t


@partial(jax.jit, static_argnames=("family", "steps"))
def _subset_ascent(family: SubModelFamily, w_sub: Array, v_sub: Array, scale: float, x: Array, q_basis: Array,
                   radius: float, lr: float, steps: int, signs: Array, t0: Array) -> tuple[Array, Array]:
    """Projected gradient ascent of sign·(1/s)Σᵢ vᵢ rᵢ(Qᵀtᵢ) over ‖t‖_F ≤ R, for several starts at once.

    ``w_sub`` (K, p), ``v_sub`` (K,): the sub-models that may move (the others keep Δᵢ = 0: the remainder
    has zero gradient there, so ascent would never move them anyway); ``signs`` (S,), ``t0`` (S, K, q).
    Returns the best value and maximizer of each start.
    """

    def run(sign, t_start):
        def obj(t):
            r = jax.vmap(lambda w, ti: sub_model_remainder(family, w, x, ti @ q_basis))(w_sub, t)
            return sign * jnp.dot(v_sub, r) / scale

        return _projected_ascent(obj, t_start, lr, radius, steps)

    return jax.vmap(run)(signs, t0)


@partial(jax.jit, static_argnames=("family",))
def _assembly_remainder(family: SubModelFamily, w_all: Array, v: Array, scale: float, x: Array,
                        delta: Array) -> Array:
    """f(θ₀+Δ) − f(θ₀) − ∇f(θ₀)ᵀΔ on the assembly itself (the definition), Δ of shape (m, p)."""
    model = Assembly(v=v, scale=scale, family=family, input_dim=x.shape[0])

    def f(w):
        return model.apply({"w": w}, x[None])[0]

    f0, df = jax.jvp(f, (w_all,), (delta,))
    return f(w_all + delta) - f0 - df


@partial(jax.jit, static_argnames=("family",))
def _assembly_grad_norm(family: SubModelFamily, w_all: Array, v: Array, scale: float, x: Array) -> Array:
    model = Assembly(v=v, scale=scale, family=family, input_dim=x.shape[0])
    g = jax.grad(lambda w: model.apply({"w": w}, x[None])[0])(w_all)
    return jnp.linalg.norm(g)


SUBSET = 64
"""How many sub-models the assembly-level ascent may spread the radius over."""
SPREADS = (1, 4, 16, 64)
"""Starts of the assembly-level ascent: the radius on the best sub-model, or shared equally by the best 4, 16, 64."""


def worst_case(family: SubModelFamily, w_all: Array, v: Array, scale: float, x: Array, q_basis: Array,
               sub: Mapping[str, Array], radius: float, beta: float, steps: int) -> dict[str, float]:
    """Worst case of |f(θ₀+Δ) − f(θ₀) − ∇f(θ₀)ᵀΔ| over ‖Δ‖ ≤ R for the assembly (1/s)Σ vᵢ g(wᵢ; x).

    ``v`` may contain zeros (sub-models left out, e.g. to pad a smaller assembly to a fixed size);
    ``sub`` is the output of :func:`sub_model_worst` for ``w_all``.

    Candidates: all the radius on one sub-model (its own worst case ψᵢ, found by the per-sub-model ascent),
    or shared equally by the k sub-models of largest curvature |vᵢ|λᵢ (k in :data:`SPREADS`), each along its
    extreme Hessian eigenvector; both signs.  Each candidate is refined by projected gradient ascent on the
    assembly (only the :data:`SUBSET` sub-models of largest curvature, and the best single one, may move),
    and the best is re-evaluated from the definition on the whole assembly.

    Returns ``worst`` (from the definition), ``concentrated`` (the best single-sub-model value
    maxᵢ|vᵢ|ψᵢ/s) and ``check_error`` (|definition − value found by the ascent|, rounding only).
    """
    lr = scale / (beta * float(jnp.max(jnp.abs(v))))
    out = _worst_case(family, w_all, v, scale, x, q_basis, sub, radius, lr, steps, min(SUBSET, v.shape[0]))
    worst, found, conc = (float(out[k]) for k in ("worst", "found", "concentrated"))
    return {"worst": max(worst, conc), "concentrated": conc, "check_error": abs(worst - found)}


@partial(jax.jit, static_argnames=("family", "steps", "k"))
def _worst_case(family, w_all, v, scale, x, q_basis, sub, radius, lr, steps, k):
    av = jnp.abs(v)
    pos = v > 0
    q = q_basis.shape[0]
    starts, signs, conc_best = [], [], []
    curv_all, u_all, t_best, i_best = {}, {}, {}, {}
    for sigma in (1.0, -1.0):
        use_plus = pos if sigma > 0 else ~pos  # σvᵢrᵢ > 0 needs +rᵢ when σvᵢ > 0, −rᵢ otherwise
        conc = av * jnp.where(use_plus, sub["plus"], sub["minus"]) / scale
        i_best[sigma] = jnp.argmax(conc)
        conc_best.append(conc[i_best[sigma]])
        t_best[sigma] = jnp.where(use_plus[:, None], sub["t_plus"], sub["t_minus"])[i_best[sigma]]
        curv_all[sigma] = jnp.where(av > 0, av * jnp.where(use_plus, sub["lam_max"], -sub["lam_min"]), -jnp.inf)
        u_all[sigma] = jnp.where(use_plus[:, None], sub["u_max"], sub["u_min"])
    score = jnp.maximum(curv_all[1.0], curv_all[-1.0])
    score = score.at[i_best[1.0]].set(jnp.inf).at[i_best[-1.0]].set(jnp.inf)
    idx = jnp.argsort(-score)[:k]
    for sigma in (1.0, -1.0):
        where_best = jnp.argmax(idx == i_best[sigma])
        starts.append(jnp.zeros((k, q), x.dtype).at[where_best].set(t_best[sigma]))
        signs.append(sigma)
        curv = curv_all[sigma][idx]
        order = jnp.argsort(-curv)
        for spread in SPREADS[1:]:
            n = min(spread, k)
            chosen = order[:n]
            ok = jnp.isfinite(curv[chosen])[:, None]  # padded (vᵢ = 0) sub-models never get radius
            t = jnp.zeros((k, q), x.dtype).at[chosen].set(jnp.where(ok, u_all[sigma][idx][chosen], 0.0))
            starts.append(t * (radius / jnp.maximum(jnp.linalg.norm(t), 1e-300)))
            signs.append(sigma)
    vals, ts = _subset_ascent(family, w_all[idx], v[idx], scale, x, q_basis, radius, lr, steps,
                              jnp.asarray(signs, x.dtype), jnp.stack(starts))
    j = jnp.argmax(vals)
    delta = jnp.zeros(w_all.shape, x.dtype).at[idx].set(ts[j] @ q_basis)
    worst = jnp.abs(_assembly_remainder(family, w_all, v, scale, x, delta))
    return {"worst": worst, "found": vals[j], "concentrated": jnp.maximum(conc_best[0], conc_best[1])}


# ---------------------------------------------------------------------------------------------
# β of a family
# ---------------------------------------------------------------------------------------------


def _params_from_reduced(family: SubModelFamily, x: Array, z: Array, outer: Array) -> Array:
    """A point w with A x̂ = z (rows of A along x) and the given outer parameters."""
    d = x.shape[0]
    a = z[:, None] * (math.sqrt(d) * x / jnp.dot(x, x))[None, :]
    return jnp.concatenate([a.ravel(), outer])


def smoothness(family: SubModelFamily, x: Any, radius: float, *, key: Array | None = None, samples: int = 4096,
               starts: int = 0, steps: int = 0) -> dict[str, float]:
    """β = sup_{w ∈ D_R} ‖H_g(w; x)‖ (Assumption 2) — numerically, and in closed form where there is one.

    The sup is over z = A x̂ ∈ ℝᵏ (the Hessian norm depends on A only through it) and the outer
    parameters in their ball of radius ``outer_radius0 + R`` (:mod:`ntkbook.models.assembly`).  Random
    search (``samples`` points: z ~ N(0, 4I), outer uniform in its ball), then projected gradient ascent of
    the norm of the q × q reduced Hessian from the best ``starts`` points for ``steps`` steps.  Every
    value is attained at a point of D_R, so the result is a lower estimate of the sup; the closed form
    (neuron, square) is exact.

    Returns ``{"numerical", "closed_form" (nan if none), "beta"}`` with β the closed form if there is one,
    else the numerical value.
    """
    radius = V.positive_float("radius", radius, allow_zero=True)
    samples = V.positive_int("samples", samples)
    starts = V.positive_int("starts", starts, minimum=0)
    steps = V.positive_int("steps", steps, minimum=0)
    key = jax.random.key(0) if key is None else key
    with jax.enable_x64(True):
        x64 = jnp.asarray(np.asarray(x, np.float64))
        closed = family.smoothness(radius, np.asarray(x64))
        q_basis = asm.active_basis(family, x64)
        rho = (family.outer_radius0 or 0.0) + radius
        k, o = family.first_layer_rows, family.outer_size
        k_z, k_o, k_r = jax.random.split(key, 3)
        u = 2.0 * jax.random.normal(k_z, (samples, k), jnp.float64)
        if o:
            d0 = jax.random.normal(k_o, (samples, o), jnp.float64)
            r0 = rho * jax.random.uniform(k_r, (samples, 1), jnp.float64) ** (1.0 / o)
            u = jnp.concatenate([u, d0 / jnp.linalg.norm(d0, axis=1, keepdims=True) * r0], axis=1)
        values = _hessian_norms(family, x64, q_basis, u)
        numerical = float(jnp.max(values))
        if starts and steps:
            best = u[jnp.argsort(-values)[:starts]]
            numerical = max(numerical, float(_ascend_norm(family, x64, q_basis, float(rho), best, steps)))
    return {"numerical": numerical, "closed_form": math.nan if closed is None else closed,
            "beta": numerical if closed is None else closed}


def smoothness_by_family(settings: AssemblySmoothness, x: Any, key: Array) -> dict[str, dict[str, float]]:
    """:func:`smoothness` of every family of ``ntkbook.models.assembly.FAMILIES`` (tanh, ``settings.hidden``
    hidden units for the tiny MLP) over D_R with R = ``settings.radius``, each search from the same ``key``.

    Args:
        settings: the ``assembly_smoothness`` sizes (radius, hidden, samples, starts, steps).
        x: one input, shape (d,).
        key: PRNG key of the random search.

    Returns:
        family name → ``{"numerical", "closed_form", "beta"}`` (see :func:`smoothness`), in the order of
        ``FAMILIES``.

    Raises:
        TypeError: if ``settings`` is not the ``AssemblySmoothness`` settings (``ntkbook.scales``).
    """
    V.settings("settings", settings, AssemblySmoothness)
    return {f: smoothness(asm.get_family(f, "tanh", settings.hidden), x, settings.radius, key=key,
                          samples=settings.samples, starts=settings.starts, steps=settings.steps)
            for f in asm.FAMILIES}


def _norm_at(family, x, q_basis, u):
    k = family.first_layer_rows
    w = _params_from_reduced(family, x, u[:k], u[k:])
    hq = _reduced_hessian(family, w, x, q_basis)
    return extreme_eigenpairs(hq, which="LM", method="dense", vectors=False).value


@partial(jax.jit, static_argnames=("family",))
def _hessian_norms(family, x, q_basis, u):
    return jax.vmap(lambda ui: _norm_at(family, x, q_basis, ui))(u)


@partial(jax.jit, static_argnames=("family", "steps"))
def _ascend_norm(family, x, q_basis, rho, u0, steps):
    k, o = family.first_layer_rows, family.outer_size
    norm = partial(_norm_at, family, x, q_basis)
    grad = jax.grad(norm)

    def project(u):
        if o == 0 or family.outer_radius0 is None:
            return u
        return jnp.concatenate([u[:k], _project_ball(u[k:], rho)])

    def ascend(u):
        def body(i, carry):
            u, best = carry
            g = grad(u)
            u = project(u + 0.5 * 0.98**i * g / (jnp.linalg.norm(g) + 1e-12))  # normalized, decaying steps
            return u, jnp.maximum(best, norm(u))

        return jax.lax.fori_loop(0, steps, body, (u, norm(u)))[1]

    return jnp.max(jax.vmap(ascend)(u0))


# ---------------------------------------------------------------------------------------------
# Theorem 1 across widths
# ---------------------------------------------------------------------------------------------

THEOREM1_FIELDS = ("family", "weights", "scaling", "width", "seed", "scale", "max_v", "beta", "worst",
                   "worst_concentrated", "worst_check_error", "hessian_term", "random_rms", "random_max",
                   "grad_norm", "bound", "bound_lemma2", "lemma2_event", "psi_max", "hess_max")
"""The columns of :func:`theorem1_sweep` (one row per family, weights, scaling, width and seed)."""


def theorem1_pieces(settings: AssemblyTheorem1) -> list[dict[str, Any]]:
    """Independent pieces: one per (family, seed); each covers every width and weight kind."""
    return [{"family": f, "seed": s} for f in settings.families for s in range(settings.seeds)]


def theorem1_piece(piece: Mapping[str, Any], settings: AssemblyTheorem1, x: Any, beta: Mapping[str, float],
                   key: Array | None = None) -> dict[str, list]:
    """One (family, seed) of :func:`theorem1_sweep`.

    The sub-models are drawn once for the largest width; the assembly of width m uses the first m of them
    (nested widths) — computationally, all m_max sub-models with vᵢ = 0 for i ≥ m, which is the same function
    of the first m sub-models' parameters and keeps every array the same shape (one compilation).
    Returns rows (lists) with the fields of :data:`THEOREM1_FIELDS`, one per (width, weight kind).
    """
    key = jax.random.key(0) if key is None else key
    family = asm.get_family(piece["family"], "tanh", settings.hidden)
    radius = float(settings.radius)
    widths = sorted(int(m) for m in settings.widths)
    m_max = widths[-1]
    b = float(beta[piece["family"]])
    rows: dict[str, list] = {k: [] for k in THEOREM1_FIELDS}
    with jax.enable_x64(True):
        x64 = jnp.asarray(np.asarray(x, np.float64))
        d = x64.shape[0]
        k_piece = jax.random.fold_in(jax.random.fold_in(key, piece["seed"]), asm.FAMILIES.index(family.name))
        k_w, k_v, k_dir = jax.random.split(k_piece, 3)
        w_all = asm.init_sub_models(k_w, family, m_max, d, jnp.float64)
        p = w_all.shape[1]
        q_basis = asm.active_basis(family, x64)
        sub = sub_model_worst(family, w_all, x64, q_basis, radius, 1.0 / b, int(settings.ascent_steps))
        psi = jnp.maximum(sub["plus"], sub["minus"])
        for weights in settings.weights:
            v_all = asm.assembly_weights(k_v, m_max, weights, jnp.float64)
            scaling = asm.resolve_scaling(family, weights)
            for m in widths:
                mask = (jnp.arange(m_max) < m).astype(jnp.float64)
                v = v_all * mask
                s = asm.scaling_factor(m, scaling)
                wc = worst_case(family, w_all, v, s, x64, q_basis, sub, radius, b, int(settings.refine_steps))
                k_m = jax.random.fold_in(k_dir, m)
                dirs = jax.random.normal(k_m, (int(settings.directions), m_max, p), jnp.float64) * mask[:, None]
                dirs = dirs * (radius / jnp.linalg.norm(dirs.reshape(dirs.shape[0], -1), axis=1))[:, None, None]
                rand = np.asarray(jax.vmap(lambda dl, v=v, s=s: _assembly_remainder(family, w_all, v, s, x64, dl))(
                    dirs))
                av = jnp.abs(v)
                max_v = float(jnp.max(av))
                row = {
                    "family": family.name, "weights": weights, "scaling": scaling, "width": m,
                    "seed": piece["seed"], "scale": s, "max_v": max_v, "beta": b, "worst": wc["worst"],
                    "worst_concentrated": wc["concentrated"], "worst_check_error": wc["check_error"],
                    "hessian_term": 0.5 * radius**2 * float(jnp.max(av * sub["hess_norm"])) / s,
                    "random_rms": float(np.sqrt(np.mean(rand**2))),
                    "random_max": float(np.max(np.abs(rand))),
                    "grad_norm": float(_assembly_grad_norm(family, w_all, v, s, x64)),
                    "bound": b * radius**2 * max_v / (2.0 * s),
                    "bound_lemma2": b * radius**2 * math.log(m) / (2.0 * s),
                    "lemma2_event": bool(max_v <= math.log(m)),
                    "psi_max": float(jnp.max(psi[:m])),
                    "hess_max": float(jnp.max(sub["hess_norm"][:m])),
                }
                for k in THEOREM1_FIELDS:
                    rows[k].append(row[k])
    return rows


def theorem1_sweep(settings: AssemblyTheorem1, x: Any, beta: Mapping[str, float], key: Array | None = None
                   ) -> dict[str, np.ndarray]:
    """Theorem 1 measured: every (family, seed, weight kind, width) of the settings, as equal-length arrays.

    Columns (:data:`THEOREM1_FIELDS`): ``worst`` — max |r(Δ)| over ‖Δ‖ ≤ R found (see :func:`worst_case`);
    ``hessian_term`` — ½R²‖H(θ₀)‖ = ½R² maxᵢ|vᵢ|‖H_{gᵢ}(w_{i,0})‖/s (the quadratic form at θ₀ in its worst
    direction); ``random_rms``/``random_max`` — |r(Δ)| over ``directions`` random Δ with ‖Δ‖ = R;
    ``bound`` — βR² max|vᵢ|/(2s(m)) (Theorem 1; max|vᵢ| = 1 for vᵢ ∈ {1, ±1}); ``bound_lemma2`` —
    βR² log(m)/(2s(m)), valid when ``lemma2_event`` (max|vᵢ| ≤ log m) holds; ``psi_max`` — the largest
    single-sub-model worst case maxᵢ ψᵢ among the first m; ``hess_max`` — maxᵢ ‖H_{gᵢ}(w_{i,0})‖.
    """
    pieces = theorem1_pieces(settings)
    results = [theorem1_piece(p, settings, x, beta, key) for p in progress(pieces, desc="family × seed",
                                                                            total=len(pieces))]
    return {k: np.asarray([v for r in results for v in r[k]]) for k in THEOREM1_FIELDS}


def theorem1_fits(rows: Mapping[str, np.ndarray], directions: int) -> list[dict[str, Any]]:
    """Per (family, weights): the rates of :func:`theorem1_sweep`'s columns against m.

    ``expected`` is the predicted exponent of the worst case, −1 for s(m) = m and −1/2 for s(m) = √m;
    ``worst`` the power-law fit of worst/max|vᵢ| (max|vᵢ| = 1 except for Gaussian weights, where it divides
    out the √(2 log m) growth of Lemma 2); ``drift`` = log(max ψ at m_max / max ψ at m_min)/log(m_max/m_min),
    the part of the slope due to the largest single-sub-model worst case growing with the number of
    sub-models; ``random`` the fit of the RMS remainder along random directions and ``random_se`` its
    standard error from the central limit theorem (relative sd 1/√(2·directions) per point,
    :func:`ntkbook.fitting.slope_standard_error`); ``worst_ratio`` the largest worst/bound.
    """
    out = []
    fam_w = sorted({(f, w) for f, w in zip(rows["family"], rows["weights"], strict=True)},
                   key=lambda fw: (asm.FAMILIES.index(fw[0]), asm.WEIGHTS.index(fw[1])))
    for family, weights in fam_w:
        sel = (rows["family"] == family) & (rows["weights"] == weights)
        m = rows["width"][sel]
        scaling = str(rows["scaling"][sel][0])
        lo, hi = m == m.min(), m == m.max()
        drift = math.log(rows["psi_max"][sel][hi].mean() / rows["psi_max"][sel][lo].mean()) / math.log(
            m.max() / m.min())
        out.append({
            "family": family, "weights": weights, "scaling": scaling,
            "expected": -1.0 if scaling == "linear" else -0.5,
            "worst": power_law_fit(m, rows["worst"][sel] / rows["max_v"][sel]),
            "hessian": power_law_fit(m, rows["hessian_term"][sel] / rows["max_v"][sel]),
            "random": power_law_fit(m, rows["random_rms"][sel]),
            "random_se": slope_standard_error(m, np.full(m.size, 1.0 / math.sqrt(2 * directions))),
            "drift": drift,
            "worst_ratio": float(np.max(rows["worst"][sel] / rows["bound"][sel])),
        })
    return out


@partial(jax.jit, static_argnames=("family",))
def _sub_outputs(family, w, x):
    return jax.vmap(lambda wi: family.apply_one(wi, x))(w)


def sub_model_mean(family: str, x: Any, m: int, key: Array, hidden: int = 3) -> dict[str, float]:
    """Sample mean, standard deviation and standard error of g(w_{i,0}; x) over m fresh sub-models.

    Decides s(m) for vᵢ = 1: a mean that is zero (within the standard error) makes the sum of Eq. (4)
    O(√m); a non-zero mean makes it O(m).
    """
    fam = asm.get_family(family, "tanh", hidden)
    with jax.enable_x64(True):
        x64 = jnp.asarray(np.asarray(x, np.float64))
        w = asm.init_sub_models(key, fam, V.positive_int("m", m), x64.shape[0], jnp.float64)
        g = np.asarray(_sub_outputs(fam, w, x64))
    return {"mean": float(g.mean()), "sd": float(g.std(ddof=1)), "se": float(g.std(ddof=1) / math.sqrt(m))}


def sub_model_means(settings: AssemblyTheorem1, x: Any, key: Array) -> dict[str, dict[str, float]]:
    """:func:`sub_model_mean` of every family over m = max(``settings.widths``) fresh sub-models (the largest
    assembly of the Theorem 1 sweep), each family drawn from the same ``key``, with the exact mean.

    The exact mean of g(w_{i,0}; x) under the initialization: 0 for the families of mean zero (an odd
    activation times a symmetric outer weight), and E[½z²] = ½ for the square, z = aᵀx̂ ~ N(0, 1) when
    ‖x‖ = √d.

    Args:
        settings: the ``assembly_theorem1`` sizes (widths, hidden).
        x: one input, shape (d,), with ‖x‖ = √d.
        key: PRNG key of the sub-models.

    Returns:
        family name → ``{"mean", "sd", "se", "exact"}``, in the order of ``FAMILIES``.

    Raises:
        TypeError: if ``settings`` is not the ``AssemblyTheorem1`` settings (``ntkbook.scales``).
    """
    V.settings("settings", settings, AssemblyTheorem1)
    m = max(settings.widths)
    return {f: sub_model_mean(f, x, m, key, settings.hidden)
            | {"exact": 0.0 if asm.get_family(f).mean_zero else 0.5} for f in asm.FAMILIES}


# ---------------------------------------------------------------------------------------------
# Lemma 2: max of m Gaussians
# ---------------------------------------------------------------------------------------------


def lemma2_exact(m: int) -> float:
    """P(max_{i ≤ m} |vᵢ| > log m) = 1 − (1 − 2Q(log m))^m for i.i.d. N(0, 1) (Q the Gaussian tail)."""
    m = V.positive_int("m", m)
    two_tail = 2.0 * math.exp(float(log_ndtr(-math.log(m))))
    return float(-math.expm1(m * math.log1p(-two_tail))) if two_tail < 1 else 1.0


def lemma2_bound(m: int) -> float:
    """Lemma 2's bound on the failure probability, min(1, 2 exp(−½ log²m + log m))."""
    m = V.positive_int("m", m)
    return min(1.0, 2.0 * math.exp(-0.5 * math.log(m) ** 2 + math.log(m)))


def lemma2_threshold() -> float:
    """The m above which Lemma 2's bound 2m·exp(−½ log²m) is below one, in closed form.

    2m·e^{−(ln m)²/2} < 1 ⟺ (ln m)² − 2 ln m − 2 ln 2 > 0 ⟺ ln m > 1 + √(1 + 2 ln 2), so the threshold is
    e^{1+√(1+2 ln 2)} ≈ 12.74: the lemma says something from m = 13 on.
    """
    return math.exp(1.0 + math.sqrt(1.0 + 2.0 * math.log(2.0)))


def lemma2_bound_root() -> float:
    """The m where 2m·exp(−½ log²m) = 1 (m > e), found numerically (Brent's method, ``xtol`` 1e-12):
    an independent check of :func:`lemma2_threshold`."""
    # log of the unclipped bound, decreasing for m > e
    return float(brentq(lambda m: math.log(2.0 * m) - 0.5 * math.log(m) ** 2, math.e, 1e3, xtol=1e-12))


def lemma2_first_m(limit: int = 100) -> int:
    """The first integer m ≥ 2 at which :func:`lemma2_bound` is below one, by evaluating it at
    m = 2, 3, …, ``limit`` − 1 (an integer check of :func:`lemma2_threshold`: the answer is its ceiling, 13).

    Raises:
        TypeError, ValueError: if ``limit`` is not an integer ≥ 3, or the bound stays at one below it.
    """
    limit = V.positive_int("limit", limit, minimum=3)
    for m in range(2, limit):
        if lemma2_bound(m) < 1:
            return m
    raise ValueError(f"Lemma 2's bound stays at 1 for every m < {limit}")


def lemma2_z_scores(frequency: Mapping[str, Any]) -> np.ndarray:
    """How many binomial standard errors each measured frequency of :func:`lemma2_frequency` lies from the
    exact probability: |frequency − exact| / max(standard_error, 1/draws), shape (len(widths),).

    Where the exact probability is below 1/draws its standard error is below the resolution of the sample
    (one event in ``draws``), so the resolution 1/draws is the unit there.

    Raises:
        TypeError, ValueError: if ``frequency`` is not a mapping with the fields ``frequency``, ``exact``,
            ``standard_error`` and ``draws`` of :func:`lemma2_frequency`.
    """
    V.fields("frequency", frequency, ("frequency", "exact", "standard_error", "draws"))
    return np.abs(frequency["frequency"] - frequency["exact"]) / np.maximum(
        frequency["standard_error"], 1.0 / frequency["draws"])


@partial(jax.jit, static_argnames=("rows", "m"))
def _count_exceedances(key, rows, m, valid):
    v = jax.random.normal(key, (rows, m))
    hit = jnp.max(jnp.abs(v), axis=1) > jnp.log(m)
    return jnp.sum(hit & (jnp.arange(rows) < valid))


def lemma2_frequency(widths: Any, draws: int, key: Array) -> dict[str, np.ndarray]:
    """Empirical frequency of max|vᵢ| > log m over ``draws`` draws of v ~ N(0, I_m), per m.

    Returns arrays ``width``, ``frequency``, ``exact`` (:func:`lemma2_exact`), ``bound``
    (:func:`lemma2_bound`), ``standard_error`` (binomial, √(p(1−p)/draws) at the exact p) and ``draws``.
    """
    widths = V.int_tuple("widths", tuple(int(w) for w in widths))
    draws = V.positive_int("draws", draws)
    out: dict[str, list] = {k: [] for k in ("width", "frequency", "exact", "bound", "standard_error", "draws")}
    for m in widths:
        chunk = max(1, min(draws, (1 << 22) // m))
        count, done = 0, 0
        k_m = fold_key(key, m)
        while done < draws:  # fixed chunk shape: one compilation per m (the last chunk is masked)
            n = min(chunk, draws - done)
            count += int(_count_exceedances(jax.random.fold_in(k_m, done), chunk, m, n))
            done += n
        p = lemma2_exact(m)
        out["width"].append(m)
        out["frequency"].append(count / draws)
        out["exact"].append(p)
        out["bound"].append(lemma2_bound(m))
        out["standard_error"].append(math.sqrt(p * (1 - p) / draws))
        out["draws"].append(draws)
    return {k: np.asarray(v) for k, v in out.items()}


# ---------------------------------------------------------------------------------------------
# Assumption 1
# ---------------------------------------------------------------------------------------------


@jax.jit
def _hidden_layers(model, params, x):
    return model.forward(params, x).post[1:]


def median_max_ratios(widths: Any, depth: int, x: Any, key: Array, runs: int = 1) -> dict[str, np.ndarray]:
    """median_i |αᵢ⁽ˡ⁾(x)| / max_i |αᵢ⁽ˡ⁾(x)| (Eq. 3) for every hidden layer of a tanh network of Eq. (8).

    The sub-models of layer l+1 are the neurons αᵢ⁽ˡ⁾ of layer l (Section 3).  Returns arrays ``width``,
    ``run``, ``layer`` (1-based), ``input`` (index into x), ``ratio``, ``median``, ``max``.
    """
    widths = V.int_tuple("widths", tuple(int(w) for w in widths))
    depth = V.positive_int("depth", depth)
    x = V.array("x", x, ndim=2)
    out: dict[str, list] = {k: [] for k in ("width", "run", "layer", "input", "ratio", "median", "max")}
    for m in widths:
        for r in range(V.positive_int("runs", runs)):
            model, params = mlp(jax.random.fold_in(jax.random.fold_in(key, r), m), (m,) * depth,
                                input_dim=x.shape[1], activation="tanh")
            post = _hidden_layers(model, params, x)
            for layer, a in enumerate(post, start=1):
                a = np.abs(np.asarray(a, np.float64))
                med, mx = np.median(a, axis=1), np.max(a, axis=1)
                for i in range(a.shape[0]):
                    for k, val in (("width", m), ("run", r), ("layer", layer), ("input", i),
                                   ("ratio", med[i] / mx[i]), ("median", med[i]), ("max", mx[i])):
                        out[k].append(val)
    return {k: np.asarray(v) for k, v in out.items()}


def network_median_max_ratios(settings: AssemblyAssumption1, x: Any, key: Array) -> dict[str, np.ndarray]:
    """:func:`median_max_ratios` at the sizes of ``assembly_assumption1``: widths ``settings.network_widths``,
    ``settings.depth`` hidden layers, ``settings.runs`` networks per width, inputs ``x`` of shape (n, d).

    Returns the arrays of :func:`median_max_ratios` (one entry per width × run × layer × input).

    Raises:
        TypeError: if ``settings`` is not the ``AssemblyAssumption1`` settings (``ntkbook.scales``).
    """
    V.settings("settings", settings, AssemblyAssumption1)
    return median_max_ratios(settings.network_widths, settings.depth, x, key, runs=settings.runs)


def median_limits(depth: int, input_norm2_over_d: float = 1.0) -> np.ndarray:
    """m → ∞ value of median_i |αᵢ⁽ˡ⁾| for the tanh network: median|tanh(√q_l Z)| = tanh(0.6745 √q_l),
    with q₁ = ‖x‖²/d and q_{l+1} = E[tanh(√q_l Z)²] (the NTK-parameterized forward variance recursion)."""
    q = float(input_norm2_over_d)
    med_z = float(stats.norm.ppf(0.75))
    out = []
    for _ in range(V.positive_int("depth", depth)):
        out.append(math.tanh(med_z * math.sqrt(q)))
        q = gaussian_expectation(lambda z, q=q: np.tanh(np.sqrt(q) * z) ** 2)
    return np.asarray(out)


def dominating_sweep(settings: AssemblyAssumption1, x: Any, beta: float, key: Array | None = None
                     ) -> dict[str, np.ndarray]:
    """Neuron assemblies with vᵢ = ±1 and s = √m, with and without a dominating sub-model.

    The dominating sub-model is g₁' = √m·g₁ (its weight multiplied by √m): alone it is as large as the sum
    of all the others, so median/max of the |vᵢgᵢ| falls like 1/√m and Assumption 1 fails.  Widths are
    nested and padded as in :func:`theorem1_piece`.

    Returns arrays ``dominant`` (bool), ``width``, ``seed``, ``ratio`` (median/max of |vᵢ gᵢ(wᵢ; x)|),
    ``worst`` (worst-case quadratic term over the ball), ``grad_norm`` ‖∇f(θ₀)‖ and ``relative``
    = worst / (R‖∇f(θ₀)‖), the quadratic term relative to the largest first-order change in the ball.
    """
    key = jax.random.key(0) if key is None else key
    family = asm.get_family("neuron")
    radius = float(settings.radius)
    widths = sorted(int(m) for m in settings.widths)
    m_max = widths[-1]
    fields = ("dominant", "width", "seed", "ratio", "worst", "grad_norm", "relative")
    out: dict[str, list] = {k: [] for k in fields}
    with jax.enable_x64(True):
        x64 = jnp.asarray(np.asarray(x, np.float64))
        q_basis = asm.active_basis(family, x64)
        for seed in range(settings.seeds):
            k_w, k_v = jax.random.split(jax.random.fold_in(key, seed))
            w_all = asm.init_sub_models(k_w, family, m_max, x64.shape[0], jnp.float64)
            sub = sub_model_worst(family, w_all, x64, q_basis, radius, 1.0 / beta, int(settings.ascent_steps))
            v_all = asm.assembly_weights(k_v, m_max, "signs", jnp.float64)
            g_all = np.asarray(_sub_outputs(family, w_all, x64))
            for dominant in (False, True):
                for m in widths:
                    v = v_all * (jnp.arange(m_max) < m)
                    if dominant:
                        v = v.at[0].multiply(math.sqrt(m))
                    s = math.sqrt(m)
                    wc = worst_case(family, w_all, v, s, x64, q_basis, sub, radius, beta,
                                    int(settings.refine_steps))
                    gn = float(_assembly_grad_norm(family, w_all, v, s, x64))
                    a = np.abs(np.asarray(v[:m]) * g_all[:m])
                    row = {"dominant": dominant, "width": m, "seed": seed, "ratio": float(np.median(a) / np.max(a)),
                           "worst": wc["worst"], "grad_norm": gn, "relative": wc["worst"] / (radius * gn)}
                    for k in fields:
                        out[k].append(row[k])
    return {k: np.asarray(v) for k, v in out.items()}


# ---------------------------------------------------------------------------------------------
# The two-layer network of Eq. (7)
# ---------------------------------------------------------------------------------------------


def two_layer_as_assembly(key: Array, width: int, x: Any) -> dict[str, float]:
    """The network f = (1/√m) Σᵢ uᵢ σ(wᵢᵀx/√d) (Eq. 7) as the assembly of the sub-models uᵢσ(wᵢᵀx̂).

    Built with :func:`ntkbook.models.dense.mlp` (one hidden layer, trainable output weights u = v), in float64.
    Returns the largest differences between (a) the network and the assembly outputs, (b) the dense
    Hessian of the network (parameters permuted into sub-model blocks (wᵢ, uᵢ)) and
    (1/√m)·blockdiag(H_{g₁}, …, H_{g_m}), and (c) the largest |cos| between the gradients of two
    different hidden neurons αᵢ = σ(wᵢᵀx̂) (Remark 4: exactly orthogonal); plus the Hessian norm.
    """
    width = V.positive_int("width", width)
    with jax.enable_x64(True):
        x64 = jnp.asarray(np.asarray(x, np.float64))
        d = x64.shape[0]
        net, params = mlp(key, width, input_dim=d, activation="tanh", dtype=jnp.float64)
        fam = asm.get_family("neuron")
        w_sub = jnp.concatenate([params["layers"][0]["W"], params["v"]], axis=1)  # (m, d+1): [a, u]
        model = Assembly(v=jnp.ones((width,), jnp.float64), scale=math.sqrt(width), family=fam, input_dim=d)
        f_net = float(net.apply(params, x64[None])[0])
        f_asm = float(model.apply({"w": w_sub}, x64[None])[0])

        def f_blocks(wflat):  # parameters ordered sub-model by sub-model
            w = wflat.reshape(width, d + 1)
            p = {"layers": [{"W": w[:, :d]}], "v": w[:, d:]}
            return net.apply(p, x64[None])[0]

        h_net = np.asarray(dense_hessian(f_blocks, w_sub.ravel()))
        blocks = np.asarray(jax.jit(jax.vmap(lambda w: asm.sub_model_hessian(fam, w, x64)))(w_sub))
        blocks = blocks / math.sqrt(width)
        h_blk = np.zeros_like(h_net)
        p = d + 1
        for i in range(width):
            h_blk[i * p:(i + 1) * p, i * p:(i + 1) * p] = blocks[i]
        hidden = jax.jit(jax.jacrev(lambda p_: net.forward(p_, x64[None]).post[1][0]))(params)
        flat = np.concatenate([np.asarray(leaf).reshape(width, -1) for leaf in jax.tree_util.tree_leaves(hidden)],
                              axis=1)
        gram = flat @ flat.T
        nrm = np.sqrt(np.diag(gram))
        cos = gram / np.outer(nrm, nrm)
        off = np.abs(cos - np.diag(np.diag(cos)))
        return {
            "output_difference": abs(f_net - f_asm),
            "max_hessian_difference": float(np.max(np.abs(h_net - h_blk))),
            "hessian_norm": spectral_norm(h_net),
            "max_abs_cos_between_neurons": float(off.max()),
        }


__all__ = [
    "SPREADS",
    "SUBSET",
    "THEOREM1_FIELDS",
    "dominating_sweep",
    "lemma2_bound",
    "lemma2_bound_root",
    "lemma2_exact",
    "lemma2_first_m",
    "lemma2_frequency",
    "lemma2_threshold",
    "lemma2_z_scores",
    "median_limits",
    "median_max_ratios",
    "network_median_max_ratios",
    "smoothness",
    "smoothness_by_family",
    "sub_model_mean",
    "sub_model_means",
    "sub_model_remainder",
    "sub_model_worst",
    "theorem1_fits",
    "theorem1_piece",
    "theorem1_pieces",
    "theorem1_sweep",
    "two_layer_as_assembly",
    "worst_case",
]
