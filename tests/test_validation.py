"""Every public function rejects nonsense with a clear message naming the argument.

One row per (function, bad input): wrong shapes, wrong dtypes, non-finite values, empty inputs,
unknown names, non-positive sizes.  (Module-specific tests check more cases.)
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ntkbook as nb
from ntkbook import (
    ball,
    claims,
    fitting,
    hessian,
    kernels,
    linearization,
    models,
    norms,
    quadrature,
    reproduce,
    scales,
    tables,
    training,
)

KEY = jax.random.key(0)
MODEL, PARAMS = models.mlp(KEY, (4,), input_dim=2)
STACKED = jax.tree_util.tree_map(lambda a: a[None], PARAMS)
X = jnp.ones((3, 2))
Y = jnp.ones(3)
NAN_X = X.at[0, 0].set(jnp.nan)


def scalar_fn(p):
    return MODEL.apply(p, X[:1])[0]


CASES = [
    # models
    ("mlp widths=0", lambda: models.mlp(KEY, 0), ValueError, "widths\\[0\\] must be an integer >= 1"),
    ("mlp widths=[]", lambda: models.mlp(KEY, []), TypeError, "widths must be a non-empty sequence"),
    ("mlp input_dim=1.5", lambda: models.mlp(KEY, 3, input_dim=1.5), TypeError, "input_dim must be an integer"),
    ("mlp activation", lambda: models.mlp(KEY, 3, activation="elu"), ValueError, "unknown activation 'elu'"),
    ("mlp dtype int", lambda: models.mlp(KEY, 3, dtype=jnp.int32), TypeError, "dtype must be a floating dtype"),
    ("shallow width=-2", lambda: models.shallow_network(KEY, -2), ValueError, "width must be an integer >= 1"),
    ("random_features 0", lambda: models.random_features(KEY, 0), ValueError, "num_features must be an integer"),
    ("apply wrong d", lambda: MODEL.apply(PARAMS, jnp.ones((3, 5))), ValueError, r"x must have shape \(n, 2\)"),
    ("apply 3-d x", lambda: MODEL.apply(PARAMS, jnp.ones((3, 2, 1))), ValueError, "x must have 1 or 2 dimensions"),
    ("apply nan", lambda: MODEL.apply(PARAMS, NAN_X), ValueError, "x contains non-finite values"),
    ("apply empty", lambda: MODEL.apply(PARAMS, jnp.ones((0, 2))), ValueError, "x must not be empty"),
    ("apply int x", lambda: MODEL.apply(PARAMS, jnp.ones((3, 2), jnp.int32)), TypeError, "x must have a real floating"),
    ("nonlinear_output base", lambda: models.nonlinear_output(object(), "tanh"), TypeError, "base must be a model"),
    ("nonlinear_output phi", lambda: models.nonlinear_output(MODEL, "max"), ValueError, "unknown activation 'max'"),
    ("linearize fn", lambda: linearization.linearize(3, PARAMS), TypeError, "apply_fn must be callable"),
    # kernels
    ("ntk method", lambda: nb.empirical_ntk(MODEL.apply, PARAMS, X, method="exact"), ValueError, "unknown method"),
    ("ntk nan", lambda: nb.empirical_ntk(MODEL.apply, PARAMS, NAN_X), ValueError, "x1 contains non-finite"),
    ("ntk params nan", lambda: nb.empirical_ntk(MODEL.apply, jax.tree_util.tree_map(lambda a: a.at[0].set(jnp.nan), PARAMS), X),
     ValueError, "params contains non-finite"),
    ("ntk x2 nan", lambda: nb.empirical_ntk(MODEL.apply, PARAMS, X, NAN_X), ValueError, "x2 contains non-finite"),
    ("ntk empty params", lambda: nb.empirical_ntk(MODEL.apply, {}, X), ValueError, "params must be a non-empty"),
    ("ntk int params", lambda: nb.empirical_ntk(MODEL.apply, {"w": jnp.ones(2, jnp.int32)}, X), TypeError,
     "params must contain floating arrays"),
    ("ntk empty x", lambda: nb.empirical_ntk(MODEL.apply, PARAMS, jnp.ones((0, 2))), ValueError, "x1 must not be empty"),
    ("flatten_ntk 3-d", lambda: kernels.flatten_ntk(jnp.ones((2, 2, 2))), ValueError, "kernel must have 2 or 4"),
    ("relative_change", lambda: kernels.relative_change(jnp.ones((2, 2)), jnp.ones((3, 3))), ValueError,
     "same shape"),
    # hessian
    ("hsn tol", lambda: nb.hessian_spectral_norm(scalar_fn, PARAMS, tol=0.0), ValueError, "tol must be"),
    ("hsn max_iter", lambda: nb.hessian_spectral_norm(scalar_fn, PARAMS, max_iter=-1), ValueError, "max_iter"),
    ("hsn basis_size", lambda: nb.hessian_spectral_norm(scalar_fn, PARAMS, basis_size=2), ValueError, "basis_size"),
    ("hsn method", lambda: nb.hessian_spectral_norm(scalar_fn, PARAMS, method="power"), ValueError, "unknown method"),
    ("hsn vector fn", lambda: nb.hessian_spectral_norm(lambda p: MODEL.apply(p, X), PARAMS), ValueError,
     "must return a scalar"),
    ("hsn start", lambda: nb.hessian_spectral_norm(scalar_fn, PARAMS, start={"a": jnp.ones(3)}), ValueError,
     "start must have the same pytree structure"),
    ("hsn zero start", lambda: nb.hessian_spectral_norm(scalar_fn, PARAMS, start=jax.tree_util.tree_map(
        jnp.zeros_like, PARAMS)), ValueError, "start must be a non-zero vector"),
    ("hvp tangent", lambda: hessian.hvp(scalar_fn, PARAMS, {"a": 1.0}), ValueError, "tangent must have the same"),
    ("fixed steps", lambda: nb.hessian_spectral_norm(scalar_fn, PARAMS, method="fixed", num_steps=1), ValueError, "num_steps"),
    ("at_input 2-d x", lambda: hessian.at_input(MODEL.apply, jnp.ones((2, 2))), ValueError, "x must have 0 or 1"),
    # norms
    ("norm_221 4-d", lambda: nb.norm_221(np.ones((2, 2, 2, 2))), ValueError, "T must have 3 dimensions"),
    ("norm_221 inf", lambda: nb.norm_221(np.full((2, 2, 2), np.inf)), ValueError, "T contains non-finite"),
    ("norm_221 ints", lambda: nb.norm_221(np.ones((2, 2, 2), int)), TypeError, "T must have a real floating"),
    ("norm_221 empty", lambda: nb.norm_221(np.ones((0, 2, 2))), ValueError, "T must not be empty"),
    ("norm_221 max_exact", lambda: nb.norm_221(np.ones((2, 2, 2)), max_exact_d3=30), ValueError, "max_exact_d3"),
    ("sign_vectors", lambda: norms.sign_vectors(0), ValueError, "d3 must be an integer >= 1"),
    # training
    ("step size kernel", lambda: training.step_size_from_kernel(-np.eye(2), 2), ValueError, "no positive eigenvalue"),
    ("train rows", lambda: training.train(MODEL.apply, PARAMS, X, jnp.ones(4), lr=0.1, stop=2),
     ValueError, "y must have one row per input"),
    ("train lr", lambda: training.train(MODEL.apply, PARAMS, X, Y, lr=-0.1, stop=2), ValueError, "lr must be"),
    ("train lr per run", lambda: training.train(MODEL.apply, STACKED, X, Y, lr=[0.1, 0.2], stop=2, runs=True),
     ValueError, "lr must be a positive step size or one per run"),
    ("train unstacked", lambda: training.train(
        MODEL.apply, {"a": jnp.ones((2, 3)), "b": jnp.ones(3)}, X, Y, lr=0.1, stop=2, runs=True), ValueError,
     "leading axis"),
    ("train stop", lambda: training.train(MODEL.apply, PARAMS, X, Y, lr=0.1, stop=2.5), TypeError,
     "stop must be a StopRule"),
    ("loss name", lambda: training.loss_value(MODEL.apply, PARAMS, X, Y, "l1"), ValueError, "unknown loss 'l1'"),
    ("schedule", lambda: training.record_schedule(0), ValueError, "max_steps must be an integer >= 1"),
    # scales, claims, reproductions
    ("scale name", lambda: scales.get("one_hidden_layer", "large"), ValueError,
     "unknown scale 'large'; expected one of 'ci', 'book', 'paper'"),
    ("experiment name", lambda: scales.get("fig9", "ci"), ValueError, "unknown experiment 'fig9'"),
    ("claim condition", lambda: claims.condition("x/y", np.array([1.0]), criterion="c", ref="book, x", label="x"),
     TypeError, "single boolean"),
    ("claim bound sizes", lambda: claims.bound("x/y", [1, 2], [1], ref="book, x", label="x"), ValueError,
     "measured and bound must have the same number of elements"),
    ("claim ref", lambda: claims.bound("x/y", [1], [2], ref="Prop. 2.3", label="x"), ValueError,
     "ref must name the paper and its own result number"),
    ("reproduction", lambda: reproduce.get("fig-1"), ValueError, "unknown name 'fig-1'"),
    # numerical helpers
    ("fit negative", lambda: fitting.power_law_fit([1, 2, 3], [1, 0, 2]), ValueError, "must be positive"),
    ("fit sizes", lambda: fitting.power_law_fit([1, 2, 3], [1, 2]), ValueError, "same number of points"),
    ("fit nan", lambda: fitting.power_law_fit([1, 2, math.nan], [1, 2, 3]), ValueError, "x contains non-finite"),
    ("slope se", lambda: fitting.slope_standard_error([1, 2], [0.1]), ValueError, "same size"),
    ("gauss std", lambda: quadrature.gaussian_expectation(np.cos, std=0.0), ValueError, "std must be"),
    ("gauss fn", lambda: quadrature.gaussian_expectation(3), TypeError, "g must be callable"),
    ("ball radius", lambda: ball.point_in_ball(KEY, PARAMS, -1.0), ValueError, "radius must be"),
    ("sphere radius", lambda: ball.point_on_sphere(KEY, PARAMS, math.inf), ValueError, "radius must be"),
    ("random direction", lambda: ball.random_direction(KEY, {}), ValueError, "tree must be a non-empty"),
    ("markdown rows", lambda: tables.markdown(["a", "b"], [[1]]), ValueError, "one cell per header"),
    ("markdown pipe", lambda: tables.markdown(["a"], [["|x|"]]), ValueError, "contains '\\|'"),
]


@pytest.mark.parametrize("call, error, message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_rejected_with_a_clear_message(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_bad_scale_in_the_environment_lists_the_valid_ones(monkeypatch):
    monkeypatch.setenv("NTKBOOK_SCALE", "huge")
    with pytest.raises(ValueError, match="unknown scale 'huge'; expected one of 'ci', 'book', 'paper'"):
        nb.setup("99-validation")
