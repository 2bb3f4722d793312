"""Chapter 1's appendix-proof measurements (ntkbook.experiments.tangent_kernel) against closed forms."""

import jax
import numpy as np
import pytest

from ntkbook.experiments import tangent_kernel as tk


def test_level_set_inequality_closed_forms():
    c = 3.0
    r = tk.level_set_inequality(jax.random.key(0), c=c, dim=3, t_max=10.0, points=11)
    t = r["t"]
    # v is on the level set, so ⟨v − w₀, ∇f⟩ = 0 and ‖v − w₀ − t∇f‖² = ‖v − w₀‖² + c²t²
    dd = r["corrected_rhs"] - c**2 * t**2
    assert np.all(dd > 0)
    np.testing.assert_allclose(r["corrected_rhs"], dd[0] + c**2 * t**2, rtol=1e-12)
    np.testing.assert_allclose(r["path_bound_rhs"] ** 2, r["corrected_rhs"], rtol=1e-12)
    np.testing.assert_allclose(r["printed_rhs"], dd[0] + t**2, rtol=1e-12)
    np.testing.assert_allclose(r["printed_lhs"], c**4 * t**2)


def test_level_set_inequality_rejects_bad_input():
    with pytest.raises(ValueError, match="dim"):
        tk.level_set_inequality(jax.random.key(0), dim=1)


def test_single_point_taylor_counterexample():
    r = tk.single_point_taylor(points=101)
    assert r["gradient_change"] == pytest.approx(0.0, abs=1e-12)
    assert r["min_single_point_residual"] == pytest.approx(2 * np.pi, rel=1e-12)
    assert r["integral_residual"] == pytest.approx(0.0, abs=1e-12)


def test_level_set_sides_and_printed_violations():
    r = tk.level_set_inequality(jax.random.key(0), c=2.0, dim=3, t_max=10.0, points=11)
    lhs, rhs = tk.corrected_level_set_sides(r)
    assert lhs.shape == rhs.shape == (22,)
    np.testing.assert_array_equal(lhs[:11], r["path_bound_lhs"])
    np.testing.assert_array_equal(rhs[11:], r["corrected_rhs"])
    v = tk.printed_level_set_violations(r)
    # printed form, with ⟨v − w₀, ∇f⟩ = 0 on the level set: 16t² ≤ ‖v − w₀‖² + t², false for large |t|
    dd = r["corrected_rhs"][5]  # t = 0
    expected = int(np.sum(16 * r["t"] ** 2 > dd + r["t"] ** 2))
    assert v == {"violated_points": expected, "points": 11,
                 "worst_ratio": pytest.approx(float(np.max(16 * r["t"] ** 2 / (dd + r["t"] ** 2))), rel=1e-9)}
    assert 0 < expected < 11


def _paths(changes):
    return {model: {path: {"change": np.asarray(c)} for path, c in by_path.items()}
            for model, by_path in changes.items()}


def test_path_kernel_changes_and_max_eps_by_width():
    paths = _paths({"random features": {"straight line": [0, 1e-9], "gradient descent": [0, 0]},
                    "linearized network": {"straight line": [0, 0], "gradient descent": [0, 3e-9]},
                    "tanh network": {"straight line": [0, 0.02], "gradient descent": [0, 0.05]}})
    assert tk.path_kernel_changes(paths) == (3e-9, 0.05)
    ball = {"width": np.array([64, 16, 64, 16]), "eps": np.array([0.1, 0.5, 0.3, 0.2])}
    widths, eps = tk.max_eps_by_width(ball)
    np.testing.assert_array_equal(widths, [16, 64])
    assert eps == [0.5, 0.3]


def test_symbolic_and_taylor_tables():
    mvt = {"gradient_change": 0.0, "min_single_point_residual": 6.28, "integral_residual": 1e-15}
    table = tk.taylor_table(mvt)
    assert list(table.frame["quantity"]) == list(mvt)
    with pytest.raises(ValueError, match="integral_residual"):
        tk.taylor_table({"gradient_change": 0.0, "min_single_point_residual": 6.28})
    with pytest.raises(TypeError, match="sequence of rows"):
        tk.symbolic_table({"model": 1})
    assert "yes" in tk.symbolic_table(tk.symbolic_examples()).data
