"""Symbolic tangent kernels and Hessians (sympy) for small models.

For a model f(w; x) given as a sympy expression in parameter symbols w and an input symbol x:

* :func:`tangent_kernel` — K_{(x,z)}(w) = Σ_p ∂f(w;x)/∂w_p · ∂f(w;z)/∂w_p (Eq. 1), simplified;
* :func:`parameter_hessian` — the matrix ∂²f/∂w²;
* :func:`analyse` — whether K depends on w and whether H vanishes identically; Proposition 2.2 says
  the two answers always agree (K constant ⇔ f linear in w ⇔ H ≡ 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sympy as sp


def _check(f: sp.Expr, params: Sequence[sp.Symbol], x: sp.Symbol) -> None:
    if not isinstance(f, sp.Expr):
        raise TypeError(f"f must be a sympy expression, got {type(f).__name__}")
    if not params or not all(isinstance(p, sp.Symbol) for p in params):
        raise TypeError("params must be a non-empty sequence of sympy symbols")
    if not isinstance(x, sp.Symbol):
        raise TypeError(f"x must be a sympy symbol, got {type(x).__name__}")


def tangent_kernel(f: sp.Expr, params: Sequence[sp.Symbol], x: sp.Symbol, z: sp.Symbol) -> sp.Expr:
    """K_{(x,z)}(w) = ∇_w f(w; x)ᵀ ∇_w f(w; z), simplified."""
    _check(f, params, x)
    grads = [sp.diff(f, p) for p in params]
    return sp.simplify(sum(g * g.subs(x, z) for g in grads))


def parameter_hessian(f: sp.Expr, params: Sequence[sp.Symbol]) -> sp.Matrix:
    """∂²f/∂w² as a sympy Matrix (simplified entries)."""
    return sp.Matrix(len(params), len(params), lambda i, j: sp.simplify(sp.diff(f, params[i], params[j])))


def depends_on(expr: sp.Expr | sp.Matrix, params: Sequence[sp.Symbol]) -> bool:
    """True when some derivative of ``expr`` in ``params`` is not identically zero."""
    items = list(expr) if isinstance(expr, sp.MatrixBase) else [expr]
    return any(sp.simplify(sp.diff(e, p)) != 0 for e in items for p in params)


@dataclass(frozen=True)
class SymbolicAnalysis:
    """K, H and the two yes/no answers of Proposition 2.2 for one model."""

    model: sp.Expr
    kernel: sp.Expr
    hessian: sp.Matrix
    kernel_constant: bool
    hessian_zero: bool


def analyse(f: sp.Expr, params: Sequence[sp.Symbol], x: sp.Symbol, z: sp.Symbol | None = None) -> SymbolicAnalysis:
    """Tangent kernel and Hessian of f, and whether each is constant / zero in w."""
    z = z if z is not None else sp.Symbol(f"{x.name}'", real=True)
    kernel = tangent_kernel(f, params, x, z)
    hessian = parameter_hessian(f, params)
    return SymbolicAnalysis(
        model=f,
        kernel=kernel,
        hessian=hessian,
        kernel_constant=not depends_on(kernel, params),
        hessian_zero=all(sp.simplify(e) == 0 for e in hessian),
    )
