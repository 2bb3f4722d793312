"""Khatri–Rao products and the data-diversity quantities (ntkbook.khatri_rao)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ntkbook import khatri_rao as kr
from ntkbook.data import sphere


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


def test_separation_of_the_half_circle():
    """δ of n points at angles πk/n is 2 sin(π/2n) (neighbouring points; the last is next to −x₀)."""
    for n in (2, 5, 16):
        t = np.pi * np.arange(n) / n
        x = np.stack([np.cos(t), np.sin(t)], axis=1)
        assert kr.data_summary(x, orders=())["separation"] == pytest.approx(2 * math.sin(math.pi / (2 * n)),
                                                                            rel=1e-12)
