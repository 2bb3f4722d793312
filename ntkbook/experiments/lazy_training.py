"""Chapter 4 — lazy training, rescaling and parameterization (Liu, Zhu & Belkin 2020, §1.1, App. A).

* :func:`shallow_hessian_norm` — ‖∂²f/∂w²‖ of the fixed-output network of Eq. (8) in closed form;
* :func:`segment_gradient_sup` — a certified upper estimate of sup ‖∇_w f‖ on the segment [w₀, w*]
  (the denominator of Eq. 2);
* :func:`weight_change_sweep` — networks trained to convergence across widths and seeds:
  ‖w* − w₀‖ = Θ(1), ‖w* − w₀‖_∞ = O(1/√m), the lower bound of Eq. (2), Chizat's A and B (Eq. 3);
* :func:`rescaled_model_sweep` — the centred, α-rescaled model of Eq. (4): A and B, trained;
* :func:`rescaling_equals_label_rescaling` — GD on αf̄ with labels y is GD on f̄ with labels y/α;
* :func:`parameterization_identities`, :func:`parameterization_sweep` — Appendix A (Eq. 35–41):
  LeCun against NTK parameterization.

Training (all of Chapters 4–5): the one loop of :mod:`ntkbook.training` on its square loss
L(w) = (1/2n) Σᵢ (f(w; xᵢ) − yᵢ)² with step η = c·n/λ_max(K(w₀)) (:func:`ntkbook.training.step_size_from_kernel`,
stable for c < 2 on the linearized model), so that one step is w ← w − (c/λ_max) J(w)ᵀ r(w) with r the
residual: the step η₁ = c/λ_max of the loss ½ Σᵢ (f(w; xᵢ) − yᵢ)² of Theorem 5.1, which is what the formulas
below (and ``lr`` where returned) use.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validation as V
from ..activations import Activation
from ..columns import stack_rows
from ..data.circle import circle_data
from ..eigen import (
    LANCZOS_RESIDUAL_TOL,
    EigenResult,
    extreme_eigenpairs,
    lambda_max,
    refine_unconverged,
    spectral_norm,
)
from ..fitting import power_law_fit
from ..hessian import dense_hessian, hessian_spectral_norm, shallow_hessian_eigenvalues
from ..kernels import empirical_ntk, jacobian_matrix, relative_change
from ..models.dense import MLP, ShallowNetwork, mlp, shallow_network
from ..progress import progress
from ..pytree import tree_max_abs, tree_norm, tree_sub
from ..random import fold_key
from ..scales import LazyParameterization, LazyRescaled, LazyWeightChange
from ..tables import Table, geometric_means, show
from ..training import train, train_traced

Array = jax.Array
PyTree = Any
HIGHEST = jax.lax.Precision.HIGHEST

# ---------------------------------------------------------------------------------------------
# Data, gradient descent, small helpers
# ---------------------------------------------------------------------------------------------


def _train_fixed(apply_fn: Callable[[PyTree, Array], Array], params: PyTree, x: Array, y: Array, eta1: Any,
                 steps: int, track: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``steps`` GD steps of :func:`ntkbook.training.train_traced` (pure, vmappable) with step η₁ = ``eta1`` of the
    loss ½Σ(f − y)², i.e. n·η₁ on the book's loss (1/2n)Σ(f − y)²; trackers recorded at every step."""
    return train_traced(apply_fn, params, x, y, lr=x.shape[0] * eta1, stop=steps, record_steps=np.arange(steps + 1),
                        track=track)


def _abs_residual_sum(apply_fn: Callable[[PyTree, Array], Array]) -> Callable[..., Array]:
    """w ↦ ‖f(w; X) − y‖₁ (its sum over the steps bounds every coordinate's displacement:
    |w_T − w₀|_c ≤ η₁ Σ_{t<T} ‖r_t‖₁ max_i |∂f(xᵢ)/∂w_c|)."""
    return lambda p, x, y: jnp.sum(jnp.abs(apply_fn(p, x) - y))


# ---------------------------------------------------------------------------------------------
# The fixed-output network of Eq. (8): closed-form Hessian norm, gradient norm on a segment
# ---------------------------------------------------------------------------------------------


def shallow_hessian_norm(model: ShallowNetwork, params: PyTree, x: Array) -> Array:
    """‖∂²f(w; x)/∂w²‖ for the fixed-output network of Eq. (8) with d-dimensional inputs, per input.

    With x̃ = x/√d and zᵢ = wᵢᵀx̃, f = (1/√m) Σᵢ vᵢσ(zᵢ), so H = (1/√m) Σᵢ vᵢσ''(zᵢ) (eᵢeᵢᵀ ⊗ x̃x̃ᵀ):
    block diagonal with rank-one blocks, ‖H‖ = ‖x̃‖² maxᵢ |σ''(zᵢ)| / √m (Eq. 9 for d = 1), the largest
    |eigenvalue| of :func:`ntkbook.hessian.shallow_hessian_eigenvalues`.

    Args:
        x: (n, d).  Returns: (n,).
    """
    eig = jax.vmap(lambda xi: shallow_hessian_eigenvalues(model.activation, model.v, params["w"], xi,
                                                          math.sqrt(model.width)))(jnp.atleast_2d(x))
    return jnp.max(jnp.abs(eig), axis=1)


def segment_gradient_sup(model: ShallowNetwork, w_start: PyTree, w_end: PyTree, x: Array, *,
                         points: int = 33) -> Array:
    """Certified upper estimate of sup_{t∈[0,1]} ‖∇_w f(w₀ + t(w* − w₀); x)‖ for Eq. (8), per input.

    ‖∇_w f(w; x)‖² = (‖x̃‖²/m) Σᵢ σ'(zᵢ)² with zᵢ(t) = zᵢ(0) + t sᵢ linear in t, sᵢ = (w* − w₀)ᵢᵀx̃.
    On a grid tₖ = k h (h = 1/(points − 1)), each term varies on [tₖ, tₖ₊₁] by at most
    h |sᵢ| sup|(σ'²)'| ≤ h |sᵢ| · 2 L_σ β_σ, so

        sup_t ‖∇f‖² ≤ (‖x̃‖²/m) [ maxₖ Σᵢ σ'(zᵢ(tₖ))² + 2 L_σ β_σ h Σᵢ |sᵢ| ],

    an upper bound (not an estimate from below, as the grid maximum alone would be).  This is the
    denominator that makes the lower bound of Eq. (2) a valid check.

    Args:
        x: (n, d).  Returns: (n,).
    """
    act: Activation = model.activation
    if not (math.isfinite(act.lipschitz) and math.isfinite(act.smoothness)):
        raise ValueError(f"segment_gradient_sup needs a Lipschitz and smooth activation, got {act.name}")
    points = V.positive_int("points", points, minimum=2)
    x = jnp.atleast_2d(x)
    xt = x / math.sqrt(model.input_dim)
    z0 = jnp.matmul(xt, w_start["w"].T, precision=HIGHEST)  # (n, m)
    s = jnp.matmul(xt, (w_end["w"] - w_start["w"]).T, precision=HIGHEST)
    t = jnp.linspace(0.0, 1.0, points, dtype=z0.dtype)
    d1 = act.derivative(z0[None] + t[:, None, None] * s[None], 1)  # (points, n, m)
    grid_max = jnp.max(jnp.sum(d1 * d1, axis=2), axis=0)  # (n,)
    h = 1.0 / (points - 1)
    slack = 2.0 * act.lipschitz * act.smoothness * h * jnp.sum(jnp.abs(s), axis=1)
    return jnp.sqrt(jnp.sum(xt * xt, axis=1) * (grid_max + slack) / model.width)


# ---------------------------------------------------------------------------------------------
# Section 1.1: how far does gradient descent move the weights?
# ---------------------------------------------------------------------------------------------


WEIGHT_CHANGE_FIELDS = ("width", "seed", "dist2", "dist_inf", "dist_inf_bound", "eq2_bound", "eq2_bound_global",
                        "max_residual", "kernel_change", "lambda_min", "lambda_max", "A", "B", "kappa",
                        "final_loss")


def weight_change_sweep(settings: LazyWeightChange, key: Array, *, activation: str = "tanh") -> dict[str, np.ndarray]:
    """Train the network of Eq. (8) (d = 2, fixed ±1 output weights) to convergence across widths.

    For each width m and seed, on :func:`~ntkbook.data.circle.circle_data`: gradient descent from w₀ with
    η = ``lr_factor``/λ_max(K(w₀)) for ``steps`` steps, then

    * ``dist2`` = ‖w* − w₀‖, ``dist_inf`` = ‖w* − w₀‖_∞;
    * ``dist_inf_bound`` = L_σ maxᵢ‖x̃ᵢ‖_∞ η Σ_t ‖r_t‖₁ / √m, a rigorous bound on ``dist_inf``
      (every coordinate of the gradient of Eq. 8 is at most L_σ‖x̃‖_∞/√m in absolute value);
    * ``eq2_bound`` = maxᵢ (|f(w₀; xᵢ) − yᵢ| − |f(w*; xᵢ) − yᵢ|) / Gᵢ with Gᵢ the certified sup of
      ‖∇f(·; xᵢ)‖ on the segment [w₀, w*] (:func:`segment_gradient_sup`) — Eq. (2), corrected for
      the final residual; ``eq2_bound_global`` uses the global sup_w ‖∇f‖ ≤ L_σ‖x̃ᵢ‖ instead;
    * ``kernel_change`` = ‖K(w*) − K(w₀)‖_F/‖K(w₀)‖_F, ``lambda_min``/``lambda_max`` of K(w₀);
    * Chizat's factors (Eq. 3): ``A`` = ‖f(w₀) − y‖, ``B`` = maxᵢ ‖H(xᵢ)‖/K(xᵢ, xᵢ), ``kappa`` = A·B.

    Settings: ``widths``, ``seeds``, ``num_inputs``, ``radius``, ``steps``, ``lr_factor``,
    ``segment_points``.  Returns equal-length arrays, one entry per (width, seed).
    """
    x, y = circle_data(settings.num_inputs, radius=settings.radius)
    rows = []
    for m in progress(settings.widths, desc="widths", total=len(settings.widths)):
        keys = jax.random.split(fold_key(key, m), settings.seeds)
        out = _weight_change_width(keys, x, y, int(m), activation, int(settings.steps),
                                   float(settings.lr_factor), int(settings.segment_points))
        out = {k: np.asarray(v) for k, v in out.items()}
        out["width"] = np.full(settings.seeds, int(m))
        out["seed"] = np.arange(settings.seeds)
        rows.append(out)
    return stack_rows(rows)


@partial(jax.jit, static_argnames=("m", "activation", "steps", "points"))
def _weight_change_width(keys, x, y, m, activation, steps, lr_factor, points):
    def one(key):
        model, p0 = shallow_network(key, m, input_dim=x.shape[1], activation=activation)
        k0 = empirical_ntk(model.apply, p0, x)
        lam = extreme_eigenpairs(k0, which="BE", method="dense", vectors=False)
        lr = lr_factor / lam.lambda_max
        run = _train_fixed(model.apply, p0, x, y, lr, steps, {"residual_l1": _abs_residual_sum(model.apply)})
        p1 = run["params"]
        delta = tree_sub(p1, p0)
        f0, f1 = model.apply(p0, x), model.apply(p1, x)
        gap0, res1 = jnp.abs(f0 - y), jnp.abs(f1 - y)
        xt = x / math.sqrt(x.shape[1])
        act = model.activation
        g_seg = segment_gradient_sup(model, p0, p1, x, points=points)
        g_glob = act.lipschitz * jnp.linalg.norm(xt, axis=1)
        k1 = empirical_ntk(model.apply, p1, x)
        hess = shallow_hessian_norm(model, p0, x)
        a = jnp.linalg.norm(f0 - y)
        b = jnp.max(hess / jnp.diag(k0))
        return {
            "dist2": tree_norm(delta),
            "dist_inf": tree_max_abs(delta),
            "dist_inf_bound": act.lipschitz * jnp.max(jnp.abs(xt)) * lr * jnp.sum(run["tracked"]["residual_l1"][:-1])
            / math.sqrt(m),
            "eq2_bound": jnp.max((gap0 - res1) / g_seg),
            "eq2_bound_global": jnp.max((gap0 - res1) / g_glob),
            "max_residual": jnp.max(res1),
            "kernel_change": relative_change(k1, k0),
            "lambda_min": lam.lambda_min,
            "lambda_max": lam.lambda_max,
            "A": a,
            "B": b,
            "kappa": a * b,
            "final_loss": run["loss"],
        }

    return jax.vmap(one)(keys)


# ---------------------------------------------------------------------------------------------
# Chizat et al.'s criterion: rescaled models (Eq. 3–4)
# ---------------------------------------------------------------------------------------------


def centered(apply_fn: Callable[[PyTree, Array], Array], params0: PyTree,
             alpha: float = 1.0) -> Callable[[PyTree, Array], Array]:
    """The model α·(f(w; x) − f(w₀; x)) of Chizat et al.: zero at w₀, same Hessian and gradient up to α."""
    V.callable_("apply_fn", apply_fn)

    def apply(params: PyTree, x: Array) -> Array:
        return alpha * (apply_fn(params, x) - apply_fn(params0, x))

    return apply


RESCALED_FIELDS = ("alpha", "seed", "A", "B", "kappa", "kappa_direct", "A_direct", "B_direct", "dist2",
                   "kernel_change", "final_loss")


def rescaled_model_sweep(settings: LazyRescaled, key: Array, *, activation: str = "tanh") -> dict[str, np.ndarray]:
    """The centred, rescaled model αf̄ (f̄ = f − f(w₀), Eq. 4) at one fixed width, for several α.

    In the factorization of Eq. (4): ``A`` = ‖f̄(w₀) − y/α‖ (= ‖y‖/α since f̄(w₀) = 0) and
    ``B`` = maxᵢ ‖H_f̄(xᵢ)‖/K_f̄(xᵢ, xᵢ) (independent of α), ``kappa`` = A·B.  ``A_direct``,
    ``B_direct`` and ``kappa_direct`` are Chizat's factors of the model αf̄ itself, computed by
    autodiff (A = ‖αf̄(w₀) − y‖, B = maxᵢ ‖H_{αf̄}‖/K_{αf̄}) — Eq. (4) says kappa_direct = kappa.
    Then GD trains αf̄ with η = ``lr_factor``/λ_max(K_{αf̄}(w₀)) (= η₁/α²): ``dist2`` = ‖w* − w₀‖,
    ``kernel_change`` (relative, so α-free).

    Settings: ``width``, ``alphas``, ``seeds``, ``num_inputs``, ``radius``, ``steps``, ``lr_factor``.
    """
    x, y = circle_data(settings.num_inputs, radius=settings.radius)
    rows = []
    for alpha in progress(settings.alphas, desc="alphas", total=len(settings.alphas)):
        keys = jax.random.split(fold_key(key, settings.width), settings.seeds)
        out = _rescaled_alpha(keys, x, y, float(alpha), int(settings.width), activation,
                              int(settings.steps), float(settings.lr_factor))
        out = {k: np.asarray(v) for k, v in out.items()}
        out["alpha"] = np.full(settings.seeds, float(alpha))
        out["seed"] = np.arange(settings.seeds)
        rows.append(out)
    return stack_rows(rows)


@partial(jax.jit, static_argnames=("m", "activation", "steps"))
def _rescaled_alpha(keys, x, y, alpha, m, activation, steps, lr_factor):
    def one(key):
        model, p0 = shallow_network(key, m, input_dim=x.shape[1], activation=activation)
        f_bar = centered(model.apply, p0)
        f_alpha = centered(model.apply, p0, alpha)
        # Eq. (4) factorization: B of f̄ (its Hessian/gradient are those of f)
        hess = shallow_hessian_norm(model, p0, x)
        k0 = empirical_ntk(model.apply, p0, x)
        b = jnp.max(hess / jnp.diag(k0))
        a = jnp.linalg.norm(f_bar(p0, x) - y / alpha)
        # Chizat's factors of αf̄ itself, by autodiff (dense Hessians: this width is small)
        ka = empirical_ntk(f_alpha, p0, x)
        ha = jax.vmap(lambda xi: hessian_spectral_norm(lambda p, xi: f_alpha(p, xi[None])[0], p0, args=(xi,),
                                                       method="dense").value)(x)
        a_direct = jnp.linalg.norm(f_alpha(p0, x) - y)
        b_direct = jnp.max(ha / jnp.diag(ka))
        run = _train_fixed(f_alpha, p0, x, y, lr_factor / lambda_max(ka), steps)
        k1 = empirical_ntk(f_alpha, run["params"], x)
        return {"A": a, "B": b, "kappa": a * b, "A_direct": a_direct, "B_direct": b_direct,
                "kappa_direct": a_direct * b_direct, "dist2": tree_norm(tree_sub(run["params"], p0)),
                "kernel_change": relative_change(k1, ka), "final_loss": run["loss"]}

    return jax.vmap(one)(keys)


def rescaling_equals_label_rescaling(key: Array, *, width: int, alpha: float, steps: int,
                                     num_inputs: int = 6, radius: float = 3.0, lr: float = 0.2,
                                     activation: str = "tanh") -> dict[str, float]:
    """GD on L_α(w) = ½‖αf̄(w) − y‖² with step η/α² against GD on ½‖f̄(w) − y/α‖² with step η (float64;
    the one loop of :mod:`ntkbook.training` runs them on the (1/2n)Σ losses with steps n·η/α² and n·η).

    ∇L_α(w) = α Jᵀ(αf̄ − y) = α² Jᵀ(f̄ − y/α), so the two iterations are the same map and produce
    the same parameter path — the model rescaling of Chizat et al. *is* a label rescaling (Eq. 4).
    Returns the largest difference between the two paths (absolute and relative to max |w|), and
    the largest difference between the rescaled model's predictions and α × the other's.
    """
    width = V.positive_int("width", width)
    steps = V.positive_int("steps", steps)
    alpha = V.positive_float("alpha", alpha)
    with jax.enable_x64(True):
        model, p0 = shallow_network(key, width, input_dim=2, activation=activation, dtype=jnp.float64)
        x, y = circle_data(num_inputs, radius=radius, dtype=jnp.float64)
        f_alpha = centered(model.apply, p0, alpha)
        f_bar = centered(model.apply, p0)

        def path(fn, labels, eta):  # the one loop (loss (1/2n)Σ: step n·η), every iterate kept
            run = train(fn, p0, x, labels, lr=num_inputs * eta, stop=steps, keep_path=True, record_steps=[0])
            w = run.path["w"][1:]
            return w, np.asarray(jax.vmap(lambda v: fn({"w": v}, x))(jnp.asarray(w)))

        w_a, out_a = path(f_alpha, y, lr / alpha**2)
        w_b, out_b = path(f_bar, y / alpha, lr)
        diff = float(jnp.max(jnp.abs(w_a - w_b)))
        return {"max_param_difference": diff, "relative_param_difference": diff / float(jnp.max(jnp.abs(w_a))),
                "max_prediction_difference": float(jnp.max(jnp.abs(out_a - alpha * out_b))),
                "distance_travelled": float(jnp.linalg.norm(w_a[-1] - p0["w"]))}


# ---------------------------------------------------------------------------------------------
# Appendix A: other parameterizations
# ---------------------------------------------------------------------------------------------


def layer_scales(model: MLP) -> list[float]:
    """σ_l of Eq. (35) for each trainable layer of a LeCun network: W̄⁽ˡ⁾ = σ_l W⁽ˡ⁾, σ_l = 1/√fan-in."""
    fans = [model.input_dim, *model.widths[:-1]]
    return [1.0 / math.sqrt(f) for f in fans] + [1.0 / math.sqrt(model.widths[-1])]


def to_lecun(model: MLP, params: PyTree) -> tuple[MLP, PyTree]:
    """The LeCun network computing the same function: W̄⁽ˡ⁾ = W⁽ˡ⁾/√m_{l−1}, v̄ = v/√m_L (Eq. 35)."""
    if not isinstance(model, MLP) or model.parameterization != "ntk" or model.fixed_v is not None or model.use_bias:
        raise TypeError("to_lecun expects an NTK-parameterized MLP with a trainable output layer and no bias")
    scales = layer_scales(model)
    new = {"layers": [{"W": layer["W"] * s} for layer, s in zip(params["layers"], scales[:-1], strict=True)],
           "v": params["v"] * scales[-1]}
    lecun = MLP(fixed_v=None, widths=model.widths, activations=model.activations, input_dim=model.input_dim,
                output_dim=model.output_dim, use_bias=False, parameterization="lecun")
    return lecun, new


def parameterization_identities(key: Array, *, widths: tuple[int, ...] = (5, 4), input_dim: int = 3,
                                activation: str = "tanh") -> dict[str, float]:
    """Eq. (35)–(38) checked with autodiff in float64 on a small network.

    With W̄⁽ˡ⁾ = σ_l W⁽ˡ⁾: f̄(W̄) = f(W) (Eq. 35), ∂f̄/∂W̄⁽ˡ⁾ = σ_l⁻¹ ∂f/∂W⁽ˡ⁾ (Eq. 36) and
    ∂²f̄/∂W̄⁽ˡ¹⁾∂W̄⁽ˡ²⁾ = (σ_l₁σ_l₂)⁻¹ ∂²f/∂W⁽ˡ¹⁾∂W⁽ˡ²⁾ (Eq. 37), block by block (dense Hessians).
    In kernel form, K̄ = Σ_l K_l/σ_l² with K_l = J_l J_lᵀ the layer-l part of the NTK kernel.  Then a
    network whose every layer has the same fan-in (``input_dim`` = width) has one common σ_m = 1/√m,
    and ‖K̄‖/‖H̄‖ = ‖K‖/‖H‖ exactly (Eq. 38).  Returns the largest relative errors.
    """
    with jax.enable_x64(True):
        x = jax.random.normal(jax.random.fold_in(key, 1), (4, input_dim), jnp.float64)
        model, params = mlp(key, widths, input_dim=input_dim, activation=activation, dtype=jnp.float64)
        lecun, lparams = to_lecun(model, params)
        out_err = float(jnp.max(jnp.abs(model.apply(params, x) - lecun.apply(lparams, x))))
        jac = np.asarray(_jit_jacobian(model, params, x))
        jac_l = np.asarray(_jit_jacobian(lecun, lparams, x))
        h = np.asarray(dense_hessian(_output_at, params, model, x[0]))
        hl = np.asarray(dense_hessian(_output_at, lparams, lecun, x[0]))
        # Eq. (38): equal fan-ins → one σ_m
        m = widths[0]
        sq, sqp = mlp(jax.random.fold_in(key, 2), (m, m), input_dim=m, activation=activation, dtype=jnp.float64)
        xs = jax.random.normal(jax.random.fold_in(key, 3), (4, m), jnp.float64)
        ratios = []
        for mod, prm in ((sq, sqp), to_lecun(sq, sqp)):
            j = np.asarray(_jit_jacobian(mod, prm, xs))
            hh = np.asarray(dense_hessian(_output_at, prm, mod, xs[0]))
            ratios.append(float(lambda_max(j @ j.T)) / spectral_norm(hh))
    scales = layer_scales(model)
    sizes = [int(np.prod(leaf.shape)) for leaf in jax.tree_util.tree_leaves(params)]  # layers..., v
    d = np.concatenate([np.full(n, s) for n, s in zip(sizes, scales, strict=True)])
    grad_err = float(np.max(np.abs(jac_l - jac / d)) / np.max(np.abs(jac / d)))
    hess_err = float(np.max(np.abs(hl - h / np.outer(d, d))) / np.max(np.abs(h / np.outer(d, d))))
    # the kernel form of Eq. (36): K̄ = Σ_l K_l / σ_l², K_l the layer-l part of the NTK kernel
    bounds = np.cumsum([0, *sizes])
    parts = [jac[:, a:b] @ jac[:, a:b].T for a, b in itertools.pairwise(bounds)]
    k_sum = sum(part / s**2 for part, s in zip(parts, scales, strict=True))
    kernel_err = float(np.max(np.abs(jac_l @ jac_l.T - k_sum)) / np.max(np.abs(k_sum)))
    return {"output_error": out_err, "gradient_rel_error": grad_err, "hessian_rel_error": hess_err,
            "kernel_rel_error": kernel_err, "ratio_ntk": float(ratios[0]), "ratio_lecun": float(ratios[1]),
            "ratio_rel_error": float(abs(ratios[1] - ratios[0]) / ratios[0])}


@jax.jit
def _jit_jacobian(model, params, x):
    return jacobian_matrix(model.apply, params, x)


PARAMETERIZATION_FIELDS = ("width", "seed", "parameterization", "kernel_norm", "hessian_norm", "ratio", "dist2",
                           "max_residual", "lanczos_residual")


def refined_hessian_norms(batch: EigenResult, keys: Array, x: Array, m: int, activation: str,
                          name: str) -> EigenResult:
    """The fixed-step Lanczos norms of one width, those with a residual above ``LANCZOS_RESIDUAL_TOL`` (or not
    finite) recomputed by :func:`ntkbook.hessian_spectral_norm` (restarted Lanczos, tol 1e-6) through
    :func:`ntkbook.eigen.refine_unconverged`.

    Fixed-step Lanczos is what makes the seeds vmappable, but in LeCun coordinates the Hessian's
    layers live on very different scales and a fixed number of steps is occasionally not enough.  Each
    recomputed network is rebuilt from its own key (seed ``s`` of ``keys``) and the solver starts from
    ``jax.random.key(0)``, so which values are recomputed and what they become depend only on the data.
    """

    def solve(s: int) -> EigenResult:
        model, params = mlp(keys[s], (m, m), input_dim=x.shape[1], activation=activation)
        if name == "lecun":
            model, params = to_lecun(model, params)
        return hessian_spectral_norm(_output_at, params, args=(model, x[0]), tol=1e-6)

    return refine_unconverged(batch, solve, tol=LANCZOS_RESIDUAL_TOL)


def parameterization_sweep(settings: LazyParameterization, key: Array, *,
                           activation: str = "tanh") -> dict[str, np.ndarray]:
    """NTK and LeCun versions of the same two-hidden-layer network (widths (m, m), d = 2) across m.

    For each width and seed the LeCun network is the NTK one in LeCun coordinates (:func:`to_lecun`),
    so both start from the same function.  Measured for both: ``kernel_norm`` = ‖K(w₀)‖ (largest
    eigenvalue on :func:`~ntkbook.data.circle.circle_data`), ``hessian_norm`` = ‖H(w₀)‖ at the first input
    (``lanczos_steps`` Lanczos steps, vmapped over seeds; ``lanczos_residual`` is the relative
    residual of the returned Ritz pair; values with a residual above ``LANCZOS_RESIDUAL_TOL`` are
    recomputed by the restarted solver), ``ratio`` = ‖K‖/‖H‖, and after training with
    η = ``lr_factor``/λ_max(K) for ``steps`` steps: ``dist2`` = ‖w* − w₀‖ in the model's own
    coordinates and ``max_residual`` = maxᵢ |f(w*; xᵢ) − yᵢ|.  One compiled function per width, shared by
    both parameterizations (the LeCun network as the NTK one in the coordinates of Eq. 35).

    Settings: ``widths``, ``seeds``, ``num_inputs``, ``radius``, ``steps``, ``lr_factor``,
    ``lanczos_steps``.  Returns equal-length arrays, one entry per (width, seed, parameterization).
    """
    x, y = circle_data(settings.num_inputs, radius=settings.radius)
    rows = []
    for m in progress(settings.widths, desc="widths", total=len(settings.widths)):
        keys = jnp.stack([fold_key(key, m, s) for s in range(settings.seeds)])
        for name in ("ntk", "lecun"):
            out = _parameterization_width(keys, x, y, _coordinate_scales(int(m), x.shape[1], name), int(m),
                                          activation, int(settings.steps), float(settings.lr_factor),
                                          int(settings.lanczos_steps))
            row = {k: np.array(v) for k, v in out.items() if k != "hessian"}
            h = refined_hessian_norms(out["hessian"], keys, x, int(m), activation, name)
            row["hessian_norm"], row["lanczos_residual"] = h.value, h.residual
            row["ratio"] = row["kernel_norm"] / row["hessian_norm"]
            row["width"] = np.full(settings.seeds, int(m))
            row["seed"] = np.arange(settings.seeds)
            row["parameterization"] = np.full(settings.seeds, name)
            rows.append(row)
    out = stack_rows(rows)
    return {k: out[k] for k in PARAMETERIZATION_FIELDS}


def _output_at(params: PyTree, model: Any, x: Array) -> Array:
    """f(w; x) for one input (module level: compiled once per model shape)."""
    return model.apply(params, x[None])[0]


def _coordinate_scales(m: int, input_dim: int, parameterization: str) -> tuple[Array, ...]:
    """σ_l of Eq. (35) for the leaves (W⁽¹⁾, W⁽²⁾, v) of an (m, m) network: :func:`layer_scales` for
    ``"lecun"``, ones for ``"ntk"`` (the NTK coordinates themselves)."""
    fans = layer_scales(MLP(fixed_v=None, widths=(m, m), activations=(), input_dim=input_dim, output_dim=1,
                            use_bias=False, parameterization="ntk"))
    return tuple(jnp.float32(s if parameterization == "lecun" else 1.0) for s in fans)


def _output_in_coordinates(params: PyTree, model: Any, scales: tuple[Array, ...], x: Array) -> Array:
    """f̄(W̄; x) = f(W̄/σ; x) for one input: the NTK network ``model`` read in the coordinates W̄ = σ_l W⁽ˡ⁾
    (Eq. 35; σ = ones gives f itself).  Gradients and Hessians in W̄ are those of Eq. (36)–(37)."""
    return _apply_in_coordinates(model, scales)(params, x[None])[0]


def _apply_in_coordinates(model: Any, scales: tuple[Array, ...]) -> Callable[[PyTree, Array], Array]:
    def apply(params: PyTree, x: Array) -> Array:
        *layers, v = scales
        ntk = {"layers": [{"W": layer["W"] / s} for layer, s in zip(params["layers"], layers, strict=True)],
               "v": params["v"] / v}
        return model.apply(ntk, x)

    return apply


@partial(jax.jit, static_argnames=("m", "activation", "steps", "lanczos_steps"))
def _parameterization_width(keys, x, y, scales, m, activation, steps, lr_factor, lanczos_steps):
    # One compiled function per width, run once for each parameterization: the LeCun network is the NTK one
    # read in the coordinates W̄ = σ_l W⁽ˡ⁾ (Eq. 35), f̄(W̄) = f(W̄/σ), with σ (``scales``) a traced argument
    # (ones for NTK).  With both parameterizations in one program, XLA's CPU runtime (jaxlib 0.10.2)
    # deadlocked at m = 1024: every worker thread idle, the caller waiting for a result that never came
    # (reproduced 4 times, with and without async dispatch); one program per call finishes in about 20 s.
    def one(key):
        model, p0 = mlp(key, (m, m), input_dim=x.shape[1], activation=activation)
        *layers, v = scales
        params = {"layers": [{"W": layer["W"] * s} for layer, s in zip(p0["layers"], layers, strict=True)],
                  "v": p0["v"] * v}  # to_lecun's W̄ = σW when scales are σ
        apply = _apply_in_coordinates(model, scales)
        k0 = empirical_ntk(apply, params, x)
        lam = lambda_max(k0)
        h = hessian_spectral_norm(_output_in_coordinates, params, args=(model, scales, x[0]), method="fixed",
                                  num_steps=lanczos_steps)
        p1 = _train_fixed(apply, params, x, y, lr_factor / lam, steps)["params"]
        return {"kernel_norm": lam, "hessian": replace(h, eigenvector=None),
                "dist2": tree_norm(tree_sub(p1, params)), "max_residual": jnp.max(jnp.abs(apply(p1, x) - y))}

    return jax.vmap(one)(keys)


# ---------------------------------------------------------------------------------------------
# The chapter's tables
# ---------------------------------------------------------------------------------------------


_WEIGHT_CHANGE_COLUMNS = ("width", "dist2", "eq2_bound", "eq2_bound_global", "dist_inf", "dist_inf_bound",
                          "kernel_change", "max_residual", "lambda_min")
"""The columns of :func:`weight_change_sweep` that :func:`weight_change_table` shows."""


def weight_change_table(wc: Mapping[str, np.ndarray], settings: LazyWeightChange) -> Table:
    """Per width of :func:`weight_change_sweep`, geometric means over seeds (:func:`ntkbook.tables.summarize`):
    ‖w* − w₀‖, the two forms of the Eq. (2) bound, ‖w* − w₀‖_∞ and its bound (both × √m) and ΔK; the caption
    gives the largest final residual and the smallest λ_min(K₀).

    Raises:
        TypeError: if ``wc`` is not a mapping or ``settings`` not a ``LazyWeightChange``.
        ValueError: if ``wc`` lacks a column of :func:`weight_change_sweep`.
    """
    V.instance("settings", settings, LazyWeightChange)
    V.mapping("wc", wc, _WEIGHT_CHANGE_COLUMNS)
    sm = geometric_means(wc, "width", ("dist2", "eq2_bound", "eq2_bound_global", "dist_inf", "dist_inf_bound",
                                 "kernel_change"))
    data = {"m": sm["width"], "‖w*−w₀‖": sm["dist2"], "Eq. 2 bound (segment)": sm["eq2_bound"],
            "Eq. 2 bound (global)": sm["eq2_bound_global"], "‖w*−w₀‖∞": sm["dist_inf"],
            "√m‖w*−w₀‖∞": sm["dist_inf"] * np.sqrt(sm["width"]),
            "its bound ×√m": sm["dist_inf_bound"] * np.sqrt(sm["width"]), "ΔK": sm["kernel_change"]}
    return show(data, caption=f"Geometric means over {settings.seeds} seeds. Largest final residual "
                f"max|f(w*)−y| = {wc['max_residual'].max():.1e}; λ_min(K₀) ≥ {wc['lambda_min'].min():.3f}.")


def same_path_table(same_path: Mapping[str, float]) -> Table:
    """The one row of :func:`rescaling_equals_label_rescaling` (run with α = 16).

    Raises:
        TypeError: if ``same_path`` is not a mapping.
    """
    V.mapping("same_path", same_path)
    return show([same_path], caption="GD on αf̄ against GD on f̄ with labels y/α (float64, α = 16).")


def chizat_factors_table(rs: Mapping[str, np.ndarray], wc: Mapping[str, np.ndarray],
                         settings: LazyRescaled) -> Table:
    """Chizat's factors 𝒜, ℬ, κ = 𝒜ℬ (Eq. 3–4) and what training does (‖w* − w₀‖, ΔK), geometric means over
    seeds: one row per α of :func:`rescaled_model_sweep` (width ``settings.width``), then one row per width of
    :func:`weight_change_sweep` (the NTK network, α = 1).

    Raises:
        TypeError: if ``rs`` or ``wc`` is not a mapping or ``settings`` not a ``LazyRescaled``.
        ValueError: if ``rs`` or ``wc`` lacks one of Chizat's factors (or ``alpha``, ``width``).
    """
    V.instance("settings", settings, LazyRescaled)
    V.mapping("rs", rs, ("alpha", "A", "B", "kappa", "dist2", "kernel_change"))
    V.mapping("wc", wc, ("width", "A", "B", "kappa", "dist2", "kernel_change"))
    fields = ("A", "B", "kappa", "dist2", "kernel_change")
    rs_sum, wc_sum = geometric_means(rs, "alpha", fields), geometric_means(wc, "width", fields)

    def row(model: str, alpha: Any, m: Any, values: tuple) -> dict[str, Any]:
        a, b, k, d, dk = values
        return {"model": model, "α": alpha, "m": m, "𝒜": a, "ℬ": b, "κ = 𝒜ℬ": k, "‖w*−w₀‖": d, "ΔK": dk}

    rows = [row(f"α f̄, m = {settings.width}", a, settings.width, rest)
            for a, *rest in zip(*(rs_sum[c] for c in rs_sum), strict=True)]
    rows += [row("NTK network f", 1.0, int(m), rest) for m, *rest in zip(*(wc_sum[c] for c in wc_sum), strict=True)]
    return show(rows, caption="Chizat's factors (Eq. 3–4) and what training does, geometric means over seeds. "
                "Rescaling shrinks 𝒜; width shrinks ℬ.")


def identities_table(ident: Mapping[str, float]) -> Table:
    """The one row of :func:`parameterization_identities`.

    Raises:
        TypeError: if ``ident`` is not a mapping.
    """
    V.mapping("ident", ident)
    return show([ident], caption="Eq. 35–38 in float64: largest relative errors, and ‖K‖/‖H‖ in both coordinates.")


PARAMETERIZATION_PREDICTIONS = {"kernel_norm": "0 / 1", "hessian_norm": "−1/2 / +1/2 (up to log m)",
                                "ratio": "+1/2 / +1/2 (up to log m)", "dist2": "0 / −1/2"}
"""Column of :func:`parameterization_sweep` → its predicted exponents in m, NTK / LeCun (Eq. 39–41)."""


def parameterization_table(pz: Mapping[str, np.ndarray], settings: LazyParameterization) -> Table:
    """Per quantity of :data:`PARAMETERIZATION_PREDICTIONS`: the fitted exponent in the width (with its 95%
    interval, 2 decimals) of :func:`parameterization_sweep` in NTK and in LeCun coordinates, next to the
    prediction; the caption gives the largest final and Lanczos residuals.

    Raises:
        TypeError: if ``pz`` is not a mapping or ``settings`` not a ``LazyParameterization``.
        ValueError: if ``pz`` lacks a column of :func:`parameterization_sweep`.
    """
    V.instance("settings", settings, LazyParameterization)
    V.mapping("pz", pz, ("parameterization", "width", "max_residual", "lanczos_residual",
                         *PARAMETERIZATION_PREDICTIONS))
    is_ntk = pz["parameterization"] == "ntk"
    sel = {"ntk": is_ntk, "lecun": ~is_ntk}
    rows = []
    for col, pred in PARAMETERIZATION_PREDICTIONS.items():
        fit = {name: power_law_fit(pz["width"][s], pz[col][s]) for name, s in sel.items()}
        rows.append({"quantity": col, "NTK slope": fit["ntk"].slope,
                     "NTK 95% CI": f"[{fit['ntk'].ci_low:.2f}, {fit['ntk'].ci_high:.2f}]",
                     "LeCun slope": fit["lecun"].slope,
                     "LeCun 95% CI": f"[{fit['lecun'].ci_low:.2f}, {fit['lecun'].ci_high:.2f}]",
                     "predicted NTK / LeCun": pred})
    return show(rows, caption=f"Fitted exponents over m ∈ {tuple(settings.widths)}, {settings.seeds} seeds. "
                f"Largest final residual {pz['max_residual'].max():.1e}, largest Lanczos residual "
                f"{pz['lanczos_residual'].max():.1e}.")
