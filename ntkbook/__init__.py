"""ntkbook — the computations behind the executable textbook on transition to linearity.

The public contract (see the book's design guide):

* :func:`empirical_ntk` — empirical tangent kernels (Eq. 1 of Liu, Zhu & Belkin 2020);
* :func:`hessian_spectral_norm` — matrix-free ‖H‖ by Hessian-vector products and Lanczos (any method
  of the one eigen-solver front end :func:`ntkbook.eigen.extreme_eigenpairs`);
* :func:`norm_221` — the (2,2,1)-norm of order-3 tensors (Definition 2.2).

Submodules: ``models``, ``activations``, ``quadrature``, ``kernels``, ``eigen``, ``hessian``,
``hessian_compressed``, ``hessian_bounds`` (the 2020 paper's Hessian and layer bounds), ``layer_norms``,
``ball`` (the ball B(w₀, R): points, projection, the projected ascent, certified sups on a segment),
``linearization`` (f_lin, the remainder, the integral Taylor forms), ``norms``, ``khatri_rao``, ``covariance``,
``training``, ``claims``, ``scales``, ``reproduce``, ``fitting``, ``plotting``, ``tables``, ``pytree``,
``progress``, ``sweep``, ``random``, ``records``, ``symbolic`` (sympy), ``experiments`` (being retired: one
module per chapter), ``data`` and ``reproductions``.  Every submodule
and the three functions above are imported on first use (``nb.kernels``, ``from ntkbook import claims``):
``import ntkbook`` itself loads no numerical library, so a process that needs one module (the command line's
``list``, a ledger reader) does not pay for importing JAX, SciPy, pandas and Matplotlib (about 6 s together on
this 2-core machine).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_SUBMODULES = frozenset({
    "activations", "ball", "claims", "covariance", "data", "eigen", "experiments", "fitting", "hessian",
    "hessian_bounds", "hessian_compressed", "kernels", "khatri_rao", "layer_norms", "linearization", "models",
    "norms", "plotting", "progress", "pytree", "quadrature", "random", "records", "reproduce", "reproductions",
    "scales", "sweep", "symbolic", "tables", "training",
})
_FUNCTIONS = {"empirical_ntk": "kernels", "hessian_spectral_norm": "hessian", "norm_221": "norms",
              "setup": "notebook"}

if TYPE_CHECKING:  # for type checkers and editors: the names __getattr__ provides
    from . import (
        activations,
        ball,
        claims,
        covariance,
        eigen,
        fitting,
        hessian,
        hessian_bounds,
        hessian_compressed,
        kernels,
        khatri_rao,
        layer_norms,
        linearization,
        models,
        norms,
        plotting,
        progress,
        pytree,
        quadrature,
        reproduce,
        scales,
        sweep,
        tables,
        training,
    )
    from .hessian import hessian_spectral_norm
    from .kernels import empirical_ntk
    from .norms import norm_221
    from .notebook import setup


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    if name in _FUNCTIONS:
        value = getattr(importlib.import_module(f".{_FUNCTIONS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ntkbook' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _SUBMODULES | set(_FUNCTIONS))


__all__ = [
    "activations",
    "ball",
    "claims",
    "covariance",
    "eigen",
    "empirical_ntk",
    "fitting",
    "hessian",
    "hessian_bounds",
    "hessian_compressed",
    "hessian_spectral_norm",
    "kernels",
    "khatri_rao",
    "layer_norms",
    "linearization",
    "models",
    "norm_221",
    "norms",
    "plotting",
    "progress",
    "pytree",
    "quadrature",
    "reproduce",
    "scales",
    "setup",
    "sweep",
    "tables",
    "training",
]
