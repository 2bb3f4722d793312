"""The datasets (ntkbook.data): digit images, unit-scale inputs, points on the sphere and the three Gaussian
classes of Eq. (42)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbook.data import digits, gaussian, sphere
from ntkbook.data.gaussian_classes import PAPER_MEANS, gaussian_classes
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


def unit_rows(rng, n, d):
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


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


def test_gaussian_classes_shapes_and_seeding():
    d = gaussian_classes(jax.random.key(3), 60)
    assert d.x.shape == (60, 1) and d.labels.shape == (60,) and d.y.shape == (60, 3)
    np.testing.assert_array_equal(np.argmax(d.y, axis=1), d.labels)
    np.testing.assert_array_equal(d.y.sum(axis=1), np.ones(60))
    again = gaussian_classes(jax.random.key(3), 60)
    np.testing.assert_array_equal(again.x, d.x)
    other = gaussian_classes(jax.random.key(4), 60)
    assert not np.array_equal(other.x, d.x)


def test_gaussian_classes_distribution():
    """Equiprobable labels and x | y ~ N(means[y], 1), checked within 5 standard errors."""
    n = 60_000
    d = gaussian_classes(jax.random.key(0), n)
    labels, x = np.asarray(d.labels), np.asarray(d.x[:, 0], np.float64)
    freq = np.bincount(labels, minlength=3) / n
    assert np.all(np.abs(freq - 1 / 3) < 5 * math.sqrt((1 / 3) * (2 / 3) / n))
    for c, mean in enumerate(PAPER_MEANS):
        xc = x[labels == c]
        assert abs(xc.mean() - mean) < 5 / math.sqrt(xc.size)
        assert abs(xc.std() - 1.0) < 5 * math.sqrt(0.5 / xc.size)


def test_gaussian_classes_validates():
    with pytest.raises(ValueError, match="n must be"):
        gaussian_classes(jax.random.key(0), 0)
    with pytest.raises(ValueError, match="means"):
        gaussian_classes(jax.random.key(0), 10, means=(1.0,))
    with pytest.raises(ValueError, match="std"):
        gaussian_classes(jax.random.key(0), 10, std=-1.0)
