"""The Hessian of a dense network's output at one input, compressed to its exact range.

For the fully connected network of Eq. (22) of Liu, Zhu & Belkin (2020) (:class:`~ntkbook.models.dense.MLP`,
NTK parameterization) and the residual network of Eq. (97) (supp. Eq. 80) (:class:`~ntkbook.models.resnet.ResNet`),
the Hessian H = ∂²f(W; x)/∂W² at one input x has a small range, which makes ‖H‖ cheap at any width.
:func:`ntkbook.hessian_spectral_norm` uses this module for ``operator="compressed"`` and
``operator="compressed-numpy"``.

**The range of the Hessian.**  For one input, the gradient with respect to the weights of layer l is
an outer product, ∇_{W⁽ˡ⁾} f = g_l a_{l−1}ᵀ/√n_l, with a_{l−1} = α⁽ˡ⁻¹⁾ the layer's input,
g_l = ∂f/∂α̃⁽ˡ⁾ the backward signal and n_l the fan-in.  Differentiating once more in any direction
gives δg aᵀ + g δaᵀ, so every column of H lies in

    S = ⊕_l S_l ⊕ ℝ^{m_L} (v),   S_l = {u âᵀ + ĝ zᵀ : u ∈ ℝ^{m_l}, z ⊥ â}   (â, ĝ unit vectors),

a space of dimension N = Σ_l (m_l + m_{l−1} − 1) + m_L ≈ 2Lm instead of P ≈ (L − 1)m².  With Q
the (partial) isometry from coordinates y = (u_l, z_l, v-part) to S, H = Q (QᵀHQ) Qᵀ, so ‖H‖ =
‖QᵀHQ‖, and QᵀHQ is the Hessian at y = 0 of y ↦ f(W + Qy; x) (:func:`compressed_output`).  A
Hessian-vector product of that function touches each W⁽ˡ⁾ only through four matrix–vector products,
and the Krylov vectors have length N, not P: for m = 4096, L = 3 (P ≈ 3.4·10⁷, N ≈ 2.5·10⁴) one
product takes ≈ 0.05 s on two CPU cores instead of ≈ 1 s for a Lanczos step on the full parameter
vector (where orthogonalizing against the basis dominates).

Two implementations of the product y ↦ QᵀHQ y:

* autodiff of :func:`compressed_output` (JAX: any eigen-solver method, compiled once per shape);
* :func:`compressed_hvp` on a :class:`BasePass` — written out by hand in float64 NumPy, nothing to
  compile, so sweeps over many network shapes stay cheap (ARPACK and dense only).

:func:`lift` / :func:`compress` (and their NumPy twins :func:`lift_flat` / :func:`compress_flat`) map
between coordinates y and directions in parameter space; :func:`kernel_at_input` reads the tangent
kernel K_{(x,x)} off the same base pass.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import _validation as V
from .kernels import layerwise_ntk
from .models import MLP
from .models.conv import ConvNet
from .models.resnet import ResNet
from .pytree import flat_spec

Array = jax.Array
PyTree = Any
HIGHEST = jax.lax.Precision.HIGHEST


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


def check_dense_model(model: Any) -> None:
    """Raise unless ``model`` is an NTK-parameterized MLP or ResNet with one output (what this module handles)."""
    if not isinstance(model, (MLP, ResNet)):
        raise TypeError(f"model must be an NTK-parameterized MLP or ResNet, got {type(model).__name__}")
    if getattr(model, "parameterization", "ntk") != "ntk":
        raise TypeError(f"model must be an NTK-parameterized MLP or ResNet, got parameterization="
                        f"{model.parameterization!r}")
    if model.output_dim != 1:
        raise ValueError(f"the chapter's Hessian is that of a scalar output; model has output_dim={model.output_dim}")


def supports(model: Any) -> bool:
    """Whether this module handles ``model``: an NTK-parameterized MLP or ResNet with one output."""
    try:
        check_dense_model(model)
    except (TypeError, ValueError):
        return False
    return True


def single_input(model: Any, x: Any) -> Array:
    """One input as a 1-d array (d,) for dense models, (\\*spatial, c) for CNNs (validated)."""
    if isinstance(model, ConvNet):
        x = V.array("x", x)
        return model.images(x[None])[0]
    x = V.array("x", x, ndim=(0, 1))
    if x.ndim == 0:
        x = x.reshape(1)
    if x.shape[0] != model.input_dim:
        raise ValueError(f"x must be one input of shape ({model.input_dim},), got {tuple(x.shape)}")
    return x


# ---------------------------------------------------------------------------------------------
# Forward pass with the pieces the Hessian analysis needs
# ---------------------------------------------------------------------------------------------


def _forward(model, params, x, y=None, fr=None, shifts=None):
    """f(W + Q y; x) for an MLP/ResNet at one input, plus each layer's input a_{l−1}.

    ``shifts`` (one per layer, added to the pre-activations) exist to differentiate through them:
    ∂f/∂shift_l = g_l.
    """
    residual = isinstance(model, ResNet)
    a = x
    layer_inputs = []
    for i, (layer, act) in enumerate(zip(params["layers"], model.activations, strict=True)):
        w = layer["W"]
        layer_inputs.append(a)
        z = jnp.matmul(w, a, precision=HIGHEST)
        if y is not None:
            yl = y["layers"][i]
            ah, gh = fr.a_hat[i], fr.g_hat[i]
            zp = yl["z"] - jnp.dot(yl["z"], ah) * ah
            z = z + yl["u"] * jnp.dot(ah, a) + gh * jnp.dot(zp, a)
        z = z / math.sqrt(w.shape[1])
        if getattr(model, "use_bias", False):
            z = z + layer["b"]
            if y is not None:
                z = z + y["layers"][i]["b"]
        if shifts is not None:
            z = z + shifts[i]
        new = act(z)
        a = new + a if (residual and i > 0) else new
    v = (model.fixed_v if model.fixed_v is not None else params["v"])[:, 0]
    if y is not None and "v" in y:
        v = v + y["v"]
    return jnp.dot(v, a, precision=HIGHEST) / math.sqrt(a.shape[0]), layer_inputs


class Frames(NamedTuple):
    """Unit vectors spanning the range of the Hessian at one point (see the module docstring).

    Attributes:
        a_hat: per layer, α⁽ˡ⁻¹⁾/‖α⁽ˡ⁻¹⁾‖ (the layer's input direction), shape (m_{l−1},).
        g_hat: per layer, g_l/‖g_l‖ with g_l = ∂f/∂α̃⁽ˡ⁾, shape (m_l,).
        kernel: K_{(x,x)}(W) = ‖∇_W f‖² = Σ_l ‖g_l‖²‖α⁽ˡ⁻¹⁾‖²/n_l (+ ‖α⁽ᴸ⁾‖²/m_L for a trained v).
    """

    a_hat: tuple[Array, ...]
    g_hat: tuple[Array, ...]
    kernel: Array


def _unit(t: Array) -> Array:
    n = jnp.linalg.norm(t)
    return t / jnp.where(n > 0, n, 1.0)


@jax.jit
def _frames(model, params, x) -> Frames:
    shifts = [jnp.zeros(layer["W"].shape[0], x.dtype) for layer in params["layers"]]
    (_, ins), g = jax.value_and_grad(lambda s: _forward(model, params, x, shifts=s), has_aux=True)(shifts)
    last = _forward_last(model, params, x) if "v" in params else None
    kern = layerwise_ntk([a[None] for a in ins], [gl[None, None] for gl in g],
                         scales=[1 / math.sqrt(a.shape[0]) for a in ins], bias=bool(getattr(model, "use_bias", False)),
                         features1=None if last is None else last[None],
                         feature_scale=1 / math.sqrt(model.widths[-1]))[0, 0, 0, 0]
    return Frames(tuple(_unit(a) for a in ins), tuple(_unit(gl) for gl in g), kern)


def _forward_last(model, params, x):
    """α⁽ᴸ⁾ at one input (the gradient of f with respect to v, times √m_L)."""
    return model.forward(params, x[None]).post[-1][0]


def frames(model: MLP | ResNet, params: PyTree, x: Any) -> Frames:
    """The :class:`Frames` of the Hessian of f(·; x) at ``params`` (one forward and one backward pass)."""
    check_dense_model(model)
    return _frames(model, params, single_input(model, x))


def compressed_zero(model: MLP | ResNet, params: PyTree) -> PyTree:
    """Coordinates y = 0 of the range of H: ``{"layers": [{"u": (m_l,), "z": (m_{l−1},), "b"?}], "v"?}``."""
    check_dense_model(model)
    dtype = params["layers"][0]["W"].dtype
    layers = []
    for layer in params["layers"]:
        m, n = layer["W"].shape
        c = {"u": jnp.zeros(m, dtype), "z": jnp.zeros(n, dtype)}
        if "b" in layer:
            c["b"] = jnp.zeros(m, dtype)
        layers.append(c)
    y = {"layers": layers}
    if "v" in params:
        y["v"] = jnp.zeros(params["v"].shape[0], dtype)
    return y


def compressed_output(y: PyTree, model: MLP | ResNet, params: PyTree, x: Array, fr: Frames) -> Array:
    """f(W + Q y; x): the network with each W⁽ˡ⁾ moved by u_l âᵀ + ĝ (P⊥z_l)ᵀ, v by y_v.

    Its Hessian in y at y = 0 is QᵀH(W)Q, whose non-zero eigenvalues are those of H(W).
    """
    return _forward(model, params, x, y=y, fr=fr)[0]


def lift(y: PyTree, model: MLP | ResNet, params: PyTree, fr: Frames) -> PyTree:
    """Q y as a direction with the structure of ``params`` (W⁽ˡ⁾ part u âᵀ + ĝ (P⊥z)ᵀ)."""
    layers = []
    for layer, yl, ah, gh in zip(params["layers"], y["layers"], fr.a_hat, fr.g_hat, strict=True):
        zp = yl["z"] - jnp.dot(yl["z"], ah) * ah
        d = {"W": jnp.outer(yl["u"], ah) + jnp.outer(gh, zp)}
        if "b" in layer:
            d["b"] = yl["b"]
        layers.append(d)
    out = {"layers": layers}
    if "v" in params:
        out["v"] = y["v"][:, None]
    return out


def compress(direction: PyTree, model: MLP | ResNet, params: PyTree, fr: Frames) -> PyTree:
    """Qᵀ U: the coordinates (U_W â, P⊥ U_Wᵀ ĝ, U_b, U_v) of a direction U (adjoint of :func:`lift`)."""
    layers = []
    for layer, d, ah, gh in zip(params["layers"], direction["layers"], fr.a_hat, fr.g_hat, strict=True):
        u = jnp.matmul(d["W"], ah, precision=HIGHEST)
        z = jnp.matmul(d["W"].T, gh, precision=HIGHEST)
        c = {"u": u, "z": z - jnp.dot(z, ah) * ah}
        if "b" in layer:
            c["b"] = d["b"]
        layers.append(c)
    y = {"layers": layers}
    if "v" in params:
        y["v"] = direction["v"][:, 0]
    return y


@jax.jit
def _dense_compressed_hessian(model, params, x, fr):
    y0 = compressed_zero(model, params)
    spec = flat_spec(y0)
    return jax.jacfwd(jax.grad(lambda w: compressed_output(spec.unravel(w), model, params, x, fr)))(spec.ravel(y0))


def compressed_hessian(model: MLP | ResNet, params: PyTree, x: Any) -> np.ndarray:
    """The N × N matrix QᵀH(W)Q (float64 copy, symmetrized); N = :func:`compressed_dimension`."""
    x = single_input(model, x)
    fr = frames(model, params, x)
    h = np.asarray(_dense_compressed_hessian(model, params, x, fr), dtype=np.float64)
    return 0.5 * (h + h.T)


def compressed_dimension(model: Any, params: PyTree) -> int:
    """N, the number of coordinates y (the dimension of the space containing the range of H)."""
    return flat_spec(compressed_zero(model, params)).size


def layer_inputs(model: MLP | ResNet, params: PyTree, x: Any) -> list[Array]:
    """α⁽ˡ⁻¹⁾, the input of every layer l = 1..L, at one input x."""
    check_dense_model(model)
    x = single_input(model, x)
    return _forward(model, params, x)[1]


# ---------------------------------------------------------------------------------------------
# The same compressed Hessian written out by hand (NumPy): no compilation per network shape
# ---------------------------------------------------------------------------------------------


class BasePass(NamedTuple):
    """Forward and backward pass of an MLP/ResNet at one input, in float64 NumPy.

    Attributes (lists over layers l = 1..L): ``inputs`` α⁽ˡ⁻¹⁾, ``pre`` α̃⁽ˡ⁾, ``s1``/``s2`` σ'/σ''(α̃⁽ˡ⁾),
    ``b`` ∂f/∂α⁽ˡ⁾, ``g`` ∂f/∂α̃⁽ˡ⁾; ``last`` α⁽ᴸ⁾, ``v`` the output weights (m_L,), ``weights`` the W⁽ˡ⁾
    as stored (float32 stays float32 for fast products), flags ``residual``, ``bias``, ``train_v``.
    """

    inputs: list
    pre: list
    s1: list
    s2: list
    b: list
    g: list
    last: np.ndarray
    v: np.ndarray
    weights: list
    residual: bool
    bias: bool
    train_v: bool

    @property
    def kernel(self) -> float:
        """K_{(x,x)} = ‖∇_W f‖² = Σ_l ‖g_l‖²(‖α⁽ˡ⁻¹⁾‖²/n_l + 1[bias]) + ‖α⁽ᴸ⁾‖²/m_L·1[v trained]
        (:func:`ntkbook.kernels.layerwise_ntk` on this pass, float64)."""
        return float(layerwise_ntk([a[None] for a in self.inputs], [g[None, None] for g in self.g],
                                   scales=[1 / math.sqrt(a.size) for a in self.inputs], bias=self.bias,
                                   features1=self.last[None] if self.train_v else None,
                                   feature_scale=1 / math.sqrt(self.last.size))[0, 0, 0, 0])


@partial(jax.jit, static_argnames=("act",))
def _act3(act, z):
    return act(z), act.derivative(z, 1), act.derivative(z, 2)


def _act_values(act, z: np.ndarray, dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """σ, σ', σ'' at z (float64 copies).  z is padded to a power of two (≥ 256) so that one compiled
    function per activation serves every width."""
    n = z.size
    size = max(256, 1 << max(0, (n - 1).bit_length()))
    buf = np.zeros(size)
    buf[:n] = z
    out = _act3(act, jnp.asarray(buf, dtype))
    return tuple(np.asarray(t, dtype=np.float64)[:n] for t in out)


def base_pass(model: MLP | ResNet, params: PyTree, x: Any) -> BasePass:
    """The :class:`BasePass` of ``model`` at ``params`` and one input x (NumPy; activations via JAX)."""
    check_dense_model(model)
    x = np.asarray(single_input(model, x), dtype=np.float64)
    dtype = params["layers"][0]["W"].dtype
    residual = isinstance(model, ResNet)
    bias = bool(getattr(model, "use_bias", False))
    weights = [np.asarray(layer["W"]) for layer in params["layers"]]
    a, inputs, pre, s1, s2 = x, [], [], [], []
    for i, (layer, w, act) in enumerate(zip(params["layers"], weights, model.activations, strict=True)):
        inputs.append(a)
        z = (w @ a.astype(w.dtype)).astype(np.float64) / math.sqrt(w.shape[1])
        if bias:
            z = z + np.asarray(layer["b"], dtype=np.float64)
        val, d1, d2 = _act_values(act, z, dtype)
        pre.append(z)
        s1.append(d1)
        s2.append(d2)
        a = val + a if (residual and i > 0) else val
    v = np.asarray(model.fixed_v if model.fixed_v is not None else params["v"], dtype=np.float64)[:, 0]
    bl = v / math.sqrt(a.size)
    bs, gs = [None] * len(weights), [None] * len(weights)
    for i in range(len(weights) - 1, -1, -1):
        bs[i] = bl
        gs[i] = s1[i] * bl
        if i > 0:
            back = (weights[i].T @ gs[i].astype(weights[i].dtype)).astype(np.float64) / math.sqrt(weights[i].shape[1])
            bl = back + bl if residual else back
    return BasePass(inputs, pre, s1, s2, bs, gs, a, v, weights, residual, bias, "v" in params)



def kernel_at_input(model: Any, params: PyTree, x: Any) -> float:
    """K_{(x,x)}(W) = ‖∇_W f(W; x)‖² of an MLP/ResNet at one input, float64 from :func:`base_pass`
    (NaN for other models, e.g. a :class:`~ntkbook.models.conv.ConvNet`).

    The same number as ``ntkbook.empirical_ntk(model.apply, params, x[None])[0, 0]``, but accumulated
    in float64 whatever the dtype of the parameters.
    """
    if not isinstance(model, (MLP, ResNet)):
        return float("nan")
    return base_pass(model, params, x).kernel

def _unit_np(t: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(t))
    return t / n if n > 0 else t


def _layout(bp: BasePass) -> list[tuple[str, int, int, int]]:
    """(name, layer, start, stop) of the flat coordinates y, in the leaf order of :func:`compressed_zero`
    ({"layers": [{"b"?, "u", "z"}, ...], "v"?}: dict keys sorted)."""
    out, pos = [], 0
    for i, w in enumerate(bp.weights):
        m, n = w.shape
        for name, size in (("b", m if bp.bias else 0), ("u", m), ("z", n)):
            if size:
                out.append((name, i, pos, pos + size))
                pos += size
    if bp.train_v:
        out.append(("v", -1, pos, pos + bp.v.size))
    return out


def compressed_hvp(bp: BasePass, t: np.ndarray) -> np.ndarray:
    """(QᵀH(W)Q) t written out by hand: one forward-tangent and one backward-tangent sweep, two matrix–vector
    products per layer (W δa and Wᵀ δg), no compilation.  Equal to :func:`compressed_output`'s Hessian
    times t (tests).  ``t`` is a flat coordinate vector in the layout of :func:`compressed_zero`.

    With â = α⁽ˡ⁻¹⁾/‖·‖, ĝ = g_l/‖g_l‖, n = n_l, the directions δW_l = δu âᵀ + ĝ (P⊥δz)ᵀ (+ δb, δv) give
    δα̃_l = (W_l δa + δu (â·a) + ĝ (P⊥δz·a))/√n + δb,   δa_l = σ'δα̃_l (+ δa_{l−1}, ResNet),
    δb_L = δv/√m,   δg_l = σ''δα̃_l b_l + σ'δb_l,   δb_{l−1} = (W_lᵀδg_l + â(δu·g_l) + P⊥δz ‖g_l‖)/√n (+ δb_l),
    and the Hessian-vector product is the tangent of the gradient
    (∂f/∂u_l, ∂f/∂z_l, ∂f/∂b_l, ∂f/∂v) = (g_l(â·a)/√n, P⊥a ‖g_l‖/√n, g_l, α⁽ᴸ⁾/√m).
    """
    t = np.asarray(t, dtype=np.float64)
    parts = {(name, i): t[lo:hi] for name, i, lo, hi in _layout(bp)}
    L = len(bp.weights)
    ahat = [_unit_np(a) for a in bp.inputs]
    gnorm = [float(np.linalg.norm(g)) for g in bp.g]
    ghat = [_unit_np(g) for g in bp.g]
    dz, da = [None] * L, [None] * (L + 1)
    da_prev = np.zeros_like(bp.inputs[0])
    for i, w in enumerate(bp.weights):
        a, n = bp.inputs[i], w.shape[1]
        du, zz = parts[("u", i)], parts[("z", i)]
        zp = zz - (zz @ ahat[i]) * ahat[i]
        lin = (w @ da_prev.astype(w.dtype)).astype(np.float64) if i > 0 else 0.0
        dz[i] = (lin + du * (ahat[i] @ a) + ghat[i] * (zp @ a)) / math.sqrt(n)
        if bp.bias:
            dz[i] = dz[i] + parts[("b", i)]
        new = bp.s1[i] * dz[i]
        da_prev = new + da_prev if (bp.residual and i > 0) else new
        da[i + 1] = da_prev
    da[0] = np.zeros_like(bp.inputs[0])
    out = np.zeros_like(t)
    slots = {(name, i): (lo, hi) for name, i, lo, hi in _layout(bp)}
    db = parts[("v", -1)] / math.sqrt(bp.last.size) if bp.train_v else np.zeros_like(bp.last)
    for i in range(L - 1, -1, -1):
        w, a, n = bp.weights[i], bp.inputs[i], bp.weights[i].shape[1]
        dg = bp.s2[i] * dz[i] * bp.b[i] + bp.s1[i] * db
        g = bp.g[i]
        lo, hi = slots[("u", i)]
        out[lo:hi] = (dg * (ahat[i] @ a) + g * (ahat[i] @ da[i])) / math.sqrt(n)
        lo, hi = slots[("z", i)]
        zvec = (da[i] * gnorm[i] + a * (ghat[i] @ dg)) / math.sqrt(n)
        out[lo:hi] = zvec - (zvec @ ahat[i]) * ahat[i]
        if bp.bias:
            lo, hi = slots[("b", i)]
            out[lo:hi] = dg
        if i > 0:
            du, zz = parts[("u", i)], parts[("z", i)]
            zp = zz - (zz @ ahat[i]) * ahat[i]
            back = ((w.T @ dg.astype(w.dtype)).astype(np.float64) + ahat[i] * (du @ g) + zp * gnorm[i]) / math.sqrt(n)
            db = back + db if bp.residual else back
    if bp.train_v:
        lo, hi = slots[("v", -1)]
        out[lo:hi] = da[L] / math.sqrt(bp.last.size)
    return out


def lift_flat(bp: BasePass, y: np.ndarray, params: PyTree) -> PyTree:
    """Q y for flat coordinates y (NumPy), normalized to a unit direction with the structure of ``params``
    (JAX arrays in the dtype of the weights); the NumPy twin of :func:`lift`."""
    parts = {(name, i): y[lo:hi] for name, i, lo, hi in _layout(bp)}
    dtype = bp.weights[0].dtype
    layers = []
    for i in range(len(bp.weights)):
        ah, gh = _unit_np(bp.inputs[i]), _unit_np(bp.g[i])
        zz = parts[("z", i)]
        zp = zz - (zz @ ah) * ah
        d = {"W": np.outer(parts[("u", i)], ah) + np.outer(gh, zp)}
        if bp.bias:
            d["b"] = parts[("b", i)]
        layers.append(d)
    out: dict[str, Any] = {"layers": layers}
    if bp.train_v:
        out["v"] = parts[("v", -1)][:, None]
    # ‖u âᵀ + ĝ zpᵀ‖_F² = ‖u‖² + ‖zp‖² because zp ⊥ â: the norm from the coordinates, no pass over m² entries
    sq = 0.0
    for name, i, _, _ in _layout(bp):
        part = parts[(name, i)]
        if name == "z":
            ah = _unit_np(bp.inputs[i])
            part = part - (part @ ah) * ah
        sq += float(part @ part)
    scale = 1.0 / math.sqrt(sq) if sq > 0 else 1.0
    return jax.tree_util.tree_map(lambda leaf: jnp.asarray(np.asarray(leaf * scale, dtype=dtype)), out)


def compress_flat(bp: BasePass, direction: PyTree) -> np.ndarray:
    """Qᵀ U as flat float64 coordinates (the adjoint of the lift, NumPy twin of :func:`compress`)."""
    out = np.zeros(_layout(bp)[-1][3])
    for name, i, lo, hi in _layout(bp):
        if name == "v":
            out[lo:hi] = np.asarray(direction["v"], dtype=np.float64)[:, 0]
        elif name == "b":
            out[lo:hi] = np.asarray(direction["layers"][i]["b"], dtype=np.float64)
        else:
            dw = np.asarray(direction["layers"][i]["W"], dtype=np.float64)
            ah, gh = _unit_np(bp.inputs[i]), _unit_np(bp.g[i])
            if name == "u":
                out[lo:hi] = dw @ ah
            else:
                z = dw.T @ gh
                out[lo:hi] = z - (z @ ah) * ah
    return out


__all__ = [
    "BasePass",
    "Frames",
    "base_pass",
    "check_dense_model",
    "compress",
    "compress_flat",
    "compressed_dimension",
    "compressed_hessian",
    "compressed_hvp",
    "compressed_output",
    "compressed_zero",
    "frames",
    "kernel_at_input",
    "layer_inputs",
    "lift",
    "lift_flat",
    "single_input",
    "supports",
]
