"""Chapter 3 — the Hessian of wide networks with a linear output layer (Liu, Zhu & Belkin 2020,
Sections 3.2–3.3, Appendices F–H of the supplement).

Everything here is about one scalar function w ↦ f(W; x) at one input x, for the fully connected
network of Eq. (22) (:class:`~ntkbook.models.dense.MLP`, NTK parameterization) and the residual
network of Eq. (80) (:class:`~ntkbook.models.resnet.ResNet`).

**The range of the Hessian (why ‖H‖ is cheap here).**  For one input, the gradient with respect to
the weights of layer l is an outer product, ∇_{W⁽ˡ⁾} f = g_l a_{l−1}ᵀ/√n_l, with a_{l−1} = α⁽ˡ⁻¹⁾
the layer's input, g_l = ∂f/∂α̃⁽ˡ⁾ the backward signal and n_l the fan-in.  Differentiating once more
in any direction gives δg aᵀ + g δaᵀ, so every column of H lies in

    S = ⊕_l S_l ⊕ ℝ^{m_L} (v),   S_l = {u âᵀ + ĝ zᵀ : u ∈ ℝ^{m_l}, z ⊥ â}   (â, ĝ unit vectors),

a space of dimension N = Σ_l (m_l + m_{l−1} − 1) + m_L ≈ 2Lm instead of P ≈ (L − 1)m².  With Q
the (partial) isometry from coordinates y = (u_l, z_l, v-part) to S, H = Q (QᵀHQ) Qᵀ, so ‖H‖ =
‖QᵀHQ‖, and QᵀHQ is the Hessian at y = 0 of y ↦ f(W + Qy; x) (:func:`compressed_output`).  A
Hessian-vector product of that function touches each W⁽ˡ⁾ only through four matrix–vector products,
and the Krylov vectors have length N, not P: for m = 4096, L = 3 (P ≈ 3.4·10⁷, N ≈ 2.5·10⁴) one
product takes ≈ 0.05 s on two CPU cores instead of ≈ 1 s for a Lanczos step on the full parameter
vector (where orthogonalizing against the basis dominates).  :func:`hessian_norm` runs ARPACK on the
compressed operator by default (optionally a dense eigendecomposition of QᵀHQ, or
:func:`ntkbook.hessian_spectral_norm` on the compressed function); other models (CNNs) fall back to the
matrix-free Lanczos on all P parameters.

**Exact structured norms of a fully connected layer** φ(W, a) = σ(Wa/√n) (Eq. 56–58 of the
supplement), with z = Wa/√n, s' = σ'(z), s'' = σ''(z); every slice of the second-derivative tensors is
rank one, T_i = s''_i p_i q_iᵀ, and Σ_i |xᵀT_i z| = Σ_i |s''_i||p_iᵀx||q_iᵀz| can be maximized in closed
form (:func:`layer_factors`):

* ‖∂φ/∂W‖ = ‖a‖ max_i|s'_i| / √n                 (J Jᵀ is diagonal),
* ‖∂φ/∂a‖ = ‖diag(s')W‖ / √n                     (ResNet: ‖I + diag(s')W/√n‖),
* ‖∂²φ/∂W²‖₂,₂,₁ = ‖a‖² max_i|s''_i| / n,
* ‖∂²φ/∂a∂W‖₂,₂,₁ = λ_max(M)^{1/2}, M = ‖a‖²Wᵀdiag(c²)W + Wᵀ(c⊙e)aᵀ + a(c⊙e)ᵀW + ‖e‖²I with
  c = s''/n, e = s'/√n.  The tensor has two parts, (∂²φ/∂a_j∂W_kk')_i = δ_ik(s''_i W_ij a_k'/n +
  s'_i δ_jk'/√n); the supplement's Eq. (57) keeps only the first (it forgets that ∂φ/∂a = diag(s')W/√n
  depends on W directly), whose norm would be ‖a‖‖diag(s'')W‖/n.
* ‖∂²φ/∂a²‖₂,₂,₁ = λ_max(Wᵀ diag(|s''|) W) / n.

They are exact (not bounds), computed in float64 (dense symmetric eigensolver up to n = 512, ARPACK to a
relative 1e-12 beyond), and checked against
:func:`ntkbook.norm_221` on the autodiff tensors (:func:`layer_tensors`) in the tests and the chapter.

**Bounds on ‖H‖** (:func:`hessian_bounds`): per block H⁽ˡ¹,ˡ²⁾ an upper bound from the chain rule
(proof of Theorem 3.1, Appendix F), then (i) the spectral norm of the matrix of block bounds, (ii)
their sum (Lemma F.1), (iii) Theorem 3.1's C₁Q₂,₂,₁Q_∞ + C₂Q_L/√m — each an upper bound on ‖H‖,
(i) ≤ (ii) ≤ (iii).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from .. import _validation as V
from ..hessian import hessian_spectral_norm
from ..models import MLP, mlp
from ..models.conv import ConvNet
from ..models.resnet import ResNet
from ..progress import progress
from ..pytree import flat_spec, point_on_sphere, tree_axpy, tree_norm, tree_scale, tree_sub
from ..training import Tracker, distance_from_start, train

Array = jax.Array
PyTree = Any
HIGHEST = jax.lax.Precision.HIGHEST



# ---------------------------------------------------------------------------------------------
# Validation helpers
# ---------------------------------------------------------------------------------------------


def _check_dense_model(model: Any) -> None:
    if not isinstance(model, (MLP, ResNet)):
        raise TypeError(f"model must be an NTK-parameterized MLP or ResNet, got {type(model).__name__}")
    if model.output_dim != 1:
        raise ValueError(f"the chapter's Hessian is that of a scalar output; model has output_dim={model.output_dim}")


def _check_no_bias(model: Any) -> None:
    _check_dense_model(model)
    if getattr(model, "use_bias", False):
        raise ValueError("the layer factors are derived for layers without biases (Eq. 22); got use_bias=True")


def _check_model(model: Any) -> None:
    if isinstance(model, (MLP, ResNet)):
        _check_dense_model(model)
        return
    if not isinstance(model, ConvNet):
        raise TypeError(f"model must be an MLP, ResNet or ConvNet, got {type(model).__name__}")
    if model.output_dim != 1:
        raise ValueError(f"the chapter's Hessian is that of a scalar output; model has output_dim={model.output_dim}")


def _single_input(model: Any, x: Any) -> Array:
    """One input as a 1-d array (d,) for dense models, (*spatial, c) for CNNs."""
    if isinstance(model, ConvNet):
        x = V.array("x", x)
        return model.images(x[None])[0]
    x = V.array("x", x, ndim=(0, 1))
    if x.ndim == 0:
        x = x.reshape(1)
    if x.shape[0] != model.input_dim:
        raise ValueError(f"x must be one input of shape ({model.input_dim},), got {tuple(x.shape)}")
    return x


def unit_scale_input(key: Array, d: int, dtype: Any = jnp.float32) -> Array:
    """A random input x ∈ ℝ^d with ‖x‖ = √d, so the first pre-activation W⁽¹⁾x/√d has entries N(0, 1)."""
    d = V.positive_int("d", d)
    g = jax.random.normal(key, (d,), dtype)
    return g * (math.sqrt(d) / jnp.linalg.norm(g))


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
    kern = sum(jnp.sum(gl**2) * jnp.sum(a**2) / a.shape[0] for gl, a in zip(g, ins, strict=True))
    if getattr(model, "use_bias", False):
        kern = kern + sum(jnp.sum(gl**2) for gl in g)
    if "v" in params:
        last = _forward_last(model, params, x)
        kern = kern + jnp.sum(last**2) / last.shape[0]
    return Frames(tuple(_unit(a) for a in ins), tuple(_unit(gl) for gl in g), kern)


def _forward_last(model, params, x):
    """α⁽ᴸ⁾ at one input (the gradient of f with respect to v, times √m_L)."""
    return model.forward(params, x[None]).post[-1][0]


def frames(model: MLP | ResNet, params: PyTree, x: Any) -> Frames:
    """The :class:`Frames` of the Hessian of f(·; x) at ``params`` (one forward and one backward pass)."""
    _check_dense_model(model)
    return _frames(model, params, _single_input(model, x))


def compressed_zero(model: MLP | ResNet, params: PyTree) -> PyTree:
    """Coordinates y = 0 of the range of H: ``{"layers": [{"u": (m_l,), "z": (m_{l−1},), "b"?}], "v"?}``."""
    _check_dense_model(model)
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
    x = _single_input(model, x)
    fr = frames(model, params, x)
    h = np.asarray(_dense_compressed_hessian(model, params, x, fr), dtype=np.float64)
    return 0.5 * (h + h.T)


def compressed_dimension(model: Any, params: PyTree) -> int:
    """N, the number of coordinates y (the dimension of the space containing the range of H)."""
    return flat_spec(compressed_zero(model, params)).size


def _full_output(params, model, x):
    return model.apply(params, x[None])[0]


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
        """K_{(x,x)} = ‖∇_W f‖² = Σ_l ‖g_l‖²(‖α⁽ˡ⁻¹⁾‖²/n_l + 1[bias]) + ‖α⁽ᴸ⁾‖²/m_L·1[v trained]."""
        k = sum(float(g @ g) * (float(a @ a) / a.size + (1.0 if self.bias else 0.0))
                for g, a in zip(self.g, self.inputs, strict=True))
        return k + (float(self.last @ self.last) / self.last.size if self.train_v else 0.0)


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
    _check_dense_model(model)
    x = np.asarray(_single_input(model, x), dtype=np.float64)
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


def _lift_np(bp: BasePass, y: np.ndarray, params: PyTree) -> PyTree:
    """Q y (flat coordinates) as a unit direction with the structure of ``params`` (NumPy → JAX arrays)."""
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


def _compress_np(bp: BasePass, direction: PyTree) -> np.ndarray:
    """Qᵀ U as flat coordinates (the adjoint of the lift), NumPy."""
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


@dataclass(frozen=True)
class HessianNorm:
    """‖H(W)‖ of f(·; x) at one point.

    Attributes:
        value: max |λ(H)|.
        eigenvalue: the signed eigenvalue with |eigenvalue| = value.
        eigenvector: unit eigenvector (structure of ``params``).
        iterations: Hessian-vector products (Lanczos) or N (dense).
        residual: ‖Hu − λu‖/|λ| of the returned pair (computed on the compressed matrix).
        converged: Lanczos convergence (always True for dense).
        method: ``"arpack-compressed"``, ``"arpack-autodiff-compressed"``, ``"dense-compressed"``,
            ``"lanczos-compressed"``, ``"arpack-full"`` or ``"lanczos-full"``.
        size: the dimension of the space the eigenproblem was solved in (N or P).
        kernel: K_{(x,x)}(W) = ‖∇_W f(W; x)‖² (None for ``"lanczos-full"``).
    """

    value: float
    eigenvalue: float
    eigenvector: PyTree
    iterations: int
    residual: float
    converged: bool
    method: str
    size: int
    kernel: float | None


@jax.jit
def _compressed_matvec(t, model, params, x, fr):
    """(QᵀH(W)Q) t for a flat coordinate vector t (one forward-over-reverse pass, no m² temporaries)."""
    spec = flat_spec(compressed_zero(model, params))
    grad = jax.grad(lambda w: compressed_output(spec.unravel(w), model, params, x, fr))
    return jax.jvp(grad, (jnp.zeros_like(t),), (t,))[1]


@jax.jit
def _full_matvec(t, model, params, x):
    """H(W) t for a flat vector t over all P parameters (forward-over-reverse, no compression)."""
    spec = flat_spec(params)
    grad = jax.grad(lambda p: _full_output(p, model, x))
    return spec.ravel(jax.jvp(grad, (params,), (spec.unravel(t),))[1])


def _arpack(matvec, n: int, tol: float, start: np.ndarray | None, key: Array | None, max_iter: int):
    """(λ, unit eigenvector, products, converged) for the eigenvalue of largest magnitude of the symmetric
    operator ``matvec`` (float64 NumPy vectors in and out) on ℝⁿ, by ARPACK (scipy ``eigsh``, which="LM")."""
    from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

    count = [0]

    def mv(v: np.ndarray) -> np.ndarray:
        count[0] += 1
        return np.asarray(matvec(np.asarray(v, dtype=np.float64).ravel()), dtype=np.float64)

    if start is None:
        seed = 0 if key is None else int(jax.random.randint(key, (), 0, 2**31 - 1))
        v0 = np.random.default_rng(seed).standard_normal(n)
    else:
        v0 = np.asarray(start, dtype=np.float64)
    if n <= 2:
        h = np.column_stack([mv(e) for e in np.eye(n)])
        lam, vec = np.linalg.eigh(0.5 * (h + h.T))
        i = int(np.argmax(np.abs(lam)))
        return float(lam[i]), vec[:, i], count[0], True
    op = LinearOperator((n, n), matvec=mv, dtype=np.float64)
    ncv = int(min(n, 24 if start is None else 12))  # a warm start needs a short Krylov space
    try:
        lam, vec = eigsh(op, k=1, which="LM", tol=tol, v0=v0, ncv=ncv, maxiter=max(1, max_iter // ncv))
        converged = True
    except ArpackNoConvergence as err:  # pragma: no cover - reported, not raised
        lam, vec, converged = err.eigenvalues, err.eigenvectors, False
        if len(lam) == 0:
            return float("nan"), v0 / np.linalg.norm(v0), count[0], False
    u = vec[:, 0] / np.linalg.norm(vec[:, 0])
    return float(lam[0]), u, count[0], converged


def hessian_norm(
    model: Any,
    params: PyTree,
    x: Any,
    *,
    method: str = "auto",
    tol: float = 1e-6,
    start: PyTree | None = None,
    key: Array | None = None,
    max_iter: int = 3000,
    basis_size: int = 32,
) -> HessianNorm:
    """‖H(W)‖ = ‖∂²f(W; x)/∂W²‖ for an MLP/ResNet (compressed, exact range) or a CNN (full Lanczos).

    Args:
        model, params: the network and the point W.
        x: one input.
        method: for MLPs/ResNets ``"auto"`` = ``"arpack"`` (scipy's ARPACK on the compressed operator
            y ↦ QᵀHQ y, applied by :func:`compressed_hvp` — NumPy, nothing to compile, so sweeps over
            many shapes stay cheap), ``"arpack-autodiff"`` (the same with the operator from JAX autodiff
            of :func:`compressed_output`), ``"dense"`` (QᵀHQ formed and diagonalized in float64 — exact,
            N ≲ 2000), ``"lanczos"`` (:func:`ntkbook.hessian_spectral_norm` on the compressed function),
            ``"full"`` (ARPACK on Hessian-vector products over all P parameters — no compression) or
            ``"full-lanczos"``
            (:func:`ntkbook.hessian_spectral_norm` on all P parameters).  CNNs use ``"full"`` unless
            ``"full-lanczos"`` is asked for.
        tol: relative tolerance of the eigenvalue (ARPACK/Lanczos).
        start: a start direction with the structure of ``params`` (e.g. the eigenvector at a nearby
            point — a warm start along a path); compressed first.
        key: PRNG key of the random start vector.
        max_iter, basis_size: iteration limits (``basis_size`` only for the Lanczos methods).
    """
    _check_model(model)
    V.pytree_of_arrays("params", params)
    V.choice("method", method, ("auto", "arpack", "arpack-autodiff", "dense", "lanczos", "full", "full-lanczos"))
    x = _single_input(model, x)
    if method == "full-lanczos":
        res = hessian_spectral_norm(_full_output, params, args=(model, x), tol=tol, start=start, key=key,
                                    max_iter=max_iter, basis_size=basis_size)
        return HessianNorm(res.value, res.eigenvalue, res.eigenvector, res.iterations, res.residual,
                           res.converged, "lanczos-full", flat_spec(params).size, None)
    if isinstance(model, ConvNet) or method == "full":
        pspec = flat_spec(params)
        v0 = None if start is None else np.asarray(pspec.ravel(start), dtype=np.float64)

        def full_mv(t):
            return np.asarray(_full_matvec(jnp.asarray(t, pspec.dtype), model, params, x), dtype=np.float64)

        lam, u, count, converged = _arpack(full_mv, pspec.size, tol, v0, key, max_iter)
        hu = full_mv(u)
        residual = float(np.linalg.norm(hu - lam * u) / abs(lam)) if lam != 0 else 0.0
        return HessianNorm(abs(lam), lam, pspec.unravel(jnp.asarray(u, pspec.dtype)), count + 1, residual,
                           converged, "arpack-full", pspec.size, None)
    if method in ("auto", "arpack"):
        bp = base_pass(model, params, x)
        n = _layout(bp)[-1][3]
        start_flat = None if start is None else _compress_np(bp, start)
        if start_flat is not None and not np.any(start_flat):
            start_flat = None
        lam, u, count, converged = _arpack(lambda t: compressed_hvp(bp, t), n, tol, start_flat, key, max_iter)
        hu = compressed_hvp(bp, u)
        residual = float(np.linalg.norm(hu - lam * u) / abs(lam)) if lam != 0 else 0.0
        return HessianNorm(abs(lam), lam, _lift_np(bp, u, params), count + 1, residual, converged,
                           "arpack-compressed", n, bp.kernel)
    fr = _frames(model, params, x)
    y0 = compressed_zero(model, params)
    spec = flat_spec(y0)
    n = spec.size
    ys = None
    if start is not None:
        ys = compress(start, model, params, fr)
        if float(tree_norm(ys)) == 0.0:
            ys = None
    if method == "dense":
        h = np.asarray(_dense_compressed_hessian(model, params, x, fr), dtype=np.float64)
        h = 0.5 * (h + h.T)
        lam, vec = np.linalg.eigh(h)
        i = int(np.argmax(np.abs(lam)))
        value = float(abs(lam[i]))
        u = vec[:, i]
        res_norm = float(np.linalg.norm(h @ u - lam[i] * u) / value) if value > 0 else 0.0
        y = spec.unravel(jnp.asarray(u, spec.dtype))
        return HessianNorm(value, float(lam[i]), _unit_tree(lift(y, model, params, fr)), n, res_norm, True,
                           "dense-compressed", n, float(fr.kernel))
    if method == "lanczos":
        res = hessian_spectral_norm(compressed_output, y0, args=(model, params, x, fr), tol=tol, start=ys, key=key,
                                    max_iter=max_iter, basis_size=basis_size)
        vec = _unit_tree(lift(res.eigenvector, model, params, fr)) if res.eigenvector is not None else None
        return HessianNorm(res.value, res.eigenvalue, vec, res.iterations, res.residual, res.converged,
                           "lanczos-compressed", n, float(fr.kernel))
    start_flat = None if ys is None else np.asarray(spec.ravel(ys), dtype=np.float64)

    def comp_mv(t):
        return np.asarray(_compressed_matvec(jnp.asarray(t, spec.dtype), model, params, x, fr), dtype=np.float64)

    lam, u, count, converged = _arpack(comp_mv, n, tol, start_flat, key, max_iter)
    hu = comp_mv(u)
    residual = float(np.linalg.norm(hu - lam * u) / abs(lam)) if lam != 0 else 0.0
    y = spec.unravel(jnp.asarray(u, spec.dtype))
    return HessianNorm(abs(lam), lam, _unit_tree(lift(y, model, params, fr)), count + 1, residual, converged,
                       "arpack-autodiff-compressed", n, float(fr.kernel))


def _unit_tree(t: PyTree) -> PyTree:
    n = tree_norm(t)
    return tree_scale(1.0 / jnp.where(n > 0, n, 1.0), t)


# ---------------------------------------------------------------------------------------------
# Layer tensors by autodiff (references) and their structured norms
# ---------------------------------------------------------------------------------------------


def layer_inputs(model: MLP | ResNet, params: PyTree, x: Any) -> list[Array]:
    """α⁽ˡ⁻¹⁾, the input of every layer l = 1..L, at one input x."""
    _check_dense_model(model)
    x = _single_input(model, x)
    return _forward(model, params, x)[1]


def layer_tensors(model: MLP | ResNet, params: PyTree, x: Any, layer: int) -> dict[str, np.ndarray]:
    """The derivatives of layer l = ``layer`` (1-based) by autodiff, unit index last (the contracted index of Eq. 5).

    Returns float64 arrays: ``"jw"`` ∂α⁽ˡ⁾/∂W (m_l, m_l·n), ``"ja"`` ∂α⁽ˡ⁾/∂α⁽ˡ⁻¹⁾ (m_l, n), ``"ww"``
    ∂²α⁽ˡ⁾/∂W² as (m_l n, m_l n, m_l), ``"aw"`` ∂²α⁽ˡ⁾/∂α⁽ˡ⁻¹⁾∂W as (n, m_l n, m_l) and ``"aa"``
    ∂²α⁽ˡ⁾/∂(α⁽ˡ⁻¹⁾)² as (n, n, m_l), with W flattened row-major.  For small layers only.
    """
    _check_no_bias(model)
    layer = V.positive_int("layer", layer)
    if layer > model.depth:
        raise ValueError(f"layer must be a layer index in 1..{model.depth}, got {layer}")
    w = params["layers"][layer - 1]["W"]
    a = layer_inputs(model, params, x)[layer - 1]
    m, n = w.shape
    if m * n > 4096:
        raise ValueError(f"layer {layer} has {m * n} weights; layer_tensors is a small-size reference (<= 4096)")
    act = model.activations[layer - 1]
    residual = isinstance(model, ResNet) and layer > 1
    out = _layer_tensors(w, a, act, residual)
    as64 = partial(np.asarray, dtype=np.float64)
    return {"jw": as64(out[0]), "ja": as64(out[1]), "ww": np.transpose(as64(out[2]), (1, 2, 0)),
            "aw": np.transpose(as64(out[3]), (2, 1, 0)), "aa": np.transpose(as64(out[4]), (1, 2, 0))}


@partial(jax.jit, static_argnames=("act", "residual"))
def _layer_tensors(w, a, act, residual):
    m, n = w.shape

    def phi_flat(wf, a):
        out = act(jnp.matmul(wf.reshape(m, n), a, precision=HIGHEST) / math.sqrt(n))
        return out + a if residual else out

    wf = w.reshape(-1)
    jw = jax.jacrev(phi_flat, argnums=0)(wf, a)
    ja = jax.jacrev(phi_flat, argnums=1)(wf, a)
    ww = jax.jacfwd(jax.jacrev(phi_flat, argnums=0), argnums=0)(wf, a)  # (m, mn, mn)
    aw = jax.jacfwd(jax.jacrev(phi_flat, argnums=0), argnums=1)(wf, a)  # (m, mn, n)
    aa = jax.jacfwd(jax.jacrev(phi_flat, argnums=1), argnums=1)(wf, a)  # (m, n, n)
    return jw, ja, ww, aw, aa


DENSE_FACTOR_MAX = 512
"""Up to this size the structured norms use a dense float64 eigensolver (exact); above it ARPACK on the
matrix-free operator (converged to a relative tolerance of 1e-12)."""


def _top_eig_sym(matvec, n: int) -> float:
    """λ_max of a symmetric positive semi-definite n × n operator given by its matrix–vector product.

    Dense (LAPACK, the top eigenvalue only) for n ≤ :data:`DENSE_FACTOR_MAX`, else ARPACK (which="LA",
    tol = 1e-12) on the operator — O(n²) per product instead of O(n³).
    """
    if n <= DENSE_FACTOR_MAX:
        b = matvec(np.eye(n))
        b = 0.5 * (b + b.T)
        return float(scipy.linalg.eigh(b, eigvals_only=True, subset_by_index=[n - 1, n - 1])[0])
    from scipy.sparse.linalg import LinearOperator, eigsh

    op = LinearOperator((n, n), matvec=lambda v: matvec(v.reshape(n, -1)).ravel(), dtype=np.float64)
    v0 = np.random.default_rng(0).standard_normal(n)
    return float(eigsh(op, k=1, which="LA", tol=1e-12, v0=v0, ncv=min(n, 40), maxiter=10_000)[0][0])


def _spectral_norm(a: np.ndarray) -> float:
    """Largest singular value of a (float64), as √λ_max(AᵀA) with AᵀA applied matrix-free."""
    return math.sqrt(max(_top_eig_sym(lambda v: a.T @ (a @ v), a.shape[1]), 0.0))


def layer_factors(model: MLP | ResNet, params: PyTree, x: Any) -> dict[str, np.ndarray]:
    """Every layer-wise factor of the bounds of Proposition 3.1 / Theorem 3.1 at one point, exact.

    Returns float64 arrays of length L (index l − 1 for layer l):

    * ``fan_in`` n_l, ``width`` m_l;
    * ``jw`` ‖∂α⁽ˡ⁾/∂W⁽ˡ⁾‖ = ‖α⁽ˡ⁻¹⁾‖ max|σ'(α̃⁽ˡ⁾)| / √n_l;
    * ``ja`` ‖∂α⁽ˡ⁾/∂α⁽ˡ⁻¹⁾‖ (NaN for l = 1: the input x is not a variable);
    * ``tww`` ‖∂²α⁽ˡ⁾/∂W²‖₂,₂,₁, ``taw`` ‖∂²α⁽ˡ⁾/∂α⁽ˡ⁻¹⁾∂W‖₂,₂,₁, ``taa`` ‖∂²α⁽ˡ⁾/∂(α⁽ˡ⁻¹⁾)²‖₂,₂,₁
      (``taw``, ``taa`` NaN for l = 1);
    * ``b_inf`` ‖∂f/∂α⁽ˡ⁾‖_∞, ``b_two`` ‖∂f/∂α⁽ˡ⁾‖₂;
    * ``max_s1``, ``max_s2`` max_i|σ'|, max_i|σ''| at the layer's pre-activations, ``a_norm`` ‖α⁽ˡ⁻¹⁾‖.

    The formulas are in the module docstring; all five norms are exact in float64 (``ja``, ``taw``,
    ``taa``: a dense eigensolver for n ≤ :data:`DENSE_FACTOR_MAX`, ARPACK to a relative 1e-12 above).
    """
    _check_no_bias(model)
    x = _single_input(model, x)
    bp = base_pass(model, params, x)
    ins, s1, s2, b = bp.inputs, bp.s1, bp.s2, bp.b
    residual = isinstance(model, ResNet)
    depth = model.depth
    out = {k: np.full(depth, np.nan) for k in ("fan_in", "width", "jw", "ja", "tww", "taw", "taa", "b_inf", "b_two",
                                                "max_s1", "max_s2", "a_norm")}
    for i in range(depth):
        w = np.asarray(params["layers"][i]["W"], dtype=np.float64)
        m, n = w.shape
        a = np.asarray(ins[i], dtype=np.float64)
        d1 = np.asarray(s1[i], dtype=np.float64)
        d2 = np.asarray(s2[i], dtype=np.float64)
        bl = np.asarray(b[i], dtype=np.float64)
        an = float(np.linalg.norm(a))
        out["fan_in"][i], out["width"][i], out["a_norm"][i] = n, m, an
        out["max_s1"][i], out["max_s2"][i] = np.abs(d1).max(), np.abs(d2).max()
        out["jw"][i] = an * np.abs(d1).max() / math.sqrt(n)
        out["tww"][i] = an**2 * np.abs(d2).max() / n
        out["b_inf"][i], out["b_two"][i] = np.abs(bl).max(), np.linalg.norm(bl)
        if i == 0:
            continue
        ja = d1[:, None] * w / math.sqrt(n)
        if residual:
            ja = ja + np.eye(m, n)
        out["ja"][i] = _spectral_norm(ja)
        c, e = d2 / n, d1 / math.sqrt(n)
        ce, ee = w.T @ (c * e), float(e @ e)
        c2, cabs = (c**2)[:, None], np.abs(d2)[:, None]

        def m_aw(v, w=w, c2=c2, ce=ce, a=a, an=an, ee=ee):
            # M v with M = ‖a‖²Wᵀdiag(c²)W + ce aᵀ + a ceᵀ + ‖e‖² I (v: (n, k))
            return an**2 * (w.T @ (c2 * (w @ v))) + np.outer(ce, a @ v) + np.outer(a, ce @ v) + ee * v

        out["taw"][i] = math.sqrt(max(_top_eig_sym(m_aw, n), 0.0))
        out["taa"][i] = _top_eig_sym(lambda v, w=w, cabs=cabs: w.T @ (cabs * (w @ v)), n) / n
    return out


def a_priori_layer_jacobian(model: MLP | ResNet, params0: PyTree, params: PyTree) -> np.ndarray:
    """Lemma G.2-type bound on ‖∂α⁽ˡ⁾/∂α⁽ˡ⁻¹⁾‖ at W from the initialization only:
    L_σ(‖W₀⁽ˡ⁾‖ + ‖W⁽ˡ⁾ − W₀⁽ˡ⁾‖_F)/√n_l (+1 for a ResNet layer), l = 2..L (NaN for l = 1).

    It uses ‖diag(σ')W‖ ≤ L_σ‖W‖ and ‖W‖ ≤ ‖W₀‖ + ‖W − W₀‖_F (supplement, Eq. 89 and G.1), so it holds at
    every point of the ball ‖W − W₀‖ ≤ R once ‖W − W₀‖_F is replaced by R.
    """
    _check_no_bias(model)
    out = np.full(model.depth, np.nan)
    for i in range(1, model.depth):
        w0 = np.asarray(params0["layers"][i]["W"], dtype=np.float64)
        dw = np.asarray(params["layers"][i]["W"], dtype=np.float64) - w0
        lip = model.activations[i].lipschitz
        out[i] = lip * (_spectral_norm(w0) + np.linalg.norm(dw)) / math.sqrt(w0.shape[1])
        if isinstance(model, ResNet):
            out[i] += 1.0
    return out


# ---------------------------------------------------------------------------------------------
# From layer factors to bounds on ‖H‖ (Proposition 3.1, Lemma F.1, Theorem 3.1)
# ---------------------------------------------------------------------------------------------


def _reach(f: Mapping[str, np.ndarray], l1: int, k: int) -> float:
    """Upper bound on ‖∂α⁽ᵏ⁾/∂W⁽ˡ¹⁾‖ (1-based layers, k ≥ l1): ‖J_w⁽ˡ¹⁾‖ Π_{l'=l1+1}^{k} ‖J_α⁽ˡ'⁾‖."""
    out = f["jw"][l1 - 1]
    for lp in range(l1 + 1, k + 1):
        out *= f["ja"][lp - 1]
    return float(out)


def block_bounds(factors: Mapping[str, np.ndarray], *, include_v: bool) -> np.ndarray:
    """Upper bounds β(l₁, l₂) on the block norms ‖H⁽ˡ¹,ˡ²⁾‖ (chain rule, proof of Theorem 3.1).

    For 1 ≤ l₁ ≤ l₂ ≤ L (A(l, k) := ‖J_w⁽ˡ⁾‖Π_{l<l'≤k}‖J_α⁽ˡ'⁾‖ ≥ ‖∂α⁽ᵏ⁾/∂W⁽ˡ⁾‖, b_l := ‖∂f/∂α⁽ˡ⁾‖_∞):

    β = 1{l₁=l₂}‖T_ww⁽ˡ¹⁾‖b_{l₁} + 1{l₁<l₂} A(l₁, l₂−1)‖T_αw⁽ˡ²⁾‖ b_{l₂}
        + Σ_{l=l₂+1}^{L} A(l₁, l−1) A(l₂, l−1) ‖T_αα⁽ˡ⁾‖ b_l,

    and for the output layer (``include_v``) β(l, L+1) = A(l, L)/√m_L, β(L+1, L+1) = 0.  Returns the
    symmetric (L+1) × (L+1) (or L × L) matrix.
    """
    depth = len(factors["jw"])
    size = depth + (1 if include_v else 0)
    beta = np.zeros((size, size))
    for l1 in range(1, depth + 1):
        for l2 in range(l1, depth + 1):
            val = 0.0
            if l1 == l2:
                val += factors["tww"][l1 - 1] * factors["b_inf"][l1 - 1]
            else:
                val += _reach(factors, l1, l2 - 1) * factors["taw"][l2 - 1] * factors["b_inf"][l2 - 1]
            for l3 in range(l2 + 1, depth + 1):
                val += (_reach(factors, l1, l3 - 1) * _reach(factors, l2, l3 - 1) * factors["taa"][l3 - 1]
                        * factors["b_inf"][l3 - 1])
            beta[l1 - 1, l2 - 1] = beta[l2 - 1, l1 - 1] = val
    if include_v:
        m_last = factors["width"][-1]
        for l1 in range(1, depth + 1):
            beta[l1 - 1, depth] = beta[depth, l1 - 1] = _reach(factors, l1, depth) / math.sqrt(m_last)
    return beta


def theorem_3_1_quantities(factors: Mapping[str, np.ndarray]) -> dict[str, float]:
    """Q_∞, Q_L, Q₂,₂,₁ (Eq. 20–21), L_φ, C₁, C₂ of Theorem 3.1 from the layer factors.

    * Q_∞ = max_l ‖∂f/∂α⁽ˡ⁾‖_∞, Q_L = max_l ‖∂α⁽ˡ⁾/∂w⁽ˡ⁾‖;
    * Q₂,₂,₁ = max{ ‖T_ww⁽ˡ¹⁾‖, ‖J_w⁽ˡ¹⁾‖‖T_αw⁽ˡ²⁾‖ (l₁ < l₂), ‖J_w⁽ˡ¹⁾‖‖J_w⁽ˡ²⁾‖‖T_αα⁽ˡ³⁾‖ (l₁ ≤ l₂ < l₃) }.
      Eq. (21) writes l₁ < l₂ < l₃ for all three, which is empty for L = 2 and misses the diagonal
      blocks' terms (l₁ = l₂); the proof (Appendix F) needs the ranges used here;
    * L_φ = max(1, max_{l≥2} ‖∂α⁽ˡ⁾/∂α⁽ˡ⁻¹⁾‖): the proof bounds products of k ≤ 2L layer Jacobians by
      L_φ^{2L}, which needs L_φ ≥ 1 (for L_φ < 1 the products are ≤ 1);
    * C₁ = L(L²L_φ^{2L} + L L_φ^L + 1), C₂ = L L_φ^L.
    """
    depth = len(factors["jw"])
    q_inf = float(np.max(factors["b_inf"]))
    q_l = float(np.max(factors["jw"]))
    cands = [float(t) for t in factors["tww"]]
    for l1 in range(1, depth + 1):
        for l2 in range(l1 + 1, depth + 1):
            cands.append(factors["jw"][l1 - 1] * factors["taw"][l2 - 1])
        for l2 in range(l1, depth + 1):
            for l3 in range(l2 + 1, depth + 1):
                cands.append(factors["jw"][l1 - 1] * factors["jw"][l2 - 1] * factors["taa"][l3 - 1])
    q221 = float(max(cands))
    ja = factors["ja"][1:]
    l_phi = float(max(1.0, np.max(ja))) if ja.size else 1.0
    c1 = depth * (depth**2 * l_phi ** (2 * depth) + depth * l_phi**depth + 1)
    c2 = depth * l_phi**depth
    return {"Q_inf": q_inf, "Q_L": q_l, "Q_221": q221, "L_phi": l_phi, "C1": float(c1), "C2": float(c2)}


def hessian_bounds(factors: Mapping[str, np.ndarray], *, include_v: bool) -> dict[str, float]:
    """Three upper bounds on ‖H‖, tightest first, plus Theorem 3.1's quantities.

    * ``blockwise`` — ‖(β(l₁, l₂))‖₂, the spectral norm of the matrix of block bounds (for a block
      matrix, ‖H‖ ≤ ‖(‖H_ij‖)_ij‖₂);
    * ``lemma_f1`` — Σ_{l₁,l₂} β(l₁, l₂) (Lemma F.1 of the supplement; for L = 2 with v fixed this is
      exactly the right-hand side of Eq. 17);
    * ``theorem_3_1`` — C₁Q₂,₂,₁Q_∞ + C₂Q_L/√m (the second term only with a trained v); it dominates
      the sum because every term of β is ≤ Q₂,₂,₁Q_∞ times a power of L_φ ≤ L_φ^{2L}, and the v-blocks
      enter once (‖[[0, X], [Xᵀ, 0]]‖ = ‖X‖ ≤ Σ_l ‖H⁽ˡ,ᴸ⁺¹⁾‖).
    """
    beta = block_bounds(factors, include_v=include_v)
    q = theorem_3_1_quantities(factors)
    depth = len(factors["jw"])
    thm = q["C1"] * q["Q_221"] * q["Q_inf"]
    if include_v:
        thm += q["C2"] * q["Q_L"] / math.sqrt(factors["width"][-1])
    ww = beta[:depth, :depth]
    lemma = float(ww.sum() + (beta[:depth, depth].sum() if include_v else 0.0))
    return {"blockwise": float(np.linalg.eigvalsh(beta)[-1]), "lemma_f1": lemma, "theorem_3_1": float(thm), **q}


def eq_17_terms(factors: Mapping[str, np.ndarray]) -> dict[str, float]:
    """The four terms of Eq. (17) (Proposition 3.1, L = 2, v fixed) and their sum."""
    if len(factors["jw"]) != 2:
        raise ValueError("Eq. (17) is the two-hidden-layer bound: factors of a network with L = 2 needed")
    jw1 = factors["jw"][0]
    b1, b2 = factors["b_inf"]
    terms = {
        "J_w1^2 T_aa2 b2": jw1**2 * factors["taa"][1] * b2,
        "2 J_w1 T_aw2 b2": 2 * jw1 * factors["taw"][1] * b2,
        "T_ww2 b2": factors["tww"][1] * b2,
        "T_ww1 b1": factors["tww"][0] * b1,
    }
    terms = {k: float(v) for k, v in terms.items()}
    terms["eq_17"] = float(sum(terms.values()))
    return terms


# ---------------------------------------------------------------------------------------------
# Ascent of the top eigenvalue in a ball, and gradient-descent checkpoints
# ---------------------------------------------------------------------------------------------


@jax.jit
def _second_directional_grad(model, params, x, direction):
    def second(p):
        first = lambda q: jax.jvp(lambda r: _full_output(r, model, x), (q,), (direction,))[1]  # noqa: E731
        return jax.jvp(first, (p,), (direction,))[1]

    value, grad = jax.value_and_grad(second)(params)
    return value, grad, tree_norm(grad)


def eigenvalue_gradient(model: Any, params: PyTree, x: Any, direction: PyTree) -> tuple[float, PyTree]:
    """(uᵀH(W)u, ∇_W uᵀH(W)u) for a fixed direction u — a third-derivative contraction (jvp of jvp, then grad).

    For a simple eigenvalue λ(W) with unit eigenvector u, ∇_W λ = ∇_W (uᵀH(W)u) (Hellmann–Feynman).
    """
    _check_model(model)
    x = _single_input(model, x)
    value, grad, _ = _second_directional_grad(model, params, x, direction)
    return float(value), grad


def project_to_ball(params: PyTree, center: PyTree, radius: float) -> PyTree:
    """The Euclidean projection of ``params`` onto B(center, radius)."""
    radius = V.positive_float("radius", radius, allow_zero=True)
    return _project(params, center, jnp.asarray(radius, jax.tree_util.tree_leaves(params)[0].dtype))


@jax.jit
def _project(params, center, radius):
    delta = tree_sub(params, center)
    n = tree_norm(delta)
    scale = jnp.where(n > radius, radius / jnp.where(n > 0, n, 1.0), 1.0)
    return tree_axpy(1.0, tree_scale(scale, delta), center)


@jax.jit
def _distance(a, b):
    return tree_norm(tree_sub(a, b))


@jax.jit
def _step_and_project(params, direction, center, step, radius):
    """Proj_{B(center, radius)}(params + step · direction) in one compiled call."""
    return _project(tree_axpy(step, direction, params), center, radius)


def ascend_hessian_norm(
    model: Any,
    params0: PyTree,
    x: Any,
    radius: float,
    *,
    steps: int = 8,
    start: PyTree | None = None,
    tol: float = 1e-4,
    initial_step: float = 0.25,
    min_step: float = 1 / 64,
) -> dict[str, Any]:
    """Projected gradient ascent of ‖H(W)‖ = |λ_extreme(H(W))| over the ball ‖W − W₀‖ ≤ R.

    Each of the ``steps`` iterations computes the gradient sign(λ)∇_W(uᵀH(W)u) at the current point (u
    the extreme eigenvector, :func:`eigenvalue_gradient`) and backtracks along it: try a step of length
    s, project onto the ball, recompute ‖H‖ (warm-started); accept the first s that increases ‖H‖,
    halving s from the previous accepted length (initially ``initial_step``·R) down to ``min_step``·R.
    An accepted step doubles the next trial length (at most R).  The iteration stops early when no
    step length helps (a local maximum at this resolution).  The result is a lower bound on
    max_{ball}‖H‖ found by a local method.

    Returns:
        dict with ``value`` (best ‖H‖ found), ``params`` (the maximizer), ``distance`` (‖W − W₀‖),
        ``history`` (‖H‖ after every accepted step), ``start_value``, ``products`` (Hessian-vector
        products), ``evaluations`` (Hessian norms computed), ``kernel`` (K_{(x,x)} at the maximizer).
    """
    radius = V.positive_float("radius", radius)
    steps = V.positive_int("steps", steps, minimum=0)
    x = _single_input(model, x)
    p = start if start is not None else params0
    cur = hessian_norm(model, p, x, tol=tol)
    start_value, products, evaluations, history = cur.value, cur.iterations, 1, []
    trial = initial_step * radius
    for _ in range(steps):
        _, g, gn = _second_directional_grad(model, p, x, cur.eigenvector)
        gn = float(gn)
        if gn == 0 or not math.isfinite(gn):
            break
        accepted = False
        while trial >= min_step * radius:
            dtype = jax.tree_util.tree_leaves(p)[0].dtype
            q = _step_and_project(p, g, params0, jnp.asarray(math.copysign(trial / gn, cur.eigenvalue), dtype),
                                  jnp.asarray(radius, dtype))
            new = hessian_norm(model, q, x, tol=tol, start=cur.eigenvector)
            products += new.iterations
            evaluations += 1
            if new.value > cur.value:
                p, cur, accepted = q, new, True
                history.append(new.value)
                trial = min(2 * trial, radius)
                break
            trial *= 0.5
        if not accepted:
            break
    return {"value": cur.value, "params": p, "distance": float(_distance(p, params0)), "history": history,
            "start_value": start_value, "products": products, "evaluations": evaluations, "kernel": cur.kernel}


def _identity(params: PyTree, x: Any = None, y: Any = None) -> PyTree:
    return params


def gd_checkpoints(model: Any, params: PyTree, x: Any, y: Any, *, lr: float, steps: int,
                   checkpoints: int) -> dict[str, Any]:
    """Full-batch gradient descent on L(W) = (1/2n)Σ(f(W; x_i) − y_i)² (:func:`ntkbook.training.train`), keeping
    a few iterates only (memory O(checkpoints · P)).

    Returns:
        dict with ``losses`` (steps,) (loss before each step), ``distances`` (steps,) (‖W_{t+1} − W₀‖),
        ``points`` (list of the ``checkpoints`` iterates W_t at t = steps·j/checkpoints, j = 1..), ``times``,
        ``final_loss`` (the loss after the last step).
    """
    V.pytree_of_arrays("params", params)
    x = V.array("x", x)
    y = V.array("y", y, ndim=1)
    lr = V.positive_float("lr", lr)
    steps = V.positive_int("steps", steps)
    checkpoints = V.positive_int("checkpoints", checkpoints)
    if steps % checkpoints:
        raise ValueError(f"steps ({steps}) must be a multiple of checkpoints ({checkpoints})")
    times = [steps // checkpoints * (j + 1) for j in range(checkpoints)]
    run = train(model.apply, params, x, y, lr=lr, stop=steps, record_steps=np.arange(steps + 1),
                track={"distance": distance_from_start(), "point": Tracker(_identity, steps=tuple(times))})
    points = [jax.tree_util.tree_map(lambda a, j=j: jnp.asarray(a[j]), run.tracked["point"])
              for j in range(checkpoints)]
    return {"losses": run.losses[:-1], "distances": run.tracked["distance"][1:], "points": points,
            "times": times, "final_loss": float(run.loss)}


# ---------------------------------------------------------------------------------------------
# The chapter's sweeps (Proposition 3.1, Theorem 3.1, Lemma 3.1)
# ---------------------------------------------------------------------------------------------


def structured_norms_check(key: Array, *, width: int = 10, depth: int = 3, input_dim: int = 4,
                           activation: str = "tanh", models: Sequence[str] = ("MLP", "ResNet")
                           ) -> list[dict[str, Any]]:
    """The closed forms of :func:`layer_factors` against autodiff tensors and :func:`ntkbook.norm_221`.

    For a small MLP and/or a small ResNet (``models``; float64, every layer of width ``width`` ≤ 16 so that the
    (2,2,1)-norms are computed by exact enumeration of sign vectors), one row per (model, layer,
    quantity) with ``formula``, ``reference`` (spectral norm or exact (2,2,1)-norm of the autodiff
    tensor) and ``exact`` (whether :func:`ntkbook.norm_221` certified its value).
    """
    from ..models.resnet import resnet
    from ..norms import norm_221

    width = V.positive_int("width", width)
    for name in models:
        V.choice("models", name, ("MLP", "ResNet"))
    if width > 16:
        raise ValueError(f"width must be <= 16 for exact (2,2,1)-norms by enumeration, got {width}")
    rows = []
    with jax.enable_x64(True):
        k1, k2, kx = jax.random.split(key, 3)
        x = unit_scale_input(kx, input_dim, jnp.float64)
        make = {"MLP": lambda: mlp(k1, (width,) * depth, input_dim=input_dim, activation=activation,
                                   dtype=jnp.float64),
                "ResNet": lambda: resnet(k2, width, depth, input_dim=input_dim, activation=activation,
                                         dtype=jnp.float64)}
        for name in models:
            model, params = make[name]()
            f = layer_factors(model, params, x)
            for layer in range(1, depth + 1):
                t = layer_tensors(model, params, x, layer)
                checks = [("‖∂α/∂W‖", f["jw"][layer - 1], np.linalg.norm(t["jw"], 2), True)]
                checks.append(("‖∂²α/∂W²‖₂₂₁", f["tww"][layer - 1], *_n221(norm_221, t["ww"])))
                if layer > 1:
                    checks.append(("‖∂α/∂α⁻‖", f["ja"][layer - 1], np.linalg.norm(t["ja"], 2), True))
                    checks.append(("‖∂²α/∂α⁻∂W‖₂₂₁", f["taw"][layer - 1], *_n221(norm_221, t["aw"])))
                    checks.append(("‖∂²α/∂α⁻²‖₂₂₁", f["taa"][layer - 1], *_n221(norm_221, t["aa"])))
                for q, formula, ref, exact in checks:
                    rows.append({"model": name, "layer": layer, "quantity": q, "formula": float(formula),
                                 "reference": float(ref), "exact": bool(exact)})
    return rows


def _n221(norm_221, t: np.ndarray) -> tuple[float, bool]:
    r = norm_221(t)
    return (r.lower, True) if r.exact else (0.5 * (r.lower + r.upper), False)


def compression_check(settings: Mapping[str, Any], key: Array) -> list[dict[str, Any]]:
    """‖H‖ from the compressed operator against references that do not use the range argument.

    * small networks (``small_width``, float64): the dense P × P autodiff Hessian (eigvalsh) against
      the dense compressed matrix QᵀHQ and ARPACK on it — ``small_models`` among "MLP", "ResNet";
    * one larger network (``large_width``, float32): an eigensolver on all P parameters
      (``reference_method``: ``"full"`` ARPACK, or ``"full-lanczos"`` :func:`ntkbook.hessian_spectral_norm`)
      against ARPACK on the compressed operator.

    Rows: ``network``, ``P``, ``N``, ``reference``, ``compressed``, ``method``, ``products``.
    """
    from ..hessian import dense_spectral_norm
    from ..models.resnet import resnet

    d, depth = settings.input_dim, settings.depth
    rows = []
    with jax.enable_x64(True):
        m = settings.small_width
        x = unit_scale_input(jax.random.fold_in(key, 1), d, jnp.float64)
        make = {"MLP": lambda: mlp(jax.random.fold_in(key, 2), (m,) * depth, input_dim=d, dtype=jnp.float64),
                "ResNet": lambda: resnet(jax.random.fold_in(key, 4), m, depth, input_dim=d, dtype=jnp.float64)}
        for name in settings.small_models:
            model, params = make[name]()
            ref = dense_spectral_norm(lambda p, model=model: _full_output(p, model, x), params)
            p_size, n_size = flat_spec(params).size, compressed_dimension(model, params)
            for method in ("dense", "arpack"):
                h = hessian_norm(model, params, x, method=method, tol=1e-12)
                rows.append({"network": f"{name}, m = {m} (float64)", "P": p_size, "N": n_size, "reference": ref,
                             "compressed": h.value, "method": h.method, "products": h.iterations})
    m = settings.large_width
    model, params = mlp(jax.random.fold_in(key, 5), (m,) * depth, input_dim=d)
    x = unit_scale_input(jax.random.fold_in(key, 1), d)
    full = hessian_norm(model, params, x, method=settings.reference_method, tol=settings.tol)
    comp = hessian_norm(model, params, x, tol=settings.tol)
    rows.append({"network": f"MLP, m = {m} (float32)", "P": full.size, "N": comp.size,
                 "reference": full.value, "compressed": comp.value, "method": comp.method,
                 "products": comp.iterations, "reference_products": full.iterations})
    return rows


def _network(key: Array, widths: Sequence[int], d: int, activation: str, train_output: bool):
    return mlp(key, tuple(widths), input_dim=d, activation=activation, train_output=train_output)


def proposition_3_1(settings: Mapping[str, Any], key: Array) -> dict[str, np.ndarray]:
    """Every factor of Eq. (17) for two-hidden-layer networks (v fixed, Eq. 16) across widths and seeds.

    Settings: ``widths``, ``seeds``, ``input_dim``, ``activation``.  One row per (width, seed) at W₀:
    the factors ``jw1``, ``taa2``, ``taw2``, ``tww2``, ``tww1``, ``b_inf1``, ``b_inf2``, ``b_two1``,
    ``b_two2``, the four terms and the total ``eq_17``, the tighter ``blockwise`` bound, and ``hessian``
    (‖H‖ with respect to (W₁, W₂)).
    """
    d, act = settings.input_dim, settings.activation
    rows: dict[str, list] = {}
    pieces = [(m, s) for m in settings.widths for s in range(settings.seeds)]
    for m, s in progress(pieces, desc="Prop. 3.1", total=len(pieces)):
        k = jax.random.fold_in(key, 1000 * s + m)
        model, params = _network(k, (m, m), d, act, train_output=False)
        x = unit_scale_input(jax.random.fold_in(key, 7), d)
        f = layer_factors(model, params, x)
        terms = eq_17_terms(f)
        bnd = hessian_bounds(f, include_v=False)
        h = hessian_norm(model, params, x)
        row = {"width": m, "seed": s, "jw1": f["jw"][0], "taa2": f["taa"][1], "taw2": f["taw"][1],
               "tww2": f["tww"][1], "tww1": f["tww"][0], "b_inf1": f["b_inf"][0], "b_inf2": f["b_inf"][1],
               "b_two1": f["b_two"][0], "b_two2": f["b_two"][1], "ja2": f["ja"][1], **terms,
               "blockwise": bnd["blockwise"], "lemma_f1": bnd["lemma_f1"], "hessian": h.value, "kernel": h.kernel}
        for key_, val in row.items():
            rows.setdefault(key_, []).append(val)
    return {k: np.asarray(v) for k, v in rows.items()}


def theorem_3_1(settings: Mapping[str, Any], key: Array) -> dict[str, np.ndarray]:
    """‖H‖ against the bounds of Theorem 3.1 for L ∈ ``depths`` over ``widths`` × ``seeds``, at W₀ and at
    ``sphere_points`` random points of each sphere ‖W − W₀‖ = R, R ∈ ``radii`` (v trained).

    Returns one row per sample: ``depth``, ``width``, ``seed``, ``radius`` (0 at W₀), ``hessian``,
    ``blockwise``, ``lemma_f1``, ``theorem_3_1``, ``Q_inf``, ``Q_L``, ``Q_221``, ``L_phi``, ``C1``,
    ``C2``, ``L_phi_a_priori`` (Lemma G.2 bound on max_l ‖J_α⁽ˡ⁾‖), ``ja_max`` and ``kernel``.
    """
    d, act = settings.input_dim, settings.activation
    pieces = [(L, m, s) for L in settings.depths for m in settings.widths for s in range(settings.seeds)]
    rows: dict[str, list] = {}
    for L, m, s in progress(pieces, desc="Thm. 3.1", total=len(pieces)):
        k = jax.random.fold_in(key, 100_000 * L + 1000 * s + m)
        model, p0 = _network(k, (m,) * L, d, act, train_output=True)
        x = unit_scale_input(jax.random.fold_in(key, 7), d)
        points = [(0.0, p0)]
        for j, r in enumerate(settings.radii):
            for i in range(settings.sphere_points):
                points.append((float(r), point_on_sphere(jax.random.fold_in(k, 31 * j + i + 1), p0, float(r))))
        for r, p in points:
            f = layer_factors(model, p, x)
            bnd = hessian_bounds(f, include_v=True)
            h = hessian_norm(model, p, x, tol=settings.tol)
            prior = a_priori_layer_jacobian(model, p0, p)
            row = {"depth": L, "width": m, "seed": s, "radius": r, "hessian": h.value, "kernel": h.kernel,
                   "ja_max": float(np.nanmax(f["ja"])), "L_phi_a_priori": float(np.nanmax(prior)), **bnd}
            for key_, val in row.items():
                rows.setdefault(key_, []).append(val)
    return {k: np.asarray(v) for k, v in rows.items()}


def worst_per_network(rows: Mapping[str, np.ndarray], keys: Sequence[str],
                      by: Sequence[str] = ("depth", "width", "seed")) -> dict[str, np.ndarray]:
    """One row per network (the columns ``by``) with the largest value of each of ``keys`` over its points.

    Points of one network (W₀ and points of the ball) are not independent samples; fits of exponents
    use one value per network.
    """
    ids = np.stack([np.asarray(rows[b], dtype=np.float64) for b in by], axis=1)
    uniq = np.unique(ids, axis=0)
    out: dict[str, list] = {k: [] for k in (*by, *keys)}
    for u in uniq:
        sel = np.all(ids == u, axis=1)
        for b, val in zip(by, u, strict=True):
            out[b].append(val)
        for k in keys:
            out[k].append(float(np.max(np.asarray(rows[k])[sel])))
    return {k: np.asarray(v) for k, v in out.items()}


def log_factor_allowance(widths: Sequence[int], power: float = 1.0) -> float:
    """The most a factor (ln m)^power can change a log–log slope over the range of ``widths``:

    power · ln(ln m_max / ln m_min) / ln(m_max / m_min).

    Õ(m^a) allows such a factor, so a fitted exponent of a quantity that is Õ(m^a) may exceed a by this
    much (and a Θ̃(1) quantity may have a slope of ± this much).
    """
    w = np.asarray(widths, dtype=np.float64)
    lo, hi = float(w.min()), float(w.max())
    if lo <= 1 or hi <= lo:
        raise ValueError(f"widths must contain at least two distinct values > 1, got {widths}")
    return float(power * math.log(math.log(hi) / math.log(lo)) / math.log(hi / lo))


def rate_interval(fit: Any, expected: float, widths: Sequence[int], *, power: float = 1.0,
                  sigmas: float = 2.0) -> tuple[float, float]:
    """The interval a fitted log–log slope must fall in for "the quantity is Θ̃(m^expected)":

    expected ± (:func:`log_factor_allowance` + ``sigmas`` · standard error of the fitted slope).

    The first part is what Õ/Θ̃ allow (a factor (ln m)^±power); the second the sampling error of the
    fit over seeds and points (≈ 95% for two standard errors).
    """
    tol = log_factor_allowance(widths, power) + sigmas * float(fit.stderr)
    return expected - tol, expected + tol


__all__ = [
    "DENSE_FACTOR_MAX",
    "BasePass",
    "Frames",
    "HessianNorm",
    "a_priori_layer_jacobian",
    "ascend_hessian_norm",
    "base_pass",
    "block_bounds",
    "compress",
    "compressed_dimension",
    "compressed_hessian",
    "compressed_hvp",
    "compressed_output",
    "compressed_zero",
    "compression_check",
    "eigenvalue_gradient",
    "eq_17_terms",
    "frames",
    "gd_checkpoints",
    "hessian_bounds",
    "hessian_norm",
    "layer_factors",
    "layer_inputs",
    "layer_tensors",
    "lift",
    "log_factor_allowance",
    "project_to_ball",
    "proposition_3_1",
    "rate_interval",
    "structured_norms_check",
    "theorem_3_1",
    "theorem_3_1_quantities",
    "unit_scale_input",
    "worst_per_network",
]
