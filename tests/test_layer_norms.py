"""Exact norms of a dense layer's derivatives (ntkbook.layer_norms) against autodiff tensors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import small_network
from ntkbook import hessian_compressed as hc
from ntkbook import layer_norms


@pytest.mark.parametrize("kind", ["mlp", "resnet"])
def test_layer_factors_against_layer_tensors(x64, kind):
    model, params, x = small_network(kind, seed=8, width=6)
    f = layer_norms.layer_factors(model, params, x)
    t = layer_norms.layer_tensors(model, params, x, 2)
    assert f["jw"][1] == pytest.approx(np.linalg.norm(t["jw"], 2), rel=1e-10)
    assert f["ja"][1] == pytest.approx(np.linalg.norm(t["ja"], 2), rel=1e-10)
    assert np.isnan(f["ja"][0]) and np.isnan(f["taw"][0])
    # b_inf is ‖∂f/∂α⁽ˡ⁾‖_∞ by autodiff through the shifts of the layer outputs
    bp = hc.base_pass(model, params, x)
    assert f["b_inf"][2] == pytest.approx(np.abs(np.asarray(model.fixed_v if model.fixed_v is not None
                                                             else params["v"])[:, 0]).max() / math.sqrt(6))
    np.testing.assert_allclose(f["b_two"], [np.linalg.norm(b) for b in bp.b], rtol=1e-12)
    with pytest.raises(ValueError, match="layer"):
        layer_norms.layer_tensors(model, params, x, 4)

def test_top_eigenvalue_dense_and_arpack_paths_agree(x64):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((600, 600))
    ref = np.linalg.norm(a, 2)
    assert layer_norms.largest_singular_value(a) == pytest.approx(ref, rel=1e-10)  # ARPACK path (n > 512)
    assert layer_norms.largest_singular_value(a[:100, :100]) == pytest.approx(np.linalg.norm(a[:100, :100], 2), rel=1e-12)
