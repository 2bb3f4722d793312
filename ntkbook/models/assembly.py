"""Assembly models of Liu, Zhu & Belkin (2022), Section 2: many independent weak sub-models.

    f(θ; x) = (1/s(m)) Σᵢ₌₁ᵐ vᵢ gᵢ(wᵢ; x),     θ = (w₁, …, w_m)                      (Eq. 4)

Sub-models share no parameters (Eq. 2), so the Hessian of f is block diagonal,
H = (1/s(m)) blockdiag(v₁H_{g₁}, …, v_mH_{g_m}), and its quadratic Taylor term is a sum of the
sub-models' quadratic terms — the whole proof of Theorem 1.

Sub-model families (:func:`get_family`), all with the same layout: the parameter vector
w ∈ ℝ^p is ``[A.ravel(), outer]`` where the k rows of A ∈ ℝ^{k×d} act on the input through
z = A x̂, x̂ = x/√d, and ``outer`` are the remaining o parameters (p = k·d + o):

* ``"neuron"`` — g(w; x) = u·σ(aᵀx̂) (k = 1, o = 1): one hidden neuron with its output weight, the
  sub-model of the two-layer network of Eq. (7).  Init: a ~ N(0, I_d), u uniform on {±1}.
* ``"mlp"`` — g(w; x) = cᵀσ(B σ(A x̂)/√h)/√h, a tiny two-hidden-layer tanh network of width h
  (k = h, o = h² + h).  Init: A ~ N(0, 1) entries, B and c uniform on {±1}.
* ``"square"`` — g(w; x) = ½(aᵀx̂)², a polynomial (degree 2) in its parameters (k = 1, o = 0).
  Its Hessian x̂x̂ᵀ does not depend on w, so every Taylor term is exact.  Init: a ~ N(0, I_d).

The domain D_R on which the smoothness constant β of Assumption 2 is taken contains every ball
B(w_{i,0}, R) of the experiments: for the neuron |u| ≤ 1 + R, for the MLP ‖(B, c)‖ ≤ √(h²+h) + R
(the outer parameters start on that sphere), for the square all of ℝ^d.  It does not depend on m,
so β is a constant, as Assumption 2 requires.

Active subspace.  g depends on A only through z = A x̂, so every derivative of g lives in the
q = k + o dimensional span of {e_j ⊗ x̂ (j < k), outer coordinates}; :func:`active_basis` returns
an orthonormal basis Q (q × p).  Then ‖H_g(w)‖ = ‖Q H_g(w) Qᵀ‖ exactly, and a worst-case
perturbation in a ball can be searched in q dimensions (components orthogonal to the span change
nothing but use up radius).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache, partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import minimize_scalar

from .. import _validation as V
from ..activations import Activation, get_activation
from ..random import normal
from .common import HIGHEST, STATIC, Array, PyTree, inputs

FAMILIES = ("neuron", "mlp", "square")
WEIGHTS = ("ones", "signs", "gaussian")
SCALINGS = ("auto", "sqrt", "linear")


@dataclass(frozen=True, eq=False)
class SubModelFamily:
    """A family of scalar sub-models g(w; x) with parameters w ∈ ℝ^p, p = k·d + o.

    Attributes:
        name: ``"neuron"``, ``"mlp"`` or ``"square"``.
        activation: σ (tanh by default; unused by the square).
        hidden: h for the MLP (1 otherwise).
        first_layer_rows: k, rows of A (z = A x̂).
        outer_size: o.
        mean_zero: whether E[g(w₀; x)] = 0 under the initialization (decides s(m) for vᵢ = 1).
        outer_radius0: ‖outer‖ at initialization (the domain is ‖outer‖ ≤ outer_radius0 + R),
            or None when the domain is unconstrained.
    """

    name: str
    activation: Activation
    hidden: int
    first_layer_rows: int
    outer_size: int
    mean_zero: bool
    outer_radius0: float | None

    def num_params(self, input_dim: int) -> int:
        return self.first_layer_rows * int(input_dim) + self.outer_size

    def apply_one(self, w: Array, x: Array) -> Array:
        """g(w; x) for one parameter vector w (p,) and one input x (d,) — a scalar."""
        d = x.shape[-1]
        k = self.first_layer_rows
        a = w[: k * d].reshape(k, d)
        z = jnp.matmul(a, x, precision=HIGHEST) / math.sqrt(d)
        outer = w[k * d:]
        sigma = self.activation
        if self.name == "neuron":
            return outer[0] * sigma(z[0])
        if self.name == "square":
            return 0.5 * z[0] ** 2
        h = self.hidden
        b = outer[: h * h].reshape(h, h)
        c = outer[h * h:]
        inner = sigma(jnp.matmul(b, sigma(z), precision=HIGHEST) / math.sqrt(h))
        return jnp.dot(c, inner, precision=HIGHEST) / math.sqrt(h)

    def init_one(self, key: Array, input_dim: int, dtype: Any = jnp.float32) -> Array:
        """Initial parameters of one sub-model, shape (p,)."""
        k_a, k_o = jax.random.split(key)
        a = normal(k_a, (self.first_layer_rows * input_dim,), dtype)
        if self.outer_size == 0:
            return a
        return jnp.concatenate([a, jax.random.rademacher(k_o, (self.outer_size,), dtype)])

    def smoothness(self, radius: float, x: Any) -> float | None:
        """β = sup_{w ∈ D_R} ‖H_g(w; x)‖ in closed form, or None when there is none (the MLP).

        * square: H = x̂x̂ᵀ for every w, so β = ‖x̂‖² = ‖x‖²/d.
        * neuron: in the basis (x̂/‖x̂‖, e_u) the Hessian is [[u σ''(z) r², σ'(z) r], [σ'(z) r, 0]]
          with r = ‖x̂‖, whose norm (ρ|σ''|r² + √(ρ²σ''²r⁴ + 4σ'²r²))/2 increases with ρ = |u|;
          so β is its maximum over z ∈ ℝ at ρ = 1 + R (one-dimensional, computed on a fine grid
          and refined by bounded scalar maximization).
        """
        radius = V.positive_float("radius", radius, allow_zero=True)
        x = V.numpy_array("x", x, ndim=1)
        r2 = float(np.dot(x, x) / x.size)
        if self.name == "square":
            return r2
        if self.name == "neuron":
            return _neuron_smoothness(self.activation, 1.0 + radius, r2)
        return None


def _neuron_smoothness(activation: Activation, rho: float, r2: float) -> float:
    d1 = jax.jit(lambda z: activation.derivative(z, 1))
    d2 = jax.jit(lambda z: activation.derivative(z, 2))

    def norm(z):
        with jax.enable_x64(True):
            zz = jnp.asarray(z, jnp.float64)
            s1, s2 = np.asarray(d1(zz)), np.asarray(d2(zz))
        c = rho * np.abs(s2) * r2
        return 0.5 * (c + np.sqrt(c * c + 4.0 * s1 * s1 * r2))

    grid = np.linspace(-12.0, 12.0, 48_001)
    vals = norm(grid)
    i = int(np.argmax(vals))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = minimize_scalar(lambda z: -float(norm(np.array([z]))[0]), bounds=(lo, hi), method="bounded",
                          options={"xatol": 1e-13})
    return float(max(vals[i], -res.fun))


@cache
def get_family(name: str, activation: str | Activation = "tanh", hidden: int = 3) -> SubModelFamily:
    """The sub-model family ``name`` (one object per arguments, so it can be a static jit argument)."""
    V.choice("family", name, FAMILIES)
    act = get_activation(activation)
    hidden = V.positive_int("hidden", hidden)
    # SubModelFamily compares by identity (it is a static jit argument): cached, equal arguments give the
    # same object, and every function compiled for a family is reused by every caller
    return _family(name, act, hidden if name == "mlp" else 1)


@cache
def _family(name: str, act: Activation, hidden: int) -> SubModelFamily:
    if name == "neuron":
        return SubModelFamily("neuron", act, 1, 1, 1, True, 1.0)
    if name == "square":
        return SubModelFamily("square", act, 1, 1, 0, False, None)
    return SubModelFamily("mlp", act, hidden, hidden, hidden * hidden + hidden, True,
                          math.sqrt(hidden * hidden + hidden))


def active_basis(family: SubModelFamily, x: Any) -> Array:
    """Orthonormal rows Q (q × p), q = k + o, spanning every derivative of g(·; x) (see module doc)."""
    x = V.array("x", x, ndim=1)
    xn = np.asarray(x, dtype=np.float64)
    d = xn.shape[0]
    k, o = family.first_layer_rows, family.outer_size
    q = np.zeros((k + o, family.num_params(d)))
    for j in range(k):
        q[j, j * d:(j + 1) * d] = xn / np.linalg.norm(xn)
    q[k + np.arange(o), k * d + np.arange(o)] = 1.0
    return jnp.asarray(q, x.dtype)


def scaling_factor(m: int, scaling: str) -> float:
    """s(m): √m (``"sqrt"``) or m (``"linear"``)."""
    m = V.positive_int("m", m)
    V.choice("scaling", scaling, SCALINGS[1:])
    return math.sqrt(m) if scaling == "sqrt" else float(m)


def resolve_scaling(family: SubModelFamily, weights: str, scaling: str = "auto") -> str:
    """The s(m) that keeps f(θ₀; x) = O(1) (Section 2, "the scaling factor").

    With zero-mean weights (±1 or Gaussian), or with vᵢ = 1 and zero-mean sub-models, the sum in
    Eq. (4) is a sum of m centred terms, of order √m, so s(m) = √m.  With vᵢ = 1 and sub-models of
    non-zero mean (the square), the sum grows like m, so s(m) = m.
    """
    V.choice("weights", weights, WEIGHTS)
    V.choice("scaling", scaling, SCALINGS)
    if scaling != "auto":
        return scaling
    return "linear" if (weights == "ones" and not family.mean_zero) else "sqrt"


@jax.tree_util.register_dataclass
@dataclass(frozen=True, eq=False)
class Assembly:
    """f(θ; x) = (1/s) Σᵢ vᵢ g(wᵢ; x) — Eq. (4) — with m sub-models of one family.

    Trainable parameters ``{"w": (m, p)}`` (row i is wᵢ); the weights v (m,) are fixed leaves of the
    model.  ``scale`` is s(m).
    """

    v: Array
    scale: float = field(metadata=STATIC)
    family: SubModelFamily = field(metadata=STATIC)
    input_dim: int = field(metadata=STATIC)

    @property
    def width(self) -> int:
        return int(self.v.shape[0])

    def sub_outputs(self, params: PyTree, x: Any) -> Array:
        """gᵢ(wᵢ; x_n) for every input and sub-model, shape (n, m)."""
        x = inputs(x, self.input_dim)
        per_input = jax.vmap(self.family.apply_one, in_axes=(0, None))  # over sub-models
        return jax.vmap(lambda xi: per_input(params["w"], xi))(x)

    def apply(self, params: PyTree, x: Any) -> Array:
        """f(θ; x), shape (n,)."""
        return jnp.matmul(self.sub_outputs(params, x), self.v, precision=HIGHEST) / self.scale


def assembly_weights(key: Array, m: int, weights: str, dtype: Any = jnp.float32) -> Array:
    """v ∈ ℝ^m: all ones, uniform signs, or N(0, 1); vᵢ is drawn from ``fold_in(key, i)``, so the
    weights of a smaller assembly are the first entries of a larger one (nested widths)."""
    m = V.positive_int("m", m)
    V.choice("weights", weights, WEIGHTS)
    if weights == "ones":
        return jnp.ones((m,), dtype)
    return _draw_weights(key, m, weights, jnp.dtype(dtype))


@partial(jax.jit, static_argnames=("m", "weights", "dtype"))
def _draw_weights(key, m, weights, dtype):
    keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(m))
    draw = jax.random.rademacher if weights == "signs" else jax.random.normal
    return jax.vmap(lambda k: draw(k, (), dtype))(keys)


def init_sub_models(key: Array, family: SubModelFamily, m: int, input_dim: int,
                    dtype: Any = jnp.float32) -> Array:
    """Parameters of m sub-models, shape (m, p); row i from ``fold_in(key, i)`` (nested widths)."""
    return _init_sub_models(key, family, V.positive_int("m", m), V.positive_int("input_dim", input_dim),
                            jnp.dtype(dtype))


@partial(jax.jit, static_argnames=("family", "m", "input_dim", "dtype"))
def _init_sub_models(key, family, m, input_dim, dtype):
    keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(m))
    return jax.vmap(lambda k: family.init_one(k, input_dim, dtype))(keys)


def assembly(
    key: Array,
    family: str | SubModelFamily,
    m: int,
    *,
    input_dim: int,
    weights: str = "signs",
    scaling: str = "auto",
    dominant: bool = False,
    activation: str | Activation = "tanh",
    hidden: int = 3,
    dtype: Any = jnp.float32,
) -> tuple[Assembly, PyTree]:
    """Initialize the assembly model of Eq. (4).

    Args:
        key: PRNG key (split into one key for the sub-models and one for the weights).
        family: a name in ``FAMILIES`` or a :class:`SubModelFamily`.
        m: number of sub-models.
        input_dim: d.
        weights: ``"ones"`` (vᵢ = 1), ``"signs"`` (vᵢ uniform on {±1}) or ``"gaussian"`` (N(0, 1),
            Appendix A).
        scaling: ``"sqrt"`` (s = √m), ``"linear"`` (s = m) or ``"auto"`` (:func:`resolve_scaling`).
        dominant: make sub-model 1 dominate: its weight is multiplied by √m, i.e. it contributes a
            term √m·g₁ as large as all the others together (Assumption 1 fails).
        activation, hidden: passed to :func:`get_family` when ``family`` is a name.
        dtype: parameter dtype.

    Returns:
        ``(model, {"w": (m, p)})``.
    """
    fam = family if isinstance(family, SubModelFamily) else get_family(family, activation, hidden)
    m = V.positive_int("m", m)
    input_dim = V.positive_int("input_dim", input_dim)
    dtype = V.float_dtype("dtype", dtype)
    scaling = resolve_scaling(fam, weights, scaling)
    k_w, k_v = jax.random.split(key)
    v = assembly_weights(k_v, m, weights, dtype)
    if dominant:
        v = v.at[0].multiply(math.sqrt(m))
    w = init_sub_models(k_w, fam, m, input_dim, dtype)
    return Assembly(v=v, scale=scaling_factor(m, scaling), family=fam, input_dim=input_dim), {"w": w}


def sub_model_hessian(family: SubModelFamily, w: Any, x: Any) -> Array:
    """Dense Hessian ∂²g/∂w² (p × p) of one sub-model at one input (compiled as one program per family and
    shapes; called eagerly, every operation of the forward-over-reverse pass compiled on its own)."""
    return _sub_model_hessian(family, w, x)


@partial(jax.jit, static_argnums=0)
def _sub_model_hessian(family: SubModelFamily, w: Any, x: Any) -> Array:
    return jax.hessian(family.apply_one)(w, x)


__all__ = [
    "FAMILIES",
    "SCALINGS",
    "WEIGHTS",
    "Assembly",
    "SubModelFamily",
    "active_basis",
    "assembly",
    "assembly_weights",
    "get_family",
    "init_sub_models",
    "resolve_scaling",
    "scaling_factor",
    "sub_model_hessian",
]
