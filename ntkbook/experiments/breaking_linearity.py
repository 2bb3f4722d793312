"""Chapter 5 — what breaks linearity (Liu, Zhu & Belkin 2020, Section 4, Table 1, Appendix H).

Non-linear output layer (Eq. 26–29):

* the output map φ(z) = z + ½ log cosh z is :data:`ntkbook.models.output_maps.PHI`;
* :func:`hessian_decomposition_dense` (Eq. 27–29) and :func:`hessian_decomposition_hvp` (Eq. 28) —
  float64 checks against autodiff;
* :func:`one_layer_hessian_norm` — ‖H‖ of a one-hidden-layer network with trained output, closed form;
* :func:`nonlinear_output_sweep` — ‖H‖, ‖H̃‖ and the bound of Eq. (29) across widths, and the
  kernel change of f̃ = φ(f) from initialization to a solution.

Bottleneck (Eq. 30–33, Theorem 4.1, Eq. 106–111):

* :func:`eq30_sweep` — the (2,2,1)-norm of ∂²α⁽ˡ⁺¹⁾/∂(α⁽ˡ⁾)² for a width-1 layer;
* :func:`bottleneck_network` — the network of Eq. (31) (an :func:`~ntkbook.models.dense.mlp` with
  widths (m, 1, m) and activations quadratic, identity, quadratic: its parameter layout is exactly
  Eq. 31's, w⁽¹⁾ = layers[0].W, w⁽²⁾ = layers[1].W, w⁽³⁾ = layers[2].W, w⁽⁴⁾ = v);
* :func:`block_norm` (Eq. 109) and :func:`hessian_block_check` (Eq. 108–109 against autodiff);
* :func:`theorem_4_1_sweep`, :func:`theorem_4_1_constants` — the probability statement of Eq. (32);
* :func:`bottleneck_ball_sweep` — the full ‖H‖ at W₀, in the ball, and where the w⁽²⁾-block vanishes;
* :func:`bottleneck_width_sweep` — Theorem 3.3: widening the bottleneck restores linearity;
* :func:`table_1` — Table 1, measured, from the sweeps above.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from .. import _validation as V
from ..activations import Activation, get_activation
from ..ball import random_direction
from ..columns import stack_rows
from ..data.circle import circle_data
from ..eigen import LANCZOS_RESIDUAL_TOL, EigenResult, lambda_max, refine_unconverged, spectral_norm
from ..fitting import ci_position, power_law_fit
from ..hessian import dense_hessian, hessian_spectral_norm, second_derivative_tensor
from ..kernels import empirical_ntk, kernel_diagonal, relative_change
from ..models.dense import MLP, mlp
from ..models.output_maps import PHI, phi_derivatives
from ..models.wrappers import nonlinear_output
from ..norms import norm_221
from ..progress import progress
from ..pytree import (
    flat_spec,
    tree_axpy,
    tree_dot,
    tree_max_abs,
    tree_norm,
    tree_normal_like,
    tree_sub,
)
from ..quadrature import gaussian_expectation
from ..random import fold_key
from ..scales import (
    BreakingBottleneckBall,
    BreakingBottleneckWidth,
    BreakingEq30,
    BreakingNonlinearOutput,
    BreakingTheorem41,
)
from ..tables import Table, geometric_means, quantities, show
from ..training import train_traced

Array = jax.Array
PyTree = Any
HIGHEST = jax.lax.Precision.HIGHEST

# ---------------------------------------------------------------------------------------------
# Eq. (27)–(28): kernel and Hessian of f̃ = φ(f), against autodiff
# ---------------------------------------------------------------------------------------------


def _output_at(params: PyTree, model: Any, x: Array) -> Array:
    """f(w; x) for one input x (module level: compiled once per model structure)."""
    return model.apply(params, x[None])[0]


def _fixed_norm(params: PyTree, model: Any, x: Array, num_steps: int) -> tuple[Array, Array]:
    """(‖H‖, relative Krylov residual) of f(·; x) by ``num_steps`` fixed Lanczos steps (inside jit/vmap)."""
    h = hessian_spectral_norm(_output_at, params, args=(model, x), method="fixed", num_steps=num_steps)
    return h.value, h.residual


def hessian_decomposition_dense(key: Array, *, width: int, num_inputs: int = 6,
                                phi: Activation = PHI) -> dict[str, float]:
    """Eq. (28) with dense Hessians in float64: H̃ = φ''(f)∇f∇fᵀ + φ'(f)H, every input.

    Also Eq. (27): ‖∇φ(f)‖² = φ'(f)²‖∇f‖² (both sides by autodiff).  Returns the largest entrywise
    error relative to max|H̃|, the largest relative error of Eq. (27), and the Eq. (29) margin
    ‖H̃‖ − (|φ''|‖∇f‖² − |φ'|‖H‖) (≥ 0) at the worst input.
    """
    width = V.positive_int("width", width)
    with jax.enable_x64(True):
        x, _ = circle_data(num_inputs, dtype=jnp.float64)
        base, params = mlp(key, width, input_dim=2, dtype=jnp.float64)
        tilde = nonlinear_output(base, phi)
        err, margin, kerr = [], [], []
        for xi in x:
            h_t, h, g, g_t, f = (np.asarray(a) for a in _dense_pieces(base, tilde, params, xi))
            d1, d2 = (float(a) for a in phi_derivatives(phi, jnp.asarray(f)))
            kerr.append(abs(g_t @ g_t - d1**2 * (g @ g)) / (d1**2 * (g @ g)))
            formula = d2 * np.outer(g, g) + d1 * h
            err.append(np.max(np.abs(h_t - formula)) / np.max(np.abs(h_t)))
            norm_t = spectral_norm(h_t)
            norm = spectral_norm(h)
            margin.append(norm_t - (abs(d2) * g @ g - abs(d1) * norm))
    return {"eq28_max_rel_error": float(max(err)), "eq27_max_rel_error": float(max(kerr)),
            "worst_eq29_margin": float(min(margin))}


@jax.jit
def _dense_pieces(base, tilde, params, x):
    spec = flat_spec(params)
    g, g_t = (spec.ravel(jax.grad(_output_at)(params, model, x)) for model in (base, tilde))
    return (dense_hessian(_output_at, params, tilde, x), dense_hessian(_output_at, params, base, x), g, g_t,
            _output_at(params, base, x))


def hessian_decomposition_hvp(key: Array, *, width: int, probes: int = 4, num_inputs: int = 6,
                              phi: Activation = PHI) -> dict[str, float]:
    """Eq. (28) matrix-free in float64: H̃u = φ''(f)(∇fᵀu)∇f + φ'(f)Hu for random u, every input.

    Hessian-vector products by forward-over-reverse autodiff on both sides, so it works at any
    width.  Returns the largest ‖H̃u − formula‖ / ‖H̃u‖.
    """
    width = V.positive_int("width", width)
    probes = V.positive_int("probes", probes)
    with jax.enable_x64(True):
        x, _ = circle_data(num_inputs, dtype=jnp.float64)
        base, params = mlp(key, width, input_dim=2, dtype=jnp.float64)
        tilde = nonlinear_output(base, phi)
        keys = jax.random.split(jax.random.fold_in(key, 7), probes)
        errs = np.asarray(_hvp_errors(base, tilde, params, x, keys, phi))
    return {"max_rel_error": float(errs.max()), "probes": probes * num_inputs}


@partial(jax.jit, static_argnames=("phi",))
def _hvp_errors(base, tilde, params, x, keys, phi):
    def one(xi, key):
        u = tree_normal_like(key, params)
        f, g = jax.value_and_grad(_output_at)(params, base, xi)
        hu = jax.jvp(lambda p: jax.grad(_output_at)(p, base, xi), (params,), (u,))[1]
        htu = jax.jvp(lambda p: jax.grad(_output_at)(p, tilde, xi), (params,), (u,))[1]
        d1, d2 = phi_derivatives(phi, f)
        formula = jax.tree_util.tree_map(lambda a, b: d2 * tree_dot(g, u) * a + d1 * b, g, hu)
        return tree_norm(tree_sub(htu, formula)) / tree_norm(htu)

    return jax.vmap(lambda xi: jax.vmap(lambda k: one(xi, k))(keys))(x)


# ---------------------------------------------------------------------------------------------
# One hidden layer with trained output: closed-form Hessian norm
# ---------------------------------------------------------------------------------------------


def one_layer_hessian_norm(model: MLP, params: PyTree, x: Array) -> Array:
    """‖∂²f(W, v; x)/∂(W, v)²‖ of f = (1/√m) Σᵢ vᵢ σ(wᵢᵀx̃), x̃ = x/√d (an :func:`~ntkbook.models.dense.mlp`
    with one hidden layer, trained output, no bias), per input, in closed form.

    The Hessian is block diagonal over neurons; the block of neuron i in (wᵢ, vᵢ) is
    [[a x̃x̃ᵀ, b x̃], [b x̃ᵀ, 0]] with a = vᵢσ''(zᵢ)/√m, b = σ'(zᵢ)/√m, whose non-zero eigenvalues are
    those of [[a q², b q], [b q, 0]] (q = ‖x̃‖): ½(a q² ± √(a²q⁴ + 4b²q²)).  So
    ‖H‖ = maxᵢ ½(|aᵢ|q² + √(aᵢ²q⁴ + 4bᵢ²q²)).

    Args:
        x: (n, d).  Returns: (n,).
    """
    if not isinstance(model, MLP) or model.depth != 1 or model.use_bias or model.fixed_v is not None \
            or model.output_dim != 1:
        raise TypeError("one_layer_hessian_norm expects an NTK MLP with one hidden layer, trained scalar output, "
                        "no bias")
    x = jnp.atleast_2d(x)
    m = model.widths[0]
    xt = x / math.sqrt(model.input_dim)
    z = jnp.matmul(xt, params["layers"][0]["W"].T, precision=HIGHEST)  # (n, m)
    act = model.activations[0]
    a = params["v"][:, 0] * act.derivative(z, 2) / math.sqrt(m)
    b = act.derivative(z, 1) / math.sqrt(m)
    q2 = jnp.sum(xt * xt, axis=1, keepdims=True)
    lam = 0.5 * (jnp.abs(a) * q2 + jnp.sqrt(a * a * q2 * q2 + 4.0 * b * b * q2))
    return jnp.max(lam, axis=1)


# ---------------------------------------------------------------------------------------------
# Non-linear output: the width sweep
# ---------------------------------------------------------------------------------------------


NONLINEAR_FIELDS = ("width", "seed", "input", "f0", "phi1", "phi2", "kernel", "hessian", "hessian_tilde",
                    "eq29_bound", "lanczos_residual")
NONLINEAR_RUN_FIELDS = ("width", "seed", "kernel_change_tilde", "kernel_change_base_same_weights",
                        "kernel_change_linear_trained", "max_weight_change", "dist2", "max_residual_tilde",
                        "max_residual_linear", "output_change")


def nonlinear_output_sweep(settings: BreakingNonlinearOutput, key: Array, *,
                           phi: Activation = PHI) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """f = one-hidden-layer tanh network (trained W and v, d = 2) and f̃ = φ(f), across widths.

    Returns two tables of equal-length arrays:

    * per (width, seed, training input) at w₀: ``f0``, ``phi1`` = φ'(f), ``phi2`` = φ''(f),
      ``kernel`` = K(x, x), ``hessian`` = ‖H‖ (closed form), ``hessian_tilde`` = ‖H̃‖
      (``lanczos_steps`` Lanczos steps, vmapped; values whose relative residual is above
      ``LANCZOS_RESIDUAL_TOL`` are recomputed by the restarted solver to tol 1e-6;
      ``lanczos_residual`` is the residual of the value returned) and ``eq29_bound`` = |φ''|K − |φ'|‖H‖;
    * per (width, seed) after training: f̃ trained by GD on :func:`~ntkbook.data.circle.circle_data` (η = c/λ_max(K̃₀))
      gives w*; ``kernel_change_tilde`` = ΔK̃ between w₀ and w*, ``kernel_change_base_same_weights``
      = ΔK of the linear-output f between the *same* w₀ and w*, ``kernel_change_linear_trained`` =
      ΔK of f trained by itself on the same labels, ``max_weight_change`` = ‖w* − w₀‖_∞,
      ``dist2`` = ‖w* − w₀‖, ``output_change`` = maxᵢ |f(w*; xᵢ) − f(w₀; xᵢ)|, and the final residuals.

    Settings: ``widths``, ``seeds``, ``num_inputs``, ``radius``, ``steps``, ``lr_factor``,
    ``lanczos_steps``.
    """
    x, y = circle_data(settings.num_inputs, radius=settings.radius)
    at_init, runs = [], []
    n = x.shape[0]
    for m in progress(settings.widths, desc="widths", total=len(settings.widths)):
        keys = jnp.stack([fold_key(key, m, s) for s in range(settings.seeds)])
        a, r = _nonlinear_width(keys, x, y, int(m), phi, int(settings.steps), float(settings.lr_factor),
                                int(settings.lanczos_steps))
        h = _refined_tilde_norms(a.pop("hessian_tilde"), keys, x, int(m), phi)
        a = {k: np.asarray(v).ravel() for k, v in a.items()}  # (seeds, n) → flat
        a["hessian_tilde"], a["lanczos_residual"] = h.value, h.residual
        a["eq29_bound"] = np.abs(a["phi2"]) * a["kernel"] - np.abs(a["phi1"]) * a["hessian"]
        seeds = settings.seeds
        a.update(width=np.full(seeds * n, int(m)), seed=np.repeat(np.arange(seeds), n),
                 input=np.tile(np.arange(n), seeds))
        at_init.append(a)
        r = {k: np.asarray(v) for k, v in r.items()}
        r.update(width=np.full(seeds, int(m)), seed=np.arange(seeds))
        runs.append(r)
    a, r = stack_rows(at_init), stack_rows(runs)
    return {k: a[k] for k in NONLINEAR_FIELDS}, {k: r[k] for k in NONLINEAR_RUN_FIELDS}


def _refined_tilde_norms(batch: EigenResult, keys: Array, x: Array, m: int, phi: Activation) -> EigenResult:
    """The fixed-step ‖H̃‖ of one width, shape (seeds, n), flattened to (seeds·n,); entries with a residual
    above ``LANCZOS_RESIDUAL_TOL`` recomputed from their own key and input by the restarted solver."""
    n = x.shape[0]
    flat = jax.tree_util.tree_map(lambda a: a.reshape(-1), batch)

    def solve(i: int) -> EigenResult:
        s, j = divmod(i, n)
        base, p0 = mlp(keys[s], m, input_dim=x.shape[1])
        return hessian_spectral_norm(_output_at, p0, args=(nonlinear_output(base, phi), x[j]), tol=1e-6)

    return refine_unconverged(flat, solve, tol=LANCZOS_RESIDUAL_TOL)


@partial(jax.jit, static_argnames=("m", "phi", "steps", "lanczos_steps"))
def _nonlinear_width(keys, x, y, m, phi, steps, lr_factor, lanczos_steps):
    def one(key):
        base, p0 = mlp(key, m, input_dim=x.shape[1])
        tilde = nonlinear_output(base, phi)
        f0 = base.apply(p0, x)
        d1, d2 = phi_derivatives(phi, f0)
        k0 = empirical_ntk(base.apply, p0, x)
        h = one_layer_hessian_norm(base, p0, x)
        ht = jax.lax.map(lambda xi: replace(hessian_spectral_norm(_output_at, p0, args=(tilde, xi), method="fixed",
                                                                  num_steps=lanczos_steps), eigenvector=None), x)
        kt0 = empirical_ntk(tilde.apply, p0, x)
        # the one loop on (1/2n)Σ(f − y)²: step n·c/λ_max, i.e. c/λ_max for ½Σ(f − y)²
        n = x.shape[0]
        run_t = train_traced(tilde.apply, p0, x, y, lr=n * lr_factor / lambda_max(kt0), stop=steps,
                             record_steps=[0])
        run_f = train_traced(base.apply, p0, x, y, lr=n * lr_factor / lambda_max(k0), stop=steps,
                             record_steps=[0])
        p1, q1 = run_t["params"], run_f["params"]
        at_init = {"f0": f0, "phi1": d1, "phi2": d2, "kernel": jnp.diag(k0), "hessian": h, "hessian_tilde": ht}
        delta = tree_sub(p1, p0)
        run = {"kernel_change_tilde": relative_change(empirical_ntk(tilde.apply, p1, x), kt0),
               "kernel_change_base_same_weights": relative_change(empirical_ntk(base.apply, p1, x), k0),
               "kernel_change_linear_trained": relative_change(empirical_ntk(base.apply, q1, x), k0),
               "max_weight_change": tree_max_abs(delta), "dist2": tree_norm(delta),
               "max_residual_tilde": jnp.max(jnp.abs(tilde.apply(p1, x) - y)),
               "max_residual_linear": jnp.max(jnp.abs(base.apply(q1, x) - y)),
               "output_change": jnp.max(jnp.abs(base.apply(p1, x) - f0))}
        return at_init, run

    return jax.vmap(one)(keys)


# ---------------------------------------------------------------------------------------------
# Bottleneck: Eq. (30)
# ---------------------------------------------------------------------------------------------


def eq30_tensor(w: Array, alpha: float, activation: Activation) -> np.ndarray:
    """∂²α⁽ˡ⁺¹⁾/∂(α⁽ˡ⁾)² ∈ ℝ^{1×1×m} for a width-1 layer α⁽ˡ⁺¹⁾ = σ(w α⁽ˡ⁾), by autodiff (Eq. 30;
    :func:`ntkbook.hessian.second_derivative_tensor` of α ↦ σ(wα), output index moved last).

    (In the NTK parameterization the layer divides by √m_b = 1, so there is no extra factor.)
    """
    d2 = _second_derivative(w, jnp.asarray(alpha, w.dtype), activation)  # (m, 1, 1)
    return np.asarray(d2, dtype=np.float64).reshape(1, 1, -1)


@partial(jax.jit, static_argnames=("activation",))
def _second_derivative(w, alpha, activation):
    return second_derivative_tensor(lambda a: activation(w * a[0]), alpha)


def eq30_limit(activation: Activation, alpha: float) -> tuple[float, float]:
    """E[w²|σ''(wα)|] and the standard deviation of one term, w ~ N(0, 1) (Gauss–Hermite).

    ‖T‖₂,₂,₁ / m converges to the mean (law of large numbers) with fluctuations sd/√m.
    """
    d2 = jax.jit(lambda z: activation.derivative(z, 2))

    def term(w: np.ndarray) -> np.ndarray:
        return w**2 * np.abs(np.asarray(d2(jnp.asarray(w * alpha))))

    mean = gaussian_expectation(term, degree=301)
    second = gaussian_expectation(lambda w: term(w) ** 2, degree=301)
    return mean, math.sqrt(max(second - mean**2, 0.0))


EQ30_FIELDS = ("activation", "width", "seed", "norm_221", "exact", "closed_form", "limit", "limit_sd")


def eq30_sweep(settings: BreakingEq30, key: Array) -> dict[str, np.ndarray]:
    """‖∂²α⁽ˡ⁺¹⁾/∂(α⁽ˡ⁾)²‖₂,₂,₁ of a width-1 bottleneck layer across m, for each activation.

    ``norm_221`` is :func:`ntkbook.norm_221` of the autodiff tensor (exact for 1 × 1 × m tensors);
    ``closed_form`` = Σᵢ wᵢ²|σ''(wᵢα)| (Eq. 30); ``limit`` = m E[w²|σ''(wα)|], ``limit_sd`` = √m·sd.
    Settings: ``widths``, ``seeds``, ``activations``, ``alpha`` (the value of α⁽ˡ⁾).
    """
    rows: dict[str, list] = {k: [] for k in EQ30_FIELDS}
    alpha = float(settings.alpha)
    for name in settings.activations:
        act = get_activation(name)
        mean, sd = eq30_limit(act, alpha)
        for m in settings.widths:
            for s in range(settings.seeds):
                w = jax.random.normal(fold_key(key, m, s), (int(m),))
                t = eq30_tensor(w, alpha, act)
                res = norm_221(t)
                closed = float(np.sum(np.asarray(w, np.float64) ** 2
                                      * np.abs(np.asarray(act.derivative(w * alpha, 2), np.float64))))
                for k, v in zip(EQ30_FIELDS, (name, int(m), s, res.value, res.exact, closed, m * mean,
                                              math.sqrt(m) * sd), strict=True):
                    rows[k].append(v)
    return {k: np.asarray(v) for k, v in rows.items()}


# ---------------------------------------------------------------------------------------------
# Bottleneck: the network of Eq. (31), Eq. (106)–(111), Theorem 4.1
# ---------------------------------------------------------------------------------------------


def bottleneck_network(key: Array, width: int, *, dtype: Any = jnp.float32) -> tuple[MLP, PyTree]:
    """The network of Eq. (31): widths (m, 1, m), activations (½z², identity, ½z²), d = 1, all N(0, 1).

    f(W; x) = (1/√m) Σⱼ w⁽⁴⁾ⱼ σ(w⁽³⁾ⱼ (1/√m) Σᵢ w⁽²⁾ᵢ σ(w⁽¹⁾ᵢ x)) — the NTK MLP with these widths has
    exactly this form (the bottleneck has fan-in m, the third layer fan-in 1, so no factor there).
    """
    width = V.positive_int("width", width)
    return mlp(key, (width, 1, width), input_dim=1, activation=("quadratic", "identity", "quadratic"), dtype=dtype)


def bottleneck_pieces(params: PyTree, x: Array | float) -> dict[str, Array]:
    """α⁽¹⁾ (m,), α⁽²⁾ (scalar), α̃⁽³⁾ (m,) and S = Σⱼ w⁽⁴⁾ⱼ (w⁽³⁾ⱼ)² of the Eq. (31) network at scalar x."""
    w1 = params["layers"][0]["W"][:, 0]
    w2 = params["layers"][1]["W"][0]
    w3 = params["layers"][2]["W"][:, 0]
    w4 = params["v"][:, 0]
    m = w1.shape[0]
    a1 = 0.5 * (w1 * x) ** 2
    a2 = jnp.dot(w2, a1, precision=HIGHEST) / math.sqrt(m)
    return {"alpha1": a1, "alpha2": a2, "pre3": w3 * a2, "S": jnp.dot(w4, w3 * w3, precision=HIGHEST)}


def block_norm(params: PyTree, x: Array | float) -> Array:
    """‖∂²f/∂(w⁽²⁾)²‖ = m^{−3/2} |Σⱼ w⁽⁴⁾ⱼ (w⁽³⁾ⱼ)²| ‖α⁽¹⁾‖² — Eq. (109) (σ'' = 1 for σ = ½z²)."""
    p = bottleneck_pieces(params, x)
    m = p["alpha1"].shape[0]
    return jnp.abs(p["S"]) * jnp.sum(p["alpha1"] ** 2) / m**1.5


def hessian_block_check(key: Array, *, width: int, x: float = 0.8, scale: float = 1.7) -> dict[str, float]:
    """Eq. (106)–(109) in float64 against a dense autodiff Hessian of the Eq. (31) network.

    * the w⁽²⁾ block equals Eq. (108): m^{−3/2} Σⱼ w⁽⁴⁾ⱼ σ''(α̃⁽³⁾ⱼ)(w⁽³⁾ⱼ)² α⁽¹⁾ᵢα⁽¹⁾ₖ;
    * its spectral norm is Eq. (109), and ‖H‖ ≥ it (Eq. 106);
    * f is homogeneous of degree 4 in x, so H(W; cx) = c⁴ H(W; x) (``scale`` = c): the bound of
      Eq. (32) must scale like x⁴ (the paper's x² comes from writing ‖α⁽¹⁾‖² = (x²/4)Σ(w⁽¹⁾ᵢ)²,
      whereas α⁽¹⁾ᵢ = (w⁽¹⁾ᵢx)²/2 gives (x⁴/4)Σ(w⁽¹⁾ᵢ)⁴).

    Returns relative errors and the ratio ‖H‖/‖block‖.
    """
    width = V.positive_int("width", width)
    with jax.enable_x64(True):
        model, params = bottleneck_network(key, width, dtype=jnp.float64)
        xa = jnp.asarray([x], jnp.float64)
        h = np.asarray(dense_hessian_at(model, params, xa))
        h_scaled = np.asarray(dense_hessian_at(model, params, scale * xa))
        p = {k: np.asarray(v, np.float64) for k, v in bottleneck_pieces(params, x).items()}
        w3 = np.asarray(params["layers"][2]["W"][:, 0])
        w4 = np.asarray(params["v"][:, 0])
        m = width
        d2 = np.asarray(model.activations[2].derivative(jnp.asarray(p["pre3"]), 2))
        formula = np.sum(w4 * d2 * w3**2) / m**1.5 * np.outer(p["alpha1"], p["alpha1"])  # Eq. (108)
        block = h[m:2 * m, m:2 * m]  # leaf order: W1 (m), W2 (m), W3 (m), v (m)
        block_norm_eq109 = float(np.asarray(block_norm(params, x)))
        full = spectral_norm(h)
        return {"eq108_rel_error": float(np.max(np.abs(block - formula)) / np.max(np.abs(formula))),
                "eq109_rel_error": abs(float(np.linalg.norm(block, 2)) - block_norm_eq109) / block_norm_eq109,
                "full_over_block": full / block_norm_eq109,
                "homogeneity_rel_error": float(np.max(np.abs(h_scaled - scale**4 * h)) / np.max(np.abs(scale**4 * h)))}


@jax.jit
def dense_hessian_at(model: Any, params: PyTree, x: Array) -> Array:
    """The dense Hessian (P × P, leaf order) of w ↦ f(w; x) for one input x of shape (d,):
    :func:`ntkbook.hessian.dense_hessian` of the model output.

    For small models only (e.g. the Eq. 31 network at small width, in float64).
    """
    return dense_hessian(_output_at, params, model, x)


def theorem_4_1_sweep(settings: BreakingTheorem41, key: Array) -> dict[str, np.ndarray]:
    """‖∂²f/∂(w⁽²⁾)²‖ at W₀ (Eq. 109, closed form) for many initializations of the Eq. (31) network.

    Settings: ``widths``, ``seeds`` (initializations per width), ``x``.  Returns ``widths`` (W,),
    ``block`` (W, seeds), and the two random factors ``S_over_sqrt_m`` = Σⱼw⁽⁴⁾ⱼ(w⁽³⁾ⱼ)²/√m and
    ``w1_fourth`` = Σᵢ(w⁽¹⁾ᵢ)⁴/m, so that block = (x⁴/4)·w1_fourth·|S_over_sqrt_m|.
    """
    x = float(settings.x)
    out: dict[str, list] = {"block": [], "S_over_sqrt_m": [], "w1_fourth": []}
    for m in progress(settings.widths, desc="widths", total=len(settings.widths)):
        keys = jax.random.split(fold_key(key, m), settings.seeds)
        res = _theorem_4_1_width(keys, int(m), x)
        for k in out:
            out[k].append(np.asarray(res[k], np.float64))
    return {"widths": np.asarray(settings.widths), **{k: np.stack(v) for k, v in out.items()}}


@partial(jax.jit, static_argnames=("m",))
def _theorem_4_1_width(keys, m, x):
    # The block of Eq. (109) at W₀ depends only on w⁽¹⁾, w⁽³⁾, w⁽⁴⁾ (all N(0, 1) at initialization, as in
    # bottleneck_network); they are drawn directly, which keeps this cheap for many initializations.
    def one(key):
        w1, w3, w4 = jax.random.normal(key, (3, m))
        s = jnp.dot(w4, w3 * w3, precision=HIGHEST)
        a1 = 0.5 * (w1 * x) ** 2
        return {"block": jnp.abs(s) * jnp.sum(a1 * a1) / m**1.5, "S_over_sqrt_m": s / math.sqrt(m),
                "w1_fourth": jnp.sum(w1**4) / m}

    return jax.lax.map(one, keys, batch_size=64)


def theorem_4_1_bound(delta: Any, c1: float, x: float, *, radius: float = 0.0, width: int | None = None) -> Any:
    """The corrected lower bound of Eq. (32): (x⁴/4)(1/√2 − R/√m)₊⁴ (√3 C₁δ³ − (3 log(4/δ)R⁴ + R³)/√m).

    At R = 0 it is (√3/16) C₁ δ³ x⁴.  (The paper prints (x²/4)(½ − R²/m)(…); see
    :func:`hessian_block_check` for why the power of x must be 4, and the chapter for the factor.)
    """
    delta = np.asarray(delta, np.float64)
    if radius == 0.0:
        return math.sqrt(3.0) / 16.0 * c1 * delta**3 * x**4
    if width is None:
        raise ValueError("width is needed when radius > 0")
    lead = max(1.0 / math.sqrt(2.0) - radius / math.sqrt(width), 0.0) ** 4
    return 0.25 * x**4 * lead * (math.sqrt(3.0) * c1 * delta**3
                                 - (3 * np.log(4 / delta) * radius**4 + radius**3) / math.sqrt(width))


def gaussian_limit_c1(deltas: Any) -> float:
    """The largest C₁ for which Eq. (32) at R = 0 holds in the m → ∞ limit, over the given δ < ½.

    As m → ∞, block/x⁴ → (3√3/4)|Z| with Z ~ N(0, 1) (Σ(w⁽¹⁾)⁴/m → 3, S/√m → N(0, 3)), and
    block ≥ (√3/16)C₁δ³x⁴ ⟺ |Z| ≥ C₁δ³/12.  The statement P(·) ≥ 1 − 2δ then holds iff
    C₁ ≤ 12 q(2δ)/δ³ with q(p) the p-quantile of |Z|, i.e. q(p) = Φ⁻¹((1 + p)/2).
    """
    d = V.numpy_array("deltas", deltas).ravel()
    if np.any((d <= 0) | (d >= 0.5)):
        raise ValueError("deltas must lie in (0, 1/2)")
    return float(np.min(12.0 * stats.norm.ppf((1.0 + 2.0 * d) / 2.0) / d**3))


def theorem_4_1_constants(sweep: Mapping[str, Any], deltas: Any, c1: float, x: float) -> dict[str, np.ndarray]:
    """The probability statement of Eq. (32) at R = 0, checked on the initializations of the sweep.

    For each width m and δ: ``failure`` = fraction of initializations with block < bound(δ, C₁),
    ``allowed`` = 2δ + e^{−m/16}, ``stderr`` = the binomial standard error √(p(1 − p)/N) at
    p = ``allowed``; and per width ``c1_empirical`` — the largest C₁ for which failure ≤ allowed at
    every δ of the grid (the empirical constant).
    """
    d = V.numpy_array("deltas", deltas).ravel()
    blocks = np.asarray(sweep["block"], np.float64)
    widths = np.asarray(sweep["widths"])
    n = blocks.shape[1]
    failure = np.stack([[np.mean(b < theorem_4_1_bound(dd, c1, x)) for dd in d] for b in blocks])
    allowed = np.minimum(2 * d[None, :] + np.exp(-widths[:, None] / 16.0), 1.0)
    stderr = np.sqrt(allowed * (1 - allowed) / n)
    c1_emp = []
    for b, m in zip(blocks, widths, strict=True):
        p = 2 * d + math.exp(-m / 16.0)
        ok = p < 1
        q = np.quantile(b, p[ok], method="lower")  # empirical p-quantile: a fraction ≤ p lies below
        c1_emp.append(float(np.min(q / theorem_4_1_bound(d[ok], 1.0, x))) if ok.any() else np.inf)
    return {"widths": widths, "deltas": d, "failure": failure, "allowed": allowed, "stderr": stderr,
            "c1_empirical": np.asarray(c1_emp)}


BALL_FIELDS = ("width", "seed", "point", "hessian", "block", "lanczos_residual", "kernel", "kernel_change",
               "distance")
BALL_POINTS = ("W0", "random", "gradient", "block_zero")


def bottleneck_ball_sweep(settings: BreakingBottleneckBall, key: Array) -> dict[str, np.ndarray]:
    """The full ‖H(W)‖ of the Eq. (31) network at W₀ and at three points of the ball, across widths.

    Points: ``W0``; ``random`` = W₀ + R·u, u uniform on the unit sphere; ``gradient`` = W₀ + R·ĝ,
    ĝ = ∇f(W₀; x)/‖∇f‖ (where gradient descent first goes); ``block_zero`` = W₀ + t e with e ∝
    (w⁽³⁾)² on the w⁽⁴⁾ coordinates, t chosen so that S = Σw⁽⁴⁾(w⁽³⁾)² = 0 there — the point where
    the w⁽²⁾ block of Eq. (109) vanishes (``distance`` = |t| = |S₀|/‖(w⁽³⁾)²‖ is Θ(1), not small).
    For each: ``hessian`` (``lanczos_steps`` Lanczos steps), ``block`` (Eq. 109), ``kernel`` = K(x, x)
    and ``kernel_change`` = |K(W) − K(W₀)|/K(W₀).

    Settings: ``widths``, ``seeds``, ``x``, ``radius``, ``lanczos_steps``.
    """
    rows = []
    x = jnp.asarray([float(settings.x)])
    for m in progress(settings.widths, desc="widths", total=len(settings.widths)):
        keys = jax.random.split(fold_key(key, m), settings.seeds)
        res = _ball_width(keys, int(m), x, float(settings.radius), int(settings.lanczos_steps))
        res = {k: np.asarray(v) for k, v in res.items()}  # (seeds, points)
        seeds, npts = res["hessian"].shape
        row = {k: res[k].ravel() for k in res}
        row.update(width=np.full(seeds * npts, int(m)), seed=np.repeat(np.arange(seeds), npts),
                   point=np.tile(np.asarray(BALL_POINTS), seeds))
        rows.append(row)
    out = stack_rows(rows)
    return {k: out[k] for k in BALL_FIELDS}


@partial(jax.jit, static_argnames=("m", "lanczos_steps"))
def _ball_width(keys, m, x, radius, lanczos_steps):
    def kernel(model, p):  # K(x, x) at the one input x
        return kernel_diagonal(model.apply, p, x[None])[0]

    def one(key):
        model, p0 = bottleneck_network(key, m)
        k0, g0 = kernel(model, p0), jax.grad(_output_at)(p0, model, x)
        ghat = jax.tree_util.tree_map(lambda a: a / jnp.sqrt(k0), g0)
        u = random_direction(jax.random.fold_in(key, 1), p0)
        piece = bottleneck_pieces(p0, x[0])
        w3sq = p0["layers"][2]["W"][:, 0] ** 2
        t = -piece["S"] / jnp.dot(w3sq, w3sq)
        zero = {"layers": p0["layers"], "v": p0["v"] + t * w3sq[:, None]}
        points = [p0, tree_axpy(radius, u, p0), tree_axpy(radius, ghat, p0), zero]
        stacked = jax.tree_util.tree_map(lambda *a: jnp.stack(a), *points)

        def measure(p):
            h_value, h_residual = _fixed_norm(p, model, x[0], lanczos_steps)
            k = kernel(model, p)
            return {"hessian": h_value, "lanczos_residual": h_residual, "block": block_norm(p, x[0]),
                    "kernel": k, "kernel_change": jnp.abs(k - k0) / k0, "distance": tree_norm(tree_sub(p, p0))}

        return jax.lax.map(measure, stacked)

    return jax.lax.map(one, keys)


# ---------------------------------------------------------------------------------------------
# Bottleneck width sweep (Theorem 3.3)
# ---------------------------------------------------------------------------------------------


WIDTH_FIELDS = ("width", "bottleneck", "seed", "hessian", "lanczos_residual", "kernel", "kernel_change",
                "max_residual")


def bottleneck_width_sweep(settings: BreakingBottleneckWidth, key: Array) -> dict[str, np.ndarray]:
    """Networks (m, m_b, m) with activations (tanh, identity, tanh), d = 2: a linear bottleneck.

    Two families share one table: m_b = 1 for every m in ``widths`` (Table 1's bottleneck row), and
    m = ``fixed_width`` for every m_b in ``bottlenecks`` (Theorem 3.3: ‖H‖ = Õ(1/√m_b) when the
    bottleneck is the smallest width).  For each (m, m_b, seed), at the first input x₀ of
    :func:`~ntkbook.data.circle.circle_data`: ``hessian`` = ‖H(W₀)‖ (Lanczos), ``kernel`` = K(x₀, x₀); after GD on the
    training set (η = ``lr_factor``/λ_max(K₀), ``steps`` steps): ``kernel_change`` =
    ‖K(W*) − K(W₀)‖_F/‖K(W₀)‖_F and ``max_residual``.

    Settings: ``widths``, ``fixed_width``, ``bottlenecks``, ``seeds``, ``num_inputs``, ``radius``,
    ``steps``, ``lr_factor``, ``lanczos_steps``.
    """
    x, y = circle_data(settings.num_inputs, radius=settings.radius)
    pieces = [(int(m), 1) for m in settings.widths]
    pieces += [(int(settings.fixed_width), int(mb)) for mb in settings.bottlenecks
               if (int(settings.fixed_width), int(mb)) not in pieces]
    rows = []
    for m, mb in progress(pieces, desc="(m, m_b)", total=len(pieces)):
        keys = jnp.stack([fold_key(key, m, mb, s) for s in range(settings.seeds)])
        res = _bottleneck_one(keys, x, y, m, mb, int(settings.steps), float(settings.lr_factor),
                              int(settings.lanczos_steps))
        res = {k: np.asarray(v) for k, v in res.items()}
        res.update(width=np.full(settings.seeds, m), bottleneck=np.full(settings.seeds, mb),
                   seed=np.arange(settings.seeds))
        rows.append(res)
    out = stack_rows(rows)
    return {k: out[k] for k in WIDTH_FIELDS}


@partial(jax.jit, static_argnames=("m", "mb", "steps", "lanczos_steps"))
def _bottleneck_one(keys, x, y, m, mb, steps, lr_factor, lanczos_steps):
    def one(key):
        model, p0 = mlp(key, (m, mb, m), input_dim=x.shape[1], activation=("tanh", "identity", "tanh"))
        k0 = empirical_ntk(model.apply, p0, x)
        h_value, h_residual = _fixed_norm(p0, model, x[0], lanczos_steps)
        run = train_traced(model.apply, p0, x, y, lr=x.shape[0] * lr_factor / lambda_max(k0),
                           stop=steps, record_steps=[0])
        return {"hessian": h_value, "lanczos_residual": h_residual, "kernel": k0[0, 0],
                "kernel_change": relative_change(empirical_ntk(model.apply, run["params"], x), k0),
                "max_residual": jnp.max(jnp.abs(model.apply(run["params"], x) - y))}

    return jax.lax.map(one, keys)


# ---------------------------------------------------------------------------------------------
# Table 1
# ---------------------------------------------------------------------------------------------


def transition_verdict(fit) -> str:
    """"Yes" if the kernel change decays at least like m^{−1/4} (95% upper end of the slope < −¼),
    "No" if its slope is confidently above −¼, otherwise "undecided" (:func:`ntkbook.fitting.ci_position`
    of −¼ relative to the 95% interval)."""
    return {"above": "Yes", "below": "No", "inside": "undecided"}[ci_position(fit, -0.25)]


def table_1(nonlinear_init: Mapping[str, Any], nonlinear_runs: Mapping[str, Any],
            bottleneck: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Table 1 of the paper, measured: one row per network, from the sweeps of this module.

    * linear output / non-linear output: :func:`nonlinear_output_sweep` — ‖H‖ and ‖H̃‖, K(x, x) and
      K̃(x, x) at W₀ (every training input x), and the kernel change from W₀ to the solution found by
      gradient descent on the training set (f and f̃ each trained on its own);
    * bottleneck: :func:`bottleneck_width_sweep` with m_b = 1 — the same three quantities.

    Each row: fitted exponents in m with 95% intervals, the kernel change at the largest width and the
    verdict of :func:`transition_verdict`; the private keys ``_fits`` (the fits), ``_x`` (widths),
    ``_hessian`` and ``_kernel`` (the measurements, one per (width, seed)) feed the chapter's claims.
    """
    # every training input (one point per (width, seed, input)): K̃(x, x) = φ'(f(x))²K(x, x) is a Θ(1)
    # random variable per input, so a single input per seed leaves the exponent underpowered
    w_nl = np.asarray(nonlinear_init["width"])
    k = np.asarray(nonlinear_init["kernel"])
    phi1 = np.asarray(nonlinear_init["phi1"])
    w_runs = np.asarray(nonlinear_runs["width"])
    narrow = (np.asarray(bottleneck["bottleneck"]) == 1)
    w_b = np.asarray(bottleneck["width"])[narrow]
    data = {
        "linear output": (w_nl, np.asarray(nonlinear_init["hessian"]), k, w_runs,
                          np.asarray(nonlinear_runs["kernel_change_linear_trained"])),
        "non-linear output": (w_nl, np.asarray(nonlinear_init["hessian_tilde"]), phi1**2 * k, w_runs,
                              np.asarray(nonlinear_runs["kernel_change_tilde"])),
        "bottleneck (m_b = 1)": (w_b, np.asarray(bottleneck["hessian"])[narrow],
                                 np.asarray(bottleneck["kernel"])[narrow], w_b,
                                 np.asarray(bottleneck["kernel_change"])[narrow]),
    }
    rows = []
    for model, (w, h, kern, wc, dk) in data.items():
        fits = {"hessian": power_law_fit(w, h), "kernel": power_law_fit(w, kern),
                "kernel_change": power_law_fit(wc, dk)}
        rows.append({
            "network": model,
            "‖H‖ exponent": fits["hessian"].slope,
            "‖H‖ 95% CI": f"[{fits['hessian'].ci_low:.3f}, {fits['hessian'].ci_high:.3f}]",
            "NTK exponent": fits["kernel"].slope,
            "NTK 95% CI": f"[{fits['kernel'].ci_low:.3f}, {fits['kernel'].ci_high:.3f}]",
            "ΔK exponent": fits["kernel_change"].slope,
            "ΔK 95% CI": f"[{fits['kernel_change'].ci_low:.3f}, {fits['kernel_change'].ci_high:.3f}]",
            "ΔK at largest m": float(np.exp(np.mean(np.log(dk[wc == wc.max()])))),
            "transition": transition_verdict(fits["kernel_change"]),
            "_fits": fits,
            "_x": w, "_hessian": h, "_kernel": kern,
        })
    return rows


# ---------------------------------------------------------------------------------------------
# Lemma H.1, Eq. (124): the printed Gaussian tail bound (erratum)
# ---------------------------------------------------------------------------------------------


def lemma_h1_tail(key: Array, *, radius: float, delta: float, draws: int) -> dict[str, float]:
    """Monte Carlo of Eq. (124) of Lemma H.1's proof at its extreme case s = t = R e₁.

    Then Σᵢ sᵢtᵢyᵢ = R² y₁ with y₁ ~ N(0, 1) (variance Σ sᵢ²tᵢ² = R⁴ ≤ R⁴, as the proof says).  Eq. (124)
    asserts |Σ sᵢtᵢyᵢ| ≤ log(4/δ)·R⁴ with probability ≥ 1 − δ/2; the Gaussian tail gives instead
    √(2 log(4/δ))·R² (Chernoff: P(|N(0, σ²)| > σ√(2 log(4/δ))) ≤ 2e^{−log(4/δ)} = δ/2).

    Returns ``printed`` / ``corrected``: the fractions of ``draws`` draws of y₁ (float64) exceeding
    each bound; ``printed_exact`` = 2Φ̄(log(4/δ) R²) and ``corrected_exact`` = 2Φ̄(√(2 log(4/δ))), the
    closed forms; ``allowed`` = δ/2 and ``binomial_se`` = √(δ/2 (1 − δ/2)/draws).
    """
    radius = V.positive_float("radius", radius)
    delta = V.positive_float("delta", delta)
    if not delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    draws = V.positive_int("draws", draws)
    level = math.log(4.0 / delta)
    with jax.enable_x64(True):
        y = np.asarray(jax.random.normal(key, (draws,), dtype=jnp.float64))
    stat = np.abs(radius**2 * y)
    allowed = delta / 2
    return {"printed": float(np.mean(stat > level * radius**4)),
            "corrected": float(np.mean(stat > math.sqrt(2 * level) * radius**2)),
            "printed_exact": float(2 * stats.norm.sf(level * radius**2)),
            "corrected_exact": float(2 * stats.norm.sf(math.sqrt(2 * level))),
            "allowed": allowed, "binomial_se": math.sqrt(allowed * (1 - allowed) / draws)}


# ---------------------------------------------------------------------------------------------
# The chapter's tables and the quantities its checks assert
# ---------------------------------------------------------------------------------------------


def decomposition_table(dense: Mapping[str, float], hvp: Mapping[str, float]) -> Table:
    """The numbers of :func:`hessian_decomposition_dense` (Eq. 27–29, dense float64 Hessians) and of
    :func:`hessian_decomposition_hvp` (Eq. 28 as Hessian-vector products), one row each.

    Raises:
        TypeError: if ``dense`` or ``hvp`` is not a mapping.
    """
    V.mapping("dense", dense)
    V.mapping("hvp", hvp)
    return quantities({**{f"dense: {k}": v for k, v in dense.items()}, **{f"HVP: {k}": v for k, v in hvp.items()}},
                      caption="Eq. 27–29 with dense float64 Hessians, and Eq. 28 as Hessian-vector products.")


def eq29_parts(nl: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The two terms of Eq. (28)–(29) at every (network, input) of :func:`nonlinear_output_sweep`:
    ``(limit, vanishing)`` = (|φ''(f)| K(x, x), the limit of ‖H̃‖; |φ'(f)| ‖H‖, the part that vanishes with
    the width).  By Weyl's inequality | ‖H̃‖ − limit | ≤ vanishing.

    Raises:
        TypeError: if ``nl`` is not a mapping.
        ValueError: if it lacks ``phi1``, ``phi2``, ``kernel`` or ``hessian``.
    """
    V.mapping("nl", nl, ("phi1", "phi2", "kernel", "hessian"))
    return np.abs(nl["phi2"]) * nl["kernel"], np.abs(nl["phi1"]) * nl["hessian"]


def nonlinear_output_table(nl: Mapping[str, np.ndarray], settings: BreakingNonlinearOutput) -> Table:
    """Per width of :func:`nonlinear_output_sweep`, geometric means over seeds and inputs: ‖H‖, ‖H̃‖ and the
    two terms of :func:`eq29_parts`, and the share of inputs where the Eq. (29) lower bound is positive.

    Raises:
        TypeError: if ``nl`` is not a mapping or ``settings`` not a ``BreakingNonlinearOutput``.
        ValueError: if ``nl`` lacks a column of :func:`nonlinear_output_sweep`.
    """
    V.instance("settings", settings, BreakingNonlinearOutput)
    V.mapping("nl", nl, ("width", "hessian_tilde", "eq29_bound", "lanczos_residual"))
    limit, vanishing = eq29_parts(nl)
    sm = geometric_means({**nl, "limit": limit, "vanishing": vanishing}, "width",
                   ("hessian", "hessian_tilde", "limit", "vanishing"))
    data = {"m": sm["width"], "‖H‖": sm["hessian"], "‖H̃‖": sm["hessian_tilde"], "|φ''|K": sm["limit"],
            "|φ'|‖H‖": sm["vanishing"],
            "share of Eq. 29 bound > 0": [float(np.mean(nl["eq29_bound"][nl["width"] == m] > 0))
                                         for m in sm["width"]]}
    return show(data, caption=f"Geometric means over {settings.seeds} seeds × {settings.num_inputs} inputs. "
                f"Largest Lanczos residual {nl['lanczos_residual'].max():.1e}.")


_RUN_COLUMNS = ("width", "kernel_change_tilde", "kernel_change_base_same_weights", "kernel_change_linear_trained",
                "max_weight_change", "dist2", "output_change", "max_residual_tilde", "max_residual_linear")
"""The columns of the training runs of :func:`nonlinear_output_sweep` that :func:`nonlinear_runs_table` shows."""


def nonlinear_runs_table(runs: Mapping[str, np.ndarray]) -> Table:
    """Per width of the training runs of :func:`nonlinear_output_sweep`, geometric means over seeds: the
    kernel changes (f̃ trained, f between the same weights, f trained), how far the weights moved and the
    largest output change; the caption gives the largest final residuals.

    Raises:
        TypeError: if ``runs`` is not a mapping.
        ValueError: if it lacks a column of the training runs of :func:`nonlinear_output_sweep`.
    """
    V.mapping("runs", runs, _RUN_COLUMNS)
    sm = geometric_means(runs, "width", ("kernel_change_tilde", "kernel_change_base_same_weights",
                                   "kernel_change_linear_trained", "max_weight_change", "dist2", "output_change"))
    data = {"m": sm["width"], "ΔK̃ (f̃ trained)": sm["kernel_change_tilde"],
            "ΔK of f, same w₀ → w*": sm["kernel_change_base_same_weights"],
            "ΔK (f trained)": sm["kernel_change_linear_trained"], "‖w*−w₀‖∞": sm["max_weight_change"],
            "‖w*−w₀‖": sm["dist2"], "max|f(w*)−f(w₀)|": sm["output_change"]}
    return show(data, caption="Kernel changes ‖K(w*) − K(w₀)‖_F/‖K(w₀)‖_F on the six training points; largest "
                f"final residuals {runs['max_residual_tilde'].max():.1e} (f̃) and "
                f"{runs['max_residual_linear'].max():.1e} (f).")


def eq30_table(e30: Mapping[str, np.ndarray], settings: BreakingEq30) -> Table:
    """Per activation and width of :func:`eq30_sweep`: the (2,2,1)-norm per unit of width (mean over seeds),
    its limit E[w²|σ''(wα)|] and whether every norm was computed exactly.

    Raises:
        TypeError: if ``e30`` is not a mapping or ``settings`` not a ``BreakingEq30``.
        ValueError: if ``e30`` lacks a column of :func:`eq30_sweep`.
    """
    V.instance("settings", settings, BreakingEq30)
    V.mapping("e30", e30, ("activation", "width", "norm_221", "limit", "exact"))
    rows = []
    for act in settings.activations:
        for m in settings.widths:
            sel = (e30["activation"] == act) & (e30["width"] == m)
            rows.append({"σ": act, "m": int(m), "‖T‖₂,₂,₁ / m": float(np.mean(e30["norm_221"][sel] / m)),
                         "limit E[w²|σ''(wα)|]": float(e30["limit"][sel][0] / m),
                         "all exact": bool(e30["exact"][sel].all())})
    return show(rows, caption="Eq. (30): the (2,2,1)-norm of ∂²α⁽ˡ⁺¹⁾/∂(α⁽ˡ⁾)² per unit of width, mean over "
                f"{settings.seeds} seeds.")


def block_check_table(block_chk: Mapping[str, float]) -> Table:
    """The one row of :func:`hessian_block_check`.

    Raises:
        TypeError: if ``block_chk`` is not a mapping.
    """
    V.mapping("block_chk", block_chk)
    return show([block_chk], caption="Eq. 108–109 against dense autodiff (float64), and H(W; cx) against c⁴H(W; x).")


def theorem_4_1_table(t41: Mapping[str, Any], t41c: Mapping[str, np.ndarray], settings: BreakingTheorem41,
                      c1: float) -> Table:
    """Per width of :func:`theorem_4_1_sweep`: initializations, median block, the empirical C₁ and the failure
    rates of :func:`theorem_4_1_constants` (checked with ``c1``) at δ = 0.05, 0.2, 0.4; the caption also gives
    the Gaussian-limit constant :func:`gaussian_limit_c1` of the δ grid.

    Raises:
        TypeError: if ``t41`` or ``t41c`` is not a mapping, ``settings`` not a ``BreakingTheorem41`` or ``c1``
            not a number.
        ValueError: if a column is missing or ``c1`` ≤ 0.
    """
    V.instance("settings", settings, BreakingTheorem41)
    V.mapping("t41", t41, ("widths", "block"))
    V.mapping("t41c", t41c, ("c1_empirical", "failure"))
    c1 = V.positive_float("c1", c1)
    rows = [{"m": int(m), "initializations": t41["block"].shape[1], "median ‖block‖": float(np.median(t41["block"][i])),
             "empirical C₁": t41c["c1_empirical"][i],
             **{f"fail δ={d:g}": t41c["failure"][i, j] for j, d in enumerate(settings.deltas) if d in (0.05, 0.2, 0.4)}}
            for i, m in enumerate(t41["widths"])]
    c1_inf = gaussian_limit_c1(settings.deltas)
    return show(rows, caption=f"Theorem 4.1 at W₀, x = {settings.x}: failure rates of the bound with C₁ = {c1:.0f} "
                f"(allowed: 2δ + e^(−m/16)), and the largest C₁ that works at every δ. C₁ in the Gaussian limit "
                f"over this δ grid: {c1_inf:.1f}.")


def lemma_h1_table(h1: Mapping[str, float]) -> Table:
    """The one row of :func:`lemma_h1_tail` (run at R = 1/2, δ₂ = 0.1).

    Raises:
        TypeError: if ``h1`` is not a mapping.
    """
    V.mapping("h1", h1)
    return show([h1], caption="Eq. 124 at s = t = R e₁, R = 1/2, δ₂ = 0.1: fractions of draws above the printed "
                "and the corrected bound.")


def bottleneck_ball_table(ball: Mapping[str, np.ndarray], settings: BreakingBottleneckBall) -> Table:
    """Per kind of point (``BALL_POINTS``) and width of :func:`bottleneck_ball_sweep`: medians over
    initializations of ‖H‖, the w⁽²⁾ block, the distance from W₀ and the relative kernel change.

    Raises:
        TypeError: if ``ball`` is not a mapping or ``settings`` not a ``BreakingBottleneckBall``.
        ValueError: if ``ball`` lacks a column of :func:`bottleneck_ball_sweep`.
    """
    V.instance("settings", settings, BreakingBottleneckBall)
    V.mapping("ball", ball, ("point", "width", "hessian", "block", "distance", "kernel_change", "lanczos_residual"))
    rows = []
    for p in BALL_POINTS:
        for m in settings.widths:
            sel = (ball["point"] == p) & (ball["width"] == m)
            rows.append({"point": p, "m": int(m), "median ‖H‖": float(np.median(ball["hessian"][sel])),
                         "median ‖w⁽²⁾ block‖": float(np.median(ball["block"][sel])),
                         "median distance": float(np.median(ball["distance"][sel])),
                         "median |ΔK|/K": float(np.median(ball["kernel_change"][sel]))})
    return show(rows, caption=f"Eq. (31) network, x = {settings.x}, {settings.seeds} initializations per width "
                "(medians: ‖H‖ has a heavy lower tail). Largest Lanczos residual "
                f"{ball['lanczos_residual'].max():.1e}.")


def median_kernel_change(ball: Mapping[str, np.ndarray], widths: Any, point: str) -> list[float]:
    """Per width (in the order of ``widths``): the median over initializations of the relative kernel change
    |ΔK|/K of :func:`bottleneck_ball_sweep` at the points of kind ``point`` (one of ``BALL_POINTS``).

    Raises:
        TypeError: if ``ball`` is not a mapping or ``point`` not a string.
        ValueError: if ``ball`` lacks a column or ``point`` is not one of ``BALL_POINTS``.
    """
    V.mapping("ball", ball, ("point", "width", "kernel_change"))
    V.choice("point", point, BALL_POINTS)
    at = ball["point"] == point
    return [float(np.median(ball["kernel_change"][at & (ball["width"] == m)])) for m in widths]


def bottleneck_width_table(bw: Mapping[str, np.ndarray], settings: BreakingBottleneckWidth) -> Table:
    """Per bottleneck width m_b of :func:`bottleneck_width_sweep` at the fixed outer width: geometric means
    over seeds of ‖H(W₀)‖ and of the kernel change; the caption gives the largest final residual.

    Raises:
        TypeError: if ``bw`` is not a mapping or ``settings`` not a ``BreakingBottleneckWidth``.
        ValueError: if ``bw`` lacks a column of :func:`bottleneck_width_sweep`.
    """
    V.instance("settings", settings, BreakingBottleneckWidth)
    V.mapping("bw", bw, ("width", "bottleneck", "hessian", "kernel_change", "max_residual"))
    sm = geometric_means(bw, "bottleneck", ("hessian", "kernel_change"), where=bw["width"] == settings.fixed_width)
    return show({"m_b": sm["bottleneck"], "‖H(W₀)‖": sm["hessian"], "ΔK": sm["kernel_change"]},
                caption=f"(m, m_b, m) networks with m = {settings.fixed_width}, geometric means over "
                f"{settings.seeds} seeds; largest final residual {bw['max_residual'].max():.1e}.")


def bottleneck_width_fits(bw: Mapping[str, np.ndarray], fixed_width: int) -> dict[str, Any]:
    """Log–log fits (:func:`ntkbook.fitting.power_law_fit`) of ‖H(W₀)‖ (``"hessian"``) and of the kernel
    change (``"kernel_change"``) against the bottleneck width m_b, at the outer width ``fixed_width``.

    Raises:
        TypeError: if ``bw`` is not a mapping or ``fixed_width`` not an integer.
        ValueError: if ``bw`` lacks a column, ``fixed_width`` < 1, or no run has that outer width (from
            :func:`~ntkbook.fitting.power_law_fit`).
    """
    V.mapping("bw", bw, ("width", "bottleneck", "hessian", "kernel_change"))
    fixed_width = V.positive_int("fixed_width", fixed_width)
    fixed = bw["width"] == fixed_width
    return {col: power_law_fit(bw["bottleneck"][fixed], bw[col][fixed]) for col in ("hessian", "kernel_change")}


def table_1_table(table: Sequence[Mapping[str, Any]]) -> Table:
    """The rows of :func:`table_1` without their private keys (``_fits``, ``_x``, ...).

    Raises:
        TypeError: if ``table`` is not a list of mappings.
    """
    V.records("table", table)
    return show([{k: v for k, v in row.items() if not k.startswith("_")} for row in table],
                caption="Table 1 of Liu, Zhu & Belkin (2020), measured. Paper: ‖H‖ = Õ(1/√m), Õ(1), Õ(1); NTK "
                "Θ(1) for all three; transition Yes, No, No.")
