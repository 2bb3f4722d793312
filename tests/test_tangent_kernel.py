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
