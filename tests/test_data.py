"""The datasets (ntkbook.data): digit images and unit-scale inputs."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbook.data import digits
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
