import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbook import activations


def _grid_sup(act, order):
    with jax.enable_x64(True):
        z = jnp.linspace(-30.0, 30.0, 600_001)
        return float(jnp.max(jnp.abs(act.derivative(z, order))))


@pytest.mark.parametrize("name", ["tanh", "sigmoid", "softplus", "swish", "identity"])
def test_constants_match_dense_grid(name):
    act = activations.get_activation(name)
    assert act.lipschitz == pytest.approx(_grid_sup(act, 1), rel=1e-7, abs=1e-12)
    assert act.smoothness == pytest.approx(_grid_sup(act, 2), rel=1e-7, abs=1e-12)


def test_closed_forms():
    assert activations.get_activation("tanh").smoothness == pytest.approx(4 / (3 * math.sqrt(3)))
    assert activations.get_activation("sigmoid").smoothness == pytest.approx(math.sqrt(3) / 18)


def test_quadratic_and_relu():
    q = activations.get_activation("quadratic")
    z = jnp.array([-2.0, 0.5, 3.0])
    np.testing.assert_allclose(q(z), 0.5 * z**2)
    np.testing.assert_allclose(q.derivative(z), z)
    np.testing.assert_allclose(q.derivative(z, 2), 1.0)
    assert q.smoothness == 1.0 and math.isinf(q.lipschitz)
    relu = activations.get_activation("relu")
    assert not relu.twice_differentiable and math.isinf(relu.smoothness)
    np.testing.assert_allclose(relu.derivative(z, 2), 0.0)


def test_unknown_activation_lists_known_ones():
    with pytest.raises(ValueError, match=r"unknown activation 'gelu'.*'tanh'"):
        activations.get_activation("gelu")
    with pytest.raises(TypeError, match="activation must be a name"):
        activations.get_activation(3)
    with pytest.raises(TypeError):
        activations.get_activation("tanh").derivative(jnp.ones(2), order=1.5)
