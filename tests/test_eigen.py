"""The eigen-solver front end against dense float64 references (numpy.linalg.eigh, independent of
ntkbook.eigen): every method and end, clustered and degenerate spectra, vmapped fixed-step Lanczos,
the refinement of unconverged fixed-step values, and argument validation."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkbook import eigen
from ntkbook.eigen import EigenResult, SymmetricOperator, extreme_eigenpairs


def _sym(n, seed, spectrum=None):
    """A random symmetric n × n matrix (float64), with the given spectrum if one is passed."""
    rng = np.random.default_rng(seed)
    if spectrum is None:
        a = rng.standard_normal((n, n))
        return 0.5 * (a + a.T)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (q * np.asarray(spectrum, dtype=np.float64)) @ q.T


def _reference(a, which):
    lam = np.linalg.eigvalsh(a)
    return {"LM": np.max(np.abs(lam)), "BE": np.max(np.abs(lam)), "LA": lam[-1], "SA": lam[0]}[which], lam


def _tree_matvec(v, a):
    """A pytree operator: the flat vector split into two leaves {"x": (3,), "y": (n − 3,)}."""
    flat = jnp.concatenate([v["x"], v["y"]])
    out = jnp.matmul(a, flat, precision=jax.lax.Precision.HIGHEST)
    return {"x": out[:3], "y": out[3:]}


def _tree_operator(a):
    n = a.shape[0]
    template = {"x": jnp.zeros(3, jnp.float64), "y": jnp.zeros(n - 3, jnp.float64)}
    return SymmetricOperator(_tree_matvec, template, (jnp.asarray(a),))


def _flat(u):
    return np.concatenate([np.asarray(u["x"]), np.asarray(u["y"])]) if isinstance(u, dict) else np.asarray(u)


@pytest.mark.parametrize("which", ["LM", "BE", "LA", "SA"])
@pytest.mark.parametrize("method", ["dense", "lanczos", "arpack", "fixed"])
def test_every_method_and_end_against_dense_reference(x64, method, which):
    n, tol = 40, 1e-10
    a = _sym(n, seed=1)
    ref, lam = _reference(a, which)
    scale = np.max(np.abs(lam))
    kw = {"num_steps": n} if method == "fixed" else {}
    res = extreme_eigenpairs(_tree_operator(a), which=which, method=method, tol=tol, **kw)
    assert isinstance(res, EigenResult) and res.method == method
    # the stopping test bounds the residual by tol·‖A‖, so some eigenvalue is that close (fixed: n steps are exact)
    assert abs(float(res.value) - ref) <= tol * scale * 10 + 1e3 * np.finfo(float).eps * scale
    assert bool(res.converged)
    u = _flat(res.eigenvector)
    assert np.linalg.norm(u) == pytest.approx(1.0, rel=1e-10)
    assert np.linalg.norm(a @ u - float(res.eigenvalue) * u) <= 1e-6 * scale
    if which in ("LM", "BE"):
        assert abs(float(res.eigenvalue)) == pytest.approx(float(res.value))
    if not np.isnan(float(res.lambda_min)):
        assert float(res.lambda_min) == pytest.approx(lam[0], abs=1e-6 * scale)
    if not np.isnan(float(res.lambda_max)):
        assert float(res.lambda_max) == pytest.approx(lam[-1], abs=1e-6 * scale)
    if which == "BE" and method != "arpack":
        assert float(res.lambda_min) == pytest.approx(lam[0], abs=1e-8 * scale)
        assert float(res.lambda_max) == pytest.approx(lam[-1], abs=1e-8 * scale)
    if method in ("lanczos", "arpack"):
        # the reported residual is the measured one of the returned pair (one extra product)
        measured = np.linalg.norm(a @ u - float(res.eigenvalue) * u) / abs(float(res.eigenvalue))
        if which != "BE":
            assert float(res.residual) == pytest.approx(measured, rel=1e-4, abs=1e-15)
        assert res.products >= res.iterations + 1


@pytest.mark.parametrize("method", ["dense", "lanczos", "arpack"])
def test_explicit_matrix_and_numpy_operator(method):
    a = _sym(30, seed=2)
    ref, _ = _reference(a, "LM")
    res = extreme_eigenpairs(a, method=method, tol=1e-8)
    assert res.value == pytest.approx(ref, rel=1e-6)
    if method != "lanczos":
        op = SymmetricOperator(lambda v: a @ v, np.zeros(30), backend="numpy")
        r2 = extreme_eigenpairs(op, method=method, tol=1e-10)
        assert r2.value == pytest.approx(ref, rel=1e-9)
        assert r2.eigenvector.shape == (30,)


@pytest.mark.parametrize("method", ["dense", "lanczos", "arpack", "fixed"])
def test_degenerate_and_clustered_extreme_eigenvalues(x64, method):
    """λ_max repeated three times, a cluster 1e-9 below it, and −λ_max nearly as large in magnitude."""
    n = 60
    spectrum = np.r_[np.linspace(-0.9, 0.8, n - 5), [-1.0 + 1e-7, 1.0 - 1e-9, 1.0, 1.0, 1.0]]
    a = _sym(n, seed=3, spectrum=spectrum)
    kw = {"num_steps": n} if method == "fixed" else {"basis_size": 40} if method == "arpack" else {}
    res = extreme_eigenpairs(_tree_operator(a), which="LM", method=method, tol=1e-10, **kw)
    assert float(res.value) == pytest.approx(1.0, abs=1e-8)
    u = _flat(res.eigenvector)
    # the returned vector lies in the (numerically) top eigenspace: its Rayleigh quotient is 1 and its residual tiny
    assert float(u @ a @ u) == pytest.approx(1.0, abs=1e-8)
    assert np.linalg.norm(a @ u - u) <= 1e-4
    top = extreme_eigenpairs(_tree_operator(a), which="SA", method=method, tol=1e-10, **kw)
    assert float(top.value) == pytest.approx(-1.0 + 1e-7, abs=1e-8)


def test_fixed_steps_vmapped_over_operators(x64):
    mats = np.stack([_sym(12, seed=s) for s in range(5)])
    template = jnp.zeros(12, jnp.float64)

    def norm(a):
        r = eigen.lanczos_fixed(_matvec, template, (a,), num_steps=12)
        return r.value, r.residual, r.lambda_min, r.lambda_max

    values, residuals, lo, hi = jax.jit(jax.vmap(norm))(jnp.asarray(mats))
    for i, a in enumerate(mats):
        ref, lam = _reference(a, "LM")
        assert float(values[i]) == pytest.approx(ref, rel=1e-10)
        assert float(lo[i]) == pytest.approx(lam[0], rel=1e-10) and float(hi[i]) == pytest.approx(lam[-1], rel=1e-10)
        assert float(residuals[i]) <= 1e-8
    # a few steps: Ritz values lie inside the spectrum, and the residual says they are not converged
    few = jax.vmap(lambda a: eigen.lanczos_fixed(_matvec, template, (a,), num_steps=3))(jnp.asarray(mats))
    assert isinstance(few, EigenResult) and few.value.shape == (5,)
    for i, a in enumerate(mats):
        ref, _ = _reference(a, "LM")
        assert float(few.value[i]) <= ref * (1 + 1e-12)
        assert float(few.residual[i]) > 1e-6 and not bool(few.converged[i])


def _matvec(v, a):
    return jnp.matmul(a, v, precision=jax.lax.Precision.HIGHEST)


def test_fixed_front_end_inside_jit_and_dense_traced(x64):
    a = jnp.asarray(_sym(10, seed=7))
    op = jax.jit(lambda m: extreme_eigenpairs(SymmetricOperator(_matvec, jnp.zeros(10), (m,)), method="fixed",
                                              num_steps=10).value)
    ref, lam = _reference(np.asarray(a), "LM")
    assert float(op(a)) == pytest.approx(ref, rel=1e-10)
    for which in ("LM", "BE", "LA", "SA"):
        traced = jax.jit(lambda m, w=which: extreme_eigenpairs(m, which=w, method="dense"))(a)
        host = extreme_eigenpairs(np.asarray(a), which=which, method="dense")
        assert float(traced.value) == pytest.approx(host.value, rel=1e-12)
        assert float(traced.residual) <= 1e-12
    batch = jnp.stack([a, 2 * a, -a])
    vals = jax.jit(lambda m: extreme_eigenpairs(m, which="LA", method="dense", vectors=False).value)(batch)
    np.testing.assert_allclose(vals, [lam[-1], 2 * lam[-1], -lam[0]], rtol=1e-12)
    host = extreme_eigenpairs(np.asarray(batch), which="LA", method="dense", vectors=False).value
    np.testing.assert_allclose(host, vals, rtol=1e-12)


def test_helpers_lambda_min_max_spectral_norm():
    a = _sym(8, seed=4)
    lam = np.linalg.eigvalsh(a)
    assert eigen.lambda_min(a) == pytest.approx(lam[0], rel=1e-12)
    assert eigen.lambda_max(a) == pytest.approx(lam[-1], rel=1e-12)
    assert eigen.spectral_norm(a) == pytest.approx(np.max(np.abs(lam)), rel=1e-12)
    # a non-symmetric input is replaced by its symmetric part
    b = a + np.triu(np.ones((8, 8)), 1)
    assert eigen.lambda_max(b) == pytest.approx(np.linalg.eigvalsh(0.5 * (b + b.T))[-1], rel=1e-12)


def test_refine_unconverged_recomputes_exactly_the_bad_entries(x64):
    mats = [_sym(15, seed=10 + s) for s in range(4)]
    template = jnp.zeros(15, jnp.float64)
    short = jnp.asarray([False, True, False, True])

    def fixed(a, few):  # entries 1 and 3 get 2 steps only (a fixed count inside one vmapped function)
        full = eigen.lanczos_fixed(_matvec, template, (a,), num_steps=15)
        two = eigen.lanczos_fixed(_matvec, template, (a,), num_steps=2)
        return jax.tree_util.tree_map(lambda f, t: jnp.where(few, t, f), full, two)

    batch = jax.vmap(fixed)(jnp.asarray(np.stack(mats)), short)
    calls = []

    def solve(i):
        calls.append(i)
        return extreme_eigenpairs(_sym(15, seed=10 + i), method="lanczos", tol=1e-10)

    out = eigen.refine_unconverged(batch, solve, tol=1e-8)
    assert calls == [1, 3]
    for i, a in enumerate(mats):
        assert out.value[i] == pytest.approx(_reference(a, "LM")[0], rel=1e-8)
    assert np.all(out.residual <= 1e-8) and out.method == "fixed+lanczos"
    again = eigen.refine_unconverged(batch, solve, tol=1e-8)
    np.testing.assert_array_equal(again.value, out.value)  # the same numbers, whatever ran before
    with pytest.raises(TypeError, match="solve"):
        eigen.refine_unconverged(batch, lambda i: 1.0, tol=1e-8)


def test_zero_and_tiny_operators():
    res = extreme_eigenpairs(np.zeros((5, 5)), method="lanczos")
    assert res.value == 0.0 and res.converged
    one = extreme_eigenpairs(np.array([[-3.0]]), method="arpack")
    assert one.value == 3.0 and one.eigenvalue == -3.0
    two = extreme_eigenpairs(np.array([[4.0, 2.0], [2.0, 0.0]]), method="arpack")
    assert two.value == pytest.approx(np.max(np.abs(np.linalg.eigvalsh([[4.0, 2.0], [2.0, 0.0]]))), rel=1e-12)


def test_validation_names_the_argument(monkeypatch):
    a = _sym(6, seed=5)
    op = SymmetricOperator(_matvec, jnp.zeros(6), (jnp.asarray(a, jnp.float32),))
    cases = [
        (dict(which="XX"), ValueError, "unknown which"),
        (dict(method="power"), ValueError, "unknown method"),
        (dict(tol=0.0), ValueError, "tol must be"),
        (dict(max_iter=0), ValueError, "max_iter"),
        (dict(basis_size=2), ValueError, "basis_size"),
        (dict(num_steps=1), ValueError, "num_steps"),
        (dict(vectors=1), TypeError, "vectors"),
    ]
    for kw, err, msg in cases:
        with pytest.raises(err, match=msg):
            extreme_eigenpairs(a, **kw)
    with pytest.raises(ValueError, match="operator must be a square matrix"):
        extreme_eigenpairs(np.ones((3, 4)))
    with pytest.raises(ValueError, match="operator contains non-finite"):
        extreme_eigenpairs(np.full((3, 3), np.nan))
    with pytest.raises(TypeError, match="operator must have a real floating"):
        extreme_eigenpairs(np.ones((3, 3), int))
    with pytest.raises(ValueError, match="start must have the same pytree structure"):
        extreme_eigenpairs(op, start={"a": jnp.ones(6)})
    with pytest.raises(ValueError, match="start must be a non-zero"):
        extreme_eigenpairs(op, start=jnp.zeros(6))
    numpy_op = SymmetricOperator(lambda v: a @ v, np.zeros(6), backend="numpy")
    with pytest.raises(ValueError, match="needs a JAX operator"):
        extreme_eigenpairs(numpy_op, method="lanczos")
    with pytest.raises(ValueError, match="start must be a flat vector of length 6"):
        extreme_eigenpairs(numpy_op, start=np.ones(5))
    with pytest.raises(ValueError, match="unknown backend"):
        SymmetricOperator(_matvec, jnp.zeros(6), backend="torch")
    with pytest.raises(TypeError, match="matvec must be callable"):
        SymmetricOperator(3, jnp.zeros(6))
    with pytest.raises(TypeError, match="operands must be a tuple"):
        SymmetricOperator(_matvec, jnp.zeros(6), [a])
    with pytest.raises(ValueError, match="template of a NumPy operator"):
        SymmetricOperator(lambda v: v, np.zeros((2, 3)), backend="numpy")
    monkeypatch.setattr(eigen, "DENSE_MAX_SIZE", 5)
    with pytest.raises(ValueError, match="limited to n <= 5"):
        extreme_eigenpairs(op, method="dense")
    with pytest.raises(ValueError, match="tol"):
        eigen.refine_unconverged(extreme_eigenpairs(a), lambda i: None, tol=-1.0)


def test_power_iteration_matches_the_dense_top_eigenvalue(x64):
    """Warm-started power iteration against eigh: a PSD matrix with gap λ₂/λ₁ = 1/2, so 60 steps put the
    Rayleigh quotient within (1/2)^120 of λ_max (float64: to rounding); it never exceeds λ_max."""
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.normal(size=(12, 12)))
    lam = np.concatenate([[2.0, 1.0], np.linspace(0.0, 0.9, 10)])
    a = jnp.asarray((q * lam) @ q.T)
    value, u = eigen.power_iteration(a, jnp.asarray(rng.normal(size=12)), 60)
    assert abs(float(value) - 2.0) < 1e-12
    assert abs(abs(float(u @ jnp.asarray(q[:, 0]))) - 1.0) < 1e-12
    few, _ = eigen.power_iteration(a, jnp.asarray(rng.normal(size=12)), 3)
    assert float(few) <= 2.0 + 1e-12
