"""Khatri–Rao products (ntkbook.khatri_rao), sphere data (ntkbook.data.sphere) and the Chapter 8
experiments that build on them (ntkbook.experiments.khatri_rao)."""

from __future__ import annotations

import itertools
import math

import jax
import numpy as np
import pytest

from ntkbook import khatri_rao as kr
from ntkbook import scales
from ntkbook.data import sphere
from ntkbook.experiments import khatri_rao as ek


def unit_rows(rng, n, d):
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_khatri_rao_is_the_row_wise_kronecker_product():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 4))
    expected = np.stack([np.kron(a[i], b[i]) for i in range(5)])
    np.testing.assert_allclose(kr.khatri_rao(a, b), expected, rtol=0, atol=0)


def test_gram_of_khatri_rao_is_hadamard_product_of_grams():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((7, 3)), rng.standard_normal((7, 5))
    ab = kr.khatri_rao(a, b)
    np.testing.assert_allclose(ab @ ab.T, (a @ a.T) * (b @ b.T), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("r", [0, 1, 2, 3])
def test_r_way_power_gram_is_hadamard_power(r):
    x = unit_rows(np.random.default_rng(2), 6, 3)
    xr = kr.khatri_rao_power(x, r)
    assert xr.shape == (6, 3**r)
    np.testing.assert_allclose(xr @ xr.T, kr.hadamard_gram(x, r), rtol=1e-13, atol=1e-13)
    if r == 0:
        np.testing.assert_array_equal(xr, np.ones((6, 1)))


@pytest.mark.parametrize(("n", "d", "r"), [(5, 3, 2), (8, 3, 3), (4, 4, 2)])
def test_sigma_min_by_gram_matches_svd(n, d, r):
    x = unit_rows(np.random.default_rng(3), n, d)
    s = np.linalg.svd(kr.khatri_rao_power(x, r), compute_uv=False)
    assert kr.sigma_min_power(x, r) == pytest.approx(s[n - 1], rel=1e-9)


def test_rank_of_khatri_rao_square_is_symmetric_dimension():
    d = 4
    x = unit_rows(np.random.default_rng(4), 20, d)
    rank = np.linalg.matrix_rank(kr.khatri_rao_power(x, 2))
    assert rank == kr.symmetric_dimension(d, 2) == d * (d + 1) // 2
    assert kr.sigma_min_khatri_rao(x) < 1e-6  # n = 20 > 10 = d(d+1)/2: rank deficient
    assert kr.symmetric_dimension(3, 3) == math.comb(5, 3)


def test_kappa_and_summary():
    x = unit_rows(np.random.default_rng(5), 8, 6)
    s = kr.sigma_min_khatri_rao(x)
    assert kr.kappa(x) == pytest.approx(math.sqrt(6 / 8) * np.linalg.norm(x, 2) / s**2, rel=1e-9)
    summary = kr.data_summary(x)
    assert summary["sigma_min_2"] == pytest.approx(s, rel=1e-9)
    assert summary["separation"] == pytest.approx(sphere.separation(x), rel=1e-6)
    dup = x.copy()
    dup[1] = dup[0]
    assert kr.kappa(dup) == math.inf


def test_marchenko_pastur_edge():
    assert kr.marchenko_pastur_edge(55, 10) == 0.0
    assert kr.marchenko_pastur_edge(100, 10) == 0.0
    values = [kr.marchenko_pastur_edge(n, 20) for n in (10, 50, 100, 200)]
    assert all(a > b for a, b in itertools.pairwise(values))
    assert values[1] == pytest.approx((1 - math.sqrt(50 / 210)) ** 2)


def test_validation():
    with pytest.raises(ValueError, match="same number of rows"):
        kr.khatri_rao(np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="dimensions"):
        kr.hadamard_gram(np.ones(3))
    with pytest.raises(ValueError, match="r must be"):
        kr.sigma_min_power(np.ones((2, 2)), -1)
    with pytest.raises(TypeError, match="floating"):
        kr.khatri_rao(np.ones((2, 2), int), np.ones((2, 2)))
    with pytest.raises(ValueError, match="hadamard_gram"):
        kr.khatri_rao_power(np.ones((100, 50)), 4)


# --------------------------------------------------------------------------------------------- sphere


def test_uniform_sphere_has_unit_rows_and_zero_mean():
    x = np.asarray(sphere.uniform_sphere(jax.random.key(0), 4000, 3))
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, rtol=1e-5)
    assert np.abs(x.mean(axis=0)).max() < 4 / math.sqrt(3 * 4000)  # E x = 0, sd of a coordinate 1/√3
    np.testing.assert_allclose(x.T @ x / 4000, np.eye(3) / 3, atol=0.03)  # E xxᵀ = I/d


def test_near_duplicate_angle_and_antipodal():
    with jax.enable_x64(True):
        x = sphere.uniform_sphere(jax.random.key(1), 5, 4, dtype=jax.numpy.float64)
        for eps in (1e-3, 0.5):
            y = np.asarray(sphere.with_near_duplicate(x, eps, jax.random.key(2)))
            assert np.linalg.norm(y[1]) == pytest.approx(1.0)
            assert math.acos(np.clip(y[0] @ y[1], -1, 1)) == pytest.approx(math.atan(eps), rel=1e-6)
            z = np.asarray(sphere.with_near_duplicate(x, eps, jax.random.key(2), antipodal=True))
            np.testing.assert_allclose(z[1], -y[1])
        np.testing.assert_array_equal(np.asarray(sphere.with_duplicate(x))[1], np.asarray(x)[0])


def test_separation_matches_brute_force():
    x = unit_rows(np.random.default_rng(6), 7, 3)
    brute = min(min(np.linalg.norm(x[i] - x[j]), np.linalg.norm(x[i] + x[j]))
                for i in range(7) for j in range(7) if i != j)
    assert sphere.separation(x) == pytest.approx(brute, rel=1e-6)


def test_sphere_validation():
    with pytest.raises(ValueError, match="n must be"):
        sphere.uniform_sphere(jax.random.key(0), 0, 3)
    with pytest.raises(ValueError, match="zero row"):
        sphere.normalize_rows(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="different rows"):
        sphere.with_duplicate(np.ones((3, 2), np.float32), 1, 1)


# --------------------------------------------------------------------------------------------- experiments


def test_identity_errors_are_rounding_level():
    rows = ek.identity_errors(scales.get("kr_identity", "ci").replace(shapes=[(6, 3)], orders=(1, 2, 3)), jax.random.key(0))
    assert max(r["relative"] for r in rows) < 1e-14
    for r in rows[1:]:
        assert r["σ_min Gram"] == pytest.approx(r["σ_min SVD"], abs=1e-8)


def test_sphere_regimes_rank_and_norm_facts():
    out = ek.sphere_regimes(scales.get("kr_sphere", "ci").replace(ds=(6,), fractions=(0.3, 1.5), seeds=2),
                            jax.random.key(0))
    above = out["n"] > out["D"]
    assert above.any() and np.all(np.abs(out["lambda_min_raw"][above]) < 1e-12)
    assert np.all(out["norm"] ** 2 >= out["n"] / out["d"] * (1 - 1e-12))  # tr XᵀX = n


def test_degenerate_data_limits():
    out = ek.degenerate_data(scales.get("kr_degenerate", "ci").replace(n=10, d=6, epsilons=(1e-3, 1e-2)), jax.random.key(0))
    assert np.all(out["near"]["sigma"] <= out["near"]["sin_theta"] * (1 + 1e-6))
    assert abs(out["near_exact"]["lam"]) <= 10 * out["near_exact"]["tol_sigma"]
    assert out["antipodal_exact"]["lam"] > 1e-3  # softplus: antipodal points stay distinguishable
    assert out["antipodal_exact"]["sigma"] <= 1e-6


def test_schur_pairs_satisfy_lemma_6_5():
    out = ek.schur_pairs(scales.get("schur", "ci").replace(n=6, pairs=10), jax.random.key(0))
    scale = np.maximum(np.abs(out["upper"]), 1.0)
    assert np.all(out["lmin_AB"] >= out["lower"] - 1e-10 * scale)
    assert np.all(out["lmax_AB"] <= out["upper"] + 1e-10 * scale)
    tight = out["kind"] != "random"
    np.testing.assert_allclose(out["lmax_AB"][tight], out["upper"][tight], rtol=1e-10, atol=1e-12)


def test_half_circle_is_the_circle_data_of_radius_one():
    from ntkbook.data.circle import circle_data

    for n in (2, 5, 16):
        with jax.enable_x64(True):
            x, _ = circle_data(n, radius=1.0, dtype=jax.numpy.float64)
        np.testing.assert_allclose(ek.half_circle(n), np.asarray(x), rtol=0, atol=1e-15)
        assert kr.data_summary(ek.half_circle(n), orders=())["separation"] == pytest.approx(2 * math.sin(math.pi / (2 * n)),
                                                                                          rel=1e-12)


def _relu_pair_lambda(delta):
    """λ_min of Σ(X) for two unit vectors at distance δ, by hand: Σ = [[1/2, s], [s, 1/2]] with
    s = c(π − arccos c)/(2π), c = 1 − δ²/2 (arc-cosine kernel of the step times c)."""
    c = 1.0 - delta**2 / 2.0
    return 0.5 - c * (math.pi - math.acos(c)) / (2 * math.pi)


def test_delta_separated_controls_delta_and_sandwiches_lambda():
    cfg = scales.get("kr_delta_separated", "ci").replace(n=8, d=5, deltas=(1e-3, 1e-2), circle_ns=(2, 3, 6),
                                                         sphere_shapes=((6, 3),), seeds=1)
    out = ek.delta_separated(cfg, jax.random.key(1))
    fam = out["family"]
    for family in ("near pair", "near antipode"):
        sel = fam == family
        np.testing.assert_allclose(out["delta"][sel], cfg.deltas, rtol=1e-6)
        # the closest pair's Rayleigh quotient is the 2×2 value (hand-written closed form) for the near pair
    sel = fam == "near pair"
    np.testing.assert_allclose(out["rayleigh"][sel], [_relu_pair_lambda(e) for e in cfg.deltas], rtol=1e-9)
    circ = fam == "half circle"
    np.testing.assert_allclose(out["delta"][circ], [2 * math.sin(math.pi / (2 * n)) for n in cfg.circle_ns], rtol=1e-12)
    # two orthogonal points: Σ = I/2 and E[ℐℐᵀ] = [[1/2, 1/4], [1/4, 1/2]] (λ_min 1/4), by hand
    two = circ & (out["n"] == 2)
    assert out["lam"][two][0] == pytest.approx(0.5, abs=1e-15)
    assert out["lam_indicator"][two][0] == pytest.approx(0.25, abs=1e-15)
    assert np.all(out["lam"] <= out["rayleigh"] + out["resolution"])
    np.testing.assert_allclose(out["bound"], out["delta"] / (100 * out["n"] ** 2), rtol=1e-15)
    assert set(fam) == {"near pair", "near antipode", "half circle", "sphere"}


def test_delta_separated_lambda_agrees_with_monte_carlo():
    """λ(X) of the closed form against a Monte Carlo Σ(X) (independent JAX code): by Weyl's inequality
    |λ_min(Σ̂) − λ_min(Σ)| ≤ ‖Σ̂ − Σ‖₂ ≤ ‖Σ̂ − Σ‖_F, which is within 6 standard errors (entrywise stderr, F-norm)."""
    from ntkbook import covariance as cov

    x = ek.half_circle(3)
    lam = ek.delta_separated(scales.get("kr_delta_separated", "ci").replace(
        n=4, d=3, deltas=(0.5,), circle_ns=(3,), sphere_shapes=(), seeds=1), jax.random.key(2))
    circ = lam["family"] == "half circle"
    mc = cov.monte_carlo(x, "relu", jax.random.key(3), samples=400_000)
    tol = 6 * float(np.linalg.norm(mc.stderr))
    assert abs(cov.lambda_min(mc.mean) - lam["lam"][circ][0]) <= tol
    assert tol < 0.2 * lam["lam"][circ][0]  # the test has power: the error bar is well below λ(X)


# --------------------------------------------------------------------------------------------- the chapter's checks


def test_sigma_min_route_gaps_skip_the_a_b_rows():
    rows = [{"r": "A∗B", "σ_min SVD": float("nan"), "σ_min Gram": float("nan")},
            {"r": 1, "σ_min SVD": 0.5, "σ_min Gram": 0.25}, {"r": 2, "σ_min SVD": 0.1, "σ_min Gram": 0.3}]
    assert ek.sigma_min_route_gaps(rows) == pytest.approx([0.25, 0.2], rel=1e-15)
    real = ek.identity_errors(scales.get("kr_identity", "ci").replace(shapes=[(6, 3)], orders=(1, 2)),
                              jax.random.key(0))
    assert len(ek.sigma_min_route_gaps(real)) == 2 and max(ek.sigma_min_route_gaps(real)) < 1e-7


def test_sphere_checks_on_sphere_data_and_planted_violations():
    out = ek.sphere_regimes(scales.get("kr_sphere", "ci").replace(ds=(6,), fractions=(0.3, 1.5), seeds=2),
                            jax.random.key(0))
    norm = ek.sphere_norm_checks(out)
    assert norm["lower"] and norm["upper"] and 1.0 <= norm["max_ratio"] < 2.0
    wide = out["n"] >= 2 * out["d"]
    assert norm["max_ratio"] == pytest.approx(np.max(out["norm"][wide] / np.sqrt(out["n"][wide] / out["d"][wide])))
    assert not ek.sphere_norm_checks(out, upper=0.5 * norm["max_ratio"])["upper"]
    assert not ek.sphere_norm_checks(out | {"norm": 0.99 * np.sqrt(out["n"] / out["d"])})["lower"]  # ‖X‖² < n/d
    rank = ek.rank_deficiency_checks(out)
    above = out["n"] > out["D"]
    assert rank["ok"] and rank["samples"] == int(above.sum()) > 0
    assert rank["max_abs_lambda_min"] <= rank["resolution"]
    planted = out | {"lambda_min_raw": np.where(above, 1.0, out["lambda_min_raw"])}
    assert not ek.rank_deficiency_checks(planted)["ok"]
    mp = np.where(out["n"] == out["d"], 0.0, out["mp"])  # (1 − √(n/D))² = 0 planted where n = d
    ratio = ek.marchenko_pastur_ratio(out | {"mp": mp})
    assert ratio.shape == out["n"].shape and np.all(np.isnan(ratio[mp == 0])) and np.any(mp == 0)
    np.testing.assert_allclose(ratio[mp > 0], out["sigma2"][mp > 0] / mp[mp > 0], rtol=1e-15)


def test_hermite_checks():
    herm = ek.hermite_table(("relu", "quadratic", "softplus", "tanh"), 4)
    h = ek.hermite_checks(herm)
    assert h["mu_relu_squared_is_1_over_2pi"]  # μ_ReLU = 1/√(2π)·... exactly, App. H
    assert float(h["mu_relu"]) ** 2 == pytest.approx(1 / (2 * math.pi), rel=1e-14)
    assert h["mu_softplus"] == pytest.approx(0.207, abs=5e-4) and abs(h["mu_tanh"]) < 1e-12
    assert 0 <= h["quadrature_error"] < 1e-12


def test_lemma_6_4_checks_on_rows_and_planted_failures():
    first, second = "margin (μ̃²11ᵀ+μ²G)⊙G", "margin μ²G⊙G"

    def row(activation, m1, m2, lam, bound, tol=1e-9):
        return {"activation": activation, first: m1, second: m2, "tolerance": tol, "λ(X)": lam,
                "μ²σ²_min(X∗X)": bound, "ratio": lam / bound}

    rows = [row("softplus", 0.1, 0.2, 0.5, 0.25), row("quadratic", 0.0, -5e-10, 0.3, 0.3)]
    c = ek.lemma_6_4_checks(rows)
    assert c["psd"] and c["eigenvalue"] and c["tight"]
    assert c["min_margin"] == -5e-10 and c["max_tolerance"] == 1e-9
    assert c["min_ratio"] == 1.0 and c["max_abs_margin"] == 5e-10
    assert not ek.lemma_6_4_checks([*rows, row("relu", -1e-6, 0.1, 0.5, 0.25)])["psd"]
    assert not ek.lemma_6_4_checks([*rows, row("relu", 0.1, 0.1, 0.2, 0.25)])["eigenvalue"]
    assert not ek.lemma_6_4_checks([*rows, row("quadratic", 0.0, 1e-3, 0.3, 0.3)])["tight"]
    real = ek.quadratic_reduction(scales.get("lemma_6_4", "ci").replace(shapes=((8, 4),)), jax.random.key(0))
    c = ek.lemma_6_4_checks(real)
    assert c["psd"] and c["eigenvalue"]


def test_hermite_bound_checks():
    settings = scales.get("hermite_bounds", "ci").replace(d=3, ns=(4, 8), orders=(0, 1, 2))
    h1, h2 = ek.hermite_bound_sweeps(settings, jax.random.key(5))
    assert tuple(h1) == ("softplus", "relu", "tanh") and not h1["relu"]["output"] and h2["output"]
    np.testing.assert_array_equal(h2["orders"], [1, 2])
    np.testing.assert_array_equal(h1["tanh"]["bounds"],
                                  ek.higher_order_sweep(settings, jax.random.key(5), activation="tanh")["bounds"])
    c = ek.hermite_bound_checks([*h1.values(), h2], late=h1["softplus"])
    excess = max(float(np.max(h["bounds"] - h["lam"][:, None] - h["tolerance"][:, None]))
                 for h in [*h1.values(), h2])
    assert c["worst_excess"] == excess <= 0.0 and c["zero_beyond"]
    past = h1["softplus"]["n"] > 6  # d(d+1)/2 = 6 for d = 3
    np.testing.assert_array_equal(c["best_r_late"], h1["softplus"]["best_r"][past])
    planted = h1["relu"] | {"bounds": h1["relu"]["bounds"] + 1.0}
    assert not ek.hermite_bound_checks([planted], late=h1["softplus"])["zero_beyond"]
    assert ek.hermite_bound_checks([planted], late=h1["softplus"])["worst_excess"] > 0


def test_schur_checks_and_their_tolerance():
    settings = scales.get("schur", "ci").replace(n=6, pairs=10)
    out = ek.schur_pairs(settings, jax.random.key(0))
    tol = ek.schur_tolerance(out, 6)
    np.testing.assert_allclose(tol, 16 * 6 * ek.EPS * np.abs(out["upper"]), rtol=1e-15)
    c = ek.schur_checks(out, 6)
    assert c["holds"] and c["tight"] and c["pairs"] == 30 and c["max_gap"] <= np.max(tol)
    assert not ek.schur_checks(out | {"lmax_AB": out["upper"] * 1.01}, 6)["tight"]
    assert not ek.schur_checks(out | {"lmin_AB": out["lower"] - 1.0}, 6)["holds"]


def test_check_helpers_reject_bad_input():
    with pytest.raises(TypeError, match="identity must be a sequence of rows"):
        ek.sigma_min_route_gaps({"r": 1})
    with pytest.raises(ValueError, match="identity must hold at least one row"):
        ek.sigma_min_route_gaps([])
    with pytest.raises(ValueError, match=r"identity\[0\] lacks the field"):
        ek.sigma_min_route_gaps([{"r": 1, "σ_min SVD": 0.1}])
    with pytest.raises(ValueError, match=r"sph lacks the field.*'mp'"):
        ek.marchenko_pastur_ratio({"sigma2": np.ones(2)})
    sph = {"norm": np.ones(2), "n": np.array([4, 8]), "d": np.array([2, 2])}
    with pytest.raises(ValueError, match="upper must be a finite number > 0"):
        ek.sphere_norm_checks(sph, upper=0.0)
    with pytest.raises(ValueError, match="rtol must be a finite number >= 0"):
        ek.sphere_norm_checks(sph, rtol=-1e-12)
    # no draw with n ≥ 2d: the upper fact has nothing to hold on, so it is not claimed
    narrow = ek.sphere_norm_checks(sph | {"n": np.array([2, 3])})
    assert not narrow["upper"] and math.isnan(narrow["max_ratio"])
    none_above = ek.rank_deficiency_checks({"n": np.array([2]), "D": np.array([3]),
                                            "lambda_min_raw": np.array([0.1]), "resolution": np.array([1e-15])})
    assert not none_above["ok"] and none_above["samples"] == 0 and math.isnan(none_above["max_abs_lambda_min"])
    with pytest.raises(ValueError, match="quadratic activation"):
        ek.hermite_checks(ek.hermite_table(("relu",), 2))
    with pytest.raises(ValueError, match="l64 must hold at least one row"):
        ek.lemma_6_4_checks([])
    with pytest.raises(TypeError, match="HermiteBounds settings"):
        ek.hermite_bound_sweeps(scales.get("schur", "ci"), jax.random.key(0))
    with pytest.raises(ValueError, match="order r >= 1"):
        ek.hermite_bound_sweeps(scales.get("hermite_bounds", "ci").replace(orders=(0,)), jax.random.key(0))
    with pytest.raises(ValueError, match="late lacks the field"):
        ek.hermite_bound_checks([{k: None for k in ("n", "orders", "rank_limits", "bounds", "lam", "tolerance")}],
                                late={"n": np.ones(1)})
    schur = {"kind": np.array(["random"]), "lmin_AB": np.ones(1), "lower": np.ones(1), "lmax_AB": np.ones(1),
             "upper": np.ones(1)}
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        ek.schur_tolerance(schur, 0)
    with pytest.raises(ValueError, match="tight families"):
        ek.schur_checks(schur, 4)
