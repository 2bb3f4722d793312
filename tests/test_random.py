"""ntkbook.random.normal draws the numbers of jax.random.normal, bit for bit, on every path it takes."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbook.random import SHARED_DRAW_MAX, fold_key, fold_words, normal


@pytest.mark.parametrize("shape", [(1,), (7,), (8,), (9,), (5, 3), (33, 17), (2, 3, 4), (1, 1025), (0,), ()])
@pytest.mark.parametrize("key", [jax.random.key(5), jax.random.PRNGKey(5)], ids=["typed", "legacy"])
def test_normal_is_jax_random_normal(shape, key):
    got, want = normal(key, shape), jax.random.normal(key, shape)
    assert got.shape == want.shape and got.dtype == want.dtype == jnp.float32
    np.testing.assert_array_equal(got, want)


def test_normal_dtypes_and_x64():
    key = jax.random.key(11)
    with jax.enable_x64(True):
        for dtype in (jnp.float32, jnp.float64, None):
            got, want = normal(key, (6, 5), dtype), jax.random.normal(key, (6, 5), float if dtype is None else dtype)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(normal(key, [4, 3], jnp.float16), jax.random.normal(key, (4, 3), jnp.float16))


def test_normal_under_a_trace_and_above_the_shared_size():
    keys = jax.random.split(jax.random.key(2), 3)
    np.testing.assert_array_equal(jax.vmap(lambda k: normal(k, (5,)))(keys),
                                  jax.vmap(lambda k: jax.random.normal(k, (5,)))(keys))
    np.testing.assert_array_equal(jax.jit(lambda k: normal(k, (4, 2)))(keys[0]), jax.random.normal(keys[0], (4, 2)))
    big = (SHARED_DRAW_MAX + 3,)
    np.testing.assert_array_equal(normal(keys[1], big), jax.random.normal(keys[1], big))


@pytest.mark.parametrize("scale", [1.0, 1 / math.sqrt(7.0), 0.3, 2.5, 3])
def test_scaled_normal_is_jax_random_normal_times_scale(scale):
    """The scale is applied in NumPy on the shared path: the product must be JAX's ``x * scale`` bit for bit
    (the Python number rounded to the dtype, one IEEE product), on every path and dtype."""
    key = jax.random.key(21)
    with jax.enable_x64(True):
        for dtype in (jnp.float32, jnp.float64, jnp.float16):
            got, want = normal(key, (9, 4), dtype, scale=scale), jax.random.normal(key, (9, 4), dtype) * scale
            assert got.dtype == want.dtype == dtype
            np.testing.assert_array_equal(got, want)
    keys = jax.random.split(key, 2)
    np.testing.assert_array_equal(jax.vmap(lambda k: normal(k, (5,), scale=scale))(keys),
                                  jax.vmap(lambda k: jax.random.normal(k, (5,)) * scale)(keys))
    big = (SHARED_DRAW_MAX + 1,)
    np.testing.assert_array_equal(normal(key, big, scale=scale), jax.random.normal(key, big) * scale)


def test_scale_must_be_a_real_number():
    with pytest.raises(TypeError, match="scale must be a real number"):
        normal(jax.random.key(0), (3,), scale="2")
    with pytest.raises(TypeError, match="scale must be a real number"):
        normal(jax.random.key(0), (3,), scale=True)


def test_numpy_generator_is_a_function_of_the_key():
    from ntkbook.random import numpy_generator

    a = numpy_generator(jax.random.key(3)).standard_normal(5)
    np.testing.assert_array_equal(a, numpy_generator(jax.random.key(3)).standard_normal(5))
    assert not np.allclose(a, numpy_generator(jax.random.key(4)).standard_normal(5))
    assert not np.allclose(a, numpy_generator(jax.random.fold_in(jax.random.key(3), 1)).standard_normal(5))


def test_fold_words_is_fold_key_of_each_row():
    """One compiled call gives, row by row, the keys of jax.random.fold_in applied word after word."""
    words = np.array([[0, 1, 2, 3], [2**32 - 1, 7, 0, 123456789], [5, 5, 5, 5]], dtype=np.uint64)
    keys = fold_words(jax.random.key(3), words)
    for row, key in zip(words, keys, strict=True):
        expected = jax.random.key(3)
        for w in row:
            expected = jax.random.fold_in(expected, int(w))
        assert np.array_equal(jax.random.key_data(key), jax.random.key_data(expected))
        assert np.array_equal(jax.random.key_data(key), jax.random.key_data(fold_key(jax.random.key(3), *map(int, row))))
    with pytest.raises(ValueError, match="words must be a 2-d array"):
        fold_words(jax.random.key(0), np.array([1, 2]))
    with pytest.raises(ValueError, match="words must be a 2-d array"):
        fold_words(jax.random.key(0), np.array([[-1, 2]]))
