"""The ball B(w₀, R) (ntkbook.ball) against closed forms: the projection, random points, the one projected
ascent (linear and quadratic objectives whose suprema are known) and the certified sup on a segment."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbook import ball, pytree

TREE = {"a": jnp.ones((2, 3)), "b": [jnp.zeros(4)]}


def _dist(p, q):
    return float(pytree.tree_norm(pytree.tree_sub(p, q)))


def test_random_points():
    d = ball.random_direction(jax.random.key(0), TREE)
    assert float(pytree.tree_norm(d)) == pytest.approx(1.0, rel=1e-6)
    assert _dist(ball.point_on_sphere(jax.random.key(1), TREE, 3.0), TREE) == pytest.approx(3.0, rel=1e-6)
    inside = [_dist(ball.point_in_ball(jax.random.key(k), TREE, 3.0), TREE) for k in range(20)]
    assert max(inside) <= 3.0 * (1 + 1e-6)
    # in ℝ¹⁰ the radius R·U^{1/10} has median R·2^{-1/10} ≈ 0.933 R: most points lie near the sphere
    assert 0.75 * 3.0 < float(np.median(inside)) < 3.0


def test_projection_closed_form(x64):
    center = {"w": jnp.array([1.0, -2.0, 0.5])}
    far = {"w": jnp.array([4.0, 2.0, 0.5])}  # distance 5
    proj = ball.project(far, center, 2.0)
    np.testing.assert_allclose(proj["w"], center["w"] + 2.0 * jnp.array([3.0, 4.0, 0.0]) / 5.0, rtol=1e-15)
    near = {"w": jnp.array([1.5, -2.0, 0.5])}
    assert ball.project(near, center, 2.0)["w"].tolist() == near["w"].tolist()  # inside: unchanged
    np.testing.assert_allclose(_dist(ball.project(near, center, 2.0, sphere=True), center), 2.0, rtol=1e-15)
    assert ball.project(center, center, 2.0, sphere=True)["w"].tolist() == center["w"].tolist()
    with pytest.raises(ValueError, match="radius"):
        ball.project(far, center, -1.0)


def test_ascent_of_a_linear_function_reaches_the_boundary_maximum(x64):
    """sup over B(c, R) of aᵀw is aᵀc + R‖a‖, at c + R·a/‖a‖."""
    a = jnp.array([3.0, -1.0, 2.0])
    center = {"w": jnp.array([0.5, 0.5, -1.0])}
    out = ball.projected_ascent(lambda p: jnp.dot(a, p["w"]), center, center, 1.5, steps=50, step_size=0.3,
                                normalize=True)
    exact = float(jnp.dot(a, center["w"]) + 1.5 * jnp.linalg.norm(a))
    assert float(out.value) == pytest.approx(exact, rel=1e-9)
    np.testing.assert_allclose(out.point["w"], center["w"] + 1.5 * a / jnp.linalg.norm(a), rtol=1e-6)
    assert float(out.start_value) == pytest.approx(float(jnp.dot(a, center["w"])), rel=1e-12)
    assert out.values.shape == (51,)


def test_ascent_finds_an_interior_maximum(x64):
    """−‖w − p‖² with ‖p − c‖ < R has its maximum 0 at p, inside the ball."""
    p_star = jnp.array([0.3, -0.2])
    center = {"w": jnp.zeros(2)}
    out = ball.projected_ascent(lambda p: -jnp.sum((p["w"] - p_star) ** 2), center, center, 1.0, steps=200,
                                step_size=0.25)
    assert float(out.value) == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(out.point["w"], p_star, atol=1e-6)


def test_ascent_on_the_sphere_is_power_iteration(x64):
    """uᵀAu on ‖u‖ = R, jumping to R·∇/‖∇‖ each step, converges to R²λ_max(A) (A positive definite)."""
    rng = np.random.default_rng(0)
    b = rng.standard_normal((6, 6))
    a = jnp.asarray(b @ b.T + np.eye(6))
    zero = {"u": jnp.zeros(6)}
    start = {"u": jnp.asarray(rng.standard_normal(6))}
    out = ball.projected_ascent(lambda p: p["u"] @ a @ p["u"], start, zero, 2.0, steps=300, step_size=np.inf,
                                sphere=True, normalize=True)
    assert float(out.value) == pytest.approx(4.0 * float(np.linalg.eigvalsh(np.asarray(a))[-1]), rel=1e-9)
    assert _dist(out.point, zero) == pytest.approx(2.0, rel=1e-12)
    assert np.all(np.asarray(out.value) >= np.asarray(out.values))  # the best iterate is kept


def test_ascent_under_jit_and_vmap_and_custom_gradient(x64):
    a = jnp.array([[1.0, 0.0], [0.0, 2.0]])

    def run(c):
        center = {"w": c}
        return ball.projected_ascent(lambda p: jnp.dot(a[0], p["w"]), center, center, 1.0, steps=20,
                                     step_size=0.5, normalize=True,
                                     value_and_grad=lambda p: (jnp.dot(a[0], p["w"]), {"w": a[0]})).value

    values = jax.jit(jax.vmap(run))(jnp.array([[0.0, 0.0], [1.0, 1.0]]))
    np.testing.assert_allclose(values, [1.0, 2.0], rtol=1e-12)
    with pytest.raises(ValueError, match="step_size = inf"):
        ball.projected_ascent(lambda p: p["w"][0], {"w": jnp.zeros(2)}, {"w": jnp.zeros(2)}, 1.0, steps=2,
                              step_size=np.inf)


def test_sup_on_segment_is_certified(x64):
    """φ(t) = sin(5t + 0.3) on [0, 1] (|φ'| ≤ 5): the grid max is below the true sup, the certified bound above."""
    start, end = {"w": jnp.array([0.3])}, {"w": jnp.array([5.3])}
    out = ball.sup_on_segment(lambda p: jnp.sin(p["w"][0]), start, end, points=7, lipschitz=5.0)
    true = 1.0  # sin reaches 1 at 0.3 + 5t = π/2, t ≈ 0.254
    assert float(out.grid_max) < true <= float(out.upper)
    assert float(out.upper) == pytest.approx(float(out.grid_max) + 5.0 / 12.0, rel=1e-12)
    assert out.values.shape == (7,)
    assert np.isnan(float(ball.sup_on_segment(lambda p: p["w"][0], start, end, points=3).upper))
    with pytest.raises(ValueError, match="points"):
        ball.sup_on_segment(lambda p: p["w"][0], start, end, points=1)
