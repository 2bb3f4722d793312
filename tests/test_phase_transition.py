"""The phase-transition engine (ntkbook.experiments.phase_transition) against a plain float64 GD,
and the ``phase-transition`` reproduction at ci scale."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbook import reproduce, scales
from ntkbook.experiments import moderate as mo
from ntkbook.experiments import phase_transition as pt


def test_pack_places_every_network_once_within_the_width():
    sizes = {i: k for i, k in enumerate([1, 3, 4, 7, 9, 12, 12, 25])}
    rows, width = pt.pack(sizes)
    placed = [i for row in rows for i in row if i >= 0]
    assert sorted(placed) == sorted(sizes)
    assert width % 4 == 0 and width >= 25 + 1
    assert all(sizes[a] + (sizes[b] if b >= 0 else 0) <= width for a, b in rows)
    assert len(rows) < len(sizes)  # pairs were formed


@pytest.mark.parametrize("activation", ["softplus", "relu"])
def test_packed_engine_agrees_with_plain_gradient_descent(activation):
    """Every (k, trial) of a column: the stopping iteration of the packed float32 engine equals the
    first iteration at which a plain float64 GD (moderate._gd_scan) has relative residual < tol."""
    n, d, ks, trials, tol, steps = 12, 5, [2, 5, 8], 2, 2.5e-2, 1500
    lr = pt.PAPER_STEP_SIZES[activation]
    out = pt.fit_column(activation, n, d, ks, trials=trials, lr=lr, max_iters=steps, tol=tol,
                        key=jax.random.key(3), chunk=400)
    x, y, w0 = pt.column_data(jax.random.key(3), n, d, ks, trials)
    with jax.enable_x64(True):
        for t in range(trials):
            for j, k in enumerate(ks):
                xx, yy = jnp.asarray(x[t], jnp.float64), jnp.asarray(y[t], jnp.float64)
                v = mo.output_weights(k, float(jnp.linalg.norm(yy)), n, dtype=jnp.float64)
                res, *_ = mo._gd_scan(jnp.asarray(w0[t, k], jnp.float64), xx, yy, v, lr, activation, steps + 1)
                rel = np.asarray(res) / float(jnp.linalg.norm(yy))
                hit = np.nonzero(rel < tol)[0]
                if hit.size and abs(rel[hit[0]] - tol) > 1e-4 * tol:  # not a float32/float64 photo finish
                    assert out["success"][j, t] and abs(out["iterations"][j, t] - hit[0]) <= 1
                elif not hit.size:
                    assert not out["success"][j, t] and out["iterations"][j, t] == steps
                    assert out["rel_error"][j, t] == pytest.approx(rel[steps], rel=1e-3)


def test_workers_do_not_change_results():
    kw = dict(trials=3, lr=0.1, max_iters=600, tol=5e-2, key=jax.random.key(0), chunk=200)
    one = pt.fit_column("relu", 10, 4, [2, 4, 6], workers=1, **kw)
    two = pt.fit_column("relu", 10, 4, [2, 4, 6], workers=2, **kw)
    for k in one:
        np.testing.assert_array_equal(one[k], two[k])


def test_unstable_step_is_declared_diverged_early():
    # d = 1: the inputs are ±1, ‖X‖² = n, λ_max(JJᵀ) ≈ n·E[σ(g)]² = n/4, and η = 0.15 > 2/(n/4) for n = 100
    out = pt.fit_column("softplus", 100, 1, [2, 4], trials=2, lr=0.15, max_iters=5000, tol=2.5e-3,
                        key=jax.random.key(0))
    assert not out["success"].any()
    assert np.all(out["iterations"] < 5000) and np.all(out["rel_error"] > pt.DIVERGED)


def test_region_masks():
    below, above = pt.region_masks([1, 2, 10], [1, 5], n=10, below=0.5, above=2)
    np.testing.assert_array_equal(below, [[True, True], [True, False], [False, False]])
    np.testing.assert_array_equal(above, [[False, False], [False, False], [False, True]])


def test_column_data_is_uniform_on_the_sphere_and_nested():
    x5, y5, w5 = pt.column_data(jax.random.key(0), 7, 5, [3], 2, d_max=8)
    _x8, y8, w8 = pt.column_data(jax.random.key(0), 7, 8, [3], 2, d_max=8)
    np.testing.assert_allclose(np.linalg.norm(x5, axis=2), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(y5, y8)
    np.testing.assert_array_equal(w5[0, 3], w8[0, 3][:, :5])


@pytest.mark.notebook
def test_reproduction_at_ci_scale(tmp_path):
    result = reproduce.run("phase-transition", "ci", tmp_path)
    on_disk = json.loads((tmp_path / "phase-transition.json").read_text())
    assert on_disk == result
    for key in ("n_values", "activations", "ks", "ds", "success", "settings", "seconds", "name", "scale", "backend"):
        assert key in on_disk
    assert (tmp_path / "phase-transition.png").stat().st_size > 1000
    s = scales.get("phase_transition", "ci")
    assert on_disk["ks"] == list(s.ks) and on_disk["ds"] == list(s.ds)
    for a in s.activations:
        for n in s.n_values:
            prob = np.asarray(on_disk["success"][a][str(n)])
            assert prob.shape == (len(s.ks), len(s.ds))
            below, above = pt.region_masks(s.ks, s.ds, n, below=0.5, above=3.0)
            assert prob[below].max() == 0.0  # far too few parameters: never fits
            assert prob[above].mean() >= 0.6  # well overparameterized: mostly fits
    again = reproduce.run("phase-transition", "ci", tmp_path)  # resumes entirely from the cache
    assert again["cached_pieces"] == again["pieces"] and again["success"] == result["success"]
