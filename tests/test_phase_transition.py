"""The phase-transition engine (ntkbook.experiments.phase_transition) against a plain float64 GD,
and the ``phase-transition`` reproduction at ci scale."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbook import reproduce, scales
from ntkbook.activations import get_activation
from ntkbook.experiments import phase_transition as pt
from ntkbook.models.oymak_init import output_weights


def _plain_gd_residuals(x, y, w, v, lr, activation, steps):
    """‖f(W_τ) − y‖, τ = 0..steps, of a hand-written float64 GD on ½‖φ(XWᵀ)v − y‖² (Eq. 2.1) — independent of
    ntkbook.training.  φ and φ' are the engine's (the registry's ``value_and_prime``, tested against jax.nn in test_activations;
    φ' = 1{z ≥ 0} for ReLU, the paper's generalized derivative), evaluated in float64."""
    pair = jax.jit(get_activation(activation).value_and_prime)  # compiled once per shape: 1500 steps, no dispatch cost
    out = []
    with jax.enable_x64(True):
        for _ in range(steps + 1):
            z = x @ w.T
            phi, dphi = (np.asarray(a) for a in pair(jnp.asarray(z)))
            r = phi @ v - y
            out.append(np.linalg.norm(r))
            w = w - lr * ((r[:, None] * v[None, :]) * dphi).T @ x
    return np.asarray(out)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("activation", ["softplus", "relu"])
def test_engine_agrees_with_plain_gradient_descent(activation, dtype):
    """Every (k, trial) of a column: the engine stops at the first iteration at which a plain float64 GD has
    relative residual < tol, and reports that GD's residual when it hits the cap.

    In float64 the engine must reproduce the reference: the same iteration, and the residual to 1e-6 (the
    constant step amplifies evaluation-order differences of 1e-16: by 1e9 over 1500 steps for one of these
    networks, trial 0 with k = 8, whose residual agrees to 1.7e-7; the others agree to 1e-15).  In
    float32 (the book's precision) the iteration may differ by one, and the residual at the cap is compared
    for softplus only: for ReLU, a unit whose pre-activation crosses the kink during training turns a 1e-7
    float32 difference into a ~1e-3 difference of the trajectory (measured with two evaluation orders of the
    same update, both 2.3e-3 from float64 at τ = 800 in the relu case here), so there only the float64 run
    can check the residual."""
    n, d, ks, trials, tol, steps = 12, 5, [2, 5, 8], 2, 2.5e-2, 1500
    lr = pt.PAPER_STEP_SIZES[activation]
    exact = dtype == "float64"
    with jax.enable_x64(exact):
        out = pt.fit_column(activation, n, d, ks, trials=trials, lr=lr, max_iters=steps, tol=tol,
                            key=jax.random.key(3), chunk=400, dtype=np.dtype(dtype))
    x, y, w0 = pt.column_data(jax.random.key(3), n, d, ks, trials)
    for t in range(trials):
        for j, k in enumerate(ks):
            xx, yy = x[t].astype(np.float64), y[t].astype(np.float64)
            v = np.asarray(output_weights(k, float(np.linalg.norm(yy)), n), np.float64)
            rel = _plain_gd_residuals(xx, yy, w0[t, k].astype(np.float64), v, lr, activation, steps) \
                / np.linalg.norm(yy)
            hit = np.nonzero(rel < tol)[0]
            if hit.size and abs(rel[hit[0]] - tol) > 1e-4 * tol:  # not a float32/float64 photo finish
                assert out["success"][j, t] and abs(out["iterations"][j, t] - hit[0]) <= (0 if exact else 1)
                if exact:
                    assert out["rel_error"][j, t] == pytest.approx(rel[hit[0]], rel=1e-6)
            elif not hit.size:
                assert not out["success"][j, t] and out["iterations"][j, t] == steps
                if exact or activation == "softplus":
                    assert out["rel_error"][j, t] == pytest.approx(rel[steps], rel=1e-6 if exact else 1e-3)


def test_workers_and_width_classes_do_not_change_results(monkeypatch):
    kw = dict(trials=3, lr=0.1, max_iters=600, tol=5e-2, key=jax.random.key(0), chunk=200)
    one_class = pt.fit_column("relu", 10, 4, [2, 4, 6], workers=1, **kw)  # a small column: one width class
    monkeypatch.setattr(pt, "CLASS_WORK", 1)  # as many width classes as WIDTH_CLASSES allows
    one = pt.fit_column("relu", 10, 4, [2, 4, 6], workers=1, **kw)
    two = pt.fit_column("relu", 10, 4, [2, 4, 6], workers=2, **kw)
    for k in one:
        np.testing.assert_array_equal(one[k], two[k])  # threads: bit for bit
    # classes pad to other widths: the same outcomes and stopping iterations, residuals to float32 rounding
    np.testing.assert_array_equal(one["success"], one_class["success"])
    np.testing.assert_array_equal(one["iterations"], one_class["iterations"])
    np.testing.assert_allclose(one["rel_error"], one_class["rel_error"], rtol=1e-4)


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


def test_reproduction_outputs_and_resume(tmp_path, monkeypatch):
    """The ``phase-transition`` reproduction's plumbing on a tiny grid: JSON = result, figure, shapes, per-trial
    outcomes behind the probabilities, resume from the piece cache.  (Its numbers at ci are the chapter's claims
    fig-2/*-n20-fails-below and fig-2/*-n20-succeeds-above, which run the same reproduction.)"""
    s = scales.get("phase_transition", "ci").replace(n_values=(8,), ks=(1, 2, 8), ds=(1, 4), trials=2,
                                                     max_iters=300, chunk=300)
    monkeypatch.setitem(scales.TABLE, "phase_transition", {name: s for name in scales.SCALES})
    result = reproduce.run("phase-transition", "ci", tmp_path)
    on_disk = json.loads((tmp_path / "phase-transition.json").read_text())
    assert on_disk == result
    for key in ("n_values", "activations", "ks", "ds", "success", "settings", "seconds", "name", "scale", "backend"):
        assert key in on_disk
    assert (tmp_path / "phase-transition.png").stat().st_size > 1000
    assert on_disk["ks"] == list(s.ks) and on_disk["ds"] == list(s.ds)
    for a in s.activations:
        prob = np.asarray(on_disk["success"][a]["8"])
        trials = np.asarray(on_disk["trial_success"][a]["8"])
        assert prob.shape == (len(s.ks), len(s.ds)) and trials.shape == (*prob.shape, s.trials)
        np.testing.assert_array_equal(prob, trials.mean(axis=2))
    again = reproduce.run("phase-transition", "ci", tmp_path)  # resumes entirely from the cache
    assert again["cached_pieces"] == again["pieces"] and again["success"] == result["success"]


def test_crossing_interpolates_the_isotonic_fit():
    assert pt.crossing([1, 2, 3, 4], [0.0, 0.2, 0.8, 1.0]) == pytest.approx(2.5)
    # a non-monotone column: 0.6, 0.4 pool to 0.5, 0.5, first reaching 1/2 at k = 2
    assert pt.crossing([1, 2, 3, 4], [0.0, 0.6, 0.4, 1.0]) == pytest.approx(2.0)
    assert pt.crossing([1, 2, 3], [0.6, 0.9, 1.0]) == -np.inf
    assert pt.crossing([1, 2, 3], [0.0, 0.1, 0.4]) == np.inf
    with pytest.raises(ValueError, match="increasing"):
        pt.crossing([2, 1, 3], [0.0, 0.5, 1.0])


def test_transition_location_bootstrap_of_identical_trials_is_degenerate():
    ks, ds, n = [1, 2, 3, 4], [5, 10], 20
    col = np.array([0, 0, 1, 1], bool)  # every trial fails for k ≤ 2 and succeeds for k ≥ 3
    col2 = np.array([0, 1, 1, 1], bool)
    success = np.repeat(np.stack([col, col2], axis=1)[:, :, None], 6, axis=2)
    loc = pt.transition_location(ks, ds, n, success, resamples=50)
    # crossings k* = 2.5 (d = 5) and 1.5 (d = 10): ratios 2.5·5/20 and 1.5·10/20
    np.testing.assert_allclose(loc["ratio"], [0.625, 0.75])
    assert loc["mean_low"] == loc["mean_high"] == pytest.approx(0.6875)
    assert pt.location_verdict(loc) == "disagrees"
    mixed = success.copy()
    mixed[1, 0, :3] = True  # half the trials succeed at k = 2 in column d = 5: the interval widens
    wide = pt.transition_location(ks, ds, n, mixed, resamples=200)
    assert wide["mean_low"] < wide["mean_high"]


def test_columns_without_crossing_are_reported_not_averaged():
    ks, ds, n = [1, 2, 3, 4], [5, 10], 20
    never = np.zeros(4, bool)
    col2 = np.array([0, 1, 1, 1], bool)
    success = np.repeat(np.stack([never, col2], axis=1)[:, :, None], 4, axis=2)
    loc = pt.transition_location(ks, ds, n, success, resamples=20)
    assert loc["located"] == [False, True] and loc["ratio"][0] == np.inf
    assert loc["mean_ratio"] == pytest.approx(0.75) == loc["mean_low"] == loc["mean_high"]
    none = pt.transition_location(ks, ds, n, np.zeros((4, 2, 3), bool), resamples=20)
    assert np.isnan(none["mean_ratio"]) and pt.location_verdict(none) == "undecided"
