"""Hessians of scalar functions of a parameter pytree, matrix-free and dense.

The central quantity of Liu, Zhu & Belkin (2020) is the spectral norm ‖H(w)‖ = max |λ(H)| of the
Hessian H = ∂²f/∂w² of the model output at one input.  For the sizes in the book (up to 10⁷–10⁸
parameters) H cannot be formed; everything here needs only Hessian-vector products

    H·u = d/dε ∇f(w + εu) |_{ε=0}      (forward-over-reverse: ``jax.jvp`` of ``jax.grad``),

which cost a small constant times one gradient.

* :func:`hessian_spectral_norm` — the one public ‖H‖: an operator (Hessian-vector products over all
  parameters, or the exact-range compression of :mod:`ntkbook.hessian_compressed` for MLPs/ResNets at
  one input) handed to the one eigen-solver front end :func:`ntkbook.eigen.extreme_eigenpairs`
  (Krylov–Schur Lanczos, ARPACK, dense, or a fixed number of Lanczos steps inside ``jit``/``vmap``);
* :func:`hvp` — one Hessian-vector product; :func:`at_input` — w ↦ f(w; x) for one input;
* :func:`dense_hessian`, :func:`dense_spectral_norm` — the full P × P matrix and its norm, the
  reference for small P;
* :func:`second_derivative_tensor` — ∂²α/∂w² ∈ ℝ^{out×p×p} of a vector-valued map (the tensors whose
  (2,2,1)-norms the paper bounds, Eq. 5 and 13);
* :func:`shallow_hessian_eigenvalues` — the Hessian of the one-hidden-layer network of Eq. (8) in closed
  form (Eq. 9), the reference for the matrix-free norm;
* :func:`hessian_norm_value_and_grad` — ‖H(W)‖ and its gradient (the extreme eigenvalue by ARPACK, its gradient
  by Hellmann–Feynman, :func:`eigenvalue_gradient`), usable inside ``jit``; :func:`ascend_hessian_norm` — the
  largest ‖H(W)‖ over a ball ‖W − W₀‖ ≤ R that the book's projected ascent
  (:func:`ntkbook.ball.projected_ascent`) finds with them — the quantity of Theorem 3.2.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import _validation as V
from . import hessian_compressed as hc
from .ball import Ascent, projected_ascent
from .eigen import EigenResult, SymmetricOperator, extreme_eigenpairs
from .models.conv import ConvNet
from .models.dense import MLP
from .models.resnet import ResNet
from .pytree import FlatSpec, flat_spec, tree_norm, tree_scale

Array = jax.Array
PyTree = Any
ScalarFn = Callable[..., Array]

DENSE_MAX_PARAMS = 20_000
"""Largest P for which :func:`dense_hessian` agrees to build the P × P matrix."""
OPERATORS = ("full", "compressed", "compressed-numpy", "auto")


def hvp(fn: ScalarFn, params: PyTree, tangent: PyTree, *args: Any) -> PyTree:
    """H(params)·tangent for the scalar function ``fn(params, *args)`` (forward-over-reverse).

    ``tangent`` has the structure of ``params``; usable inside ``jit``/``vmap``.
    """
    V.callable_("fn", fn)
    if jax.tree_util.tree_structure(tangent) != jax.tree_util.tree_structure(params):
        raise ValueError("tangent must have the same pytree structure as params")
    return jax.jvp(lambda p: jax.grad(fn)(p, *args), (params,), (tangent,))[1]


@dataclass(frozen=True, eq=False)
class AtInput:
    """The scalar function w ↦ f(w; x) of one input x (and one output index for k > 1 outputs).

    Made by :func:`at_input`.  Calling it returns ``apply_fn(params, x[None])[0]`` (indexed by
    ``output``).  :func:`hessian_spectral_norm` recognizes it: the model (``apply_fn.__self__``) is
    then passed to the compiled Hessian-vector product as data, so one compilation serves every input
    and every model of the same shape, and ``operator="compressed"`` can use the model's structure.
    """

    apply_fn: Callable[[PyTree, Array], Array]
    x: Array
    output: int | None = None

    @property
    def model(self) -> Any:
        """The model whose bound ``apply`` method ``apply_fn`` is, or None."""
        return getattr(self.apply_fn, "__self__", None)

    def __call__(self, params: PyTree) -> Array:
        return _output_at(params, self.apply_fn, self.x, self.output)


def _output_at(params: PyTree, apply_fn: Callable, x: Array, output: int | None) -> Array:
    f = apply_fn(params, x[None])[0]
    if f.ndim == 1:
        if output is None:
            raise ValueError("the model has several outputs: pass output=<index>")
        f = f[output]
    return f


def _model_output(params: PyTree, model: Any, x: Array, output: Any) -> Array:
    """f(w; x) of a model passed as a pytree (module level: one compiled product per model shape)."""
    return _output_at(params, model.apply, x, output)


def at_input(apply_fn: Callable[[PyTree, Array], Array], x: Any, output: int | None = None) -> AtInput:
    """The scalar function w ↦ f(w; x) of one input (and one output index for k > 1 outputs).

    ``x`` is a single input (shape (d,), or a scalar for d = 1; one image for the ``apply`` of a
    :class:`~ntkbook.models.conv.ConvNet`).  Use it to turn a model into the ``fn`` that
    :func:`hessian_spectral_norm` expects: ``hessian_spectral_norm(at_input(model.apply, x), params)``.
    """
    V.callable_("apply_fn", apply_fn)
    image = isinstance(getattr(apply_fn, "__self__", None), ConvNet)
    x = V.array("x", x, ndim=None if image else (0, 1))
    if output is not None:
        output = V.positive_int("output", output, minimum=0)
    return AtInput(apply_fn, x, output)


def _check_scalar_fn(fn: ScalarFn, params: PyTree, args: tuple) -> None:
    try:
        out = jax.eval_shape(fn, params, *args)
    except Exception as err:
        raise ValueError(f"fn(params, *args) failed: {err}") from err
    if out.shape != ():
        raise ValueError(f"fn(params, *args) must return a scalar, got shape {out.shape}")


def shallow_hessian_eigenvalues(activation: Any, v: Any, w: Any, x: Any, root_m: Any) -> Array:
    """The eigenvalues of the Hessian ∂²f(w; x)/∂w² of the network of Eq. (8), in closed form (Eq. 9).

    For f(w; x) = (1/√m) Σᵢ vᵢ σ(wᵢᵀx̃) with x̃ = x/√d (v fixed, w ∈ ℝ^{m×d} trained) and zᵢ = wᵢᵀx̃,
    H = (1/√m) Σᵢ vᵢσ''(zᵢ) (eᵢeᵢᵀ ⊗ x̃x̃ᵀ) is block diagonal with rank-one blocks: its non-zero
    eigenvalues are cᵢ = vᵢσ''(zᵢ)‖x̃‖²/√m (eigenvectors eᵢ ⊗ x̃), so ‖H‖ = maxᵢ|cᵢ|.  For d = 1 the cᵢ are
    the diagonal vᵢσ''(wᵢx)x²/√m of Eq. (9).  Usable inside ``jit``/``vmap``.

    Args:
        activation: an :class:`~ntkbook.activations.Activation` (σ'' from its ``derivative``).
        v: (m,) output weights (zero for the padding units of a padded network).
        w: (m, d) first-layer weights.
        x: (d,) one input.
        root_m: √m of the true width m (of a padded network: not of its array size).

    Returns:
        (m,) the cᵢ.
    """
    xt = x / math.sqrt(x.shape[-1])
    z = jnp.matmul(xt, w.T, precision=jax.lax.Precision.HIGHEST)
    return v * activation.derivative(z, 2) * jnp.sum(xt * xt) / root_m


# ---------------------------------------------------------------------------------------------
# Dense reference and the second-derivative tensor
# ---------------------------------------------------------------------------------------------


def dense_hessian(fn: ScalarFn, params: PyTree, *args: Any) -> Array:
    """The full Hessian ∂²fn/∂w² as a (P, P) array, w = the flattened ``params`` (leaf order).

    For references and small models only: raises ``ValueError`` when P > ``DENSE_MAX_PARAMS``.
    Usable inside ``jit``/``vmap``.
    """
    V.callable_("fn", fn)
    V.pytree_of_arrays("params", params)
    _check_scalar_fn(fn, params, args)
    spec = flat_spec(params)
    if spec.size > DENSE_MAX_PARAMS:
        raise ValueError(
            f"params has P = {spec.size} entries; dense_hessian builds a P x P matrix and is limited to "
            f"P <= {DENSE_MAX_PARAMS}: use hessian_spectral_norm (matrix-free) instead"
        )
    return _dense_hessian(fn, spec, spec.ravel(params), args)


@partial(jax.jit, static_argnames=("fn", "spec"))
def _dense_hessian(fn: ScalarFn, spec: FlatSpec, w: Array, args: tuple) -> Array:
    return jax.hessian(lambda u: fn(spec.unravel(u), *args))(w)


def dense_spectral_norm(fn: ScalarFn, params: PyTree, *args: Any) -> float:
    """max |λ(H)| from the dense Hessian (symmetrized, LAPACK in float64) — the reference value."""
    h = dense_hessian(fn, params, *args)
    return float(extreme_eigenpairs(np.asarray(h, dtype=np.float64), which="LM", method="dense",
                                    vectors=False).value)


def second_derivative_tensor(fn: Callable[[Array], Array], w: Any) -> Array:
    """T_kij = ∂²fn_k/∂w_i∂w_j of a map fn: ℝ^p → ℝ^out at w, shape (out, p, p) (forward-over-reverse).

    ``w`` is a flat vector (p,) (a scalar counts as p = 1); a scalar-valued ``fn`` gives out = 1.
    Computed in the dtype of ``w`` — pass float64 (inside ``jax.enable_x64``) where the result is a
    reference for exact norms.  Usable inside ``jit``; dense, so for small p only.  The paper's tensors
    (Eq. 5, 13) put the output index last: ``jnp.moveaxis(T, 0, -1)``.
    """
    V.callable_("fn", fn)
    w = V.array("w", w, ndim=(0, 1))
    w = w.reshape(-1)

    def flat(u: Array) -> Array:
        return jnp.atleast_1d(fn(u)).reshape(-1)

    return _forward_over_reverse(flat, w)


@partial(jax.jit, static_argnums=0)
def _forward_over_reverse(flat: Callable[[Array], Array], w: Array) -> Array:
    # one compiled program per call (called eagerly, every operation would be compiled on its own)
    return jax.jacfwd(jax.jacrev(flat))(w)


# ---------------------------------------------------------------------------------------------
# The one public spectral norm
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HessianProduct:
    """v ↦ H(params)·v for ``fn(params, *args)`` as the ``matvec(v, params, *args)`` of a
    :class:`~ntkbook.eigen.SymmetricOperator` (hashable by ``fn``: one compilation per function)."""

    fn: ScalarFn

    def __call__(self, v: PyTree, params: PyTree, *args: Any) -> PyTree:
        return hvp(self.fn, params, v, *args)


def hessian_operator(fn: ScalarFn, params: PyTree, args: tuple = ()) -> SymmetricOperator:
    """The Hessian of ``fn(params, *args)`` as a matrix-free :class:`~ntkbook.eigen.SymmetricOperator`
    (vectors shaped like ``params``)."""
    return SymmetricOperator(HessianProduct(fn), params, (params, *args))


def _compressed_numpy_matvec(bp: hc.BasePass) -> Callable[[np.ndarray], np.ndarray]:
    return lambda t: hc.compressed_hvp(bp, t)


def hessian_spectral_norm(
    fn: ScalarFn,
    params: PyTree,
    *,
    args: tuple = (),
    operator: str = "full",
    method: str = "auto",
    tol: float = 1e-6,
    max_iter: int = 1000,
    basis_size: int | None = None,
    num_steps: int = 32,
    key: Array | None = None,
    start: PyTree | None = None,
) -> EigenResult:
    """Spectral norm ‖H‖ = max |λ| of the Hessian of ``fn(params, *args)``.

    Args:
        fn: scalar function of the parameter pytree (e.g. ``at_input(model.apply, x)``); extra
            arguments ``args`` are passed through as traced values, so one compiled function serves
            many inputs.
        params: the point w at which H is taken.
        operator: which operator the eigen-solver sees —
            ``"full"``: Hessian-vector products over all P parameters (any ``fn``);
            ``"compressed"``: QᵀHQ on the N ≈ 2Lm coordinates of the exact range of H (module
            :mod:`ntkbook.hessian_compressed`), by autodiff — needs ``fn = at_input(model.apply, x)`` of
            an NTK-parameterized MLP/ResNet with one output;
            ``"compressed-numpy"``: the same operator written out by hand in float64 NumPy (no
            compilation per network shape; methods "arpack" and "dense");
            ``"auto"``: ``"compressed-numpy"`` for such models with methods "auto"/"arpack",
            ``"compressed"`` with the other methods, ``"full"`` for every other ``fn`` (CNNs...).
            The compressed operators have the non-zero eigenvalues of H, so the same ‖H‖.
        method: the solver of :func:`ntkbook.eigen.extreme_eigenpairs`: ``"lanczos"`` (Krylov–Schur,
            on the device), ``"arpack"`` (scipy), ``"dense"`` (the matrix formed, LAPACK in float64 — the
            reference, small sizes), ``"fixed"`` (``num_steps`` Lanczos steps, pure JAX: usable inside
            ``jit``/``vmap``; check ``.residual``), or ``"auto"`` = "lanczos" for the full operator,
            "arpack" for the compressed ones.
        tol: relative tolerance (Lanczos: both extreme Ritz pairs have residual ‖Hu − θu‖ ≤ tol·max|θ|;
            ARPACK: ≤ tol·|θ|).
        max_iter: the most Hessian-vector products the iteration may use.
        basis_size: Krylov basis size (Lanczos default 32, memory k·P; ARPACK ncv default 24, or 12
            from a warm ``start``).
        num_steps: steps of ``method="fixed"``.
        key: PRNG key for the random start vector (default ``jax.random.key(0)``; ARPACK draws its start
            from ``numpy.random.default_rng``, seed 0 by default or drawn from ``key``).
        start: a start vector with the structure of ``params`` instead of a random one — e.g. the
            eigenvector found at a nearby point, which saves products along a path (compressed first
            for the compressed operators; ignored if it has no component in the range).

    Returns:
        An :class:`~ntkbook.eigen.EigenResult`: ``.value`` (‖H‖), ``.eigenvalue`` (signed),
        ``.eigenvector`` (unit, structure of ``params``), ``.iterations``, ``.products``,
        ``.residual`` (‖Hu − λu‖/|λ|; for the compressed operators measured on QᵀHQ), ``.converged``,
        ``.lambda_min``, ``.lambda_max``, ``.method``.
    """
    V.callable_("fn", fn)
    V.pytree_of_arrays("params", params)
    if not isinstance(args, tuple):
        raise TypeError(f"args must be a tuple of extra arguments for fn, got {type(args).__name__}")
    V.choice("operator", operator, OPERATORS)
    V.choice("method", method, ("auto", "lanczos", "arpack", "dense", "fixed"))
    _check_scalar_fn(fn, params, args)
    options = {"tol": tol, "max_iter": max_iter, "basis_size": basis_size, "num_steps": num_steps, "key": key}
    model = fn.model if isinstance(fn, AtInput) else None
    dense_model = isinstance(fn, AtInput) and fn.output is None and hc.supports(model)
    if operator == "auto":
        if not dense_model:
            operator = "full"
        else:
            operator = "compressed-numpy" if method in ("auto", "arpack") else "compressed"
    if method == "auto":
        method = "lanczos" if operator == "full" else "arpack"
    if operator == "full":
        if isinstance(fn, AtInput) and model is not None and not args and _is_pytree(model):
            fn, args = _model_output, (model, fn.x, fn.output)
        return _full(fn, params, args, method, start, options)
    if not dense_model:
        raise ValueError(f"operator={operator!r} needs fn = at_input(model.apply, x) of an NTK-parameterized MLP or "
                         "ResNet with a scalar output (one output)")
    x = hc.single_input(model, fn.x)
    if operator == "compressed-numpy":
        if method not in ("arpack", "dense"):
            raise ValueError(f"operator='compressed-numpy' supports method 'arpack' or 'dense', got {method!r}: "
                             "use operator='compressed' (autodiff) for the JAX methods")
        bp = hc.base_pass(model, params, x)
        n = hc.compressed_dimension(model, params)
        op = SymmetricOperator(_compressed_numpy_matvec(bp), np.zeros(n), backend="numpy")
        start_y = None
        if start is not None:
            _check_start(start, params)
            start_y = hc.compress_flat(bp, start)
            if not np.any(start_y):
                start_y = None
        res = extreme_eigenpairs(op, which="LM", method=method, start=start_y, **options)
        vec = None if res.eigenvector is None else hc.lift_flat(bp, np.asarray(res.eigenvector), params)
        return replace(res, eigenvector=vec)
    fr = hc.frames(model, params, x)
    y0 = hc.compressed_zero(model, params)
    start_y = None
    if start is not None:
        _check_start(start, params)
        start_y = hc.compress(start, model, params, fr)
        if float(tree_norm(start_y)) == 0.0:
            start_y = None
    res = _full(hc.compressed_output, y0, (model, params, x, fr), method, start_y, options)
    vec = None if res.eigenvector is None else _unit_tree(hc.lift(res.eigenvector, model, params, fr))
    return replace(res, eigenvector=vec)


def _full(fn: ScalarFn, params: PyTree, args: tuple, method: str, start: PyTree | None,
          options: dict[str, Any]) -> EigenResult:
    """The eigen-solver on Hessian-vector products over all of ``params``."""
    if method == "dense":
        h = dense_hessian(fn, params, *args)
        h = 0.5 * (h + h.T)  # autodiff Hessians are symmetric up to rounding
        spec = flat_spec(params)
        res = extreme_eigenpairs(h, which="LM", method="dense")
        count = spec.size if not V.is_tracer(h) else jnp.asarray(spec.size, jnp.int32)
        return replace(res, eigenvector=spec.unravel(jnp.asarray(res.eigenvector, spec.dtype)),
                       iterations=count, products=count)
    return extreme_eigenpairs(hessian_operator(fn, params, args), which="LM", method=method, start=start, **options)


def _check_start(start: PyTree, params: PyTree) -> None:
    if jax.tree_util.tree_structure(start) != jax.tree_util.tree_structure(params):
        raise ValueError("start must have the same pytree structure as params")
    V.pytree_of_arrays("start", start)


def _is_pytree(obj: Any) -> bool:
    """Whether ``obj`` is a registered pytree node (a model), so it can be passed to compiled code as data."""
    return not jax.tree_util.treedef_is_leaf(jax.tree_util.tree_structure(obj))


def _unit_tree(t: PyTree) -> PyTree:
    n = tree_norm(t)
    return tree_scale(1.0 / jnp.where(n > 0, n, 1.0), t)


# ---------------------------------------------------------------------------------------------
# The largest ‖H‖ in a ball: the book's projected ascent of the extreme eigenvalue
# ---------------------------------------------------------------------------------------------


def _check_scalar_output_model(model: Any) -> None:
    """``model`` has a scalar output whose Hessian at one input the ascent can take: an NTK-parameterized MLP or
    ResNet with one output (:func:`ntkbook.hessian_compressed.check_dense_model`) or a ConvNet with one output."""
    if isinstance(model, (MLP, ResNet)):
        hc.check_dense_model(model)
        return
    if not isinstance(model, ConvNet):
        raise TypeError(f"model must be an MLP, ResNet or ConvNet, got {type(model).__name__}")
    if model.output_dim != 1:
        raise ValueError(f"the Hessian is that of a scalar output; model has output_dim={model.output_dim}")


@jax.jit
def _second_directional_grad(model, params, x, direction):
    def second(p):
        first = lambda q: jax.jvp(lambda r: _model_output(r, model, x, None), (q,), (direction,))[1]  # noqa: E731
        return jax.jvp(first, (p,), (direction,))[1]

    value, grad = jax.value_and_grad(second)(params)
    return value, grad, tree_norm(grad)


def eigenvalue_gradient(model: Any, params: PyTree, x: Any, direction: PyTree) -> tuple[float, PyTree]:
    """(uᵀH(W)u, ∇_W uᵀH(W)u) for a fixed direction u — a third-derivative contraction (jvp of jvp, then grad).

    For a simple eigenvalue λ(W) with unit eigenvector u, ∇_W λ = ∇_W (uᵀH(W)u) (Hellmann–Feynman).
    """
    _check_scalar_output_model(model)
    x = hc.single_input(model, x)
    value, grad, _ = _second_directional_grad(model, params, x, direction)
    return float(value), grad


def hessian_norm_value_and_grad(model: Any, x: Any, *,
                                tol: float = 1e-4) -> Callable[[PyTree], tuple[Array, PyTree]]:
    """W ↦ (‖H(W)‖, sign(λ)·∇_W uᵀH(W)u) for H the Hessian of f(·; x): the Hessian norm and its gradient — the
    ``value_and_grad`` that :func:`ntkbook.ball.projected_ascent` takes (run it eagerly, under
    ``jax.disable_jit()``, as :func:`ascend_hessian_norm` does).

    λ is the extreme eigenvalue (‖H‖ = |λ|) with unit eigenvector u, computed by ARPACK on the host to the relative
    ``tol`` (:func:`hessian_spectral_norm`, ``operator="auto"``: the exact-range compression for MLPs and ResNets),
    warm-started from the eigenvector of the previous call; for a simple λ, ∇_W|λ| = sign(λ)∇_W uᵀH(W)u with u
    held fixed (Hellmann–Feynman, :func:`eigenvalue_gradient`), one compiled third-derivative contraction.  Where
    the two extreme eigenvalues have equal magnitude ‖H‖ is not differentiable and this is the gradient of one of
    them.  Not traceable: inside a compiled loop an eigensolver that dispatches XLA computations can wait for the
    thread that waits for it (a process pinned to one core, as make book runs each chapter).
    """
    _check_scalar_output_model(model)
    x, tol = hc.single_input(model, x), V.positive_float("tol", tol)
    last: list[Any] = [None]  # the previous eigenvector: ARPACK's warm start at the next point

    def value_and_grad(params: PyTree) -> tuple[Array, PyTree]:
        with jax.disable_jit(False):  # the Hessian-vector products and the gradient compiled, as everywhere
            res = hessian_spectral_norm(at_input(model.apply, x), params, operator="auto", method="arpack",
                                        tol=tol, start=last[0])
            last[0] = res.eigenvector
            _, grad, _ = _second_directional_grad(model, params, x, res.eigenvector)
        return jnp.abs(res.eigenvalue), tree_scale(jnp.sign(res.eigenvalue), grad)

    return value_and_grad


def ascend_hessian_norm(model: Any, params0: PyTree, x: Any, radius: float, *, steps: int = 8,
                        start: PyTree | None = None, tol: float = 1e-4, step_size: float = 0.125,
                        decay: float = 1.0) -> Ascent:
    """A large ‖H(W)‖ = |λ_extreme(H(W))| over the ball ‖W − W₀‖ ≤ R, found by the book's projected ascent.

    :func:`ntkbook.ball.projected_ascent` from ``start`` (default W₀) with the value and gradient of
    :func:`hessian_norm_value_and_grad` and normalized steps of length step_size·R·decay^t (t = 0, 1, …; by default
    R/8 each), each projected back onto the ball; the best point is kept.  The result is a *lower* estimate of
    max_{ball}‖H‖ found by a local method, never a bound.  Each iterate's eigenpair is warm-started from the
    previous eigenvector.

    Returns:
        an :class:`ntkbook.ball.Ascent`: ``value`` (the best ‖H‖), ``point`` (where), ``start_value``, ``values``
        (‖H‖ at every iterate).
    """
    _check_scalar_output_model(model)
    x = hc.single_input(model, x)
    radius = V.positive_float("radius", radius)
    steps = V.positive_int("steps", steps, minimum=0)
    step_size, decay = V.positive_float("step_size", step_size), V.positive_float("decay", decay)
    tol = V.positive_float("tol", tol)
    start = params0 if start is None else start
    value_and_grad = hessian_norm_value_and_grad(model, x, tol=tol)
    # The ascent's loop runs in Python (its few tree operations eagerly) and calls ARPACK on the host directly.
    with jax.disable_jit():
        return projected_ascent(None, start, params0, radius, steps=steps, step_size=step_size * radius,
                                normalize=True, decay=decay, value_and_grad=value_and_grad)


_MODELS: dict[Any, Any] = {}


__all__ = [
    "DENSE_MAX_PARAMS",
    "AtInput",
    "HessianProduct",
    "ascend_hessian_norm",
    "at_input",
    "dense_hessian",
    "dense_spectral_norm",
    "eigenvalue_gradient",
    "hessian_norm_value_and_grad",
    "hessian_operator",
    "hessian_spectral_norm",
    "hvp",
    "second_derivative_tensor",
    "shallow_hessian_eigenvalues",
]
