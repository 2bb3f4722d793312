"""Chapter 9 — Jacobians, random features and gradient descent for the shallow networks of
Oymak & Soltanolkotabi (2020).

The model (Eq. 1.1) is f(x; W) = vᵀφ(Wx) with W ∈ ℝ^{k×d} trained and v ∈ ℝ^k fixed — *no* 1/√k or
1/√d factors: this is not the NTK parameterization of the other chapters.  Theorem 2.1 prescribes
half of the entries of v equal to +‖y‖/√(kn) and the other half to −‖y‖/√(kn) (one zero when k is
odd), W₀ with i.i.d. N(0, 1) entries, and the loss L(W) = ½ Σ_i (vᵀφ(Wx_i) − y_i)² (Eq. 2.1, no 1/n).

* :func:`~ntkbook.models.oymak_init.output_weights` (from :mod:`ntkbook.models.oymak_init`), :func:`network`,
  :func:`tangent_model`, :func:`jacobian`, :func:`jacobian_gram` — the
  model and its Jacobian J(W) ∈ ℝ^{n×kd} (Section 6.1), with JJᵀ = (φ'(XWᵀ)diag(v)²φ'(WXᵀ)) ⊙ XXᵀ;
* :func:`jacobian_spectrum_vs_k` — Lemmas 6.6 and 6.7 across widths;
* :func:`jacobian_lipschitz` — Lemma 6.8 on random pairs;
* :func:`random_features_vs_k` — Theorem 3.2;
* :func:`theorem_constants`, :func:`gradient_descent` — Theorem 2.1 / Corollary 2.2 (smooth φ) and
  Theorem 2.3 (ReLU): rates, distance and path length;
* :func:`sgd` — Theorem 2.6.

The GD/SGD runs and the Jacobian spectra use float64 (``jax.enable_x64``): the theorems are about
geometric rates that we follow down to relative residuals of 1e-9, below float32 resolution.  They run
the one loop of :mod:`ntkbook.training`, whose loss (1/2n)‖f(W) − y‖² is 1/n times Eq. (2.1): GD with the
theorems' step η is the loop with step n·η (the same iteration); an SGD step on one index γ has the loss
½(f(x_γ; W) − y_γ)², the paper's, so Eq. (2.9) is the loop's SGD with step η itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validation as V
from .. import covariance as cov
from .. import khatri_rao as kr
from ..activations import constants, get_activation
from ..data.sphere import uniform_sphere
from ..eigen import extreme_eigenpairs
from ..fitting import fit_geometric_rate
from ..kernels import empirical_ntk, jacobian_matrix
from ..models import ShallowNetwork
from ..models.oymak_init import output_weights
from ..progress import progress
from ..random import numpy_generator
from ..scales import GdModerate, InitialMisfit, JacobianLipschitz, JacobianVsK, RandomFeatures, SgdModerate
from ..training import Tracker, distance_from_start, train_traced

Array = jax.Array

MAX_WIDTH = 2_000_000
"""Largest width the sweeps add automatically (the thresholds of Lemma 6.7 and Theorem 3.2)."""

PAD_WIDTH = 2**15
"""The width sweeps of Lemmas 6.6–6.7 and Theorem 3.2 compute every width up to PAD_WIDTH in networks padded to
the largest such width of the sweep (``_padded_width``): one compiled draw and one compiled Gram matrix
instead of one per width (at ci every width, thresholds included).  Padding changes no number beyond float64
rounding of the sums over k: the padded rows of W are drawn and then zeroed, with v = 0 on them (JJᵀ) or their
features masked to 0 (ΦΦᵀ), and the first k rows of a draw of K ≥ k rows are the draw of k rows (JAX's
counter-based generator)."""


def _padded_width(k: int, widths: Any) -> int:
    """The width at which a sweep over ``widths`` computes width k (see :data:`PAD_WIDTH`)."""
    small = [int(w) for w in widths if int(w) <= PAD_WIDTH]
    return max(small) if k <= PAD_WIDTH else int(k)

# ---------------------------------------------------------------------------------------------
# The model of Eq. (1.1) and its Jacobian
# ---------------------------------------------------------------------------------------------


def network(w: Array, x: Array, v: Array, activation: str) -> Array:
    """f(W) = φ(XWᵀ)v ∈ ℝ^n for inputs X (n, d), weights W (k, d), output weights v (k,) (Eq. 1.1)."""
    return get_activation(activation).fn(x @ w.T) @ v


def tangent_model(v: Array, input_dim: int, activation: str) -> ShallowNetwork:
    """The network of Eq. (1.1) as a model: one hidden layer, trainable W, fixed output weights v, no
    1/√fan-in factors — the LeCun-parameterized :class:`~ntkbook.models.dense.ShallowNetwork`, whose
    ``apply({"w": W}, X)`` is φ(XWᵀ)v.  Its tangent kernel is the Jacobian Gram J(W)J(W)ᵀ of Section 6.1."""
    return ShallowNetwork(v=v, activation=get_activation(activation), input_dim=int(input_dim),
                          parameterization="lecun")


def jacobian(w: Array, x: Array, v: Array, activation: str) -> Array:
    """J(W) ∈ ℝ^{n×kd}, block ℓ = v_ℓ diag(φ'(Xw_ℓ)) X (Section 6.1), columns ordered like vect(W)
    (:func:`ntkbook.kernels.jacobian_matrix` of :func:`tangent_model`)."""
    return jacobian_matrix(tangent_model(v, x.shape[1], activation).apply, {"w": w}, x)


def jacobian_gram(w: Array, x: Array, v: Array, activation: str) -> Array:
    """J(W)J(W)ᵀ = (φ'(XWᵀ) diag(v)² φ'(WXᵀ)) ⊙ (XXᵀ), shape (n, n): the tangent kernel of
    :func:`tangent_model` (:func:`ntkbook.empirical_ntk`, structured path — J is never formed)."""
    return empirical_ntk(tangent_model(v, x.shape[1], activation).apply, {"w": w}, x)


@partial(jax.jit, static_argnames=("k_pad", "d"))
def _draw_rows(key: Array, k: int, k_pad: int, d: int) -> Array:
    """W ~ N(0, 1) of shape (k, d), drawn as the first k rows of a (k_pad, d) draw, the rest zeroed (float64)."""
    w = jax.random.normal(key, (k_pad, d), jnp.float64)
    return jnp.where((jnp.arange(k_pad) < k)[:, None], w, 0.0)


_gram = jax.jit(jacobian_gram, static_argnames="activation")


def _eig_extremes(a: np.ndarray) -> tuple[float, float]:
    ev = extreme_eigenpairs(a, which="BE", method="dense", vectors=False)
    return float(ev.lambda_min), float(ev.lambda_max)


# ---------------------------------------------------------------------------------------------
# Lemmas 6.6 and 6.7: ‖J(W₀)‖ and σ_min(J(W₀)) across widths
# ---------------------------------------------------------------------------------------------


def lemma_6_7_width(n: int, norm_x: float, lam: float, bound: float) -> float:
    """Smallest even k with √k ≥ √(20 log n)·‖X‖·B/√λ(X) (the condition of Lemma 6.7 for our v)."""
    k = 20.0 * math.log(n) * norm_x**2 * bound**2 / lam
    return float(2 * math.ceil(k / 2))


def jacobian_spectrum_vs_k(settings: JacobianVsK, key: Array, *, activation: str = "softplus"
                           ) -> dict[str, Any]:
    """‖J(W₀)‖ and σ_min(J(W₀)) against the bounds of Lemmas 6.6 and 6.7, for each k and seed.

    Settings: ``n``, ``d``, ``widths`` (even k), ``seeds``; the width k* of Lemma 6.7's condition is
    appended when it is at most :data:`MAX_WIDTH`.  One data set X (uniform on the sphere) and labels
    y ~ N(0, I); v as in Theorem 2.1.  Returns per-(k, seed) arrays ``k``, ``norm``,
    ``norm_bound`` = √k B‖v‖_∞‖X‖, ``smin``, ``smin_bound`` = ‖v‖₂√(λ(X)/2), ``normalized`` =
    λ_min(JJᵀ)/‖v‖₂² (→ λ(X) as k → ∞), plus the scalars ``lam`` = λ(X), ``k_star`` (Lemma 6.7's
    condition), ``norm_x``, ``n``, ``d``.
    """
    n, d = int(settings.n), int(settings.d)
    k_data, k_w = jax.random.split(key)
    with jax.enable_x64(True):
        x = uniform_sphere(jax.random.fold_in(k_data, 0), n, d, dtype=jnp.float64)
        y = jax.random.normal(jax.random.fold_in(k_data, 1), (n,), jnp.float64)
        y_norm = float(jnp.linalg.norm(y))
        lam = cov.network_eigenvalue(np.asarray(x), activation)
        norm_x = kr.spectral_norm(np.asarray(x))
        b = get_activation(activation).lipschitz  # B of Lemmas 6.6 and 6.7: |φ'| ≤ B
        k_star = lemma_6_7_width(n, norm_x, lam, b)
        widths = list(settings.widths) + ([int(k_star)] if k_star <= MAX_WIDTH else [])
        rows: dict[str, list] = {k: [] for k in ("k", "seed", "norm", "norm_bound", "smin", "smin_bound",
                                                 "normalized")}
        for k in progress(widths, desc="widths"):
            k = V.positive_int("k", int(k))
            v = output_weights(k, y_norm, n, dtype=jnp.float64)
            v2 = float(jnp.sum(v**2))
            k_pad = _padded_width(k, widths)
            v_pad = jnp.pad(v, (0, k_pad - k))
            for s in range(settings.seeds):
                w = _draw_rows(jax.random.fold_in(k_w, s * 100_003 + k), k, k_pad, d)
                lo, hi = _eig_extremes(np.asarray(_gram(w, x, v_pad, activation)))
                for name, value in (("k", k), ("seed", s), ("norm", math.sqrt(hi)),
                                    ("norm_bound", math.sqrt(k) * b * float(jnp.max(jnp.abs(v))) * norm_x),
                                    ("smin", math.sqrt(max(lo, 0.0))), ("smin_bound", math.sqrt(v2 * lam / 2)),
                                    ("normalized", lo / v2)):
                    rows[name].append(value)
    out: dict[str, Any] = {k: np.asarray(v) for k, v in rows.items()}
    out.update(lam=lam, norm_x=norm_x, n=n, d=d, k_star=k_star, activation=activation)
    return out


# ---------------------------------------------------------------------------------------------
# Lemma 6.8: Lipschitz Jacobian
# ---------------------------------------------------------------------------------------------


def jacobian_lipschitz(settings: JacobianLipschitz, key: Array, *, activation: str = "softplus") -> dict[str, Any]:
    """‖J(W̃) − J(W)‖ against M‖v‖_∞‖X‖‖W̃ − W‖_F (Lemma 6.8, M = sup|φ''|) on random pairs.

    W ~ N(0, 1) and W̃ = W + t·Δ with Δ a random direction of unit Frobenius norm and t spread over
    ``settings.distances``; for each pair also a direction that moves every pre-activation of one
    neuron (the near-tight case: Δ concentrated on one row, along the top singular vector of X).
    """
    n, d, k = int(settings.n), int(settings.d), int(settings.k)
    m_const = get_activation(activation).smoothness
    rows: dict[str, list] = {"distance": [], "measured": [], "bound": [], "direction": []}
    with jax.enable_x64(True):
        x = uniform_sphere(jax.random.fold_in(key, 0), n, d, dtype=jnp.float64)
        v = output_weights(k, math.sqrt(n), n, dtype=jnp.float64)
        norm_x = kr.spectral_norm(np.asarray(x))
        top = jnp.asarray(np.linalg.svd(np.asarray(x))[2][0])
        for s in range(settings.seeds):
            ks = jax.random.fold_in(key, 10 + s)
            w = jax.random.normal(jax.random.fold_in(ks, 0), (k, d), jnp.float64)
            rand = jax.random.normal(jax.random.fold_in(ks, 1), (k, d), jnp.float64)
            one_row = jnp.zeros((k, d), jnp.float64).at[0].set(top)
            for direction, delta in (("random", rand), ("one neuron along top singular vector", one_row)):
                delta = delta / jnp.linalg.norm(delta)
                for t in settings.distances:
                    diff = jacobian(w + t * delta, x, v, activation) - jacobian(w, x, v, activation)
                    rows["distance"].append(float(t))
                    rows["measured"].append(float(np.linalg.norm(np.asarray(diff), 2)))
                    rows["bound"].append(m_const * float(jnp.max(jnp.abs(v))) * norm_x * float(t))
                    rows["direction"].append(direction)
    return {k: np.asarray(v) for k, v in rows.items()} | {"M": m_const}


# ---------------------------------------------------------------------------------------------
# Theorem 3.2: random features
# ---------------------------------------------------------------------------------------------


def random_features_vs_k(settings: RandomFeatures, key: Array, *, activation: str = "softplus") -> dict[str, Any]:
    """λ_min(ΦΦᵀ), Φ = φ(XWᵀ), against ½k(λ̃(X) − 6B/n¹⁰⁰) (Theorem 3.2) across widths k and seeds.

    The width n log²(n)/λ̃ (the theorem's condition with C = 1) is appended to ``settings.widths``
    when it is at most :data:`MAX_WIDTH`.

    Returns per-(k, seed) arrays ``k``, ``lam_min``, ``bound``, ``normalized`` = λ_min(ΦΦᵀ)/k (→ λ̃
    as k → ∞) and scalars ``lam_tilde``, ``gamma_bound`` = γ_φ²σ²_min(X∗X) (the remark below the
    theorem), ``k_threshold`` = n log²(n)/λ̃ (its width condition with C = 1), ``n``, ``d``.
    """
    n, d = int(settings.n), int(settings.d)
    phi = get_activation(activation).fn
    c = constants(activation)
    b = c.bound_theorem_3_2  # |φ(0)| ≤ B and |φ'| ≤ B
    with jax.enable_x64(True):
        x = uniform_sphere(jax.random.fold_in(key, 0), n, d, dtype=jnp.float64)
        xn = np.asarray(x)
        lam_t = cov.feature_eigenvalue(xn, activation)
        gamma = c.gamma
        gamma_bound = gamma**2 * kr.sigma_min_khatri_rao(xn) ** 2

        @partial(jax.jit, static_argnames="k_pad")
        def features_gram(k_key, k, k_pad):
            w = jax.random.normal(k_key, (k_pad, d), jnp.float64)  # its first k rows: the draw of width k
            f = jnp.where(jnp.arange(k_pad) < k, phi(x @ w.T), 0.0)  # padded features masked to 0
            return f @ f.T

        k_thr = n * math.log(n) ** 2 / lam_t
        widths = list(settings.widths) + ([math.ceil(k_thr)] if k_thr <= MAX_WIDTH else [])
        rows: dict[str, list] = {"k": [], "seed": [], "lam_min": [], "bound": [], "normalized": []}
        for k in progress(widths, desc="widths"):
            k = int(k)
            for s in range(settings.seeds):
                gram = features_gram(jax.random.fold_in(key, 1000 * s + k), k, _padded_width(k, widths))
                lo, _ = _eig_extremes(np.asarray(gram))
                rows["k"].append(k)
                rows["seed"].append(s)
                rows["lam_min"].append(lo)
                rows["bound"].append(0.5 * k * (lam_t - 6 * b / float(n) ** 100))
                rows["normalized"].append(lo / k)
    out: dict[str, Any] = {k: np.asarray(v) for k, v in rows.items()}
    out.update(lam_tilde=lam_t, gamma_bound=gamma_bound, k_threshold=k_thr, n=n, d=d, B=b)
    return out


# ---------------------------------------------------------------------------------------------
# Theorems 2.1 / 2.3 and Corollary 2.2: gradient descent
# ---------------------------------------------------------------------------------------------


def theorem_constants(activation: str, x: Any, y: Any, *, eta_bar: float = 1.0) -> dict[str, float]:
    """Step size and the constants of the conclusions of Theorem 2.1 (smooth φ) or 2.3 (ReLU).

    Smooth φ (Theorem 2.1, with B ≥ sup|φ'|, sup|φ''|):
      η = n η̄ / (2B²‖y‖²‖X‖²);  rate = 1 − η̄ μ_φ² σ²_min(X∗X) / (32 B²‖X‖²);
      distance coefficient c_W = μ_φ σ_min(X∗X) ‖y‖ / (√32 √n) in c_W‖W_τ − W₀‖_F + ‖r_τ‖ ≤ ‖r₀‖;
      path-length factor: Σ‖W_{τ+1} − W_τ‖_F ≤ √32 √n ‖r₀‖ / (μ_φ ‖y‖ σ_min(X∗X)).
    ReLU (Theorem 2.3): η = n η̄ / (3‖y‖²‖X‖²); rate = 1 − η̄σ²_min(X∗X)/(48π‖X‖²);
      c_W = σ_min(X∗X)‖y‖/(12√π √n); no path-length statement.

    Also returned: the *proof-derived* rate √(1 − η̄μ²σ²/(32B²‖X‖²)) and the factor-2 weaker
    distance and path constants that Theorem 6.10 with α = ‖v‖√λ/(2√2) actually delivers (see the
    chapter), ``sigma_kr`` = σ_min(X∗X), ``norm_x``, ``mu``, ``B``.
    """
    x = V.numpy_array("x", x, ndim=2)
    y = V.numpy_array("y", y, ndim=1)
    eta_bar = V.positive_float("eta_bar", eta_bar)
    if eta_bar > 1:
        raise ValueError(f"eta_bar must be <= 1 (Theorems 2.1 and 2.3), got {eta_bar}")
    n = x.shape[0]
    y_norm = float(np.linalg.norm(y))
    norm_x = kr.spectral_norm(x)
    s = kr.sigma_min_khatri_rao(x)
    c = constants(activation)
    if activation == "relu":
        eta = n * eta_bar / (3 * y_norm**2 * norm_x**2)
        rate = 1 - eta_bar * s**2 / (48 * math.pi * norm_x**2)
        dist = s * y_norm / (12 * math.sqrt(math.pi) * math.sqrt(n))
        return {"eta": eta, "rate": rate, "dist_coef": dist, "path_factor": float("nan"), "rate_proof": rate,
                "dist_coef_proof": dist, "path_factor_proof": float("nan"), "sigma_kr": s, "norm_x": norm_x,
                "mu": c.mu, "B": 1.0}
    b = c.bound_theorem_2_1  # |φ'| ≤ B and |φ''| ≤ B
    eta = n * eta_bar / (2 * b**2 * y_norm**2 * norm_x**2)
    x_rate = eta_bar * c.mu**2 * s**2 / (32 * b**2 * norm_x**2)
    dist = c.mu * s * y_norm / (math.sqrt(32) * math.sqrt(n))
    path = math.sqrt(32) * math.sqrt(n) / (c.mu * y_norm * s)
    return {"eta": eta, "rate": 1 - x_rate, "dist_coef": dist, "path_factor": path,
            "rate_proof": math.sqrt(1 - x_rate), "dist_coef_proof": dist / 2, "path_factor_proof": 2 * path,
            "sigma_kr": s, "norm_x": norm_x, "mu": c.mu, "B": b}


LATE_FLOOR = 1e-9
"""Relative residual below which :func:`late_window` stops: far above the float64 rounding floor of ‖r_τ‖ (about
1e-16 relative), so the late contraction is a rate and not rounding noise."""


def late_window(residual: Any, *, floor: float = LATE_FLOOR) -> tuple[int, int]:
    """(S, T): T the last iteration whose relative residual ‖r_T‖/‖r₀‖ is above ``floor``, S = T − T//10 — the
    last tenth of the run before the residual reaches the floor, where it lies along the kernel's slowest
    directions.  Raises ``ValueError`` when fewer than 10 iterations are above the floor."""
    r = np.asarray(residual, dtype=np.float64)
    t = int(np.nonzero(r / r[0] > floor)[0][-1])
    if t < 10:
        raise ValueError(f"only {t + 1} iterations above the relative floor {floor}: too few for a late window")
    return t - t // 10, t


def late_contraction(residual: Any, window: tuple[int, int]) -> float:
    """Per-step contraction c = 1 − (‖r_T‖/‖r_S‖)^{1/(T−S)} of a residual sequence over ``window`` = (S, T)."""
    r = np.asarray(residual, dtype=np.float64)
    s, t = window
    return float(-np.expm1(np.log(r[t] / r[s]) / (t - s)))


def kernel_change_steps(steps: int) -> np.ndarray:
    """The iterations at which :func:`gd_path` records ‖J(W_τ)J(W_τ)ᵀ − J₀J₀ᵀ‖₂: about 200, evenly spaced, and the
    last."""
    return np.unique(np.r_[np.arange(0, steps + 1, max(1, steps // 200)), steps])


@partial(jax.jit, static_argnames=("activation", "steps"))
def gd_path(w0, x, y, v, eta, activation, steps):
    """GD of the one loop (:func:`ntkbook.training.train_traced`) on (1/2n)‖f(W) − y‖² with step n·η, i.e. step η
    on Eq. (2.1)'s ½‖f(W) − y‖²; every step recorded.  Also returns ‖J(W_τ)J(W_τ)ᵀ − J(W₀)J(W₀)ᵀ‖₂ at the
    iterations of :func:`kernel_change_steps`."""
    n = x.shape[0]
    gram = Tracker(lambda w, xx, yy, k0: jnp.linalg.norm(jacobian_gram(w, xx, v, activation) - k0, 2),
                   lambda w, xx, yy: jacobian_gram(w, xx, v, activation), tuple(kernel_change_steps(steps).tolist()))
    run = train_traced(lambda w, xx: network(w, xx, v, activation), w0, x, y, lr=n * eta, stop=steps,
                       record_steps=np.arange(steps + 1), track={"distance": distance_from_start(), "gram": gram},
                       measure_updates=True)
    res = jnp.sqrt(2 * n * run["losses"][:-1])  # ‖f(W_τ) − y‖ = √(2n·L(W_τ))
    return (res, run["tracked"]["distance"][:-1], run["update_norms"][:-1], run["path_length"], run["params"],
            run["tracked"]["gram"])


def gradient_descent(x: Any, y: Any, k: int, key: Array, *, activation: str = "softplus", steps: int,
                     eta: float | None = None, eta_bar: float = 1.0) -> dict[str, Any]:
    """GD on L(W) = ½‖φ(XWᵀ)v − y‖² (Eq. 2.1) from W₀ ~ N(0, 1), v of Theorem 2.1, in float64.

    ``eta`` defaults to the step size of Theorem 2.1 (smooth) / 2.3 (ReLU) with ``eta_bar``.
    Returns per-step arrays ``residual`` (‖f(W_τ) − y‖, τ = 0 … steps−1), ``distance``
    (‖W_τ − W₀‖_F), ``step_length`` (‖W_{τ+1} − W_τ‖_F), the total ``path_length``, the initial
    tangent kernel's extreme eigenvalues ``kernel_min``/``kernel_max`` (λ of J(W₀)J(W₀)ᵀ), the
    ``linearized_rate`` 1 − η·λ_min(J₀J₀ᵀ), the residual norms of the linearized model
    ``linearized_residual`` (‖(I − ηJ₀J₀ᵀ)^τ r₀‖: GD on f(W₀) + J₀(W − W₀)), the ``late_window`` (S, T) of the
    residual (:func:`late_window`) with the ``late_contraction`` of the residual and the
    ``linearized_late_contraction`` of the linearized residual over it (:func:`late_contraction`),
    ``kernel_change_late`` (max ‖J(W_τ)J(W_τ)ᵀ − J₀J₀ᵀ‖₂ over the iterations of :func:`kernel_change_steps` from the
    last one ≤ S to the first one ≥ T), ``lambda_x`` (λ(X) = λ_min(Σ(X)) of the data,
    :func:`ntkbook.covariance.network_eigenvalue`), and the :func:`theorem_constants` (prefixed ``thm_``).
    """
    return gradient_descent_widths(x, y, [k], [key], activation=activation, steps=steps, eta=eta,
                                   eta_bar=eta_bar)[0]


def gradient_descent_widths(x: Any, y: Any, ks: Any, keys: Any, *, activation: str = "softplus", steps: int,
                            eta: float | None = None, eta_bar: float = 1.0) -> list[dict[str, Any]]:
    """:func:`gradient_descent` for several widths ``ks`` (W₀ of width ks[i] drawn from keys[i]) on one data set,
    one compiled loop per width.

    W₀ of width k is the first k rows of a draw at the largest width (JAX's counter-based generator: the same
    numbers as a draw at width k).  Each width runs unpadded: padding every network to the largest width (one
    vmapped loop) computed 3.75× the arithmetic at the ``book`` widths (10 … 2560), for numbers equal up to float64
    rounding of the sums over k.
    """
    ks = [V.positive_int("k", int(k)) for k in ks]
    if len(keys) != len(ks):
        raise ValueError(f"keys must have one key per width, got {len(keys)} keys for {len(ks)} widths")
    steps = V.positive_int("steps", steps)
    with jax.enable_x64(True):
        x = jnp.asarray(V.numpy_array("x", x, ndim=2))
        y = jnp.asarray(V.numpy_array("y", y, ndim=1))
        n, d = x.shape
        consts = theorem_constants(activation, np.asarray(x), np.asarray(y), eta_bar=eta_bar)
        step = consts["eta"] if eta is None else V.positive_float("eta", eta)
        y_norm = float(jnp.linalg.norm(y))
        lam_x = cov.network_eigenvalue(np.asarray(x), activation)
        k_pad = max(ks)
        runs = []
        grid = kernel_change_steps(steps)
        for k, kk in zip(ks, keys, strict=True):
            w0 = jax.random.normal(kk, (k_pad, d), jnp.float64)[None, :k]
            v = output_weights(k, y_norm, n, dtype=jnp.float64)[None]
            k0, r0 = (np.asarray(a)[0] for a in _gram_and_residual(w0, x, y, v, activation))
            res, dist, lens, path, _, gram_change = (a[0] for a in _gd_paths(w0, x, y, v, step, activation, steps))
            lam, q = np.linalg.eigh(0.5 * (k0 + k0.T))
            coef = q.T @ r0  # linearized model: r_τ = (I − ηK₀)^τ r₀ in the eigenbasis of K₀
            lin = np.sqrt(((1 - step * lam)[None, :] ** (2 * np.arange(steps)[:, None]) * coef[None, :] ** 2).sum(1))
            runs.append({"residual": np.asarray(res), "distance": np.asarray(dist),
                         "step_length": np.asarray(lens), "path_length": float(path),
                         "kernel_min": float(lam[0]), "kernel_max": float(lam[-1]), "eta": step,
                         "linearized_rate": 1 - step * float(lam[0]), "linearized_residual": lin,
                         **_late(np.asarray(res), lin, grid, np.asarray(gram_change)),
                         "lambda_x": lam_x,
                         "k": k, "n": n, "d": d, "y_norm": y_norm,
                         **{f"thm_{name}": value for name, value in consts.items()}})
        return runs


def _late(res: np.ndarray, lin: np.ndarray, grid: np.ndarray, change: np.ndarray) -> dict[str, Any]:
    """The late-window fields of a run of :func:`gradient_descent_widths`."""
    window = late_window(res)
    sel = (grid >= grid[grid <= window[0]].max()) & (grid <= grid[grid >= window[1]].min())
    return {"late_window": window, "late_contraction": late_contraction(res, window),
            "linearized_late_contraction": late_contraction(lin, window),
            "kernel_change_late": float(np.max(change[sel]))}


@partial(jax.jit, static_argnames="activation")
def _gram_and_residual(w0, x, y, v, activation):
    """J(W₀)J(W₀)ᵀ and f(W₀) − y of each (padded) network stacked on the leading axis."""
    gram = jax.vmap(jacobian_gram, in_axes=(0, None, 0, None))(w0, x, v, activation)
    return gram, jax.vmap(network, in_axes=(0, None, 0, None))(w0, x, v, activation) - y


@partial(jax.jit, static_argnames=("activation", "steps"))
def _gd_paths(w0, x, y, v, eta, activation, steps):
    """:func:`gd_path` of each network stacked on the leading axis of ``w0`` and ``v`` (same data and step)."""
    return jax.vmap(gd_path, in_axes=(0, None, None, 0, None, None, None))(w0, x, y, v, eta, activation, steps)


def measured_rate(residual: Any, *, floor: float = 1e-9) -> float:
    """Geometric rate of a residual sequence: exp of the least-squares slope of log ‖r_τ‖ against τ,
    over the iterations whose relative residual is above ``floor`` (float64 resolution) and after
    the first 10% (the transient while the kernel settles)."""
    r = np.asarray(residual, dtype=np.float64)
    rel = r / r[0]
    keep = np.nonzero(rel > floor)[0]
    keep = keep[keep >= len(r) // 10] if keep.size > 20 else keep
    if keep.size < 2:
        raise ValueError("not enough iterations above the floor to fit a rate")
    return fit_geometric_rate(keep, r[keep])


def gd_sweep(settings: GdModerate, key: Array, *, activation: str = "softplus") -> list[dict[str, Any]]:
    """:func:`gradient_descent` for every k in ``settings.widths`` on one data set (n, d), in one compiled loop
    (:func:`gradient_descent_widths`)."""
    n, d = int(settings.n), int(settings.d)
    with jax.enable_x64(True):
        x = np.asarray(uniform_sphere(jax.random.fold_in(key, 0), n, d, dtype=jnp.float64))
        y = np.asarray(jax.random.normal(jax.random.fold_in(key, 1), (n,), jnp.float64))
    keys = [jax.random.fold_in(key, 2 + int(k)) for k in settings.widths]
    return gradient_descent_widths(x, y, settings.widths, keys, activation=activation, steps=int(settings.steps))


def gd_summary(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per run: measured rate vs linearized and theorem rates, distance and path vs bounds."""
    rows = []
    for r in runs:
        res = r["residual"]
        r0 = res[0]
        envelope = res / (r0 * r["thm_rate"] ** np.arange(res.size))
        dist_lhs = r["thm_dist_coef"] * r["distance"] + res
        rows.append({
            "k": r["k"], "kd/n": r["k"] * r["d"] / r["n"], "final rel. residual": float(res[-1] / r0),
            "measured rate": measured_rate(res), "1 − ηλ_min(K₀)": r["linearized_rate"],
            "theorem rate": r["thm_rate"],
            "max ‖r_τ‖/(rate^τ‖r₀‖)": float(envelope.max()),
            "max (c_W‖W_τ−W₀‖+‖r_τ‖)/‖r₀‖": float(dist_lhs.max() / r0),
            "max ‖W_τ−W₀‖_F": float(r["distance"].max()), "path length": r["path_length"],
            "path bound": r["thm_path_factor"] * r0,
            "max |‖r_τ‖−‖r_τ^lin‖|/‖r₀‖": float(np.max(np.abs(res - r["linearized_residual"])) / r0),
        })
    return rows


def gd_sweeps(settings: GdModerate, key: Array) -> dict[str, list[dict[str, Any]]]:
    """:func:`gd_sweep` for every activation of ``settings.activations``, each from the same ``key`` (the same
    data set and initial weights for every activation).  Returns activation → runs (one per width).

    Raises:
        TypeError: if ``settings`` is not the ``GdModerate`` settings (``ntkbook.scales``).
    """
    V.settings("settings", settings, GdModerate)
    return {a: gd_sweep(settings, key, activation=a) for a in settings.activations}


_GD_CHECK_FIELDS = ("k", "residual", "thm_rate", "thm_dist_coef", "distance", "linearized_residual",
                    "late_contraction", "linearized_late_contraction", "eta", "kernel_change_late")


def gd_checks(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The numbers the chapter checks Theorems 2.1/2.3 and Lemma 6.8 with, on the runs of :func:`gd_sweep`
    (r_τ = f(W_τ) − y, c the theorem's coefficient ``thm_dist_coef``, 1 − x its rate ``thm_rate``).

    Returns:
        ``envelope``: max over runs and τ ≥ 1 of ‖r_τ‖/((1 − x)^τ‖r₀‖) (≤ 1: the theorem's rate holds);
        ``distance``: max over runs and τ ≥ 1 of (c‖W_τ − W₀‖_F + ‖r_τ‖)/‖r₀‖ (≤ 1: the theorem's distance
        bound, Eq. 2.4, holds); ``k``: the widths (list); ``deviation``: per run max_τ |‖r_τ‖ − ‖r_τ^lin‖|/‖r₀‖
        against the linearized model, shape (runs,); ``rate_gap``: per run |c_GD − c_lin|, the late
        contractions of GD and of the linearized model (list); ``rate_allowance``: per run
        η·max_τ ‖K(W_τ) − K(W₀)‖₂ over the late window, the change of the step's contraction that the
        kernel's move allows (list).

    Raises:
        TypeError, ValueError: if ``runs`` is not a non-empty list of runs of :func:`gd_sweep`.
    """
    runs = V.records("runs", runs, _GD_CHECK_FIELDS)
    return {
        "envelope": max(float(np.max(r["residual"][1:] / (r["residual"][0]
                                                         * r["thm_rate"] ** np.arange(1, r["residual"].size))))
                        for r in runs),
        "distance": max(float(np.max((r["thm_dist_coef"] * r["distance"] + r["residual"])[1:] / r["residual"][0]))
                        for r in runs),
        "k": [r["k"] for r in runs],
        "deviation": np.array([np.max(np.abs(r["residual"] - r["linearized_residual"])) / r["residual"][0]
                               for r in runs]),
        "rate_gap": [abs(r["late_contraction"] - r["linearized_late_contraction"]) for r in runs],
        "rate_allowance": [r["eta"] * r["kernel_change_late"] for r in runs],
    }


def theorem_rate_gap_allowance(run: Mapping[str, Any]) -> float:
    """Relative tolerance of the account of the gap between GD's late contraction and Theorem 2.1's rate, for
    one run of :func:`gd_sweep` (the chapter's "How much faster than guaranteed?").

    The account predicts c/x = 16λ(X)/(μ_φσ_min(X∗X))², replacing ηλ_min(J₀J₀ᵀ) by its expectation
    b = η‖v‖²λ(X) (‖v‖² = ‖y‖²/n) and ignoring that the kernel moves and that a finite run has not shed all
    of its fast components.  The tolerance is the sum of these three measured effects, each divided by b:

        (|ηλ_min(J₀J₀ᵀ) − b| + η·max_τ‖K(W_τ) − K(W₀)‖₂ + (c_lin − ηλ_min(J₀J₀ᵀ))) / b,

    with ηλ_min(J₀J₀ᵀ) = 1 − ``linearized_rate`` and c_lin the linearized model's late contraction.

    Raises:
        TypeError, ValueError: if ``run`` is not a mapping with these fields of a run of :func:`gd_sweep`.
    """
    V.fields("run", run, ("eta", "y_norm", "n", "lambda_x", "linearized_rate", "kernel_change_late",
                          "linearized_late_contraction"))
    base = run["eta"] * run["y_norm"] ** 2 / run["n"] * run["lambda_x"]  # η‖v‖²λ(X)
    eta_lam = 1 - run["linearized_rate"]  # ηλ_min(J₀J₀ᵀ)
    return (abs(eta_lam - base) + run["eta"] * run["kernel_change_late"]
            + (run["linearized_late_contraction"] - eta_lam)) / base


# ---------------------------------------------------------------------------------------------
# Theorem 2.6: SGD
# ---------------------------------------------------------------------------------------------


def sgd_step_size(activation: str, x: Any, y: Any, *, nu: float, eta_bar: float = 1.0) -> dict[str, float]:
    """η, the rate of Eq. (2.10) and the lower bound on P(E) of Theorem 2.6 (smooth φ).

    η = μ_φ²/(9νB⁴) · n/‖y‖² · σ²_min(X∗X)/‖X‖² · η̄;  rate = 1 − η̄/(144 n)·μ_φ⁴/(νB⁴)·σ⁴/‖X‖²;
    P(E) ≥ 1 − (4/ν)(3B‖X‖/(μ_φσ_min))^{1/(kd)} — returned as a function of kd by
    :func:`sgd_event_probability`.
    """
    x = V.numpy_array("x", x, ndim=2)
    y = V.numpy_array("y", y, ndim=1)
    nu = V.positive_float("nu", nu)
    if nu < 3:
        raise ValueError(f"nu must be >= 3 (Theorem 2.6), got {nu}")
    c = theorem_constants(activation, x, y)
    n = x.shape[0]
    s, nx, mu, b = c["sigma_kr"], c["norm_x"], c["mu"], c["B"]
    eta = mu**2 / (9 * nu * b**4) * n / float(np.sum(y**2)) * s**2 / nx**2 * eta_bar
    rate = 1 - eta_bar / (144 * n) * mu**4 / (nu * b**4) * s**4 / nx**2
    return {"eta": eta, "rate": rate, "event_base": 3 * b * nx / (mu * s), "nu": nu}


def sgd_event_probability(constants: Mapping[str, float], kd: int) -> float:
    """The lower bound 1 − (4/ν)(3B‖X‖/(μσ))^{1/(kd)} on P(E) (Theorem 2.6); ≤ 0 means vacuous."""
    return 1 - 4 / constants["nu"] * constants["event_base"] ** (1 / kd)


def sgd_experiment(settings: SgdModerate, key: Array, *, activation: str = "softplus") -> dict[str, Any]:
    """Theorem 2.6 on one data set: SGD at the theorem's step size (ν, η̄ = 1) and at the step size of
    Corollary 2.2 (η = n/(2B²‖y‖²‖X‖²), outside the theorem), against full-batch GD at that step.

    Settings: ``n``, ``d``, ``k``, ``nu``, ``runs``, ``epochs``, ``record_every_epoch``.  One epoch is n
    SGD updates.  Returns the two SGD runs (:func:`sgd`), the GD residuals per step (one GD step per
    epoch), the constants of :func:`sgd_step_size`, the bound (rate^τ‖r₀‖²) at the recorded steps, and
    the lower bounds on P(E) for ν = settings.nu and for ν = 3.
    """
    n, d, k = int(settings.n), int(settings.d), int(settings.k)
    epochs, every = int(settings.epochs), int(settings.record_every_epoch)
    with jax.enable_x64(True):
        x = np.asarray(uniform_sphere(jax.random.fold_in(key, 0), n, d, dtype=jnp.float64))
        y = np.asarray(jax.random.normal(jax.random.fold_in(key, 1), (n,), jnp.float64))
    consts = sgd_step_size(activation, x, y, nu=float(settings.nu))
    gd_eta = theorem_constants(activation, x, y)["eta"]
    kw = dict(activation=activation, steps=epochs * n, runs=int(settings.runs), record_every=every * n)
    theorem = sgd(x, y, k, jax.random.fold_in(key, 2), eta=consts["eta"], **kw)
    fast = sgd(x, y, k, jax.random.fold_in(key, 2), eta=gd_eta, **kw)
    gd = gradient_descent(x, y, k, jax.random.fold_in(jax.random.fold_in(key, 2), 0), activation=activation,
                          steps=epochs + 1, eta=gd_eta)
    tau = theorem["steps"]
    return {"theorem": theorem, "fast": fast, "gd_residual2": gd["residual"] ** 2, "constants": consts,
            "gd_eta": gd_eta, "bound": consts["rate"] ** tau * theorem["initial_residual2"], "epochs_recorded": tau / n,
            "event_nu": sgd_event_probability(consts, k * d),
            "event_nu3": 1 - 4 / 3 * consts["event_base"] ** (1 / (k * d)), "n": n, "d": d, "k": k}


def sgd_epoch_ratio(result: Mapping[str, Any]) -> np.ndarray:
    """Mean ‖r‖² over the index sequences of SGD at Corollary 2.2's step, divided by ‖r‖² of full-batch GD
    after as many GD steps as SGD has run epochs, at each recorded epoch of :func:`sgd_experiment`; shape
    (recorded epochs,).  Near 1 when one epoch of n SGD updates does what one GD step does.

    Raises:
        TypeError, ValueError: if ``result`` lacks the fields ``epochs_recorded``, ``fast`` (with
            ``residual2``) and ``gd_residual2`` of :func:`sgd_experiment`.
    """
    V.fields("result", result, ("epochs_recorded", "fast", "gd_residual2"))
    V.fields("result['fast']", result["fast"], ("residual2",))
    epochs = result["epochs_recorded"].astype(int)
    return result["fast"]["residual2"].mean(axis=0) / result["gd_residual2"][epochs]


@partial(jax.jit, static_argnames=("activation", "steps", "record_every"))
def _sgd_scan(w0, x, y, v, eta, keys, activation, steps, record_every):
    """SGD of the one loop (:func:`ntkbook.training.train_traced`, one index per step: the mini-batch loss
    ½(f(x_γ; W) − y_γ)² is the paper's, so the step is η itself), one run per key (vmapped)."""
    n = x.shape[0]

    def one_run(key):
        idx = jax.random.randint(key, (steps,), 0, n)[:, None]  # one index per step
        run = train_traced(lambda w, xx: network(w, xx, v, activation), w0, x, y, lr=eta, stop=steps, batches=idx,
                           record_steps=np.arange(record_every, steps + 1, record_every),
                           track={"distance": distance_from_start()})
        return 2 * n * run["losses"], run["tracked"]["distance"]  # ‖r_τ‖² = 2n·L(W_τ)

    return jax.vmap(one_run)(keys)


def sgd(x: Any, y: Any, k: int, key: Array, *, activation: str = "softplus", eta: float, steps: int,
        runs: int, record_every: int) -> dict[str, Any]:
    """SGD updates (2.9), W_{τ+1} = W_τ + η(y_γ − f(x_γ; W_τ))∇f(x_γ; W_τ) with γ uniform, from one
    W₀ and ``runs`` independent index sequences (vmapped), float64.

    Returns ``steps`` (the recorded iteration counts), ``residual2`` (runs × records, ‖r_τ‖²),
    ``distance`` (‖W_τ − W₀‖_F) and ``initial_residual2``.
    """
    k = V.positive_int("k", k)
    steps = V.positive_int("steps", steps)
    runs = V.positive_int("runs", runs)
    record_every = V.positive_int("record_every", record_every)
    if steps % record_every:
        raise ValueError("steps must be a multiple of record_every")
    eta = V.positive_float("eta", eta)
    with jax.enable_x64(True):
        x = jnp.asarray(V.numpy_array("x", x, ndim=2))
        y = jnp.asarray(V.numpy_array("y", y, ndim=1))
        n, d = x.shape
        v = output_weights(k, float(jnp.linalg.norm(y)), n, dtype=jnp.float64)
        w0 = jax.random.normal(jax.random.fold_in(key, 0), (k, d), jnp.float64)
        keys = jax.random.split(jax.random.fold_in(key, 1), runs)
        res2, dist = _sgd_scan(w0, x, y, v, eta, keys, activation, steps, record_every)
        r0 = float(jnp.sum((network(w0, x, v, activation) - y) ** 2))
    return {"steps": np.arange(1, steps // record_every + 1) * record_every, "residual2": np.asarray(res2),
            "distance": np.asarray(dist), "initial_residual2": r0, "k": k, "n": n, "d": d, "eta": eta}


# ---------------------------------------------------------------------------------------------
# Lemma 6.12: the initial misfit, by Monte Carlo
# ---------------------------------------------------------------------------------------------


def _misfit_batch(rng: np.random.Generator, x: np.ndarray, y: np.ndarray, v: np.ndarray, activation: str,
                  batch: int) -> tuple[np.ndarray, np.ndarray]:
    """‖φ(XWᵀ)v − y‖ and ‖φ(XWᵀ)v‖ for ``batch`` independent draws W ~ N(0, 1)^{k×d} (float64 NumPy, the
    registry's NumPy φ)."""
    w = rng.standard_normal((batch, v.shape[0], x.shape[1]))
    f = get_activation(activation).numpy(np.einsum("nd,bkd->bnk", x, w), 0) @ v
    return np.linalg.norm(f - y, axis=1), np.linalg.norm(f, axis=1)


def variance_of_activation(activation: str) -> float:
    """Var φ(g), g ~ N(0, 1), as K_φ(1) − K_φ(0) with the dual kernel K_φ(ρ) = E[φ(u)φ(v)]
    (:func:`ntkbook.covariance.dual_kernel`: the arc-cosine closed form for ReLU, 1/2 − 1/(2π); the Hermite series
    otherwise).  By the Gaussian Poincaré inequality Var φ(g) ≤ E[φ'(g)²] ≤ B² (step (e) of Sec. 6.6.1)."""
    k1, k0 = cov.dual_kernel(activation, np.array([1.0, 0.0]))
    return float(k1 - k0)


def initial_misfits(settings: InitialMisfit, key: Array) -> dict[str, dict[str, Any]]:
    """:func:`initial_misfit` for every activation of ``settings.activations``, each from the same ``key``.
    Returns activation → result.

    Raises:
        TypeError: if ``settings`` is not the ``InitialMisfit`` settings (``ntkbook.scales``).
    """
    V.settings("settings", settings, InitialMisfit)
    return {a: initial_misfit(settings, key, activation=a) for a in settings.activations}


def initial_misfit(settings: InitialMisfit, key: Array, *, activation: str = "softplus") -> dict[str, Any]:
    """Lemma 6.12 by Monte Carlo: the initial misfit ‖f(W₀) − y‖ over ``draws`` independent W₀.

    Settings: ``n``, ``d``, ``k`` (even), ``draws``, ``batch``, ``deltas``.  One data set X (uniform on S^{d−1})
    and labels y ~ N(0, I_n); v as in Theorem 2.1 (1ᵀv = 0, ‖v‖₂ = ‖y‖/√n).  The draws of W₀ and y come from
    NumPy generators seeded by ``key`` (:func:`ntkbook.random.numpy_generator`), φ is the registry's NumPy φ.
    The lemma (|φ'| ≤ B): P(‖f(W₀) − y‖ > ‖y‖(1 + (1 + δ)B)) ≤ e^{−δ²n/(2‖X‖²)}.  Its proof (Sec. 6.6.1):
    Z = ‖φ(XWᵀ)v‖ is B‖X‖‖v‖₂-Lipschitz in W, so P(Z > E Z + t) ≤ e^{−t²/(2B²‖v‖²‖X‖²)} (Eq. 6.19), and
    E Z ≤ √(E Z²) = ‖y‖√Var φ(g) ≤ B‖y‖ (steps (a)–(e)); t = δB‖y‖ gives the lemma.

    Returns ``misfit`` and ``z`` (draws,) divided by ‖y‖; scalars ``y_norm``, ``x_norm`` (‖X‖), ``B`` (the
    registry's Lipschitz constant of φ), ``var_phi`` (:func:`variance_of_activation`), ``n``, ``d``, ``k``,
    ``draws``; per δ (arrays over ``deltas``): ``tail_bound`` = e^{−δ²n/(2‖X‖²)}, ``freq_lemma`` =
    fraction with misfit/‖y‖ > 1 + (1 + δ)B, ``freq_step`` = fraction with Z/‖y‖ > √Var φ(g) + δB (Eq. 6.19
    with the proof's bound on E Z), and ``binomial_se`` = √(p(1 − p)/draws) at p = ``tail_bound``.
    """
    n, d, k, draws, batch = (int(settings.n), int(settings.d), int(settings.k), int(settings.draws),
                             int(settings.batch))
    if k % 2:
        raise ValueError(f"k must be even (half of v is +‖y‖/√(kn), half −), got {k}")
    k_data, k_w = jax.random.split(key)
    y = numpy_generator(jax.random.fold_in(k_data, 1)).standard_normal(n)
    y_norm = float(np.linalg.norm(y))
    with jax.enable_x64(True):
        x = np.asarray(uniform_sphere(jax.random.fold_in(k_data, 0), n, d, dtype=jnp.float64))
        v = np.asarray(output_weights(k, y_norm, n, dtype=jnp.float64))
    rng = numpy_generator(k_w)
    misfit, z = [], []
    for i in range(math.ceil(draws / batch)):
        m, zz = _misfit_batch(rng, x, y, v, activation, min(batch, draws - i * batch))
        misfit.append(m)
        z.append(zz)
    misfit = np.concatenate(misfit) / y_norm
    z = np.concatenate(z) / y_norm
    x_norm = kr.spectral_norm(x)
    b = float(get_activation(activation).lipschitz)
    var = variance_of_activation(activation)
    deltas = np.asarray(settings.deltas, dtype=np.float64)
    tail = np.exp(-(deltas**2) * n / (2.0 * x_norm**2))
    return {"activation": activation, "misfit": misfit, "z": z, "y_norm": y_norm, "x_norm": x_norm, "B": b,
            "var_phi": var, "n": n, "d": d, "k": k, "draws": draws, "deltas": deltas, "tail_bound": tail,
            "freq_lemma": np.array([np.mean(misfit > 1.0 + (1.0 + dl) * b) for dl in deltas]),
            "freq_step": np.array([np.mean(z > math.sqrt(var) + dl * b) for dl in deltas]),
            "binomial_se": np.sqrt(tail * (1.0 - tail) / draws)}
