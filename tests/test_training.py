import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ntkbook as nb
from ntkbook import kernels, models, training


def test_record_schedule():
    s = training.record_schedule(10_000, per_decade=10)
    assert s[0] == 0 and s[-1] == 10_000 and np.all(np.diff(s) > 0)
    assert set(range(11)) <= set(s.tolist())
    assert len(s) < 60  # log-spaced, not every step


def test_gd_path_matches_manual_steps(x64):
    model, p0 = models.mlp(jax.random.key(0), (6,), input_dim=2, dtype=jnp.float64)
    x = jax.random.normal(jax.random.key(1), (5, 2), jnp.float64)
    y = jax.random.normal(jax.random.key(2), (5,), jnp.float64)
    path, losses = training.gradient_descent_path(model.apply, p0, x, y, lr=0.3, steps=4)
    p = p0
    g = jax.grad(lambda q: training.square_loss(model.apply, q, x, y))
    for _ in range(4):
        p = jax.tree_util.tree_map(lambda a, b: a - 0.3 * b, p, g(p))
    last = jax.tree_util.tree_map(lambda a: a[-1], path)
    for a, b in zip(jax.tree_util.tree_leaves(last), jax.tree_util.tree_leaves(p), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert losses.shape == (5,) and losses[-1] < losses[0]


@pytest.mark.parametrize("loss", ["square", "cross_entropy"])
def test_kernel_tracking_matches_a_python_loop(x64, loss):
    base, _ = models.mlp(jax.random.key(0), (12,), input_dim=1, output_dim=3, use_bias=True, dtype=jnp.float64)
    soft = models.nonlinear_output(base, "softmax")
    keys = jax.random.split(jax.random.key(1), 3)
    stacked = jax.vmap(lambda k: models.mlp(k, (12,), input_dim=1, output_dim=3, use_bias=True,
                                            dtype=jnp.float64)[1])(keys)
    x = 3 * jax.random.normal(jax.random.key(2), (9, 1), jnp.float64)
    y = jax.nn.one_hot(jnp.arange(9) % 3, 3, dtype=jnp.float64)
    lrs = jnp.array([0.2, 0.3, 0.4])
    out = training.gd_with_kernel_tracking(base.apply, stacked, x, y, lr=lrs, max_steps=60, loss=loss,
                                           loss_tol=0.25, track={"logits": base.apply, "softmax": soft.apply})
    grad = jax.jit(jax.grad(lambda p: training.loss_value(base.apply, p, x, y, loss)))
    for r in range(3):
        p = jax.tree_util.tree_map(lambda a, r=r: a[r], stacked)
        k0 = {n: kernels.flatten_ntk(nb.empirical_ntk(fn.apply, p, x, method="jacobian")) for n, fn in
              (("logits", base), ("softmax", soft))}
        t = 0
        while True:
            current = training.loss_value(base.apply, p, x, y, loss)
            if t in out["record_steps"]:
                i = list(out["record_steps"]).index(t)
                for n, fn in (("logits", base), ("softmax", soft)):
                    k = kernels.flatten_ntk(nb.empirical_ntk(fn.apply, p, x, method="jacobian"))
                    ref = float(jnp.linalg.norm(k - k0[n]) / jnp.linalg.norm(k0[n]))
                    assert out["change"][n][r, i] == pytest.approx(ref, rel=1e-9, abs=1e-12)
                assert out["loss"][r, i] == pytest.approx(float(current), rel=1e-10)
            if current < 0.25 or t >= 60:
                break
            p = jax.tree_util.tree_map(lambda a, b, r=r: a - lrs[r] * b, p, grad(p))
            t += 1
        assert out["steps"][r] == t
        assert out["final_loss"][r] == pytest.approx(float(current), rel=1e-10)
        for n in ("logits", "softmax"):
            assert out["sup_change"][n][r] >= out["final_change"][n][r]
            assert out["sup_change"][n][r] == pytest.approx(np.nanmax(np.r_[out["change"][n][r],
                                                                           out["final_change"][n][r]]))


def test_tracking_validates():
    model, p = models.mlp(jax.random.key(0), (4,), input_dim=1)
    stacked = jax.tree_util.tree_map(lambda a: a[None], p)
    with pytest.raises(ValueError, match="unknown loss 'hinge'"):
        training.gd_with_kernel_tracking(model.apply, stacked, jnp.ones((3, 1)), jnp.ones(3), lr=0.1, max_steps=5,
                                         loss="hinge")
    with pytest.raises(ValueError, match="record_steps must lie"):
        training.gd_with_kernel_tracking(model.apply, stacked, jnp.ones((3, 1)), jnp.ones(3), lr=0.1, max_steps=5,
                                         record_steps=[0, 9])
