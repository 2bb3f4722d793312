"""The one activation registry: functions, derivatives, Hermite coefficients and the papers' constants.

Every elementwise map the book uses — hidden-layer activations, the output maps φ of Section 4/5 of
Liu, Zhu & Belkin (2020), the activations of Oymak & Soltanolkotabi (2020) — is an
:class:`Activation` in :data:`ACTIVATIONS`, looked up by :func:`get_activation`.  Each one carries

* ``fn`` — the JAX function (what the models apply); :meth:`Activation.derivative` gives derivatives
  of any order by forward-mode autodiff (exact for elementwise maps; what the models differentiate);
* :meth:`Activation.prime` / :meth:`Activation.value_and_prime` — φ' (and φ with it) in closed form
  where one is registered: faster in inner loops, and for ReLU the *generalized* derivative
  φ'(z) = 1{z ≥ 0} of Oymak & Soltanolkotabi (Section 1.3; autodiff gives 0 at z = 0);
* :meth:`Activation.numpy` — float64 NumPy values of φ and φ' for the reference computations
  (quadrature, covariances): closed forms where registered, otherwise the JAX function under x64;
* the constants of the papers (:attr:`Activation.lipschitz`, :attr:`Activation.smoothness`,
  :attr:`Activation.derivative_floor`; with the Hermite constants μ_φ, μ̃_φ, γ_φ in :func:`constants`);
* its normalized Hermite coefficients (:func:`hermite_coefficients`): exact (rational arithmetic on the
  Gaussian moments) for the piecewise-polynomial activations (ReLU, step, quadratic, identity), by the
  one Gauss–Hermite rule of :mod:`ntkbook.quadrature` otherwise;
* closed-form dual kernels K_φ(ρ) = E[φ(u)φ(v)], K_φ'(ρ) = E[φ'(u)φ'(v)] (u, v standard normal with
  correlation ρ) where they exist, used by :mod:`ntkbook.covariance`.

**The constants** (the papers' names; each property documents its closed form):

* Lipschitz constant L_σ = sup_z |σ'(z)| (Liu–Zhu–Belkin 2020, Section 3.3, 𝖫_σ; the B of Lemmas 6.6
  and 6.7 of Oymak–Soltanolkotabi);
* smoothness β_σ = sup_z |σ''(z)| (Liu–Zhu–Belkin 2020, Eq. 9: ‖H‖ ≤ β_σ C²/√m; the M of Lemma 6.8 of
  Oymak–Soltanolkotabi);
* slope floor ρ = inf_z |σ'(z)| (Liu–Zhu–Belkin 2020, Theorem 5.1: |φ'(z)| ≥ ρ > 0, Eq. 34);
* μ_φ = E[g φ'(g)] = μ_1(φ') and μ̃_φ = E[φ'(g)] = μ_0(φ') (Oymak–Soltanolkotabi, Lemma 6.4 / Eq. 6.4,
  and Theorem 2.1), γ_φ = E[φ(g)(g² − 1)]/√2 = μ_2(φ) (below Theorem 3.2), g ~ N(0, 1);
* the B of Theorem 2.1 (|φ'| ≤ B and |φ''| ≤ B, so B = max(L_σ, β_σ)) and of Theorem 3.2
  (|φ(0)| ≤ B and |φ'| ≤ B) — :class:`ActivationConstants`.

Where a closed form exists it is used (tanh: β = 4/(3√3); sigmoid: L = 1/4, β = √3/18; softplus:
β = 1/4; swish_β: β = β/2); the swish Lipschitz constant has no elementary closed form and is found
by bounded scalar maximisation (scipy).  ReLU and the step are not twice differentiable: autodiff
returns σ'' = 0 away from the kink, while the distributional second derivative of ReLU (and the first
of the step) is a Dirac mass, so those constants are ``inf``.

**Hermite coefficients** (Appendix H of Oymak & Soltanolkotabi): μ_r(f) = E[f(g) h_r(g)] with the
normalized probabilists' polynomials h_r = He_r/√(r!).  Exact values come from the moments of N(0, 1)
on the line or the half line, in exact rational arithmetic: √(r!)·μ_r = a + b/√(2π) with rationals a, b
(:func:`hermite_symbolic` returns it as a sympy expression); numerical values from
:func:`ntkbook.quadrature.hermite_projection` (200 nodes by default).  The two are independent routes (see the tests).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache, partial
from typing import Any

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
from scipy.optimize import minimize_scalar

from . import _validation as V
from . import quadrature

Array = jax.Array


@dataclass(frozen=True)
class PiecewisePolynomial:
    """f(g) = Σ_k a_k g^k on the whole line, or times 1{g ≥ 0} (``half_line``): the activations whose
    Hermite coefficients are computed exactly from the Gaussian moments.

    Attributes:
        coefficients: a_0, a_1, … (rationals).
        half_line: True for f(g) = p(g)·1{g ≥ 0} (ReLU, step), False for a polynomial.
    """

    coefficients: tuple[Fraction, ...]
    half_line: bool = False


@dataclass(frozen=True)
class Activation:
    """An elementwise activation σ (JAX), with its derivatives, NumPy versions, constants and kernels.

    Attributes:
        name: registry name.
        fn: the elementwise JAX function, any array shape to the same shape.
        lipschitz_fn: zero-argument callable (cached where numerical) giving sup|σ'| (see the properties).
        smoothness_fn: the same for sup|σ''|.
        floor_fn: the same for inf|σ'|.
        twice_differentiable: False for ReLU and the step (σ'' has a Dirac mass).
        has_derivative: False for the step, whose derivative is a Dirac mass (no Σ(X)).
        smooth: True when σ' is analytic, so that Gauss–Hermite quadrature of σ, σ' converges
            spectrally (False for ReLU and the step).
        prime_fn: closed-form JAX σ', or None (then autodiff).
        pair_fn: fused JAX z ↦ (σ(z), σ'(z)) with as few transcendental evaluations as possible, or None.
        numpy_fn: float64 NumPy σ, or None (then the JAX function under x64).
        numpy_prime: float64 NumPy σ', or None.
        hermite: :class:`PiecewisePolynomial` form of σ for exact Hermite coefficients, or None.
        hermite_prime: the same for σ', or None.
        kernel: closed-form NumPy dual kernel ρ ↦ E[σ(u)σ(v)], or None.
        kernel_prime: closed-form NumPy dual kernel ρ ↦ E[σ'(u)σ'(v)], or None.
    """

    name: str
    fn: Callable[[Array], Array] = field(repr=False)
    lipschitz_fn: Callable[[], float] = field(repr=False)
    smoothness_fn: Callable[[], float] = field(repr=False)
    twice_differentiable: bool = True
    floor_fn: Callable[[], float] = field(repr=False, default=lambda: math.nan)
    has_derivative: bool = True
    smooth: bool = True
    prime_fn: Callable[[Array], Array] | None = field(repr=False, default=None)
    pair_fn: Callable[[Array], tuple[Array, Array]] | None = field(repr=False, default=None)
    numpy_fn: Callable[[np.ndarray], np.ndarray] | None = field(repr=False, default=None)
    numpy_prime: Callable[[np.ndarray], np.ndarray] | None = field(repr=False, default=None)
    hermite: PiecewisePolynomial | None = field(repr=False, default=None)
    hermite_prime: PiecewisePolynomial | None = field(repr=False, default=None)
    kernel: Callable[[np.ndarray], np.ndarray] | None = field(repr=False, default=None)
    kernel_prime: Callable[[np.ndarray], np.ndarray] | None = field(repr=False, default=None)

    def __call__(self, z: Array) -> Array:
        return self.fn(z)

    @property
    def lipschitz(self) -> float:
        """L_σ = sup_z |σ'(z)| (``inf`` when unbounded, e.g. the quadratic; ``inf`` for the step)."""
        return self.lipschitz_fn()

    @property
    def smoothness(self) -> float:
        """β_σ = sup_z |σ''(z)| (``inf`` for ReLU and the step, whose σ'' has a Dirac mass)."""
        return self.smoothness_fn()

    @property
    def derivative_floor(self) -> float:
        """ρ = inf_z |σ'(z)|, the slope floor of Theorem 5.1 (Liu–Zhu–Belkin 2020); 0 for most activations."""
        return self.floor_fn()

    def derivative(self, z: Array, order: int = 1) -> Array:
        """σ^(order)(z), elementwise, by forward-mode autodiff (exact for elementwise σ), any order ≥ 1.

        This is what the models differentiate through; at ReLU's kink autodiff gives σ'(0) = 0.
        """
        order = V.positive_int("order", order)
        f = self.fn
        for _ in range(order):
            f = _elementwise_derivative(f)
        return f(z)

    def prime(self, z: Array) -> Array:
        """σ'(z) in closed form where one is registered (else autodiff).

        For ReLU this is the generalized derivative 1{z ≥ 0} that Oymak & Soltanolkotabi use
        (Section 1.3) — it differs from :meth:`derivative` only at z = 0.
        """
        if not self.has_derivative:
            raise ValueError(f"activation {self.name!r} has no derivative function (σ' is a Dirac mass)")
        return self.prime_fn(z) if self.prime_fn is not None else self.derivative(z, 1)

    def value_and_prime(self, z: Array) -> tuple[Array, Array]:
        """(σ(z), σ'(z)) with the fewest transcendental evaluations registered (inner loops of GD).

        For softplus: s = ½(1 + tanh(z/2)) = sigmoid(z) and softplus(z) = max(z, 0) − log σ(|z|) =
        max(z, 0) − log(½ + ½|tanh(z/2)|) — one tanh and one log (within 2e-6 of ``jax.nn.softplus``
        and 1e-6 of ``jax.nn.sigmoid`` in float32, see the tests).  Otherwise (fn(z), prime(z)).
        """
        if self.pair_fn is not None:
            return self.pair_fn(z)
        return self.fn(z), self.prime(z)

    def numpy(self, z: Any, order: int = 0) -> np.ndarray:
        """σ (``order=0``) or σ^(order) at ``z`` as float64 NumPy (for quadrature and covariances).

        Order 0 and 1 use the registered NumPy closed forms when there are some (order 1 follows the
        convention of :meth:`prime`); otherwise the JAX function or its autodiff derivative is
        evaluated in float64 (``jax.enable_x64``).
        """
        order = V.positive_int("order", order, minimum=0)
        z = np.asarray(z, dtype=np.float64)
        if order == 0 and self.numpy_fn is not None:
            return np.asarray(self.numpy_fn(z), dtype=np.float64)
        if order == 1:
            if not self.has_derivative:
                raise ValueError(f"activation {self.name!r} has no derivative function (σ' is a Dirac mass)")
            if self.numpy_prime is not None:
                return np.asarray(self.numpy_prime(z), dtype=np.float64)
        with jax.enable_x64(True):
            out = _evaluate_x64(self, jnp.asarray(z, dtype=jnp.float64), order)
            return np.asarray(out, dtype=np.float64)


@partial(jax.jit, static_argnums=(0, 2))
def _evaluate_x64(act: Activation, z: Array, order: int) -> Array:
    if order == 0:
        return act.fn(z)
    if order == 1 and act.prime_fn is not None:
        return act.prime_fn(z)
    return act.derivative(z, order)


def _elementwise_derivative(f: Callable[[Array], Array]) -> Callable[[Array], Array]:
    def df(z: Array) -> Array:
        z = jnp.asarray(z)
        return jax.jvp(f, (z,), (jnp.ones_like(z),))[1]

    return df


def _constant(value: float) -> Callable[[], float]:
    return lambda: value


def _sup_abs(fn: Callable[[float], float], bracket: tuple[float, float]) -> Callable[[], float]:
    """sup |fn| on ``bracket`` (containing the maximiser), by bounded scalar minimisation (cached)."""

    @cache
    def compute() -> float:
        # coarse grid to find the basin, then a bounded refinement around the best grid point
        grid = np.linspace(*bracket, 4001)
        vals = np.abs([fn(t) for t in grid])
        i = int(np.argmax(vals))
        lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
        res = minimize_scalar(lambda t: -abs(fn(t)), bounds=(lo, hi), method="bounded",
                              options={"xatol": 1e-12})
        return float(max(-res.fun, vals[i]))

    return compute


# ---------------------------------------------------------------------------------------------
# Closed forms (float64 NumPy) and the dual kernels
# ---------------------------------------------------------------------------------------------


def _np_sigmoid(z: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1.0, e) / (1.0 + e)


def _np_softplus(z: np.ndarray) -> np.ndarray:
    return np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z)))


def _arccos_kernel_step(rho: np.ndarray) -> np.ndarray:
    """E[1{u ≥ 0}1{v ≥ 0}] = (π − arccos ρ)/(2π) (arc-cosine kernel of order 0)."""
    return (np.pi - np.arccos(np.clip(rho, -1.0, 1.0))) / (2.0 * np.pi)


def _arccos_kernel_relu(rho: np.ndarray) -> np.ndarray:
    """E[relu(u) relu(v)] = (√(1−ρ²) + (π − arccos ρ)ρ)/(2π) (arc-cosine kernel of order 1)."""
    rho = np.clip(rho, -1.0, 1.0)
    return (np.sqrt(1.0 - rho**2) + (np.pi - np.arccos(rho)) * rho) / (2.0 * np.pi)


def _swish_d1(u: float) -> float:
    """d/du [u·sigmoid(u)] = s + u s(1 − s)."""
    s = 1.0 / (1.0 + math.exp(-u))
    return s + u * s * (1.0 - s)


def _poly(*coefficients: Any, half_line: bool = False) -> PiecewisePolynomial:
    return PiecewisePolynomial(tuple(Fraction(c) for c in coefficients), half_line)


@cache
def swish(beta: float = 1.0) -> Activation:
    """swish_β(z) = z·sigmoid(βz) (the registry's ``"swish"`` is β = 1; Eq. 45 of Liu–Zhu–Belkin 2020
    uses β = 0.1, registered as ``"swish(beta=0.1)"``).

    With u = βz, swish_β'(z) = s(u) + u s(u)(1 − s(u)) and swish_β''(z) = β·s(u)(1 − s(u))(2 + u(1 − 2s(u))),
    s = sigmoid.  Hence the Lipschitz constant sup|swish_β'| ≈ 1.0998 is the same for every β (bounded
    maximisation; no elementary closed form) and the smoothness is sup|swish_β''| = β/2, attained at
    z = 0 (|s(1 − s)| ≤ 1/4 and the bracket equals 2 at u = 0 and is smaller elsewhere).  Cached per β, so
    models built with it compare equal and compiled code is reused.
    """
    beta = V.positive_float("beta", beta)
    if beta == 1.0:
        def fn(z: Array) -> Array:
            return z * jax.nn.sigmoid(z)
        name = "swish"
    else:
        def fn(z: Array) -> Array:
            return z * jax.nn.sigmoid(beta * z)
        name = f"swish(beta={beta:g})"
    return Activation(name, fn, _sup_abs(_swish_d1, (-20.0, 20.0)), _constant(beta / 2.0),
                      floor_fn=_constant(0.0))


def _logcosh_phi(z: Array) -> Array:
    # log cosh z = logaddexp(z, −z) − log 2, stable for large |z|
    return z + 0.5 * (jnp.logaddexp(z, -z) - math.log(2.0))


def _sigmoid_prime(z: Array) -> Array:
    return jax.nn.sigmoid(z) * (1.0 - jax.nn.sigmoid(z))


def _softplus_pair(z: Array) -> tuple[Array, Array]:
    t = jnp.tanh(0.5 * z)
    return jnp.maximum(z, 0.0) - jnp.log(0.5 + 0.5 * jnp.abs(t)), 0.5 + 0.5 * t


def _relu_pair(z: Array) -> tuple[Array, Array]:
    return jnp.maximum(z, 0.0), (z >= 0).astype(z.dtype)


def _make_registry() -> dict[str, Activation]:
    inf = math.inf
    acts = [
        Activation("tanh", jnp.tanh, _constant(1.0), _constant(4.0 / (3.0 * math.sqrt(3.0))),
                   floor_fn=_constant(0.0), prime_fn=lambda z: 1.0 - jnp.tanh(z) ** 2,
                   numpy_fn=np.tanh, numpy_prime=lambda z: 1.0 - np.tanh(z) ** 2),
        Activation("sigmoid", jax.nn.sigmoid, _constant(0.25), _constant(math.sqrt(3.0) / 18.0),
                   floor_fn=_constant(0.0), prime_fn=_sigmoid_prime,
                   numpy_fn=_np_sigmoid, numpy_prime=lambda z: _np_sigmoid(z) * (1.0 - _np_sigmoid(z))),
        Activation("softplus", jax.nn.softplus, _constant(1.0), _constant(0.25), floor_fn=_constant(0.0),
                   prime_fn=jax.nn.sigmoid, pair_fn=_softplus_pair, numpy_fn=_np_softplus, numpy_prime=_np_sigmoid),
        swish(1.0),
        swish(0.1),
        Activation("relu", jax.nn.relu, _constant(1.0), _constant(inf), twice_differentiable=False,
                   floor_fn=_constant(0.0), smooth=False, prime_fn=lambda z: (z >= 0).astype(z.dtype),
                   pair_fn=_relu_pair, numpy_fn=lambda z: np.maximum(z, 0.0),
                   numpy_prime=lambda z: (z >= 0).astype(float), hermite=_poly(0, 1, half_line=True),
                   hermite_prime=_poly(1, half_line=True), kernel=_arccos_kernel_relu,
                   kernel_prime=_arccos_kernel_step),
        Activation("step", lambda z: (z >= 0).astype(jnp.result_type(z, float)), _constant(inf), _constant(inf),
                   twice_differentiable=False, floor_fn=_constant(0.0), has_derivative=False, smooth=False,
                   numpy_fn=lambda z: (z >= 0).astype(float), hermite=_poly(1, half_line=True),
                   kernel=_arccos_kernel_step),
        Activation("quadratic", lambda z: 0.5 * z * z, _constant(inf), _constant(1.0), floor_fn=_constant(0.0),
                   prime_fn=lambda z: z, numpy_fn=lambda z: 0.5 * z * z, numpy_prime=lambda z: np.asarray(z, float),
                   hermite=_poly(0, 0, Fraction(1, 2)), hermite_prime=_poly(0, 1),
                   kernel=lambda rho: (1.0 + 2.0 * rho**2) / 4.0, kernel_prime=lambda rho: np.asarray(rho, float)),
        Activation("identity", lambda z: z, _constant(1.0), _constant(0.0), floor_fn=_constant(1.0),
                   prime_fn=jnp.ones_like, numpy_fn=lambda z: np.asarray(z, float),
                   numpy_prime=lambda z: np.ones_like(z, dtype=float), hermite=_poly(0, 1), hermite_prime=_poly(1),
                   kernel=lambda rho: np.asarray(rho, float), kernel_prime=lambda rho: np.ones_like(rho, dtype=float)),
        Activation("z+logcosh(z)/2", _logcosh_phi, _constant(1.5), _constant(0.5), floor_fn=_constant(0.5),
                   prime_fn=lambda z: 1.0 + 0.5 * jnp.tanh(z),
                   numpy_fn=lambda z: z + 0.5 * (np.logaddexp(z, -z) - math.log(2.0)),
                   numpy_prime=lambda z: 1.0 + 0.5 * np.tanh(z)),
    ]
    return {a.name: a for a in acts}


ACTIVATIONS: dict[str, Activation] = _make_registry()
"""Registry of the activations by name.

``tanh``, ``sigmoid``, ``softplus``, ``swish`` (β = 1), ``swish(beta=0.1)`` (Eq. 45), ``relu``,
``step`` (1{z ≥ 0}, ReLU's derivative), ``quadratic`` (σ(z) = z²/2, as in Eq. 31 and Lemma 6.4),
``identity``, and ``z+logcosh(z)/2`` — the output map φ(z) = z + ½ log cosh z of the Theorem 5.1
experiments: φ'(z) = 1 + ½ tanh z ∈ (½, 3/2), φ''(z) = ½ sech² z ∈ (0, ½], so |φ'| ≥ ρ = ½ everywhere
(Theorem 5.1's hypothesis) and φ'' > 0 is largest near 0.
"""


def get_activation(activation: str | Activation) -> Activation:
    """Look an activation up by name (or pass an :class:`Activation` through).

    Raises:
        ValueError: for an unknown name, listing the known ones.
        TypeError: for anything that is neither a name nor an :class:`Activation`.
    """
    if isinstance(activation, Activation):
        return activation
    if not isinstance(activation, str):
        raise TypeError(f"activation must be a name or an Activation, got {type(activation).__name__}")
    return ACTIVATIONS[V.choice("activation", activation, ACTIVATIONS)]


# ---------------------------------------------------------------------------------------------
# Hermite coefficients (Appendix H of Oymak & Soltanolkotabi 2020)
# ---------------------------------------------------------------------------------------------


def _sympy():
    import sympy  # imported on first use: sympy takes about a second to import

    return sympy


@cache
def _he_coefficients(r: int) -> tuple[int, ...]:
    """Integer coefficients c_j of He_r(g) = Σ_j c_j g^j, from He_{r+1} = g·He_r − r·He_{r−1}."""
    prev, cur = (1,), (0, 1)  # He_0, He_1
    if r == 0:
        return prev
    for n in range(1, r):
        nxt = [0, *cur]
        for j, c in enumerate(prev):
            nxt[j] -= n * c
        prev, cur = cur, tuple(nxt)
    return cur


def _gaussian_moment(m: int, half_line: bool) -> tuple[Fraction, Fraction]:
    """E[g^m] (full line) or E[g^m 1{g ≥ 0}] (half line) as (a, b) with the moment = a + b/√(2π), exact.

    Full line: (m − 1)!! for even m, 0 for odd m.  Half line: half of that for even m, and for odd m
    2^{(m−1)/2} ((m−1)/2)!/√(2π) (= 2^{(m−1)/2} Γ((m+1)/2)/√(2π))."""
    if m % 2 == 0:
        even = Fraction(math.prod(range(m - 1, 0, -2)))
        return (even / 2 if half_line else even), Fraction(0)
    if not half_line:
        return Fraction(0), Fraction(0)
    return Fraction(0), Fraction(2 ** ((m - 1) // 2) * math.factorial((m - 1) // 2))


@cache
def _exact_hermite(form: PiecewisePolynomial, r: int) -> tuple[Fraction, Fraction]:
    """√(r!)·μ_r(f) = a + b/√(2π) as exact rationals (a, b), for f = Σ_k a_k g^k (·1{g ≥ 0}):
    μ_r(f) = Σ_k a_k Σ_j c_j E[g^{j+k} (1{g ≥ 0})]/√(r!) with He_r = Σ_j c_j g^j."""
    a = b = Fraction(0)
    for k, coef in enumerate(form.coefficients):
        if coef == 0:
            continue
        for j, c in enumerate(_he_coefficients(r)):
            if c:
                ma, mb = _gaussian_moment(j + k, form.half_line)
                a += coef * c * ma
                b += coef * c * mb
    return a, b


def _exact_value(form: PiecewisePolynomial, r: int) -> float:
    """μ_r(f) = (a + b/√(2π))/√(r!) in float64, from the exact rationals of :func:`_exact_hermite`,
    evaluated with enough decimal digits (mpmath) that the float is correctly rounded even where a and
    b are large and nearly cancel (for the registered forms one of them is 0: He_r has the parity of r)."""
    a, b = _exact_hermite(form, r)
    digits = 30 + max(len(str(abs(x.numerator))) + len(str(x.denominator)) for x in (a, b))
    with mpmath.workdps(digits):
        value = (mpmath.mpf(a.numerator) / a.denominator
                 + mpmath.mpf(b.numerator) / b.denominator / mpmath.sqrt(2 * mpmath.pi)) / mpmath.sqrt(
                     mpmath.factorial(r))
        return float(value)


def _exact_form(act: Activation, derivative: bool) -> PiecewisePolynomial | None:
    if derivative and not act.has_derivative:
        raise ValueError(f"activation {act.name!r} has no derivative function (σ' is a Dirac mass)")
    return act.hermite_prime if derivative else act.hermite


def hermite_symbolic(activation: str | Activation, r: int, *, derivative: bool = False):
    """The exact μ_r(φ) (or μ_r(φ') with ``derivative=True``) as a sympy expression.

    Available for the piecewise-polynomial activations (ReLU and its step derivative, the step,
    the quadratic and its identity derivative, the identity).
    """
    act = get_activation(activation)
    r = V.positive_int("r", r, minimum=0)
    form = _exact_form(act, derivative)
    if form is None:
        raise ValueError(f"{act.name}{chr(39) if derivative else ''} has no closed-form Hermite coefficients; "
                         "use hermite_coefficients(..., method='quadrature')")
    sp = _sympy()
    a, b = _exact_hermite(form, r)
    value = sp.Rational(a.numerator, a.denominator) + sp.Rational(b.numerator, b.denominator) / sp.sqrt(2 * sp.pi)
    return value / sp.sqrt(sp.factorial(r))


def hermite_coefficients(activation: str | Activation, r_max: int, *, derivative: bool = False,
                         method: str = "auto", degree: int = 200) -> np.ndarray:
    """Normalized Hermite coefficients μ_r(φ) (or μ_r(φ') with ``derivative=True``), r = 0 … r_max.

    μ_r(f) = E[f(g) h_r(g)], h_r = He_r/√(r!), g ~ N(0, 1) (Appendix H of Oymak & Soltanolkotabi 2020).
    ``method``: ``"exact"`` (the exact rationals of :func:`hermite_symbolic`, rounded once to float64;
    piecewise-polynomial activations only),
    ``"quadrature"`` (:func:`ntkbook.quadrature.hermite_projection` with ``degree`` nodes, of the
    float64 NumPy φ or φ') or ``"auto"`` (exact when available).  Returns shape ``(r_max + 1,)``, float64.
    """
    act = get_activation(activation)
    r_max = V.positive_int("r_max", r_max, minimum=0)
    method = V.choice("method", method, ("auto", "exact", "quadrature"))
    form = _exact_form(act, derivative)
    if method == "exact" and form is None:
        raise ValueError(f"no closed-form Hermite coefficients for {act.name}{chr(39) if derivative else ''}; "
                         "use method='quadrature'")
    if form is not None and method in ("auto", "exact"):
        return np.array([_exact_value(form, r) for r in range(r_max + 1)])
    return quadrature.hermite_projection(lambda t: act.numpy(t, 1 if derivative else 0), r_max, degree=degree)


@dataclass(frozen=True)
class ActivationConstants:
    """The constants of the papers for one activation φ (g ~ N(0, 1)).

    Attributes:
        lipschitz: L = sup|φ'| (Liu–Zhu–Belkin 2020 𝖫_σ; B of Lemmas 6.6–6.7 of Oymak–Soltanolkotabi).
        smoothness: β = sup|φ''| (Liu–Zhu–Belkin 2020 β_σ, Eq. 9; M of Lemma 6.8).
        derivative_floor: ρ = inf|φ'| (Theorem 5.1 of Liu–Zhu–Belkin 2020).
        phi_at_zero: |φ(0)| (Theorem 3.2 of Oymak–Soltanolkotabi).
        mu: μ_φ = E[g φ'(g)] = μ_1(φ') (Lemma 6.4, Eq. 6.4; Theorem 2.1).
        mu_tilde: μ̃_φ = E[φ'(g)] = μ_0(φ') (Lemma 6.4).
        gamma: γ_φ = E[φ(g)(g² − 1)]/√2 = μ_2(φ) (the remark below Theorem 3.2).
    """

    lipschitz: float
    smoothness: float
    derivative_floor: float
    phi_at_zero: float
    mu: float
    mu_tilde: float
    gamma: float

    @property
    def bound_theorem_2_1(self) -> float:
        """The B of Theorem 2.1 of Oymak–Soltanolkotabi, |φ'| ≤ B and |φ''| ≤ B, so B = max(L, β)."""
        return max(self.lipschitz, self.smoothness)

    @property
    def bound_theorem_3_2(self) -> float:
        """The B of Theorem 3.2, |φ(0)| ≤ B and |φ'| ≤ B, so B = max(|φ(0)|, L)."""
        return max(self.phi_at_zero, self.lipschitz)


def constants(activation: str | Activation, *, degree: int = 200) -> ActivationConstants:
    """L, β, ρ, |φ(0)|, μ_φ, μ̃_φ and γ_φ of ``activation`` (Hermite constants exact where possible,
    otherwise by ``degree``-point Gauss–Hermite; see :func:`hermite_coefficients`)."""
    act = get_activation(activation)
    if act.has_derivative:
        d = hermite_coefficients(act, 1, derivative=True, degree=degree)
        mu, mu_tilde = float(d[1]), float(d[0])
    else:
        mu = mu_tilde = math.nan
    p = hermite_coefficients(act, 2, degree=degree)
    return ActivationConstants(lipschitz=act.lipschitz, smoothness=act.smoothness,
                               derivative_floor=act.derivative_floor,
                               phi_at_zero=abs(float(act.numpy(np.zeros(1))[0])),
                               mu=mu, mu_tilde=mu_tilde, gamma=float(p[2]))
