"""ntkbook — the computations behind the executable textbook on transition to linearity.

The public contract (see the book's design guide):

* :func:`empirical_ntk` — empirical tangent kernels (Eq. 1 of Liu, Zhu & Belkin 2020);
* :func:`hessian_spectral_norm` — matrix-free ‖H‖ by Hessian-vector products and Lanczos (any method
  of the one eigen-solver front end :func:`ntkbook.eigen.extreme_eigenpairs`);
* :func:`norm_221` — the (2,2,1)-norm of order-3 tensors (Definition 2.2).

Submodules: ``models``, ``activations``, ``quadrature``, ``kernels``, ``eigen``, ``hessian``,
``hessian_compressed``, ``layer_norms``, ``norms``, ``khatri_rao``, ``covariance``, ``training``,
``claims``, ``scales``, ``reproduce``, ``fitting``, ``plotting``, ``tables``, ``pytree``, ``progress``,
``sweep``, ``records``; imported on first use: ``symbolic`` (sympy), ``experiments`` (one module per
chapter), ``data`` and ``reproductions``.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import (
    activations,
    claims,
    covariance,
    eigen,
    fitting,
    hessian,
    hessian_compressed,
    kernels,
    khatri_rao,
    layer_norms,
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

__version__ = "0.1.0"

_LAZY = ("symbolic", "experiments", "data", "reproductions")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'ntkbook' has no attribute {name!r}")


__all__ = [
    "activations",
    "claims",
    "covariance",
    "eigen",
    "empirical_ntk",
    "fitting",
    "hessian",
    "hessian_compressed",
    "hessian_spectral_norm",
    "kernels",
    "khatri_rao",
    "layer_norms",
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
