"""The linearization (ntkbook.linearization) against closed forms: a quadratic model whose remainder is exact, a
model linear in its weights, and the integral Taylor forms against direct differences of gradients (float64)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbook import linearization, models, pytree


def test_linearize_agrees_to_first_order(x64):
    model, p0 = models.mlp(jax.random.key(11), (10, 10), input_dim=2, dtype=jnp.float64)
    lin = linearization.linearize(model.apply, p0)
    x = jax.random.normal(jax.random.key(12), (3, 2), jnp.float64)
    np.testing.assert_allclose(lin(p0, x), model.apply(p0, x), rtol=1e-13)
    d = jax.tree_util.tree_map(lambda a: 0.1 * jnp.ones_like(a), p0)
    p1, p2 = pytree.tree_axpy(1.0, d, p0), pytree.tree_axpy(2.0, d, p0)
    np.testing.assert_allclose(lin(p2, x) - lin(p0, x), 2 * (lin(p1, x) - lin(p0, x)), rtol=1e-12)
    small = pytree.tree_axpy(1e-4, d, p0)  # the remainder is O(‖Δ‖²)
    assert float(jnp.max(jnp.abs(linearization.remainder(model.apply, p0, small, x)))) < 1e-6


def test_remainder_of_a_quadratic_is_exact(x64):
    """f(w) = ½wᵀAw + bᵀw: f − f_lin = ½ΔᵀAΔ for every Δ, and the integral form equals it."""
    rng = np.random.default_rng(1)
    a = jnp.asarray(rng.standard_normal((4, 4)))
    a = a + a.T
    b = jnp.asarray(rng.standard_normal(4))
    f = lambda p, x: (0.5 * p @ a @ p + b @ p) * jnp.ones(x.shape[0])  # noqa: E731
    w0, w1 = jnp.asarray(rng.standard_normal(4)), jnp.asarray(rng.standard_normal(4))
    delta = w1 - w0
    x = jnp.zeros((2, 1))
    np.testing.assert_allclose(linearization.remainder(f, w0, w1, x), 0.5 * delta @ a @ delta, rtol=1e-12)
    rem = linearization.remainder_integral(lambda p: f(p, x)[0], w0, w1, nodes=2)
    assert float(rem) == pytest.approx(float(0.5 * delta @ a @ delta), rel=1e-12)
    np.testing.assert_allclose(linearization.gradient_change(lambda p: f(p, x)[0], w0, w1, nodes=1), a @ delta,
                               rtol=1e-12)


def test_random_features_are_linear(x64):
    model, p0 = models.random_features(jax.random.key(3), 20, input_dim=2, dtype=jnp.float64)
    x = jax.random.normal(jax.random.key(4), (5, 2), jnp.float64)
    p1 = {"w": p0["w"] + 3.0}
    np.testing.assert_allclose(linearization.remainder(model.apply, p0, p1, x), 0.0, atol=1e-12)


def test_integral_forms_of_a_tanh_network(x64):
    """Eq. 56 and the second-order integral form against autodiff differences, for a smooth network."""
    model, p0 = models.mlp(jax.random.key(5), (8, 8), input_dim=3, dtype=jnp.float64)
    x = jax.random.normal(jax.random.key(6), (1, 3), jnp.float64)
    p1 = pytree.tree_axpy(0.7, pytree.tree_normal_like(jax.random.key(7), p0), p0)
    f = lambda p: model.apply(p, x)[0]  # noqa: E731
    change = pytree.tree_sub(jax.grad(f)(p1), jax.grad(f)(p0))
    integral = linearization.gradient_change(f, p0, p1, nodes=32)
    err = float(pytree.tree_norm(pytree.tree_sub(integral, change)) / pytree.tree_norm(change))
    assert err < 1e-10
    direct = float(linearization.remainder(model.apply, p0, p1, x)[0])
    assert float(linearization.remainder_integral(f, p0, p1, nodes=32)) == pytest.approx(direct, rel=1e-10)
