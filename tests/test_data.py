"""The datasets (ntkbook.data): digit images and unit-scale inputs."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbook.data import digits, gaussian
from ntkbook.data.sphere import unit_scale_input


def test_unit_scale_input_norm():
    x = unit_scale_input(jax.random.key(0), 7)
    assert float(jnp.linalg.norm(x)) == pytest.approx(math.sqrt(7), rel=1e-6)
    with pytest.raises(ValueError, match="d"):
        unit_scale_input(jax.random.key(0), 0)

def test_digit_image_standardized():
    img = digits.image(3)
    assert img.shape == (8, 8) and img.dtype == np.float32
    assert abs(float(img.mean())) < 1e-6 and float(img.std()) == pytest.approx(1.0, rel=1e-5)
    with pytest.raises(ValueError, match="index"):
        digits.image(-1)


def test_digits_standardized_two_classes():
    x, y = digits.two_classes((3, 8), 10, seed=1)
    assert x.shape == (20, 64) and y.shape == (20,)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(x), axis=1), 8.0, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(x).mean(axis=1), 0.0, atol=1e-6)
    assert np.all(np.asarray(y)[:10] == 1) and np.all(np.asarray(y)[10:] == -1)
    x2, _ = digits.two_classes((3, 8), 10, seed=1)
    np.testing.assert_array_equal(np.asarray(x), np.asarray(x2))  # deterministic
    assert sum(digits.num_images().values()) == 1797


def test_digits_validation():
    with pytest.raises(ValueError, match="two different digits"):
        digits.two_classes((3, 3))
    with pytest.raises(ValueError, match="n_per_class"):
        digits.two_classes((3, 8), 500)
    with pytest.raises(TypeError, match="classes"):
        digits.two_classes(3)
    with pytest.raises(ValueError, match="constant image"):
        digits.standardize(np.ones((2, 64)))


def test_gaussian_inputs_norm_and_labels():
    x, y = gaussian.two_classes(jax.random.key(0), 30, 16)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(x), axis=1), 4.0, rtol=1e-6)
    assert set(np.unique(np.asarray(y))) <= {-1.0, 1.0}
    with pytest.raises(ValueError, match="n must be"):
        gaussian.gaussian_inputs(jax.random.key(0), 0, 3)
