
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


def test_expected_slope_and_slope_law_window():
    """The law of a least-squares log–log slope: an exact power law has its exponent as mean slope; the window is
    the mean ± sds·sd plus Σ|c_i|·log_tolerance (c_i the regression weights), with sd from the variances."""
    widths = np.repeat([10, 30, 100, 1000], 3)
    logs = np.log(widths)
    assert fitting.expected_slope(widths, -0.7 * logs + 2.0) == pytest.approx(-0.7, abs=1e-12)
    c = fitting.slope_weights(widths)
    assert c == pytest.approx((logs - logs.mean()) / np.sum((logs - logs.mean()) ** 2))
    var = np.full(widths.size, 0.01)
    win = fitting.slope_law_window(widths, -0.5 * logs, var, sds=4.0, log_tolerance=1e-3, law="test")
    assert win.predicted == pytest.approx(-0.5, abs=1e-12)
    assert win.sd == pytest.approx(np.sqrt(np.sum(c**2 * var)), rel=1e-12)  # independent points
    low, high = win.window
    assert high - win.predicted == pytest.approx(win.predicted - low)
    assert high - win.predicted == pytest.approx(4 * win.sd + np.sum(np.abs(c)) * 1e-3, rel=1e-12)
    with pytest.raises(ValueError, match="var_log_y"):
        fitting.slope_law_window(widths, np.zeros(widths.size), -np.ones(widths.size), law="none")


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
