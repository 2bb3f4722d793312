"""Chapter 8 — Khatri–Rao products, data diversity and the neural-network covariances
(Oymak & Soltanolkotabi 2020, Section 1.3, Theorem 2.1, Definitions 3.1 and 6.1, Lemmas 6.4, 6.5,
Appendix H).

* :func:`identity_errors` — (A∗B)(A∗B)ᵀ = (AAᵀ)⊙(BBᵀ) and X^{∗r}(X^{∗r})ᵀ = (XXᵀ)^{⊙r}, and σ_min by
  the Gram route against an SVD of the explicit matrix;
* :func:`sphere_regimes` — ‖X‖, σ_min(X∗X), κ(X) for data uniform on the sphere across n and d;
* :func:`degenerate_data` — duplicated, nearly collinear and (nearly) antipodal points;
* :func:`covariance_routes` — Σ(X), Σ̃(X) by closed form, quadrature, Hermite series and Monte Carlo;
* :func:`hermite_table` — μ_r by sympy and by quadrature;
* :func:`quadratic_reduction` — Lemma 6.4 (PSD margins with their floating-point tolerance);
* :func:`higher_order_sweep` — Lemmas H.1/H.2: which r gives the best bound for which (n, d);
* :func:`schur_pairs` — Lemma 6.5 on random PSD pairs and its tight cases;
* :func:`delta_separated` — Theorem I.1 and Corollary I.2 (ReLU, λ(X) ≥ δ/(100n²)) on data of
  controlled separation δ.

All linear algebra in float64 NumPy; random draws from explicit JAX keys (x64 enabled locally).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np
from scipy import stats

from .. import _validation as V
from .. import activations as acts
from .. import covariance as cov
from .. import khatri_rao as kr
from ..data import sphere
from ..eigen import extreme_eigenpairs, lambda_min
from ..progress import progress
from ..random import fold_key
from ..scales import CovRoutes, HermiteBounds, KrDegenerate, KrDeltaSeparated, KrIdentity, KrSphere, Lemma64, Schur

Array = jax.Array
EPS = float(np.finfo(np.float64).eps)


def _normal(key: Array, shape: tuple[int, ...]) -> np.ndarray:
    """Standard normal float64 array from a NumPy generator seeded with the bits of the JAX ``key``.

    Still one explicit key per draw, but no XLA compilation per matrix shape (this chapter draws
    dozens of small matrices of different sizes; compiling a sampler for each would dominate).
    """
    seed = np.asarray(jax.random.key_data(key)).astype(np.uint64).tolist()
    return np.random.default_rng(seed).standard_normal(shape)


def _sphere(key: Array, n: int, d: int) -> np.ndarray:
    """n points uniform on S^{d−1} (normalized Gaussian rows), float64."""
    g = _normal(key, (n, d))
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def gram_tolerance(a: np.ndarray) -> float:
    """Floating-point tolerance for the eigenvalues of a computed n×n symmetric matrix A:
    16·n·ε·‖A‖_∞ (the backward error n·ε·‖A‖₂ of the symmetric eigensolver, Golub & Van Loan §8.4,
    with a safety factor 16 and the cheaper upper bound ‖A‖_∞ ≥ ‖A‖₂)."""
    return kr.gram_resolution(a)


# ---------------------------------------------------------------------------------------------
# The identity and the Gram route
# ---------------------------------------------------------------------------------------------


def identity_errors(settings: KrIdentity, key: Array) -> list[dict[str, Any]]:
    """Maximum entrywise errors of the Khatri–Rao identities on random matrices, per (n, d, r).

    Settings: ``shapes`` (list of (n, d)), ``orders`` (r values).  For each shape: A∗B with
    independent Gaussian A (n×d) and B (n×(d+1)); X (unit rows) and every r: the Gram matrix of the
    explicit X^{∗r} against (XXᵀ)^{⊙r}, and σ_min(X^{∗r}) by SVD of the explicit matrix against the
    Gram route.
    """
    rows = []
    for n, d in settings.shapes:
        k = fold_key(key, n, d)
        a, b = _normal(jax.random.fold_in(k, 0), (n, d)), _normal(jax.random.fold_in(k, 1), (n, d + 1))
        ab = kr.khatri_rao(a, b)
        lhs, rhs = ab @ ab.T, (a @ a.T) * (b @ b.T)
        rows.append({"n": n, "d": d, "r": "A∗B", "columns": ab.shape[1],
                     "max |Gram − Hadamard|": float(np.abs(lhs - rhs).max()),
                     "relative": float(np.abs(lhs - rhs).max() / np.abs(rhs).max()),
                     "σ_min SVD": float("nan"), "σ_min Gram": float("nan")})
        x = _sphere(jax.random.fold_in(k, 2), n, d)
        for r in settings.orders:
            xr = kr.khatri_rao_power(x, r)
            g_explicit, g_hadamard = xr @ xr.T, kr.hadamard_gram(x, r)
            svd = np.linalg.svd(xr, compute_uv=False)
            s_svd = float(svd[n - 1]) if xr.shape[1] >= n else 0.0
            rows.append({"n": n, "d": d, "r": r, "columns": xr.shape[1],
                         "max |Gram − Hadamard|": float(np.abs(g_explicit - g_hadamard).max()),
                         "relative": float(np.abs(g_explicit - g_hadamard).max() / np.abs(g_hadamard).max()),
                         "σ_min SVD": s_svd, "σ_min Gram": kr.sigma_min_power(x, r)})
    return rows


# ---------------------------------------------------------------------------------------------
# Data uniform on the sphere: the regimes of Theorem 2.1 / Corollary 2.2
# ---------------------------------------------------------------------------------------------


def sphere_regimes(settings: KrSphere, key: Array) -> dict[str, np.ndarray]:
    """‖X‖, σ²_min(X∗X), κ(X) and the Marchenko–Pastur yardstick across n and d.

    Settings: ``ds``, ``fractions`` (n as fractions of D = d(d+1)/2, rounded, at least 2), also
    ``n = d``, and ``seeds``.  Returns equal-length arrays ``d``, ``n``, ``D``, ``seed``, ``norm``,
    ``sigma2`` (λ_min((XXᵀ)^{⊙2}), 0 below the Gram resolution), ``lambda_min_raw``, ``gram_norm``,
    ``resolution`` (:func:`ntkbook.khatri_rao.gram_resolution`),
    ``kappa``, ``mp`` (:func:`ntkbook.khatri_rao.marchenko_pastur_edge`).
    """
    out: dict[str, list] = {k: [] for k in ("d", "n", "D", "seed", "norm", "sigma2", "lambda_min_raw",
                                            "gram_norm", "resolution", "kappa", "mp")}
    for d in progress(settings.ds, desc="d"):
        big_d = kr.symmetric_dimension(d, 2)
        ns = sorted({max(2, round(f * big_d)) for f in settings.fractions} | {d})
        for n in ns:
            for s in range(settings.seeds):
                x = _sphere(jax.random.fold_in(jax.random.fold_in(key, 1000 * d + s), n), n, d)
                g2 = kr.hadamard_gram(x, 2)
                ev = extreme_eigenpairs(g2, which="BE", method="dense", vectors=False)
                lam = float(ev.lambda_min)
                norm = kr.spectral_norm(x)
                s2 = lam if lam > kr.gram_resolution(g2) else 0.0
                for name, value in (("d", d), ("n", n), ("D", big_d), ("seed", s), ("norm", norm),
                                    ("sigma2", s2), ("lambda_min_raw", lam),
                                    ("gram_norm", float(ev.lambda_max)), ("resolution", kr.gram_resolution(g2)),
                                    ("kappa", math.sqrt(d / n) * norm / s2 if s2 > 0 else math.inf),
                                    ("mp", kr.marchenko_pastur_edge(n, d))):
                    out[name].append(value)
    return {k: np.asarray(v) for k, v in out.items()}


# ---------------------------------------------------------------------------------------------
# Degenerate data: duplicates, near-duplicates, antipodal points
# ---------------------------------------------------------------------------------------------


def degenerate_data(settings: KrDegenerate, key: Array, *, activation: str = "softplus") -> dict[str, Any]:
    """What nearly equal and nearly antipodal inputs do to σ_min(X∗X), κ(X), λ(X) and ‖X‖.

    Settings: ``n``, ``d``, ``epsilons``.  Row 1 of a sphere data set is replaced by a point at angle
    arctan ε from row 0 (``near``) or from −row 0 (``antipodal``); ε = 0 gives an exact duplicate
    or an exact antipodal pair.  Returns per-kind arrays over ε: ``sigma`` (σ_min(X∗X)), ``kappa``,
    ``lam`` (λ(X) for ``activation``), ``norm`` and the exact upper bound ``sin_theta`` = ε/√(1+ε²)
    (σ_min(X∗X) ≤ ‖(x₀⊗x₀ − x₁⊗x₁)/√2‖ = sin θ), plus the ε = 0 values and the base data's values.
    """
    n, d = int(settings.n), int(settings.d)
    base = _sphere(jax.random.fold_in(key, 0), n, d)
    kdir = jax.random.fold_in(key, 1)

    def measure(x: np.ndarray) -> dict[str, float]:
        g2 = kr.hadamard_gram(x, 2)
        lam2 = float(lambda_min(g2))
        sig = cov.neural_network_covariance(x, activation)
        return {"sigma": kr.sigma_min_khatri_rao(x), "lambda_min_gram": lam2, "kappa": kr.kappa(x),
                "lam": cov.lambda_min(sig), "norm": kr.spectral_norm(x), "tol_gram": gram_tolerance(g2),
                "tol_sigma": gram_tolerance(sig)}

    result: dict[str, Any] = {"base": measure(base), "epsilons": np.asarray(settings.epsilons, float)}
    with jax.enable_x64(True):
        xb = jax.numpy.asarray(base)
        for kind, antipodal in (("near", False), ("antipodal", True)):
            rows = [measure(np.asarray(sphere.with_near_duplicate(xb, float(e), kdir, antipodal=antipodal)))
                    for e in settings.epsilons]
            result[kind] = {k: np.asarray([r[k] for r in rows]) for k in rows[0]}
            result[kind]["sin_theta"] = result["epsilons"] / np.sqrt(1 + result["epsilons"] ** 2)
            exact = sphere.with_near_duplicate(xb, 0.0, kdir, antipodal=antipodal)
            result[f"{kind}_exact"] = measure(np.asarray(exact))
    return result


# ---------------------------------------------------------------------------------------------
# Covariances by four routes
# ---------------------------------------------------------------------------------------------


def monte_carlo_z_limit(entries: int, false_alarm: float = 1e-3) -> float:
    """Bonferroni bound: |z| of every one of ``entries`` Monte Carlo estimates stays below this
    with probability ≥ 1 − false_alarm (two-sided normal quantile at false_alarm/(2·entries))."""
    return float(stats.norm.isf(false_alarm / (2 * entries)))


def covariance_routes(settings: CovRoutes, key: Array) -> list[dict[str, Any]]:
    """Σ(X) and Σ̃(X) by every route, for each activation in ``settings.activations``.

    Settings: ``n``, ``d``, ``activations``, ``samples`` (Monte Carlo), ``degree`` (2-D quadrature).
    Per (activation, matrix): the max entrywise differences exact−quadrature and exact−Hermite series,
    the largest Monte Carlo |z| score (difference / standard error) and its Bonferroni limit.
    """
    n, d = int(settings.n), int(settings.d)
    x = _sphere(jax.random.fold_in(key, 0), n, d)
    iu = np.triu_indices(n)
    z_limit = monte_carlo_z_limit(len(iu[0]))
    rows = []
    for a in progress(settings.activations, desc="activations"):
        for name, fn, which in (("Σ", cov.neural_network_covariance, "sigma"),
                                ("Σ̃", cov.output_feature_covariance, "sigma_tilde")):
            exact = fn(x, a, method="auto")
            quad = fn(x, a, method="quadrature", degree=settings.degree)
            herm = fn(x, a, method="hermite")
            mc = cov.monte_carlo(x, a, fold_key(key, a, which), samples=settings.samples,
                                 which=which)
            diff = (mc.mean - exact)[iu]
            se = mc.stderr[iu]
            z = np.where(se > 0, np.abs(diff) / np.where(se > 0, se, 1.0), np.where(np.abs(diff) > 0, np.inf, 0.0))
            closed = acts.get_activation(a).kernel_prime is not None
            rows.append({"activation": a, "matrix": name, "exact route": "closed form" if closed else "Hermite series",
                         "|exact − quadrature|": float(np.abs(exact - quad).max()),
                         "|exact − Hermite|": float(np.abs(exact - herm).max()),
                         "max MC |z|": float(z.max()), "z limit": z_limit, "MC samples": mc.samples,
                         "λ_min": cov.lambda_min(exact)})
    return rows


def hermite_table(activations: tuple[str, ...], r_max: int, *, degree: int = 200) -> list[dict[str, Any]]:
    """μ_r(φ) and μ_r(φ') for r ≤ r_max: exact (sympy expressions in ``symbolic`` and floats in
    ``exact``, where available) and by Gauss–Hermite quadrature (``quadrature``)."""
    rows = []
    for a in activations:
        for derivative in (False, True):
            quad = acts.hermite_coefficients(a, r_max, derivative=derivative, method="quadrature", degree=degree)
            act = acts.get_activation(a)
            has_exact = (act.hermite_prime if derivative else act.hermite) is not None
            symbolic = ([acts.hermite_symbolic(a, r, derivative=derivative) for r in range(r_max + 1)] if has_exact
                        else None)
            exact = (np.array([float(e) for e in symbolic]) if symbolic is not None else np.full(r_max + 1, np.nan))
            rows.append({"activation": a, "function": f"{a}'" if derivative else a, "quadrature": quad,
                         "exact": exact, "symbolic": symbolic})
    return rows


# ---------------------------------------------------------------------------------------------
# Lemma 6.4 and Appendix H
# ---------------------------------------------------------------------------------------------


def _route_error(x: np.ndarray, activation: str, output: bool, degree: int) -> float:
    """An upper estimate of the entrywise error of the computed covariance: 0 for closed forms (up to
    rounding), otherwise the largest difference between the Hermite series and 2-D quadrature."""
    act = acts.get_activation(activation)
    closed = act.kernel if output else act.kernel_prime
    if closed is not None:
        return 0.0
    fn = cov.output_feature_covariance if output else cov.neural_network_covariance
    return float(np.abs(fn(x, activation) - fn(x, activation, method="quadrature", degree=degree)).max())


def measured_covariance(x: np.ndarray, activation: str, output: bool, degree: int) -> np.ndarray:
    """Σ(X) (``output=False``) or Σ̃(X) (``output=True``) by a route independent of the Hermite series that
    the lower bounds of Lemma 6.4 and Lemmas H.1/H.2 are built from: the registered closed form where there
    is one (ReLU, quadratic, ...), else ``degree × degree`` bivariate Gauss–Hermite quadrature of the dual
    kernel (:func:`ntkbook.covariance.dual_kernel` with ``method="quadrature"``) — never the series itself,
    for which λ(X) ≥ μ²σ²_min(X∗X) would hold by construction (a sum of PSD terms)."""
    act = acts.get_activation(activation)
    closed = act.kernel if output else act.kernel_prime
    fn = cov.output_feature_covariance if output else cov.neural_network_covariance
    if closed is not None:
        return fn(x, activation, method="closed_form")
    return fn(x, activation, method="quadrature", degree=degree)


def quadratic_reduction(settings: Lemma64, key: Array) -> list[dict[str, Any]]:
    """Lemma 6.4 on sphere data of every (n, d) in ``settings.shapes`` and every activation.

    Σ(X) comes from :func:`measured_covariance` (closed form or 2-D quadrature, not the Hermite series of the
    bound).  Per case: the PSD margins λ_min(Σ − (μ̃²11ᵀ + μ²G)⊙G) and λ_min(Σ − μ²G⊙G) with the tolerance
    n·(entrywise route error) + 16nε‖Σ‖ they must exceed −tol, λ(X), the bound μ²σ²_min(X∗X), and
    their ratio.
    """
    rows = []
    for n, d in settings.shapes:
        x = _sphere(fold_key(key, n, d), n, d)
        s2 = max(float(lambda_min(kr.hadamard_gram(x, 2))), 0.0)
        for a in settings.activations:
            sig = measured_covariance(x, a, False, settings.degree)
            c = acts.constants(a)
            mats = cov.quadratic_reduction_bound(x, a)
            tol = n * _route_error(x, a, False, settings.degree) + gram_tolerance(sig)
            lam = cov.lambda_min(sig)
            rows.append({"n": n, "d": d, "activation": a, "μ_φ": c.mu, "μ̃_φ": c.mu_tilde,
                         "margin (μ̃²11ᵀ+μ²G)⊙G": cov.psd_margin(sig, mats["first"]),
                         "margin μ²G⊙G": cov.psd_margin(sig, mats["second"]), "tolerance": tol,
                         "λ(X)": lam, "μ²σ²_min(X∗X)": c.mu**2 * s2,
                         "ratio": lam / (c.mu**2 * s2) if c.mu**2 * s2 > 0 else math.inf})
    return rows


def higher_order_sweep(settings: HermiteBounds, key: Array, *, activation: str, output: bool = False
                       ) -> dict[str, Any]:
    """Lemma H.1 (``output=False``: λ(X) ≥ μ_r²(φ')σ²_min(X^{∗(r+1)})) or H.2 (``output=True``:
    λ̃(X) ≥ μ_r²(φ)σ²_min(X^{∗r})) for r in ``settings.orders`` across n at fixed d.

    Settings: ``d``, ``ns``, ``orders``, ``degree``.  Returns ``n`` (m,), ``orders`` (R,), ``bounds``
    (m, R), ``lam`` (m,) (λ or λ̃), ``tolerance`` (m,), ``best_r`` (m,) (argmax of the bounds, −1
    when all vanish), ``rank_limits`` (R,) = C(d + p − 1, p) for the Khatri–Rao power p used.
    """
    d = int(settings.d)
    orders = np.asarray(settings.orders)
    bounds, lams, tols = [], [], []
    for n in progress(settings.ns, desc=f"H.{2 if output else 1} n"):
        x = _sphere(jax.random.fold_in(key, int(n)), int(n), d)
        sig = measured_covariance(x, activation, output, settings.degree)
        tols.append(int(n) * _route_error(x, activation, output, settings.degree) + gram_tolerance(sig))
        lams.append(cov.lambda_min(sig))
        bounds.append(cov.higher_order_bounds(x, activation, orders, output=output)["bound"])
    bounds = np.asarray(bounds)
    best = np.where(bounds.max(axis=1) > 0, orders[np.argmax(bounds, axis=1)], -1)
    powers = orders if output else orders + 1
    return {"n": np.asarray(settings.ns), "orders": orders, "bounds": bounds, "lam": np.asarray(lams),
            "tolerance": np.asarray(tols), "best_r": best,
            "rank_limits": np.asarray([kr.symmetric_dimension(d, int(p)) for p in powers]),
            "mu": acts.hermite_coefficients(activation, int(orders.max()), derivative=not output)[orders],
            "activation": activation, "d": d, "output": output}


# ---------------------------------------------------------------------------------------------
# Lemma 6.5 (Schur)
# ---------------------------------------------------------------------------------------------


def schur_pairs(settings: Schur, key: Array) -> dict[str, Any]:
    """Lemma 6.5 on random PSD pairs and on its tight cases.

    Settings: ``n``, ``pairs``.  Random pairs: A = GGᵀ/m_A and B = HHᵀ/m_B + diag scaling, with the
    ranks m_A, m_B drawn between 1 and 2n (so rank-deficient and full-rank A, B both occur).  Returns
    per pair the two sides of both inequalities, and the same for the tight families B = c·11ᵀ (A⊙B =
    cA: equality in both) and A = c·I (A⊙B = c·diag(B): equality in both when B is a correlation
    matrix scaled by c', and in the lower one whenever B's smallest diagonal entry is its own
    smallest eigenvalue's witness).
    """
    n, pairs = int(settings.n), int(settings.pairs)
    rng_keys = jax.random.split(key, pairs)
    rows: dict[str, list] = {k: [] for k in ("kind", "lmin_AB", "lower", "lmax_AB", "upper")}

    def record(kind: str, a: np.ndarray, b: np.ndarray) -> None:
        ab = a * b
        ev_ab, ev_a = (extreme_eigenpairs(m, which="BE", method="dense", vectors=False) for m in (ab, a))
        rows["kind"].append(kind)
        rows["lmin_AB"].append(float(ev_ab.lambda_min))
        rows["lower"].append(float(np.min(np.diag(b)) * ev_a.lambda_min))
        rows["lmax_AB"].append(float(ev_ab.lambda_max))
        rows["upper"].append(float(np.max(np.diag(b)) * ev_a.lambda_max))

    for i in range(pairs):
        k = rng_keys[i]
        m_a, m_b = (int(v) for v in jax.random.randint(jax.random.fold_in(k, 0), (2,), 1, 2 * n + 1))
        g = _normal(jax.random.fold_in(k, 1), (n, m_a))
        h = _normal(jax.random.fold_in(k, 2), (n, m_b))
        scale = np.exp(_normal(jax.random.fold_in(k, 3), (n,)))
        a = g @ g.T / m_a
        b = (h @ h.T / m_b) * np.outer(scale, scale)
        record("random", a, b)
        record("B = c·11ᵀ (tight)", a + np.eye(n) * (i % 2), float(scale[0]) * np.ones((n, n)))
        corr = b / np.sqrt(np.outer(np.diag(b), np.diag(b)))
        record("A = c·I, B = c'·correlation (tight)", float(scale[1]) * np.eye(n), float(scale[2]) * corr)
    return {k: np.asarray(v) for k, v in rows.items()}


# ---------------------------------------------------------------------------------------------
# Appendix I: δ-separated data (Theorem I.1, Corollary I.2)
# ---------------------------------------------------------------------------------------------


def separation_bound(delta: Any, n: Any) -> np.ndarray:
    """δ/(100n²), the lower bound of Theorem I.1 on λ_min(E[ℐ(Xw)ℐ(Xw)ᵀ]) and of Corollary I.2 on λ(X) of
    ReLU for unit-norm data with min_{i≠j} min(‖x_i − x_j‖, ‖x_i + x_j‖) ≥ δ (Eqs. I.1, I.4)."""
    delta, n = np.asarray(delta, dtype=np.float64), np.asarray(n, dtype=np.float64)
    return delta / (100.0 * n**2)


def half_circle(n: int) -> np.ndarray:
    """The n unit vectors (cos πk/n, sin πk/n), k < n, shape (n, 2), float64 NumPy: the inputs of
    :func:`ntkbook.data.circle.circle_data` with radius 1 (that JAX function compiles once per n; a test checks
    that the two agree).  Its separation is δ = 2 sin(π/(2n)), the largest possible for n points of the plane."""
    n = int(n)
    theta = np.pi * np.arange(n) / n
    return np.stack([np.cos(theta), np.sin(theta)], axis=1)


def _closest_pair_rayleigh(x: np.ndarray, sig: np.ndarray) -> float:
    """uᵀΣu for u = (e_i − s·e_j)/√2, (i, j) the pair with the largest |⟨x_i, x_j⟩| (the pair that sets δ)
    and s its sign: an upper bound on λ_min(Σ) (a Rayleigh quotient)."""
    g = np.abs(x @ x.T)
    np.fill_diagonal(g, -1.0)
    i, j = np.unravel_index(int(np.argmax(g)), g.shape)
    s = 1.0 if x[i] @ x[j] >= 0 else -1.0
    return float((sig[i, i] + sig[j, j] - 2.0 * s * sig[i, j]) / 2.0)


def delta_separated(settings: KrDeltaSeparated, key: Array) -> dict[str, np.ndarray]:
    """λ(X) of ReLU (Corollary I.2) and λ_min(E[ℐ(Xw)ℐ(Xw)ᵀ]) (Theorem I.1) against δ/(100n²) on data
    whose separation δ = min_{i≠j} min(‖x_i − x_j‖, ‖x_i + x_j‖) is controlled.

    Settings: ``n``, ``d``, ``deltas`` (pair families), ``circle_ns``, ``sphere_shapes`` ((n, d) pairs),
    ``seeds``.  Four families of unit-norm data:

    * ``near pair`` — n points uniform on S^{d−1} with row 1 replaced by a point at distance δ from row 0
      (angle θ = 2 arcsin(δ/2), :func:`ntkbook.data.sphere.with_near_duplicate` with ε = tan θ), one data
      set per δ in ``deltas``;
    * ``near antipode`` — the same with row 1 at distance δ from −row 0;
    * ``half circle`` — n points at angles πk/n on the unit circle (d = 2), the densest δ-separated set of
      the plane, δ = 2 sin(π/(2n)), for n in ``circle_ns`` (:func:`half_circle`);
    * ``sphere`` — n points uniform on S^{d−1}, ``seeds`` data sets per shape.

    Both matrices are exact (the arc-cosine closed forms of :func:`ntkbook.covariance.dual_kernel`:
    Σ_ij = ρ(π − arccos ρ)/(2π) and E[ℐℐᵀ]_ij = (π − arccos ρ)/(2π), ρ = ⟨x_i, x_j⟩), float64.
    Returns equal-length arrays ``family``, ``n``, ``d``, ``seed``, ``delta`` (measured from the data,
    :func:`ntkbook.khatri_rao.data_summary`), ``bound`` (:func:`separation_bound`), ``lam`` (λ(X)),
    ``lam_indicator``, ``rayleigh`` (uᵀΣ(X)u for the closest pair, an upper bound on λ(X) that is
    δ/(2π) + O(δ²) for a close pair) and ``resolution`` (:func:`gram_tolerance` of Σ(X)).
    """
    out: dict[str, list] = {k: [] for k in ("family", "n", "d", "seed", "delta", "lam", "lam_indicator",
                                            "rayleigh", "resolution")}

    def measure(family: str, x: np.ndarray, seed: int) -> None:
        sig = cov.neural_network_covariance(x, "relu", method="closed_form")
        delta = kr.data_summary(x, orders=())["separation"]
        for name, value in (("family", family), ("n", x.shape[0]), ("d", x.shape[1]), ("seed", seed),
                            ("delta", delta), ("lam", cov.lambda_min(sig)),
                            ("lam_indicator", cov.feature_eigenvalue(x, "step", method="closed_form")),
                            ("rayleigh", _closest_pair_rayleigh(x, sig)), ("resolution", gram_tolerance(sig))):
            out[name].append(value)

    n, d = int(settings.n), int(settings.d)
    base = _sphere(jax.random.fold_in(key, 0), n, d)
    kdir = jax.random.fold_in(key, 1)
    with jax.enable_x64(True):
        xb = jax.numpy.asarray(base)
        for family, antipodal in (("near pair", False), ("near antipode", True)):
            for delta in settings.deltas:
                eps = math.tan(2.0 * math.asin(float(delta) / 2.0))
                measure(family, np.asarray(sphere.with_near_duplicate(xb, eps, kdir, antipodal=antipodal)), 0)
    for m in settings.circle_ns:
        measure("half circle", half_circle(int(m)), 0)
    for i, (m, dm) in enumerate(settings.sphere_shapes):
        for s in range(int(settings.seeds)):
            measure("sphere", _sphere(jax.random.fold_in(jax.random.fold_in(key, 2), 1000 * i + s), int(m), int(dm)),
                    s)
    res = {k: np.asarray(v) for k, v in out.items()}
    res["bound"] = separation_bound(res["delta"], res["n"])
    return res


# ---------------------------------------------------------------------------------------------
# The numbers behind the chapter's checks (each claim's criterion is stated in the chapter)
# ---------------------------------------------------------------------------------------------

_IDENTITY_FIELDS = ("r", "σ_min SVD", "σ_min Gram")
_HERMITE_FIELDS = ("function", "quadrature", "exact")
_LEMMA_6_4_FIELDS = ("activation", "margin (μ̃²11ᵀ+μ²G)⊙G", "margin μ²G⊙G", "tolerance", "λ(X)",
                     "μ²σ²_min(X∗X)", "ratio")
_SWEEP_FIELDS = ("n", "orders", "rank_limits", "bounds", "lam", "tolerance")
_SCHUR_FIELDS = ("kind", "lmin_AB", "lower", "lmax_AB", "upper")


def sigma_min_route_gaps(identity: list[dict[str, Any]]) -> list[float]:
    """|σ_min by SVD − σ_min by the Gram route| for every row of :func:`identity_errors` with a Khatri–Rao
    power X^{∗r} (the A∗B rows have no σ_min), in the order of the rows.

    Raises:
        TypeError, ValueError: if ``identity`` is not a non-empty list of rows of :func:`identity_errors`.
    """
    rows = V.records("identity", identity, _IDENTITY_FIELDS)
    return [abs(r["σ_min SVD"] - r["σ_min Gram"]) for r in rows if r["r"] != "A∗B"]


def marchenko_pastur_ratio(sph: dict[str, np.ndarray]) -> np.ndarray:
    """σ²_min(X∗X) / (1 − √(n/D))² for every draw of :func:`sphere_regimes`, shape (draws,); NaN where the
    Marchenko–Pastur yardstick (1 − √(n/D))² is 0 (n = D).

    Raises:
        TypeError, ValueError: if ``sph`` is not a mapping with the fields ``sigma2`` and ``mp``.
    """
    V.fields("sph", sph, ("sigma2", "mp"))
    return np.where(sph["mp"] > 0, sph["sigma2"] / np.maximum(sph["mp"], 1e-300), np.nan)


def sphere_norm_checks(sph: dict[str, np.ndarray], *, upper: float = 2.0, rtol: float = 1e-12
                       ) -> dict[str, Any]:
    """The two facts about ‖X‖ for unit-norm rows that Corollary 2.2 uses, on every draw of
    :func:`sphere_regimes` (arrays ``norm``, ``n``, ``d`` of shape (draws,)).

    Returns:
        ``lower``: ‖X‖² ≥ n/d·(1 − ``rtol``) on every draw — always true, since ‖X‖²_F = n and rank X ≤ d
        (``rtol`` covers the rounding of the computed norm); ``upper``: ‖X‖ ≤ ``upper``·√(n/d) on every
        draw with n ≥ 2d (concentration of a wide random matrix; False when there is no such draw);
        ``max_ratio``: the largest ‖X‖/√(n/d) over the draws with n ≥ 2d (NaN when there is none).

    Raises:
        TypeError, ValueError: if ``sph`` lacks these fields, or ``upper`` ≤ 0 or ``rtol`` < 0.
    """
    V.fields("sph", sph, ("norm", "n", "d"))
    upper = V.positive_float("upper", upper)
    rtol = V.positive_float("rtol", rtol, allow_zero=True)
    wide = sph["n"] >= 2 * sph["d"]
    ratio = (sph["norm"] / np.sqrt(sph["n"] / sph["d"]))[wide]
    return {"lower": bool(np.all(sph["norm"] ** 2 >= sph["n"] / sph["d"] * (1 - rtol))),
            "upper": bool(wide.any() and np.all((sph["norm"] <= upper * np.sqrt(sph["n"] / sph["d"]))[wide])),
            "max_ratio": float(np.max(ratio)) if ratio.size else float("nan")}


def rank_deficiency_checks(sph: dict[str, np.ndarray]) -> dict[str, Any]:
    """Where n > D = d(d+1)/2, rank(X∗X) ≤ D < n, so λ_min((XXᵀ)^{⊙2}) must be 0 up to its floating-point
    resolution (:func:`ntkbook.khatri_rao.gram_resolution`).  On the draws of :func:`sphere_regimes` with
    n > D (arrays ``n``, ``D``, ``lambda_min_raw``, ``resolution`` of shape (draws,)):

    Returns:
        ``ok``: there is such a draw and |λ_min| ≤ resolution on every one; ``samples``: how many;
        ``max_abs_lambda_min``: the largest |λ_min|; ``resolution``: the smallest resolution among them
        (both NaN when there is no such draw).

    Raises:
        TypeError, ValueError: if ``sph`` lacks these fields.
    """
    V.fields("sph", sph, ("n", "D", "lambda_min_raw", "resolution"))
    above = sph["n"] > sph["D"]
    if not above.any():
        return {"ok": False, "samples": 0, "max_abs_lambda_min": float("nan"), "resolution": float("nan")}
    return {"ok": bool(np.all(np.abs(sph["lambda_min_raw"][above]) <= sph["resolution"][above])),
            "samples": int(above.sum()),
            "max_abs_lambda_min": float(np.abs(sph["lambda_min_raw"][above]).max()),
            "resolution": float(sph["resolution"][above].min())}


def hermite_checks(herm: list[dict[str, Any]]) -> dict[str, Any]:
    """The numbers behind the Appendix H facts the chapter checks, from :func:`hermite_table` and the
    activation registry.

    Returns:
        ``mu_relu``: μ₀(ReLU') = μ_ReLU as a sympy expression, and ``mu_relu_squared_is_1_over_2pi``:
        whether sympy simplifies μ_ReLU² − 1/(2π) to 0; ``mu_softplus``, ``mu_tanh``: μ_φ of softplus and
        tanh (floats, :func:`ntkbook.activations.constants`); ``quadrature_error``: the largest
        |quadrature − exact| over the coefficients of the quadratic activation and of its derivative
        (polynomials: Gauss–Hermite quadrature is exact up to rounding).

    Raises:
        TypeError, ValueError: if ``herm`` is not a list of rows of :func:`hermite_table` that includes the
            quadratic activation.
    """
    import sympy as sp  # imported on first use, as in ntkbook.activations: sympy takes a second to import

    rows = V.records("herm", herm, _HERMITE_FIELDS)
    errors = [np.abs(row["quadrature"] - row["exact"]).max() for row in rows
              if row["function"] in ("quadratic", "quadratic'")]
    if not errors:
        raise ValueError("herm must include the rows of the quadratic activation (hermite_table(('quadratic', ...)))")
    mu_relu = acts.hermite_symbolic("relu", 1, derivative=True)
    return {"mu_relu": mu_relu, "mu_relu_squared_is_1_over_2pi": bool(sp.simplify(mu_relu**2 - 1 / (2 * sp.pi)) == 0),
            "mu_softplus": acts.constants("softplus").mu, "mu_tanh": acts.constants("tanh").mu,
            "quadrature_error": max(errors)}


def lemma_6_4_checks(l64: list[dict[str, Any]]) -> dict[str, Any]:
    """The three facts of Lemma 6.4 on the cases of :func:`quadratic_reduction`, each within the case's own
    floating-point tolerance ``tol`` (route error and eigensolver backward error).

    Returns:
        ``psd``: both Loewner margins λ_min(Σ − (μ̃²11ᵀ+μ²G)⊙G) and λ_min(Σ − μ²G⊙G) are ≥ −tol on every
        case (Eq. 6.4); ``min_margin``: the smallest of them; ``max_tolerance``: the largest tol;
        ``eigenvalue``: λ(X) ≥ μ²σ²_min(X∗X) − tol on every case (Eq. 6.5); ``min_ratio``: the smallest
        λ(X)/(μ²σ²_min(X∗X)); ``tight``: for the quadratic activation (Σ = μ²G⊙G exactly)
        |margin of μ²G⊙G| ≤ tol on every case; ``max_abs_margin``: the largest such |margin|.

    Raises:
        TypeError, ValueError: if ``l64`` is not a list of rows of :func:`quadratic_reduction` that includes
            the quadratic activation.
    """
    rows = V.records("l64", l64, _LEMMA_6_4_FIELDS)
    first, second = "margin (μ̃²11ᵀ+μ²G)⊙G", "margin μ²G⊙G"
    quadratic = [r for r in rows if r["activation"] == "quadratic"]
    if not quadratic:
        raise ValueError("l64 must include a case of the quadratic activation (the tight case of Lemma 6.4)")
    return {"psd": all(r[first] >= -r["tolerance"] and r[second] >= -r["tolerance"] for r in rows),
            "min_margin": min(min(r[first], r[second]) for r in rows),
            "max_tolerance": max(r["tolerance"] for r in rows),
            "eigenvalue": all(r["λ(X)"] >= r["μ²σ²_min(X∗X)"] - r["tolerance"] for r in rows),
            "min_ratio": min(r["ratio"] for r in rows),
            "tight": all(abs(r[second]) <= r["tolerance"] for r in quadratic),
            "max_abs_margin": max(abs(r[second]) for r in quadratic)}


def hermite_bound_sweeps(settings: HermiteBounds, key: Array) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The sweeps of Lemmas H.1 and H.2 the chapter shows, all from the same ``key``: Lemma H.1
    (:func:`higher_order_sweep`, ``output=False``) for softplus, ReLU and tanh at every order of
    ``settings.orders``, and Lemma H.2 (``output=True``) for softplus at the orders r ≥ 1.

    Returns:
        ``(h1, h2)``: activation → sweep, and the H.2 sweep.

    Raises:
        TypeError: if ``settings`` is not the ``HermiteBounds`` settings (``ntkbook.scales``).
        ValueError: if ``settings.orders`` has no order r ≥ 1 (Lemma H.2 starts at r = 1).
    """
    V.settings("settings", settings, HermiteBounds)
    h2_orders = tuple(r for r in settings.orders if r >= 1)
    if not h2_orders:
        raise ValueError(f"settings.orders must include an order r >= 1 for Lemma H.2, got {settings.orders}")
    h1 = {a: higher_order_sweep(settings, key, activation=a) for a in ("softplus", "relu", "tanh")}
    h2 = higher_order_sweep(settings.replace(orders=h2_orders), key, activation="softplus", output=True)
    return h1, h2


def hermite_bound_checks(sweeps: list[dict[str, Any]], late: dict[str, Any]) -> dict[str, Any]:
    """The numbers behind the checks of Lemmas H.1/H.2 on sweeps of :func:`higher_order_sweep` (each with
    ``bounds`` of shape (len(n), len(orders)) and ``lam``, ``tolerance`` of shape (len(n),)).

    Args:
        sweeps: every sweep whose bounds are checked (H.1 per activation and H.2).
        late: the sweep whose orders are compared beyond n = d(d+1)/2 (softplus, H.1).

    Returns:
        ``worst_excess``: max over sweeps, n and r of bound − eigenvalue − tolerance (≤ 0 when every
        bound holds); ``zero_beyond``: whether every order-r bound is exactly 0 at the n beyond its rank limit
        ``rank_limits[r]``; ``cases``: how many such (n, r); ``late_ok``: whether some n exceeds d(d+1)/2
        and at every such n the best order is r ≥ 2 and λ > tolerance; ``best_r_late``: the best orders there.

    Raises:
        TypeError, ValueError: if ``sweeps`` is not a non-empty list of sweeps or ``late`` is not a sweep.
    """
    sweeps = V.records("sweeps", sweeps, _SWEEP_FIELDS)
    V.fields("late", late, ("d", "n", "best_r", "lam", "tolerance"))
    worst = [float(np.max(h["bounds"] - h["lam"][:, None] - h["tolerance"][:, None])) for h in sweeps]
    beyond = [h["bounds"][:, j][h["n"] > h["rank_limits"][j]] for h in sweeps for j in range(len(h["orders"]))]
    d = late["d"]
    past = late["n"] > d * (d + 1) // 2
    return {"worst_excess": max(worst), "zero_beyond": all(np.all(b == 0.0) for b in beyond),
            "cases": sum(b.size for b in beyond),
            "late_ok": bool(past.any() and np.all(late["best_r"][past] >= 2)
                            and np.all(late["lam"][past] > late["tolerance"][past])),
            "best_r_late": late["best_r"][past]}


def schur_tolerance(schur: dict[str, np.ndarray], n: int) -> np.ndarray:
    """Floating-point tolerance of the two sides of Lemma 6.5 for each pair of :func:`schur_pairs`, shape
    (pairs,): 16·n·ε·|upper| (the eigensolver's backward error n·ε·‖A⊙B‖, with the factor 16 of
    :func:`gram_tolerance`, on the scale of the upper bound ‖diag B‖_∞·λ_max(A); 10⁻³⁰⁰ keeps it positive).

    Raises:
        TypeError, ValueError: if ``schur`` has no field ``upper`` or ``n`` is not an integer ≥ 1.
    """
    V.fields("schur", schur, ("upper",))
    n = V.positive_int("n", n)
    return 16 * n * EPS * np.maximum(np.abs(schur["upper"]), 1e-300)


def schur_checks(schur: dict[str, np.ndarray], n: int) -> dict[str, Any]:
    """Lemma 6.5 on the pairs of :func:`schur_pairs` (n × n matrices; arrays of shape (pairs,)), within
    :func:`schur_tolerance`.

    Returns:
        ``holds``: λ_min(A⊙B) ≥ min diag(B)·λ_min(A) and λ_max(A⊙B) ≤ max diag(B)·λ_max(A) on every pair;
        ``tight``: both sides equal on the tight families (kind ≠ "random"); ``max_gap``: the largest
        |λ_max(A⊙B) − upper| there; ``pairs``: how many pairs in all.

    Raises:
        TypeError, ValueError: if ``schur`` lacks the fields of :func:`schur_pairs` or has no pair of a tight
            family, or ``n`` is not an integer ≥ 1.
    """
    V.fields("schur", schur, _SCHUR_FIELDS)
    tol = schur_tolerance(schur, n)
    tight = schur["kind"] != "random"
    if not tight.any():
        raise ValueError("schur must hold pairs of the tight families (kind != 'random'), as schur_pairs returns")
    return {"holds": bool(np.all(schur["lmin_AB"] >= schur["lower"] - tol)
                          and np.all(schur["lmax_AB"] <= schur["upper"] + tol)),
            "tight": bool(np.all(np.abs(schur["lmax_AB"] - schur["upper"])[tight] <= tol[tight])
                          and np.all(np.abs(schur["lmin_AB"] - schur["lower"])[tight] <= tol[tight])),
            "max_gap": float(np.max(np.abs(schur["lmax_AB"] - schur["upper"])[tight])),
            "pairs": int(schur["kind"].size)}
