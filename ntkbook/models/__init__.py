"""NTK-parameterized models as pure functions on parameter pytrees.

Every model is an immutable object with an ``apply(params, x)`` method; ``params`` is the pytree of
*trainable* parameters, while fixed tensors (e.g. the ±1 output weights of Eq. 8) live on the model
object.  Models are registered as JAX pytrees (fixed tensors are leaves, configuration is static),
so they can be passed through ``jit`` and ``vmap`` like any other argument.

Modules: ``dense`` (Eq. 8, Eq. 19/22, random features), ``wrappers`` (non-linear output Eq. 26;
the linearization is :mod:`ntkbook.linearization`), ``common`` (shared helpers).  Further architectures
live in modules of their own.

Shapes: inputs ``x`` are ``(n, d)``; a model with ``input_dim == 1`` also accepts ``(n,)``.  The
output is ``(n,)`` for a scalar-output model and ``(n, k)`` for ``k > 1`` outputs.

The NTK parameterization (Section 3.3 of Liu, Zhu & Belkin 2020): every weight is drawn from
N(0, 1) and every layer divides by the square root of its fan-in,
α̃⁽ˡ⁾ = W⁽ˡ⁾ α⁽ˡ⁻¹⁾ / √m_{l−1},  α⁽ˡ⁾ = σ(α̃⁽ˡ⁾),  f = vᵀ α⁽ᴸ⁾ / √m_L      (Eq. 19 and 22),
with m₀ = d for the first layer (for d = 1 this is exactly Eq. 8 and Eq. 16).
"""

from __future__ import annotations

from . import oymak_init
from .common import inputs, shared_model
from .dense import MLP, ForwardPass, RandomFeatures, ShallowNetwork, mlp, random_features, shallow_network
from .wrappers import OUTPUT_MAPS, NonLinearOutput, nonlinear_output

__all__ = [
    "MLP",
    "OUTPUT_MAPS",
    "ForwardPass",
    "NonLinearOutput",
    "RandomFeatures",
    "ShallowNetwork",
    "inputs",
    "mlp",
    "nonlinear_output",
    "oymak_init",
    "random_features",
    "shallow_network",
    "shared_model",
]
