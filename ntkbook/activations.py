"""Activation functions with the constants the papers' bounds use.

The Hessian bounds of Liu, Zhu & Belkin (2020) need two constants of the activation σ:

* its Lipschitz constant ``L_σ = sup |σ'|`` (Section 3.3, the constant 𝖫_σ), and
* its smoothness ``β_σ = sup |σ''|`` (Eq. 9: ‖H‖ ≤ β_σ C² / √m for the one-hidden-layer network).

Each :class:`Activation` carries the function and both constants.  Where a closed form exists it is
used (tanh: β = 4/(3√3); sigmoid: β = √3/18; softplus: β = 1/4); the swish constants have no
elementary closed form and are found by bounded scalar maximisation (scipy).  ReLU is not twice
differentiable: autodiff returns σ'' = 0 away from the kink, while the distributional second
derivative is a Dirac mass, so ``smoothness`` is ``inf`` and ``twice_differentiable`` is False.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

import jax
import jax.numpy as jnp

from . import _validation as V

Array = jax.Array


@dataclass(frozen=True)
class Activation:
    """An elementwise activation σ with its constants.

    Attributes:
        name: registry name.
        fn: the elementwise function, any array shape to the same shape.
        lipschitz: ``sup_z |σ'(z)|`` (``inf`` when unbounded, e.g. the quadratic).
        smoothness: ``sup_z |σ''(z)|`` = β_σ (``inf`` for ReLU, whose σ'' is a Dirac mass).
        twice_differentiable: False only for ReLU.
    """

    name: str
    fn: Callable[[Array], Array] = field(repr=False)
    lipschitz_fn: Callable[[], float] = field(repr=False)
    smoothness_fn: Callable[[], float] = field(repr=False)
    twice_differentiable: bool = True

    def __call__(self, z: Array) -> Array:
        return self.fn(z)

    @property
    def lipschitz(self) -> float:
        return self.lipschitz_fn()

    @property
    def smoothness(self) -> float:
        return self.smoothness_fn()

    def derivative(self, z: Array, order: int = 1) -> Array:
        """σ^(order)(z), elementwise, by forward-mode autodiff (exact for elementwise σ)."""
        order = V.positive_int("order", order)
        f = self.fn
        for _ in range(order):
            f = _elementwise_derivative(f)
        return f(z)


def _elementwise_derivative(f: Callable[[Array], Array]) -> Callable[[Array], Array]:
    def df(z: Array) -> Array:
        z = jnp.asarray(z)
        return jax.jvp(f, (z,), (jnp.ones_like(z),))[1]

    return df


def _constant(value: float) -> Callable[[], float]:
    return lambda: value


def _sup_abs(fn: Callable[[float], float], bracket: tuple[float, float]) -> Callable[[], float]:
    """sup |fn| on ``bracket`` (containing the maximiser), by bounded scalar minimisation."""

    @cache
    def compute() -> float:
        import numpy as np
        from scipy.optimize import minimize_scalar

        # coarse grid to find the basin, then a bounded refinement around the best grid point
        grid = np.linspace(*bracket, 4001)
        vals = np.abs([fn(t) for t in grid])
        i = int(np.argmax(vals))
        lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
        res = minimize_scalar(lambda t: -abs(fn(t)), bounds=(lo, hi), method="bounded",
                              options={"xatol": 1e-12})
        return float(max(-res.fun, vals[i]))

    return compute


def _swish_d1(z: float) -> float:
    s = 1.0 / (1.0 + math.exp(-z))
    return s + z * s * (1 - s)


def _swish_d2(z: float) -> float:
    s = 1.0 / (1.0 + math.exp(-z))
    return s * (1 - s) * (2 + z * (1 - 2 * s))


def _quadratic(z: Array) -> Array:
    return 0.5 * z * z


def _identity(z: Array) -> Array:
    return z


def _swish(z: Array) -> Array:
    return z * jax.nn.sigmoid(z)


ACTIVATIONS: dict[str, Activation] = {
    "tanh": Activation("tanh", jnp.tanh, _constant(1.0), _constant(4.0 / (3.0 * math.sqrt(3.0)))),
    "sigmoid": Activation("sigmoid", jax.nn.sigmoid, _constant(0.25), _constant(math.sqrt(3.0) / 18.0)),
    "softplus": Activation("softplus", jax.nn.softplus, _constant(1.0), _constant(0.25)),
    "swish": Activation("swish", _swish, _sup_abs(_swish_d1, (-20.0, 20.0)), _sup_abs(_swish_d2, (-20.0, 20.0))),
    "relu": Activation("relu", jax.nn.relu, _constant(1.0), _constant(math.inf), twice_differentiable=False),
    "quadratic": Activation("quadratic", _quadratic, _constant(math.inf), _constant(1.0)),
    "identity": Activation("identity", _identity, _constant(1.0), _constant(0.0)),
}
"""Registry of the activations by name (``quadratic`` is σ(z) = z²/2, as in Eq. 31)."""


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
