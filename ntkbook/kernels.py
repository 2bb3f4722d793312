"""Empirical tangent kernels, Eq. (1) of Liu, Zhu & Belkin (2020) — the package's one tangent-kernel module.

K_{(x,z)}(w) = ∇_w f(w; x)ᵀ ∇_w f(w; z).  For k outputs the kernel is a (k × k) block per pair of
inputs, K[i, j, a, b] = ⟨∇_w f_a(w; x_i), ∇_w f_b(w; z_j)⟩, the layout neural-tangents returns with
``trace_axes=()``.

Public functions:

* :func:`empirical_ntk` — the kernel, (n₁, n₂) for one output, (n₁, n₂, k, k) for k > 1
  (``flat=True``: the (n₁k × n₂k) matrix of :func:`flatten_ntk`);
* :func:`kernel_diagonal` — K(x_i, x_i) for every input (one per-input Jacobian, no n² work);
* :func:`jacobian_matrix` — J ∈ ℝ^{nk×P} itself, for the few computations that need J;
* :func:`flatten_ntk`, :func:`relative_change` (‖K − K₀‖_F/‖K₀‖_F);
* :func:`layerwise_ntk` — the structured formula of a network of dense layers from its forward and
  backward signals (used by the ``"structured"`` method and by the Hessian code, which has the
  signals of one input at hand); :func:`supports` tells whether a model has the structured path.

Every method evaluates ``apply_fn`` on single inputs (vmapped over the rows of x), so ``apply_fn``
must treat the rows of x independently — row i of the output depends on x[i] only — as every
model of the package does (the tangent kernel of an input is otherwise not defined).

Three methods, which agree to floating-point precision (tests):

* ``"jacobian"`` — Jacobian contraction: the per-input Jacobians J ∈ ℝ^{nk×P} (one vmapped
  reverse-mode pass per input and output: each row of the Jacobian is computed once, never as a
  sum over the other inputs' zero rows), then K = J₁J₂ᵀ, one matrix product per parameter leaf.
  When x2 is x1 (``x2=None``) only one Jacobian is formed.  Memory O((n₁ + n₂) k P); cost
  2 n₁k n₂k P flops for the products plus ≈ 2 n k P for the Jacobians.
* ``"ntvp"`` — NTK-vector products: the columns of K for input x2_j and all k outputs are
  J₁(J₂ᵀe_{jb}) — one vmapped vector-Jacobian product per input (all k cotangents in one batched
  backward pass) followed by k Jacobian-vector products of f on x1, linearized once (one shared
  forward pass).  Inputs x2_j are processed a few at a time (``batch_size`` columns), so memory is
  O(batch_size · P) and no Jacobian is ever stored.  When x2 is x1 the inputs are split into blocks
  and the columns of block c need only the rows of blocks ≤ c (the rest is K's transpose):
  (B + 1)/(2B) of the Jacobian-vector-product work for B blocks.  Cost ≈ n₂k (2 + 4 n₁) P flops.
* ``"structured"`` — for networks built from dense layers (:class:`~ntkbook.models.dense.MLP`,
  :class:`~ntkbook.models.dense.ShallowNetwork`, :class:`~ntkbook.models.dense.RandomFeatures`,
  :class:`~ntkbook.models.resnet.ResNet`, and :class:`~ntkbook.models.wrappers.NonLinearOutput` around
  them): the kernel from forward activations and backward pre-activation gradients, layer by layer
  (:func:`layerwise_ntk`); cost Σ_l n₁n₂(k² m_l + m_{l−1}) plus one forward and one k-output backward
  pass, no Jacobian.

``"auto"`` picks ``"structured"`` when the model supports it; otherwise ``"jacobian"`` when both
Jacobians fit in :data:`JACOBIAN_MEMORY_BUDGET` and ``"ntvp"`` when they do not.

**The structured formula** (cf. the "structured derivatives" of Novak et al. 2022).  For dense layers
z⁽ˡ⁾ = c_l W⁽ˡ⁾α⁽ˡ⁻¹⁾ + b⁽ˡ⁾ (c_l = 1/√m_{l−1} in the NTK parameterization, 1 in the LeCun one,
Eq. 39) the gradient of output a with respect to W⁽ˡ⁾ is the outer product c_l δ⁽ˡ⁾_a α⁽ˡ⁻¹⁾ᵀ, with
δ⁽ˡ⁾_a = ∂f_a/∂z⁽ˡ⁾ the backward signal.  Inner products of outer products factor, so

K[i, j, a, b] = Σ_l ⟨δ⁽ˡ⁾_a(x_i), δ⁽ˡ⁾_b(x'_j)⟩ · ( c_l² ⟨α⁽ˡ⁻¹⁾(x_i), α⁽ˡ⁻¹⁾(x'_j)⟩ + 1[bias] )
              + 1{a = b} · c_out² ⟨α⁽ᴸ⁾(x_i), α⁽ᴸ⁾(x'_j)⟩          (trainable output layer v).

A residual network (Eq. 97; Eq. 80 of the supplement) has the same formula with its own δ (the skip
connections enter the backward recursion only).  A non-linear output f̃ = φ(f) (Eq. 26) multiplies by
the output Jacobian: K̃ = J_φ(x) K J_φ(x')ᵀ for each pair of inputs, with J_φ = diag(φ'(f)) elementwise
or diag(p) − ppᵀ for the softmax.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import _validation as V
from .models import MLP, NonLinearOutput, RandomFeatures, ShallowNetwork
from .models.common import HIGHEST, inputs
from .models.resnet import ResNet
from .pytree import num_params

Array = jax.Array
PyTree = Any
ApplyFn = Callable[[PyTree, Array], Array]

METHODS = ("auto", "jacobian", "ntvp", "structured")
JACOBIAN_MEMORY_BUDGET = 1 << 30
"""Bytes that ``method="auto"`` lets the Jacobians take (1 GiB)."""
NTVP_STEP_BYTES = 64 << 20
"""Bytes of vectors J₂ᵀe that one step of ``"ntvp"`` holds by default (64 MiB; at least the k columns of
two inputs).  Small steps are faster, not only leaner: the vectors of one step are written by the
backward pass and read at once by the forward-mode pass, and measured on a 2-core CPU, steps of
≈ 30–60 MB ran 2–3× faster than one step holding every column."""

SUPPORTED = (MLP, ShallowNetwork, RandomFeatures, ResNet, NonLinearOutput)
"""Models with a structured path (``NonLinearOutput`` around one of the others)."""

MAX_SYMMETRY_BLOCKS = 4
"""x2 = x1 in ``"ntvp"``: the inputs are split into at most this many blocks (at least two inputs each)."""


# ---------------------------------------------------------------------------------------------
# Shapes and small helpers
# ---------------------------------------------------------------------------------------------


def _output_shape(apply_fn: ApplyFn, params: PyTree, x: Array) -> tuple[int, ...]:
    try:
        out = jax.eval_shape(apply_fn, params, x)
    except Exception as err:  # a readable message for the usual mistakes (wrong x shape, ...)
        raise ValueError(f"apply_fn(params, x) failed for x of shape {tuple(x.shape)}: {err}") from err
    if out.ndim not in (1, 2) or out.shape[0] != x.shape[0]:
        raise ValueError(
            f"apply_fn(params, x) must return shape (n,) or (n, k) with n = {x.shape[0]}, got {tuple(out.shape)}"
        )
    return tuple(out.shape)


def _num_outputs(apply_fn: ApplyFn, params: PyTree, x: Array) -> int:
    """k, checking that apply_fn maps a batch to (n,)/(n, k) and one row to (1,)/(1, k)."""
    shape = _output_shape(apply_fn, params, x)
    k = 1 if len(shape) == 1 else shape[1]
    row = tuple(jax.eval_shape(apply_fn, params, x[:1]).shape)
    if row not in ((1,), (1, k)) or len(row) != len(shape):
        raise ValueError(f"apply_fn must treat the rows of x independently: it returns {shape} for {x.shape[0]} "
                         f"inputs but {row} for one input")
    return k


def _as_nk(f: Array) -> Array:
    """Outputs as (n, k) (scalar outputs get k = 1)."""
    return f[:, None] if f.ndim == 1 else f


def _row_fn(apply_fn: ApplyFn) -> Callable[[PyTree, Array], Array]:
    """f(w; x_i) for one input x_i (no batch axis): shape (k,)."""
    return lambda params, xi: _as_nk(apply_fn(params, xi[None]))[0]


def _split(apply_fn: ApplyFn) -> tuple[Callable, Any]:
    """(function, model) for the bound ``apply`` of a pytree model — the model then enters the compiled
    functions as data, so a new model of the same shapes reuses the compilation; (apply_fn, None) else."""
    owner, func = getattr(apply_fn, "__self__", None), getattr(apply_fn, "__func__", None)
    if owner is None or func is None:
        return apply_fn, None
    leaves, _ = jax.tree_util.tree_flatten(owner)
    if len(leaves) == 1 and leaves[0] is owner:  # not a registered pytree
        return apply_fn, None
    return func, owner


def _bind(fn: Callable, owner: Any) -> ApplyFn:
    return fn if owner is None else partial(fn, owner)


def _einsum(spec: str, *ops: Any) -> Any:
    """einsum in full precision: NumPy for NumPy operands (float64 stays float64), else JAX."""
    if all(isinstance(op, np.ndarray) for op in ops):
        return np.einsum(spec, *ops)
    return jnp.einsum(spec, *ops, precision=HIGHEST)


def _itemsize(params: PyTree) -> int:
    return max(leaf.dtype.itemsize for leaf in jax.tree_util.tree_leaves(params))


def _mirror(kernel: Array, upper: np.ndarray) -> Array:
    """Fill K[i, j] for ``upper[i, j] == False`` from K[j, i]ᵀ (K[i, j, a, b] = K[j, i, b, a])."""
    return jnp.where(jnp.asarray(upper)[:, :, None, None], kernel, kernel.transpose(1, 0, 3, 2))


# ---------------------------------------------------------------------------------------------
# Jacobian contraction
# ---------------------------------------------------------------------------------------------


def _row_jacobians(apply_fn: ApplyFn, params: PyTree, x: Array) -> list[Array]:
    """Per-input Jacobians, vmapped over the rows of x: one (n, k, p_leaf) array per parameter leaf."""
    jac = jax.vmap(lambda xi: jax.jacrev(_row_fn(apply_fn))(params, xi))(x)
    return [leaf.reshape(leaf.shape[0], leaf.shape[1], -1) for leaf in jax.tree_util.tree_leaves(jac)]


def _contract(j1: list[Array], j2: list[Array]) -> Array:
    """Σ_leaves J₁J₂ᵀ as (n1, n2, k, k): one (n1k × p)(p × n2k) product per leaf."""
    n1, k = j1[0].shape[:2]
    n2 = j2[0].shape[0]
    gram = sum(jax.lax.dot_general(a.reshape(n1 * k, -1), b.reshape(n2 * k, -1), (((1,), (1,)), ((), ())),
                                   precision=HIGHEST) for a, b in zip(j1, j2, strict=True))
    return gram.reshape(n1, k, n2, k).transpose(0, 2, 1, 3)


@partial(jax.jit, static_argnames=("fn",))
def _ntk_jacobian(fn: Callable, owner: Any, params: PyTree, x1: Array, x2: Array | None) -> Array:
    apply_fn = _bind(fn, owner)
    j1 = _row_jacobians(apply_fn, params, x1)
    return _contract(j1, j1 if x2 is None else _row_jacobians(apply_fn, params, x2))


# ---------------------------------------------------------------------------------------------
# NTK-vector products
# ---------------------------------------------------------------------------------------------


def _map_rows(fn: Callable[[Array], Array], x: Array, rows: int) -> Array:
    """fn over the rows of x, ``rows`` at a time (each call vmapped), results concatenated.

    No call ever gets a single row when x has more than one: a matrix-vector product rounds
    differently from the matrix-matrix products of the batched forward pass, and the rounding of a
    pre-activation next to a ReLU kink would flip σ' (a jump of K, not a float-precision difference).
    """
    n = x.shape[0]
    rows = max(1, min(rows, n))
    if n > 1:
        rows = max(rows, 2)
    full, rest = divmod(n, rows)
    if rest == 1 and full > 0:  # merge the lone row into the last call
        full, rest = full - 1, rows + 1
    parts = []
    if full:
        chunks = x[: full * rows].reshape(full, rows, *x.shape[1:])
        out = jax.lax.map(jax.vmap(fn), chunks) if full > 1 else jax.vmap(fn)(chunks[0])[None]
        parts.append(out.reshape(full * rows, *out.shape[2:]))
    if rest:
        parts.append(jax.vmap(fn)(x[full * rows:]))
    return parts[0] if len(parts) == 1 else jnp.concatenate(parts)


def _ntvp_columns(apply_fn: ApplyFn, params: PyTree, rows_x1: Array, cols_x2: Array, rows: int) -> Array:
    """K[i, j, a, b] for i over ``rows_x1`` and j over ``cols_x2``: (n_rows, n_cols, k, k)."""
    _, push = jax.linearize(lambda p: _as_nk(apply_fn(p, rows_x1)), params)  # one forward pass on x1
    f_row = _row_fn(apply_fn)

    def columns(xj: Array) -> Array:  # the k columns of input x2_j: (k, n_rows, k)
        fj, pull = jax.vjp(lambda p: f_row(p, xj), params)
        tangents = jax.vmap(pull)(jnp.eye(fj.shape[0], dtype=fj.dtype))[0]  # J₂ᵀe_b, all b in one pass
        return jax.vmap(push)(tangents)

    cols = _map_rows(columns, cols_x2, rows)  # (n_cols, k, n_rows, k): [j, b, i, a]
    return cols.transpose(2, 0, 3, 1)


def symmetry_blocks(n: int) -> list[tuple[int, int]]:
    """The blocks [start, stop) of inputs that ``"ntvp"`` uses when x2 = x1: at most
    :data:`MAX_SYMMETRY_BLOCKS`, of at least two inputs each; the columns of block c are computed on
    the rows 0..stop_c only."""
    count = max(1, min(MAX_SYMMETRY_BLOCKS, n // 2))
    edges = np.linspace(0, n, count + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in itertools.pairwise(edges)]


@partial(jax.jit, static_argnames=("fn", "rows"))
def _ntk_ntvp(fn: Callable, owner: Any, params: PyTree, x1: Array, x2: Array | None, rows: int) -> Array:
    apply_fn = _bind(fn, owner)
    if x2 is not None:
        return _ntvp_columns(apply_fn, params, x1, x2, rows)
    n = x1.shape[0]
    blocks = symmetry_blocks(n)
    if len(blocks) == 1:
        return _ntvp_columns(apply_fn, params, x1, x1, rows)
    # columns of block c need only the rows of blocks 0..c; the rest of K is the transpose
    parts = [_ntvp_columns(apply_fn, params, x1[:stop], x1[start:stop], rows) for start, stop in blocks]
    kernel = jnp.concatenate([jnp.pad(p, ((0, n - p.shape[0]), (0, 0), (0, 0), (0, 0))) for p in parts], axis=1)
    owner = np.concatenate([np.full(stop - start, c) for c, (start, stop) in enumerate(blocks)])
    return _mirror(kernel, owner[:, None] <= owner[None, :])


# ---------------------------------------------------------------------------------------------
# Structured path: networks of dense layers
# ---------------------------------------------------------------------------------------------


def layerwise_ntk(
    inputs1: Sequence[Any],
    signals1: Sequence[Any],
    inputs2: Sequence[Any] | None = None,
    signals2: Sequence[Any] | None = None,
    *,
    scales: Sequence[float],
    bias: bool = False,
    features1: Any = None,
    features2: Any = None,
    feature_scale: float = 1.0,
) -> Any:
    """The tangent kernel of a network of dense layers from its forward and backward signals.

    K[i, j, a, b] = Σ_l ⟨δ⁽ˡ⁾_a(x_i), δ⁽ˡ⁾_b(x'_j)⟩ (c_l² ⟨α⁽ˡ⁻¹⁾(x_i), α⁽ˡ⁻¹⁾(x'_j)⟩ + 1[bias])
                  + 1{a = b} c_out² ⟨φ(x_i), φ(x'_j)⟩      (see the module docstring).

    Args:
        inputs1: per layer l, the layer's input α⁽ˡ⁻¹⁾ at the inputs x, shape (n1, m_{l−1}).
        signals1: per layer l, δ⁽ˡ⁾ = ∂f/∂z⁽ˡ⁾ for every output, shape (n1, k, m_l).
        inputs2, signals2: the same at the second inputs x' (default: x' = x, nothing recomputed).
        scales: c_l, the factor of each layer's weights in its pre-activation (1/√m_{l−1} in the NTK
            parameterization, 1 in the LeCun one).
        bias: whether every layer has a trainable bias (adds ⟨δ, δ'⟩).
        features1, features2: the last hidden layer α⁽ᴸ⁾ (n, m_L) when the output layer is trained
            (the features of a random-features model), else None.
        feature_scale: c_out, the factor of the output weights.

    Returns:
        (n1, n2, k, k).  NumPy operands give a NumPy result in their own precision (float64 stays
        float64); JAX operands give a JAX array computed in full float32/float64 precision.
    """
    if len(inputs1) != len(signals1) or len(scales) != len(inputs1):
        raise ValueError(f"inputs1, signals1 and scales must have one entry per layer, got {len(inputs1)}, "
                         f"{len(signals1)} and {len(scales)}")
    if not inputs1 and features1 is None:
        raise ValueError("layerwise_ntk needs at least one layer or features1")
    if inputs2 is None and signals2 is None and features2 is None:  # x' = x
        inputs2, signals2, features2 = inputs1, signals1, features1
    else:
        inputs2 = [] if inputs2 is None else inputs2
        signals2 = [] if signals2 is None else signals2
        if len(inputs2) != len(inputs1) or len(signals2) != len(signals1) or (features1 is None) != (features2 is None):
            raise ValueError("inputs2, signals2 and features2 must describe the same layers as inputs1, signals1 "
                             "and features1")
    kernel = None
    for a1, d1, a2, d2, c in zip(inputs1, signals1, inputs2, signals2, scales, strict=True):
        gram = _einsum("im,jm->ij", a1, a2) * c**2
        if bias:
            gram = gram + 1.0
        term = _signal_gram(d1, d2) * gram[:, :, None, None]
        kernel = term if kernel is None else kernel + term
    if features1 is not None:
        k = signals1[0].shape[1] if signals1 else 1
        xp = np if isinstance(features1, np.ndarray) and isinstance(features2, np.ndarray) else jnp
        out = _einsum("im,jm->ij", features1, features2) * feature_scale**2
        term = out[:, :, None, None] * xp.eye(k, dtype=out.dtype)
        kernel = term if kernel is None else kernel + term
    return kernel


def _signal_gram(d1: Any, d2: Any) -> Any:
    """⟨δ_a(x_i), δ_b(x'_j)⟩ as (n1, n2, k, k), through one (n1·k × m)(m × n2·k) product."""
    (n1, k, m), n2 = d1.shape, d2.shape[0]
    a, b = d1.reshape(n1 * k, m), d2.reshape(n2 * k, m)
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        g = a @ b.T
    else:
        g = jax.lax.dot_general(a, b, (((1,), (1,)), ((), ())), precision=HIGHEST)
    return g.reshape(n1, k, n2, k).transpose(0, 2, 1, 3)


def _model_of(apply_fn: Callable) -> Any | None:
    """The model whose ``apply`` method ``apply_fn`` is, if it has a structured path; else None."""
    model = getattr(apply_fn, "__self__", None)
    func = getattr(apply_fn, "__func__", None)
    if model is None or func is None or not isinstance(model, SUPPORTED) or func is not type(model).apply:
        return None
    if isinstance(model, NonLinearOutput):
        base = model.base
        if not isinstance(base, SUPPORTED) or isinstance(base, NonLinearOutput):
            return None
    return model


def supports(apply_fn: Callable) -> bool:
    """True when ``method="structured"`` can compute the kernel of ``apply_fn``: the ``apply`` method of
    an MLP, ResNet, ShallowNetwork, RandomFeatures model, or of a NonLinearOutput around one of them."""
    return _model_of(apply_fn) is not None


def _output_dim(model: Any) -> int:
    base = model.base if isinstance(model, NonLinearOutput) else model
    return int(base.output_dim) if isinstance(base, (MLP, ResNet)) else 1


def _input_dim(model: Any) -> int:
    base = model.base if isinstance(model, NonLinearOutput) else model
    return base.input_dim if hasattr(base, "input_dim") else int(base.U.shape[1])


def _scale(model: Any, fan_in: int) -> float:
    """c = 1/√fan_in of a layer in the NTK parameterization; 1 in the LeCun one (Eq. 39)."""
    return 1.0 / math.sqrt(fan_in) if getattr(model, "parameterization", "ntk") == "ntk" else 1.0


def _dense_signals(model: MLP | ResNet, params: PyTree, x: Array) -> tuple[list[Array], list[Array], Array | None]:
    """Layer inputs α⁽ˡ⁻¹⁾ (n, m_{l−1}), backward signals δ⁽ˡ⁾ (n, k, m_l), and α⁽ᴸ⁾ if v is trained.

    One forward pass and one backward pass carrying all k outputs at once; in a ResNet the skip
    connections add ∂f/∂α⁽ˡ⁾ to the signal passed down (∂α⁽ˡ⁾/∂α⁽ˡ⁻¹⁾ = I + diag(σ')W⁽ˡ⁾/√m).
    """
    fp = model.forward(params, x)
    residual = isinstance(model, ResNet)
    v = model.fixed_v if model.fixed_v is not None else params["v"]
    back = (v.T * _scale(model, model.widths[-1]))[None, :, :]  # ∂f/∂α⁽ᴸ⁾: (1, k, m_L)
    deltas: list[Array] = [None] * model.depth  # type: ignore[list-item]
    for i in range(model.depth - 1, -1, -1):
        d = back * model.activations[i].derivative(fp.pre[i])[:, None, :]
        deltas[i] = d
        if i > 0:
            w = params["layers"][i]["W"]  # (m_i, m_{i−1})
            # as one 2-D product (n·k, m_i)(m_i, m_{i−1}): XLA's CPU backend runs the 3-D form slower
            down = jnp.matmul(d.reshape(-1, d.shape[-1]), w, precision=HIGHEST).reshape(*d.shape[:2], -1)
            down = down * _scale(model, w.shape[1])
            back = down + back if residual else down
    return fp.post[:-1], deltas, (fp.post[-1] if model.fixed_v is None else None)


def _base_kernel(model: Any, params: PyTree, x1: Array, x2: Array | None) -> Array:
    """(n1, n2, k, k) of MLP / ResNet / ShallowNetwork / RandomFeatures; x2 = None means x2 = x1."""
    if isinstance(model, RandomFeatures):
        phi1 = model.features(x1)
        phi2 = None if x2 is None else model.features(x2)
        return layerwise_ntk([], [], features2=phi2, scales=[], features1=phi1)
    if isinstance(model, ShallowNetwork):
        c_in, c_out = _scale(model, model.input_dim), _scale(model, model.width)

        def signals(x: Array) -> tuple[list[Array], list[Array]]:
            z = jnp.matmul(x, params["w"].T, precision=HIGHEST) * c_in
            return [x], [(model.v * c_out * model.activation.derivative(z))[:, None, :]]

        s1 = signals(x1)
        s2 = (None, None) if x2 is None else signals(x2)
        return layerwise_ntk(*s1, *s2, scales=[c_in])
    a1, d1, f1 = _dense_signals(model, params, x1)
    a2, d2, f2 = (None, None, None) if x2 is None else _dense_signals(model, params, x2)
    scales = [_scale(model, a.shape[1]) for a in a1]
    return layerwise_ntk(a1, d1, a2, d2, scales=scales, bias=bool(getattr(model, "use_bias", False)),
                         features1=f1, features2=f2, feature_scale=_scale(model, model.widths[-1]))


def _output_jacobian(model: NonLinearOutput, f: Array) -> Array:
    """J_φ(f) per input: (n, k, k)."""
    if model.phi == "softmax":
        p = jax.nn.softmax(f, axis=-1)
        return jax.vmap(jnp.diag)(p) - p[:, :, None] * p[:, None, :]
    return jax.vmap(jnp.diag)(model.phi.derivative(f))


@jax.jit
def _ntk_structured(model: Any, params: PyTree, x1: Array, x2: Array | None) -> Array:
    if not isinstance(model, NonLinearOutput):
        return _base_kernel(model, params, x1, x2)
    base = model.base
    kernel = _base_kernel(base, params, x1, x2)

    def output_jacobian(x: Array) -> Array:
        return _output_jacobian(model, _as_nk(base.apply(params, x)))

    j1 = output_jacobian(x1)
    j2 = j1 if x2 is None else output_jacobian(x2)
    return _einsum("iac,ijcd,jbd->ijab", j1, kernel, j2)


# ---------------------------------------------------------------------------------------------
# Public front ends
# ---------------------------------------------------------------------------------------------


def _choose_method(params: PyTree, n1: int, n2: int | None, k: int) -> str:
    jac_bytes = (n1 + (n2 or 0)) * k * num_params(params) * _itemsize(params)
    return "jacobian" if jac_bytes <= JACOBIAN_MEMORY_BUDGET else "ntvp"


def empirical_ntk(
    apply_fn: ApplyFn,
    params: PyTree,
    x1: Any,
    x2: Any = None,
    *,
    method: str = "auto",
    batch_size: int | None = None,
    flat: bool = False,
) -> Array:
    """The empirical tangent kernel of ``apply_fn`` at ``params`` (Eq. 1).

    Args:
        apply_fn: ``apply_fn(params, x) -> (n,) or (n, k)``, treating the rows of x independently.
        params: any pytree of floating arrays (the trainable parameters w).
        x1: inputs, ``(n1, ...)`` as ``apply_fn`` expects them.
        x2: second set of inputs (default: x1; the symmetry K = Kᵀ is then used).
        method: ``"jacobian"``, ``"ntvp"``, ``"structured"`` or ``"auto"`` (module docstring).
        batch_size: for ``"ntvp"``, how many kernel columns to compute at once, rounded to whole
            inputs (k columns each, at least two inputs; memory O(batch_size · P)); default: as many
            as fit in :data:`~ntkbook.kernels.NTVP_STEP_BYTES`.
        flat: return the (n1·k, n2·k) matrix of :func:`~ntkbook.kernels.flatten_ntk` (rows (i, a), columns (j, b)).

    Returns:
        ``(n1, n2)`` for scalar outputs (also when k = 1), ``(n1, n2, k, k)`` for k > 1, with
        ``K[i, j, a, b] = ⟨∇f_a(x1_i), ∇f_b(x2_j)⟩``; ``(n1·k, n2·k)`` with ``flat=True``.
    """
    V.callable_("apply_fn", apply_fn)
    # finiteness of params is checked on the (small) kernel instead of the (large) parameters: a
    # non-finite weight makes every kernel entry it touches non-finite (x·NaN = NaN, 0·inf = NaN), so
    # the P-sized scan (≈ 15 ms for P = 1.5·10⁷ on 2 CPU cores, as long as the structured kernel
    # itself) runs only when the kernel shows a non-finite value, to name the culprit
    V.pytree_of_arrays("params", params, finite=False)
    V.choice("method", method, METHODS)
    x1 = V.array("x1", x1)
    x2 = None if x2 is None or x2 is x1 else V.array("x2", x2)
    if batch_size is not None:
        batch_size = V.positive_int("batch_size", batch_size)
    model = _model_of(apply_fn)
    if method == "structured" and model is None:
        names = ", ".join(c.__name__ for c in SUPPORTED)
        raise ValueError(f"method='structured' needs apply_fn to be the apply method of a dense model ({names}); "
                         "use method='jacobian' or 'ntvp' for other functions")
    if model is not None and method in ("auto", "structured"):
        # a known dense model: shapes follow from its configuration (no tracing of apply_fn)
        d = _input_dim(model)
        k = _output_dim(model)
        kernel = _ntk_structured(model, params, inputs(x1, d), None if x2 is None else inputs(x2, d))
    else:
        k = _num_outputs(apply_fn, params, x1)
        if x2 is not None and _num_outputs(apply_fn, params, x2) != k:
            raise ValueError(f"apply_fn returns {k} outputs for x1 but {_num_outputs(apply_fn, params, x2)} for x2")
        if method == "auto":
            method = _choose_method(params, x1.shape[0], None if x2 is None else x2.shape[0], k)
        if method == "jacobian":
            kernel = _ntk_jacobian(*_split(apply_fn), params, x1, x2)
        else:
            if batch_size is None:
                batch_size = NTVP_STEP_BYTES // max(1, num_params(params) * _itemsize(params))
            kernel = _ntk_ntvp(*_split(apply_fn), params, x1, x2, max(1, batch_size // k))
    if not V.is_tracer(kernel) and not bool(jnp.isfinite(kernel).all()):
        V.pytree_of_arrays("params", params)  # raises ValueError naming params if a weight is non-finite
    if flat:
        return flatten_ntk(kernel)
    return kernel[:, :, 0, 0] if k == 1 else kernel


def flatten_ntk(kernel: Array) -> Array:
    """(n1, n2, k, k) → the (n1·k, n2·k) matrix with rows (i, a) and columns (j, b).

    This is the "full kernel" of the paper's experiments (Appendix B: an (N·3) × (N·3) matrix).
    A (n1, n2) kernel is returned unchanged.
    """
    kernel = V.array("kernel", kernel, ndim=(2, 4))
    if kernel.ndim == 2:
        return kernel
    n1, n2, k1, k2 = kernel.shape
    return kernel.transpose(0, 2, 1, 3).reshape(n1 * k1, n2 * k2)


def kernel_diagonal(apply_fn: ApplyFn, params: PyTree, x: Any) -> Array:
    """K_{(x_i, x_i)}(w) for every input: (n,) for one output (‖∇_w f(w; x_i)‖²), (n, k, k) for k > 1.

    One Jacobian per input, vmapped; cheaper than the full kernel when only the diagonal is needed
    (e.g. Eq. 10, K(x, x) = Θ(1)).
    """
    V.callable_("apply_fn", apply_fn)
    V.pytree_of_arrays("params", params)
    x = V.array("x", x)
    k = _num_outputs(apply_fn, params, x)
    diag = _kernel_diagonal(*_split(apply_fn), params, x)
    return diag[:, 0, 0] if k == 1 else diag


@partial(jax.jit, static_argnames=("fn",))
def _kernel_diagonal(fn: Callable, owner: Any, params: PyTree, x: Array) -> Array:
    return sum(_einsum("iap,ibp->iab", j, j) for j in _row_jacobians(_bind(fn, owner), params, x))


def jacobian_matrix(apply_fn: ApplyFn, params: PyTree, x: Any) -> Array:
    """J ∈ ℝ^{n·k × P}: row (i, a) is ∇_w f_a(w; x_i), the parameters flattened leaf by leaf
    (the order of ``jax.tree_util.tree_leaves``, each leaf row-major).  For the computations that
    need J itself (its columns per layer, its singular values); K = JJᵀ is :func:`empirical_ntk`.
    """
    V.callable_("apply_fn", apply_fn)
    V.pytree_of_arrays("params", params)
    x = V.array("x", x)
    _num_outputs(apply_fn, params, x)
    return _jacobian_matrix(*_split(apply_fn), params, x)


@partial(jax.jit, static_argnames=("fn",))
def _jacobian_matrix(fn: Callable, owner: Any, params: PyTree, x: Array) -> Array:
    j = jnp.concatenate(_row_jacobians(_bind(fn, owner), params, x), axis=2)
    return j.reshape(j.shape[0] * j.shape[1], -1)


def relative_change(kernel: Array, kernel0: Array) -> Array:
    """‖K − K₀‖_F / ‖K₀‖_F — the kernel change the paper plots (Appendix B)."""
    kernel = flatten_ntk(kernel)
    kernel0 = flatten_ntk(kernel0)
    if kernel.shape != kernel0.shape:
        raise ValueError(f"kernel and kernel0 must have the same shape, got {kernel.shape} and {kernel0.shape}")
    return jnp.linalg.norm(kernel - kernel0) / jnp.linalg.norm(kernel0)


__all__ = [
    "JACOBIAN_MEMORY_BUDGET",
    "METHODS",
    "NTVP_STEP_BYTES",
    "SUPPORTED",
    "empirical_ntk",
    "flatten_ntk",
    "jacobian_matrix",
    "kernel_diagonal",
    "layerwise_ntk",
    "relative_change",
    "supports",
    "symmetry_blocks",
]
