"""Where each mathematical object of the book is defined: one home per object.

:data:`HOMES` is the list the API page shows ("Where each object lives"); a test checks that every name
resolves to an object of the package, so the list cannot drift from the code.  When you add an object
the chapters share, give it one home here instead of a second copy in a chapter module.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Home:
    """One object and the public name that defines it.

    Attributes:
        object: what it is, in the book's words (e.g. "tangent kernel K(x, z) = ∇f(x)ᵀ∇f(z)").
        name: dotted public name of the defining function, class or constant.
        note: one line on variants, methods or the paper equation.
    """

    object: str
    name: str
    note: str = ""

    @property
    def module(self) -> str:
        """The module (file) the object lives in."""
        return resolve(self.name).__module__ if not _is_module(self.name) else self.name


HOMES: tuple[Home, ...] = (
    Home("tangent kernel K(w; x, z) = ∇f(w; x)ᵀ∇f(w; z)", "ntkbook.kernels.empirical_ntk",
         "methods: structured (dense layers), NTK-vector products, Jacobian contraction; Eq. 1 of Liu–Zhu–Belkin 2020"),
    Home("K(x, x) of a dense network at one input, float64", "ntkbook.hessian_compressed.kernel_at_input",
         "the structured path (kernels.layerwise_ntk) on the float64 base pass of the compressed Hessian"),
    Home("Jacobian ∂f/∂w", "ntkbook.kernels.jacobian_matrix"),
    Home("relative kernel change ‖K − K₀‖_F / ‖K₀‖_F", "ntkbook.kernels.relative_change"),
    Home("Hessian-vector product", "ntkbook.hessian.hvp"),
    Home("Hessian spectral norm ‖H‖", "ntkbook.hessian.hessian_spectral_norm",
         "full or exact-range compressed operator; solvers dense / Lanczos / ARPACK / fixed steps"),
    Home("the ball B(w₀, R): random points, the projection onto it or its sphere", "ntkbook.ball.project",
         "random_direction, point_on_sphere, point_in_ball"),
    Home("projected gradient ascent over a ball or sphere (a lower estimate of a supremum)",
         "ntkbook.ball.projected_ascent", "the one ascent loop of the book"),
    Home("certified supremum of a function along a segment [w₀, w₁]", "ntkbook.ball.sup_on_segment",
         "grid maximum + Lipschitz constant × half the grid step"),
    Home("linearized model f_lin(w) = f(w₀) + ∇f(w₀)ᵀ(w − w₀)", "ntkbook.linearization.linearize",
         "Eq. 5 of Liu–Zhu–Belkin 2020"),
    Home("Taylor remainder f − f_lin", "ntkbook.linearization.remainder",
         "integral forms: linearization.remainder_integral, linearization.gradient_change (Eq. 56)"),
    Home("largest ‖H‖ in a ball ‖W − W₀‖ ≤ R (local ascent, a lower bound)", "ntkbook.hessian.ascend_hessian_norm",
         "ball.projected_ascent of ‖H‖ with hessian_norm_value_and_grad (extreme eigenpair by ARPACK, its gradient by "
         "Hellmann–Feynman); Theorem 3.2"),
    Home("Hessian of the one-hidden-layer network of Eq. (8) in closed form",
         "ntkbook.hessian.shallow_hessian_eigenvalues",
         "Eq. 9 of Liu–Zhu–Belkin 2020 (d-dimensional inputs: rank-one blocks)"),
    Home("second-derivative tensor ∂²α/∂w²", "ntkbook.hessian.second_derivative_tensor"),
    Home("exact norms of a dense layer's derivatives (the layer factors)", "ntkbook.layer_norms.layer_factors",
         "Eq. 73–75 and Lemma F.2 of Liu–Zhu–Belkin 2020; autodiff references layer_tensors"),
    Home("a-priori bound on the hidden-layer norms ‖α⁽ˡ⁾(W)‖ in a ball", "ntkbook.hessian_bounds.lemma_f3_bounds",
         "Lemma F.3 (Eq. 66) as printed and corrected; skip=True for residual layers (Lemma G.5); the CNN bound of "
         "Lemma G.3 by substitution"),
    Home("hidden-layer norm bounds of a CNN or a ResNet in a ball", "ntkbook.hessian_bounds.hidden_norm_bounds",
         "Lemmas G.3 and G.5 of Liu–Zhu–Belkin 2020, beside Lemma F.3's fully connected constants"),
    Home("chain-rule bounds on every Hessian block at one input", "ntkbook.hessian_bounds.block_bounds",
         "App. E of Liu–Zhu–Belkin 2020; Lemma E.1 is their sum, the blockwise bound their spectral norm"),
    Home("Prop. 3.1's bound (Eq. 17)", "ntkbook.hessian_bounds.eq_17_terms"),
    Home("Thm 3.1's bound and Q_∞, Q_L, Q₂,₂,₁ (Eq. 20–21)", "ntkbook.hessian_bounds.theorem_3_1"),
    Home("a-priori bounds on the backward vectors in a ball", "ntkbook.hessian_bounds.lemma_f5_bounds",
         "Lemma F.5 (Eq. 80–81); eq_85_87_bounds chains Eq. 83–87 of App. F.4"),
    Home("backward vectors b⁽ˡ⁾ = ∂f/∂α⁽ˡ⁾ (Eq. 79)", "ntkbook.hessian_compressed.base_pass",
         "the recursion b⁽ˡ⁻¹⁾ = W⁽ˡ⁾ᵀ(σ' ⊙ b⁽ˡ⁾)/√m, tested against autodiff and finite differences"),
    Home("extreme eigenpairs of a symmetric operator", "ntkbook.eigen.extreme_eigenpairs",
         "one result type, EigenResult (value, iterations, residual, converged)"),
    Home("(2,2,1)-norm of a third-order tensor", "ntkbook.norms.norm_221", "Eq. 12 of Liu–Zhu–Belkin 2020"),
    Home("gradient descent / SGD and the loss L = (1/2n) Σ ‖f − y‖²", "ntkbook.training.train",
         "one loop (scan / while_loop), stopping rule StopRule, optax update rules, trackers"),
    Home("step size from the kernel, η = c·n/λ_max(K)", "ntkbook.training.step_size_from_kernel",
         "on the host (float64) or traced, inside jit/vmap"),
    Home("a paper's step size and loss on the book's loss (1/2n)Σ(f − y)²", "ntkbook.training.book_step",
         "loss_scale: ½Σ is n·L, (1/n)Σ is 2·L"),
    Home("activations, derivatives and the papers' constants", "ntkbook.activations.get_activation",
         "one registry: φ, φ', φ'', Lipschitz/smoothness constants, dual kernels"),
    Home("Hermite coefficients", "ntkbook.activations.hermite_coefficients"),
    Home("Gauss–Hermite quadrature", "ntkbook.quadrature.gaussian_expectation"),
    Home("Gauss–Legendre quadrature on [0, 1]", "ntkbook.quadrature.gauss_legendre_unit"),
    Home("Khatri–Rao products", "ntkbook.khatri_rao"),
    Home("covariances Σ(X), Σ̃(X) of Oymak–Soltanolkotabi", "ntkbook.covariance"),
    Home("power-law (log–log) fit with standard error", "ntkbook.fitting.power_law_fit"),
    Home("the rate rule (window fixed a priori, rivals)", "ntkbook.fitting.decide_rate"),
    Home("typed claims (bound, rate, order, close, identity, condition)", "ntkbook.claims",
         "claims.about(ref, label=...) says a result's reference once for a block of claims"),
    Home("a chapter experiment's sizes at the three scales", "ntkbook.scales.pick",
         "declared in the chapter; typed and frozen (Sizes)"),
    Home("a reproduction's settings per scale", "ntkbook.scales.get", "one frozen dataclass per reproduction"),
    Home("sweeps over widths / seeds / activations", "ntkbook.sweep.run",
         "a function of (key, coordinates); key from the coordinates; jit / vmap over seeds; piece cache, --shard"),
    Home("PRNG key from coordinates (width, seed, radius, activation, ...)", "ntkbook.random.fold_key",
         "never from a position in a list; sweep.piece_key folds the hash of a piece's coordinates"),
    Home("independent runs spread over the devices of one host", "ntkbook.parallel.shard_runs",
         "JAX sharding of the runs axis; unpad drops the padding copies"),
    Home("figure: ‖H‖ and K(x, x) of Eq. (8) across widths (Section 3.1)",
         "ntkbook.reproductions.one_hidden_layer.figure", "chapter 2 and reproduce one-hidden-layer"),
    Home("the training runs of App. B of Liu–Zhu–Belkin 2020 (Figs. 1–2), ΔK(t) measured",
         "ntkbook.reproductions.appendix_b.train_runs",
         "data of Eq. 42, networks of Eqs. 43/48, curvature-following step; chapter 6 and the command line"),
    Home("figure: Figure 1 of Liu–Zhu–Belkin 2020 (non-linear output)",
         "ntkbook.reproductions.nonlinear_output.figure", "chapter 6 and reproduce nonlinear-output"),
    Home("figure: Figure 2 of Liu–Zhu–Belkin 2020 (bottleneck)",
         "ntkbook.reproductions.bottleneck.figure", "chapter 6 and reproduce bottleneck"),
    Home("figure: Figure 3 (left) of Liu–Zhu–Belkin 2022 (orthogonality, equal widths)",
         "ntkbook.reproductions.orthogonality.left_panel", "chapter 7b and reproduce orthogonality"),
    Home("figure: Figure 3 (right) of Liu–Zhu–Belkin 2022 (orthogonality, bottleneck)",
         "ntkbook.reproductions.orthogonality.right_panel", "chapter 7b and reproduce orthogonality"),
    Home("figure: Figure 2 of Oymak–Soltanolkotabi 2020 (phase transitions)",
         "ntkbook.reproductions.phase_transition.plot_panels", "chapter 9 and reproduce phase-transition"),
    Home("tables", "ntkbook.tables.show", "the one table function of the book"),
    Home("a sweep condensed to one row per coordinate (mean / min / max / range over seeds)",
         "ntkbook.tables.summarize"),
    Home("a fitted exponent as table cells, next to an order claim's window", "ntkbook.tables.order_fit",
         "tables.fit_cells gives the cells without the window; the claim itself is claims.order"),
    Home("a dict of named scalars as a two-column table", "ntkbook.tables.quantities"),
    Home("log x-axis ticks at the measured widths or radii", "ntkbook.plotting.label_ticks"),
    Home("random inputs with ‖x‖ = √d", "ntkbook.data.sphere.unit_scale_input",
         "first pre-activations N(0, 1) in the NTK parameterization"),
    Home("models (MLP, CNN, ResNet, DenseNet, assemblies)", "ntkbook.models",
         "parameterization ('ntk' / 'lecun') is static pytree data; shared_model: one object per architecture"),
    Home("the one-hidden-layer network vᵀφ(Wx) of Oymak–Soltanolkotabi 2020 (Eq. 1.1), initialized as in "
         "their Thm 2.1", "ntkbook.models.oymak_init.network",
         "v = ±‖y‖/√(kn) (output_weights, also used by reproduce phase-transition), W₀ ~ N(0, 1); chapter 9"),
    Home("JSON records, digests, atomic writes", "ntkbook.records"),
)
"""The one home of each object the chapters share (shown on the API page)."""


def _is_module(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def resolve(name: str) -> Any:
    """The object a dotted public name refers to (a module, or an attribute of one).

    Raises:
        ValueError: if ``name`` does not name an object of the package.
    """
    if not isinstance(name, str) or not name.startswith("ntkbook"):
        raise ValueError(f"name must be a dotted name in the ntkbook package, got {name!r}")
    if _is_module(name):
        return importlib.import_module(name)
    module, _, attr = name.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        raise ValueError(f"name {name!r} does not name an object of the package") from None


__all__ = ["HOMES", "Home", "resolve"]
