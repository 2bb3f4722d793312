"""The datasets (ntkbook.data): digit images, unit-scale inputs and the three Gaussian classes of Eq. (42)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbook.data import digits
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
