
import numpy as np
import pytest
import sympy as sp

from ntkbook import fitting, pytree, symbolic


def test_power_law_fit():
    x = np.geomspace(10, 1e5, 9)
    fit = fitting.power_law_fit(x, 3.0 * x**-0.5)
    assert fit.slope == pytest.approx(-0.5, abs=1e-12) and fit.r2 == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    xs = np.repeat(x, 5)
    noisy = 3.0 * xs**-0.5 * np.exp(0.05 * rng.normal(size=xs.size))
    fit = fitting.power_law_fit(xs, noisy)
    assert fit.ci_low < -0.5 < fit.ci_high
    with pytest.raises(ValueError, match="positive"):
        fitting.power_law_fit([1, 2], [1, -1])
    with pytest.raises(ValueError, match="two distinct"):
        fitting.power_law_fit([2.0, 2.0], [1.0, 1.5])


def test_symbolic_proposition_2_2():
    w1, w2, x = sp.symbols("w1 w2 x", real=True)
    linear = symbolic.analyse(w1 * sp.sin(x) + w2 * x**2 + sp.exp(x), [w1, w2], x)
    assert linear.kernel_constant and linear.hessian_zero
    neuron = symbolic.analyse(w2 * sp.tanh(w1 * x), [w1, w2], x)
    assert not neuron.kernel_constant and not neuron.hessian_zero
    z = sp.Symbol("z", real=True)
    assert sp.simplify(symbolic.tangent_kernel(w1 * x, [w1], x, z) - x * z) == 0


def test_pytree_helpers():
    import jax

    tree = {"a": jax.numpy.ones((2, 3)), "b": [jax.numpy.zeros(4)]}
    assert pytree.num_params(tree) == 10
    spec = pytree.flat_spec(tree)
    flat = spec.ravel(tree)
    assert flat.shape == (10,)
    back = spec.unravel(flat)
    assert jax.tree_util.tree_structure(back) == jax.tree_util.tree_structure(tree)
