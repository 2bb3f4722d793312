import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import numpy_mlp
from ntkbook import models


def test_shallow_network_matches_eq8(x64):
    model, params = models.shallow_network(jax.random.key(0), 50, activation="tanh", dtype=jnp.float64)
    x = jnp.linspace(-2, 2, 7)
    w = np.asarray(params["w"][:, 0])
    v = np.asarray(model.v)
    expected = np.array([np.sum(v * np.tanh(w * xi)) / np.sqrt(50) for xi in np.asarray(x)])
    np.testing.assert_allclose(model.apply(params, x), expected, rtol=1e-13)
    assert set(np.unique(v)) <= {-1.0, 1.0}
    assert list(params) == ["w"]  # v is fixed, not trainable


@pytest.mark.parametrize("use_bias", [False, True])
@pytest.mark.parametrize("output_dim", [1, 3])
def test_mlp_matches_numpy(x64, use_bias, output_dim):
    model, params = models.mlp(jax.random.key(1), (7, 5, 6), input_dim=4, output_dim=output_dim,
                               activation=["tanh", "softplus", "sigmoid"], use_bias=use_bias, dtype=jnp.float64)
    x = jax.random.normal(jax.random.key(2), (9, 4), jnp.float64)
    acts = [np.tanh, lambda z: np.log1p(np.exp(z)), lambda z: 1 / (1 + np.exp(-z))]
    it = iter(acts)

    def act(z):
        return next(it)(z)

    expected = numpy_mlp(params, x, act, use_bias=use_bias)
    out = model.apply(params, x)
    assert out.shape == ((9,) if output_dim == 1 else (9, output_dim))
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_mlp_fixed_output_and_forward(x64):
    model, params = models.mlp(jax.random.key(3), (8, 8), input_dim=2, train_output=False, dtype=jnp.float64)
    assert "v" not in params and model.fixed_v.shape == (8, 1)
    x = jax.random.normal(jax.random.key(4), (5, 2), jnp.float64)
    fp = model.forward(params, x)
    assert len(fp.pre) == 2 and len(fp.post) == 3
    np.testing.assert_allclose(fp.post[2], jnp.tanh(fp.pre[1]))
    np.testing.assert_allclose(fp.output, numpy_mlp(params, x, np.tanh, fixed_v=model.fixed_v), rtol=1e-12)


def test_nonlinear_output_wrapper():
    base, params = models.mlp(jax.random.key(5), (16,), input_dim=3, output_dim=4)
    x = jax.random.normal(jax.random.key(6), (6, 3))
    soft = models.nonlinear_output(base, "softmax")
    np.testing.assert_allclose(soft.apply(params, x), jax.nn.softmax(base.apply(params, x), axis=-1), rtol=1e-6)
    np.testing.assert_allclose(soft.apply(params, x).sum(axis=1), 1.0, rtol=1e-6)
    sw = models.nonlinear_output(base, "swish")
    f = base.apply(params, x)
    np.testing.assert_allclose(sw.apply(params, x), f * jax.nn.sigmoid(f), rtol=1e-6)
    with pytest.raises(TypeError, match="base must be a model"):
        models.nonlinear_output(lambda p, x: x, "tanh")


def test_models_are_pytrees_through_jit():
    model, params = models.mlp(jax.random.key(7), (4,), input_dim=2, train_output=False)
    x = jnp.ones((3, 2))
    out = jax.jit(lambda m, p, x: m.apply(p, x))(model, params, x)
    np.testing.assert_allclose(out, model.apply(params, x), rtol=1e-6)


def test_random_features_is_linear_in_w(x64):
    model, params = models.random_features(jax.random.key(8), 30, input_dim=2, dtype=jnp.float64)
    x = jax.random.normal(jax.random.key(9), (4, 2), jnp.float64)
    w1, w2 = params["w"], jax.random.normal(jax.random.key(10), (30,), jnp.float64)
    a, b = 0.3, -1.7
    lhs = model.apply({"w": a * w1 + b * w2}, x) - model.apply({"w": jnp.zeros(30)}, x)
    rhs = a * (model.apply({"w": w1}, x) - model.apply({"w": jnp.zeros(30)}, x)) + b * (
        model.apply({"w": w2}, x) - model.apply({"w": jnp.zeros(30)}, x))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bad", [0, -3, 2.5, "wide", True])
def test_bad_widths(bad):
    with pytest.raises((TypeError, ValueError), match="width"):
        models.shallow_network(jax.random.key(0), bad)
    with pytest.raises((TypeError, ValueError), match="widths"):
        models.mlp(jax.random.key(0), (4, bad))


def test_bad_inputs():
    model, params = models.mlp(jax.random.key(0), (4,), input_dim=3)
    with pytest.raises(ValueError, match=r"x must have shape \(n, 3\)"):
        model.apply(params, jnp.ones((2, 2)))
    with pytest.raises(ValueError, match="x must have shape"):
        model.apply(params, jnp.ones(5))
    with pytest.raises(ValueError, match="non-finite"):
        model.apply(params, jnp.array([[1.0, jnp.nan, 0.0]]))
    with pytest.raises(TypeError, match="floating dtype"):
        model.apply(params, jnp.ones((2, 3), dtype=jnp.int32))
    with pytest.raises(ValueError, match="must not be empty"):
        model.apply(params, jnp.ones((0, 3)))
    with pytest.raises(ValueError, match="unknown activation"):
        models.mlp(jax.random.key(0), (4,), activation="gelu")
    with pytest.raises(ValueError, match="2 activations for 3 hidden layers"):
        models.mlp(jax.random.key(0), (4, 4, 4), activation=["tanh", "relu"])


def test_float64_needs_x64():
    if jax.config.jax_enable_x64:
        pytest.skip("x64 already enabled globally")
    with pytest.raises(ValueError, match="jax_enable_x64"):
        models.mlp(jax.random.key(0), (4,), dtype=jnp.float64)
