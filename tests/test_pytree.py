"""Vector-space operations on parameter pytrees (ntkbook.pytree), against the same operations on the flattened
NumPy vector."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbook import pytree


def _tree(rng, dtype=np.float64):
    return {"layers": [{"W": jnp.asarray(rng.standard_normal((3, 4)), dtype)},
                       {"W": jnp.asarray(rng.standard_normal((2, 3)), dtype)}],
            "v": jnp.asarray(rng.standard_normal((2, 1)), dtype)}


def _flat(tree):
    return np.concatenate([np.ravel(np.asarray(x, np.float64)) for x in jax.tree_util.tree_leaves(tree)])


def test_dot_norm_max_and_linear_maps_match_the_flat_vector(x64):
    rng = np.random.default_rng(0)
    a, b = _tree(rng), _tree(rng)
    fa, fb = _flat(a), _flat(b)
    assert pytree.num_params(a) == fa.size == 12 + 6 + 2
    assert float(pytree.tree_dot(a, b)) == pytest.approx(fa @ fb, rel=1e-14)
    assert float(pytree.tree_norm(a)) == pytest.approx(np.linalg.norm(fa), rel=1e-14)
    assert float(pytree.tree_max_abs(a)) == np.abs(fa).max()
    np.testing.assert_allclose(_flat(pytree.tree_axpy(-2.5, a, b)), fb - 2.5 * fa, rtol=1e-14)
    np.testing.assert_allclose(_flat(pytree.tree_sub(a, b)), fa - fb, rtol=1e-14)
    np.testing.assert_allclose(_flat(pytree.tree_scale(3.0, a)), 3.0 * fa, rtol=1e-14)


def test_flat_spec_round_trip_order_and_dtype_promotion(x64):
    rng = np.random.default_rng(1)
    tree = _tree(rng)
    tree["v"] = tree["v"].astype(jnp.float32)  # mixed dtypes promote to the common float64
    spec = pytree.flat_spec(tree)
    flat = spec.ravel(tree)
    assert flat.dtype == jnp.float64 and spec.size == flat.size == 20
    np.testing.assert_array_equal(np.asarray(flat), _flat(tree))  # the leaves' order of tree_leaves
    back = spec.unravel(flat)
    assert jax.tree_util.tree_structure(back) == jax.tree_util.tree_structure(tree)
    for x, y in zip(jax.tree_util.tree_leaves(back), jax.tree_util.tree_leaves(tree), strict=True):
        assert x.shape == y.shape
        np.testing.assert_array_equal(np.asarray(x, np.float64), np.asarray(y, np.float64))
    assert hash(spec) == hash(pytree.flat_spec(tree))  # a static argument: one compilation per structure


def test_tree_normal_like_shapes_moments_and_keys():
    tree = {"a": jnp.zeros((200, 50)), "b": jnp.zeros(3, jnp.float32)}
    z = pytree.tree_normal_like(jax.random.key(0), tree)
    assert jax.tree_util.tree_structure(z) == jax.tree_util.tree_structure(tree)
    assert z["a"].shape == (200, 50) and z["b"].dtype == jnp.float32
    sample = np.asarray(z["a"], np.float64).ravel()  # 10⁴ draws: mean within 5 sd, variance within 5 sd
    assert abs(sample.mean()) < 5 / np.sqrt(sample.size)
    assert abs(sample.var() - 1) < 5 * np.sqrt(2 / sample.size)
    again = pytree.tree_normal_like(jax.random.key(0), tree)
    np.testing.assert_array_equal(np.asarray(z["a"]), np.asarray(again["a"]))
    other = pytree.tree_normal_like(jax.random.key(1), tree)
    assert not np.array_equal(np.asarray(z["a"]), np.asarray(other["a"]))
    with pytest.raises((TypeError, ValueError), match="tree"):
        pytree.tree_normal_like(jax.random.key(0), {"a": "not an array"})
