import jax.numpy as jnp
import numpy as np
import pytest

import ntkbook as nb
from ntkbook import norms


def brute_force_221(t, n=1501):
    """max over a fine grid of unit x, z ∈ ℝ² (angles) of Σ_k |xᵀ T_k z| — for 2 × 2 × d3 tensors."""
    a = np.linspace(0, np.pi, n)
    xs = np.stack([np.cos(a), np.sin(a)], 1)
    vals = np.einsum("ai,ijk,bj->abk", xs, t, xs)
    return np.abs(vals).sum(axis=2).max()


@pytest.mark.parametrize("seed", range(5))
def test_matches_brute_force_grid(seed):
    t = np.random.default_rng(seed).normal(size=(2, 2, 3))
    exact = nb.norm_221(t)
    grid = brute_force_221(t)
    assert exact.exact and exact.lower == exact.upper
    assert grid <= exact.value + 1e-12  # the grid only sees feasible points
    assert exact.value - grid <= 1e-5 * exact.value  # grid spacing π/1500: error O(h²)


def test_single_slice_is_spectral_norm():
    t = np.random.default_rng(1).normal(size=(5, 4, 1))
    assert nb.norm_221(t).value == pytest.approx(np.linalg.norm(t[:, :, 0], 2), rel=1e-14)


@pytest.mark.parametrize("d3", [5, 40])
def test_diagonal_tensor_closed_form(d3):
    """T_iik = c_k δ_ik gives max_k |c_k| (also in the bounds regime d3 > 16: the bounds meet)."""
    c = np.random.default_rng(d3).normal(size=d3)
    t = np.zeros((d3, d3, d3))
    t[np.arange(d3), np.arange(d3), np.arange(d3)] = c
    res = nb.norm_221(t)
    assert res.exact
    assert res.lower == pytest.approx(np.max(np.abs(c)), rel=1e-12)
    assert res.upper == pytest.approx(np.max(np.abs(c)), rel=1e-12)


@pytest.mark.parametrize("m", [6, 16, 60])
def test_one_by_one_by_m_is_l1(m):
    v = np.random.default_rng(m).normal(size=m)
    res = nb.norm_221(v.reshape(1, 1, m))
    assert res.exact
    assert res.lower == pytest.approx(np.sum(np.abs(v)), rel=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_bounds_bracket_exact_value(seed):
    rng = np.random.default_rng(seed)
    t = rng.normal(size=(4, 3, 10)) * rng.uniform(0.1, 2.0, size=10)
    exact = nb.norm_221(t).value
    bounds = nb.norm_221(t, max_exact_d3=4, group_size=4)
    assert bounds.method == "bounds"
    assert bounds.lower <= exact * (1 + 1e-12)
    assert bounds.upper >= exact * (1 - 1e-12)


def test_lower_bound_is_attained_by_its_signs():
    t = np.random.default_rng(7).normal(size=(6, 5, 30))
    res = nb.norm_221(t)
    assert not res.exact and res.method == "bounds"
    attained = np.linalg.norm(np.einsum("ijk,k->ij", t, res.signs), 2)
    assert attained == pytest.approx(res.lower, rel=1e-12)
    assert res.lower <= res.upper
    with pytest.raises(ValueError, match="only bracketed"):
        _ = res.value


@pytest.mark.parametrize("seed", range(4))
def test_proposition_2_1_and_its_tight_case(seed):
    rng = np.random.default_rng(seed)
    t = rng.normal(size=(4, 5, 7))
    res = nb.norm_221(t)
    for _ in range(20):
        v = rng.normal(size=7)
        a = norms.contract_third(t, v)
        assert np.linalg.norm(a, 2) <= res.value * np.max(np.abs(v)) * (1 + 1e-12)
    # equality for v = c · s*, the maximizing sign vector
    a = norms.contract_third(t, 2.5 * res.signs)
    assert np.linalg.norm(a, 2) == pytest.approx(res.value * 2.5, rel=1e-12)


def test_sign_vectors():
    s = norms.sign_vectors(5)
    assert s.shape == (16, 5) and np.all(s[:, 0] == 1)
    assert len({tuple(r) for r in s}) == 16
    assert set(np.unique(s)) == {-1.0, 1.0}


def test_float64_inputs_are_not_rounded_through_float32():
    t = np.zeros((1, 1, 2))
    t[0, 0] = [1.0, 1e-9]
    assert nb.norm_221(t).value == 1.0 + 1e-9


def test_validation():
    with pytest.raises(ValueError, match="T must have 3 dimensions"):
        nb.norm_221(np.ones((2, 2)))
    with pytest.raises(ValueError, match="non-finite"):
        nb.norm_221(np.full((2, 2, 2), np.nan))
    with pytest.raises(TypeError, match="floating dtype"):
        nb.norm_221(np.ones((2, 2, 2), dtype=int))
    with pytest.raises(ValueError, match="must not be empty"):
        nb.norm_221(np.ones((2, 0, 2)))
    with pytest.raises(ValueError, match="group_size"):
        nb.norm_221(np.ones((2, 2, 30)), group_size=20)
    with pytest.raises(ValueError, match="v must have length d3 = 3"):
        norms.contract_third(np.ones((2, 2, 3)), np.ones(2))
    assert nb.norm_221(jnp.ones((2, 2, 2))).exact
