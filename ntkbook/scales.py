"""The one table of sizes: every experiment at the three scales of the book.

* ``ci`` — seconds per notebook on a 2-core CPU (the test suite injects it);
* ``book`` — what the rendered book shows, minutes on a laptop CPU;
* ``paper`` — the papers' settings, meant for a GPU.

Notebooks choose the scale in their ``parameters`` cell (``NTKBOOK_SCALE`` or papermill
``-p scale ...``) and read their sizes with :func:`get`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from . import _validation as V

SCALES = ("ci", "book", "paper")
DEFAULT_SCALE = "book"

TABLE: dict[str, dict[str, dict[str, Any]]] = {
    # Chapter 1 — the tangent kernel and linearity -------------------------------------------
    "kernel_along_paths": {
        # a random-features model vs a tanh network, kernels along random and GD paths
        "ci": dict(width=64, num_inputs=8, path_steps=20, radius=10.0, input_dim=2),
        "book": dict(width=512, num_inputs=16, path_steps=100, radius=10.0, input_dim=2),
        "paper": dict(width=4096, num_inputs=32, path_steps=400, radius=10.0, input_dim=2),
    },
    "prop_2_3": {
        # points of B(w0, R) for two-hidden-layer tanh networks; ε = max ‖H‖ on each segment
        "ci": dict(widths=(32, 128), radii=(1.0, 4.0), samples=2, segment_points=3, input_dim=2, tol=1e-3),
        "book": dict(widths=(64, 256, 1024), radii=(0.5, 2.0, 8.0), samples=2, segment_points=5, input_dim=2,
                     tol=1e-3),
        "paper": dict(widths=(64, 256, 1024, 4096), radii=(0.5, 2.0, 8.0, 32.0), samples=10, segment_points=9,
                      input_dim=2, tol=1e-4),
    },
    # Chapter 2 — the (2,2,1)-norm and the one-hidden-layer network ----------------------------
    "norm_221_timing": {
        "ci": dict(d1=8, d2=8, d3_values=(2, 4, 6, 8, 10), repeats=2),
        "book": dict(d1=16, d2=16, d3_values=(2, 4, 6, 8, 10, 12, 14, 16), repeats=3),
        "paper": dict(d1=32, d2=32, d3_values=(2, 4, 6, 8, 10, 12, 14, 16), repeats=5),
    },
    "prop_2_1": {
        "ci": dict(num_tensors=20, shape=(5, 4, 6)),
        "book": dict(num_tensors=200, shape=(8, 6, 10)),
        "paper": dict(num_tensors=1000, shape=(12, 10, 14)),
    },
    "one_hidden_layer": {
        "ci": dict(widths=(10, 30, 100, 300, 1000), inputs=(0.5, 1.0, 2.0), seeds=2, tol=1e-4),
        "book": dict(widths=(10, 30, 100, 300, 1000, 3000, 10_000, 30_000, 100_000), inputs=(0.5, 1.0, 2.0),
                     seeds=5, tol=1e-4),
        "paper": dict(widths=(10, 100, 1000, 10_000, 100_000, 1_000_000), inputs=(0.5, 1.0, 2.0), seeds=10,
                      tol=1e-5),
    },
    # Chapter 3 — transition to linearity with a linear output layer (2020, Section 3) ----------
    "range_check": {
        # ‖H‖ from the compressed operator vs dense (float64, small) and full-parameter Lanczos (large)
        "ci": dict(small_width=8, small_models=("MLP",), norm_width=8, large_width=64, depth=3, input_dim=4,
                   tol=1e-6, reference_method="full"),
        "book": dict(small_width=12, small_models=("MLP", "ResNet"), norm_width=10, large_width=256, depth=3,
                     input_dim=4, tol=1e-6, reference_method="full-lanczos"),
        "paper": dict(small_width=16, small_models=("MLP", "ResNet"), norm_width=12, large_width=1024, depth=3,
                      input_dim=4, tol=1e-7, reference_method="full-lanczos"),
    },
    "prop_3_1": {
        # two hidden layers, v fixed (Eq. 16): every factor of Eq. (17) at W0
        "ci": dict(widths=(16, 32, 64), seeds=2, input_dim=4, activation="tanh"),
        "book": dict(widths=(32, 64, 128, 256, 512, 1024), seeds=2, input_dim=4, activation="tanh"),
        "paper": dict(widths=(32, 64, 128, 256, 512, 1024, 2048, 4096), seeds=5, input_dim=4, activation="tanh"),
    },
    "thm_3_1": {
        # ‖H‖ against Theorem 3.1 (and tighter bounds) at W0 and on spheres ‖W − W0‖ = R, v trained
        "ci": dict(depths=(2, 3, 4), widths=(16, 64), seeds=2, radii=(2.0,), sphere_points=1, input_dim=4,
                   activation="tanh", tol=1e-6),
        "book": dict(depths=(2, 3, 4), widths=(32, 128, 512), seeds=2, radii=(1.0, 4.0), sphere_points=1,
                     input_dim=4, activation="tanh", tol=1e-6),
        "paper": dict(depths=(2, 3, 4), widths=(32, 128, 512, 2048), seeds=5, radii=(1.0, 4.0, 16.0),
                      sphere_points=3, input_dim=4, activation="tanh", tol=1e-6),
    },
    "thm_3_2": {
        # ‖H‖ in the ball: W0, spheres, GD path, ascent of the top eigenvalue; L = 3, v trained
        "ci": dict(depth=3, widths=(32, 128, 512), seeds=2, radii=(1.0, 4.0), sphere_points=1, ascent_steps=3,
                   num_train=8, gd_steps=40, gd_checkpoints=2, input_dim=4, activation="tanh", tol=1e-4),
        "book": dict(depth=3, widths=(64, 256, 1024, 4096), seeds=1, radii=(1.0, 4.0, 16.0),
                     sphere_points=1, ascent_steps=2, num_train=8, gd_steps=45, gd_checkpoints=3, input_dim=4,
                     activation="tanh", tol=1e-4),
        "paper": dict(depth=3, widths=(64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384), seeds=3,
                      radii=(1.0, 4.0, 16.0, 64.0), sphere_points=4, ascent_steps=10, num_train=16, gd_steps=1000,
                      gd_checkpoints=10, input_dim=4, activation="tanh", tol=1e-5),
    },
    "thm_3_3": {
        # one hidden layer narrowed at a time (others at `base`), and uniform networks of the narrow width
        "ci": dict(depth=3, base=256, narrow=(16, 32, 64), seeds=2, input_dim=4, activation="tanh", tol=1e-5),
        "book": dict(depth=3, base=1024, narrow=(16, 64, 256), seeds=2, input_dim=4, activation="tanh",
                     tol=1e-5),
        "paper": dict(depth=3, base=4096, narrow=(16, 32, 64, 128, 256, 512, 1024), seeds=5, input_dim=4,
                      activation="tanh", tol=1e-6),
    },
    "cnn_resnet": {
        # CNN: 3×3 convolutions on an 8×8 digit image, width = channels; ResNet of Eq. (80)
        "ci": dict(cnn_widths=(4, 16), cnn_depth=2, resnet_widths=(32, 128, 512), resnet_depth=3, seeds=2,
                   radius=4.0, image=0, input_dim=4, tol=1e-4),
        "book": dict(cnn_widths=(8, 16, 32, 64), cnn_depth=2, resnet_widths=(64, 256, 1024, 2048),
                     resnet_depth=3, seeds=2, radius=4.0, image=0, input_dim=4, tol=1e-4),
        "paper": dict(cnn_widths=(8, 16, 32, 64, 128, 256, 512), cnn_depth=3,
                      resnet_widths=(64, 128, 256, 512, 1024, 2048, 4096), resnet_depth=4, seeds=5, radius=4.0,
                      image=0, input_dim=4, tol=1e-5),
    },
    "activations_3": {
        # tanh / sigmoid / softplus at W0 and after a short ascent in the ball
        "ci": dict(activations=("tanh", "sigmoid", "softplus"), widths=(32, 128), depth=3, seeds=2, radius=4.0,
                   ascent_steps=0, input_dim=4, tol=1e-4, factor_max_width=128),
        "book": dict(activations=("tanh", "sigmoid", "softplus"), widths=(64, 256, 1024), depth=3, seeds=2,
                     radius=4.0, ascent_steps=1, input_dim=4, tol=1e-4, factor_max_width=256),
        "paper": dict(activations=("tanh", "sigmoid", "softplus", "swish"), widths=(64, 256, 1024, 4096), depth=3,
                      seeds=5, radius=4.0, ascent_steps=8, input_dim=4, tol=1e-5, factor_max_width=1024),
    },
    "relu_3": {
        # the autodiff Hessian against the gradient change on a segment [W0, W0 + R u]
        "ci": dict(activations=("tanh", "relu"), widths=(32, 128), depth=3, seeds=1, radius=16.0, nodes=16,
                   input_dim=4, tol=1e-4),
        "book": dict(activations=("tanh", "relu"), widths=(64, 256, 1024), depth=3, seeds=1, radius=16.0, nodes=16,
                     input_dim=4, tol=1e-4),
        "paper": dict(activations=("tanh", "softplus", "relu"), widths=(64, 256, 1024, 4096), depth=3, seeds=5,
                      radius=16.0, nodes=32, input_dim=4, tol=1e-5),
    },
    # Chapters 4–5 — what breaks linearity; lazy training (2020, Sections 1.1, 4, 5, App. A) --
    "lazy_weight_change": {
        # Eq. (8) network, d = 2, trained to convergence on 6 points: ‖w*−w₀‖, ‖·‖_∞, Eq. (2), κ = A·B
        "ci": dict(widths=(64, 1024), seeds=4, num_inputs=6, radius=3.0, steps=400, lr_factor=1.0,
                   segment_points=33),
        "book": dict(widths=(64, 256, 1024, 4096, 16384), seeds=8, num_inputs=6, radius=3.0, steps=500,
                     lr_factor=1.0, segment_points=65),
        "paper": dict(widths=(64, 256, 1024, 4096, 16384, 65536, 262144, 1048576), seeds=10, num_inputs=6,
                      radius=3.0, steps=800, lr_factor=1.0, segment_points=129),
    },
    "lazy_rescaled": {
        # the centred model αf̄ of Eq. (4) at a fixed small width; α powers of two
        "ci": dict(width=64, alphas=(1.0, 4.0, 16.0, 64.0), seeds=2, num_inputs=6, radius=3.0, steps=400,
                   lr_factor=1.0),
        "book": dict(width=64, alphas=(1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0), seeds=6,
                     num_inputs=6, radius=3.0, steps=500, lr_factor=1.0),
        "paper": dict(width=64, alphas=(1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0),
                      seeds=10, num_inputs=6, radius=3.0, steps=800, lr_factor=1.0),
    },
    "lazy_parameterization": {
        # two hidden layers (m, m), NTK vs LeCun (Appendix A)
        "ci": dict(widths=(32, 128), seeds=3, num_inputs=6, radius=3.0, steps=300, lr_factor=1.5,
                   lanczos_steps=30),
        "book": dict(widths=(64, 128, 256, 512, 1024), seeds=3, num_inputs=6, radius=3.0, steps=800,
                     lr_factor=1.5, lanczos_steps=40),
        "paper": dict(widths=(64, 128, 256, 512, 1024, 2048, 4096), seeds=5, num_inputs=6, radius=3.0,
                      steps=2000, lr_factor=1.5, lanczos_steps=60),
    },
    "breaking_output_checks": {
        # Eq. (27)–(28) against autodiff: dense Hessians at a small width, HVPs at a large one
        "ci": dict(dense_width=12, hvp_width=2000, probes=2),
        "book": dict(dense_width=24, hvp_width=20000, probes=4),
        "paper": dict(dense_width=32, hvp_width=200000, probes=8),
    },
    "breaking_nonlinear_output": {
        # one hidden layer (tanh, trained W and v, d = 2) and φ(f); Hessians at w₀, trained on 6 points
        "ci": dict(widths=(64, 1024), seeds=4, num_inputs=6, radius=3.0, steps=400, lr_factor=1.0,
                   lanczos_steps=20),
        "book": dict(widths=(64, 256, 1024, 4096, 16384), seeds=6, num_inputs=6, radius=3.0, steps=500,
                     lr_factor=1.0, lanczos_steps=20),
        "paper": dict(widths=(64, 256, 1024, 4096, 16384, 65536, 262144), seeds=10, num_inputs=6, radius=3.0,
                      steps=800, lr_factor=1.0, lanczos_steps=30),
    },
    "breaking_eq30": {
        "ci": dict(widths=(10, 1000), seeds=3, activations=("tanh", "quadratic"), alpha=0.8),
        "book": dict(widths=(10, 100, 1000, 10_000), seeds=4, activations=("tanh", "quadratic"), alpha=0.8),
        "paper": dict(widths=(10, 100, 1000, 10_000, 100_000), seeds=10, activations=("tanh", "quadratic"),
                      alpha=0.8),
    },
    "breaking_theorem_4_1": {
        # Eq. (109) at W₀ for many initializations of the Eq. (31) network
        "ci": dict(widths=(64, 4096), seeds=400, x=1.0,
                   deltas=(0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.45, 0.49)),
        "book": dict(widths=(16, 64, 256, 1024, 4096, 16384), seeds=2000, x=1.0,
                     deltas=(0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.45, 0.49)),
        "paper": dict(widths=(16, 64, 256, 1024, 4096, 16384, 65536, 262144), seeds=10_000, x=1.0,
                      deltas=(0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.45, 0.49)),
    },
    "breaking_bottleneck_ball": {
        # full ‖H‖ of the Eq. (31) network at W₀ and at three points of B(W₀, R)
        "ci": dict(widths=(64, 1024), seeds=12, x=1.0, radius=1.0, lanczos_steps=30),
        "book": dict(widths=(64, 256, 1024, 4096, 16384), seeds=16, x=1.0, radius=1.0, lanczos_steps=40),
        "paper": dict(widths=(64, 256, 1024, 4096, 16384, 65536, 262144), seeds=32, x=1.0, radius=1.0,
                      lanczos_steps=60),
    },
    "breaking_bottleneck_width": {
        # (m, m_b, m) tanh–identity–tanh networks: m_b = 1 across m (Table 1), m_b across at fixed m
        "ci": dict(widths=(64, 1024), fixed_width=1024, bottlenecks=(1, 16), seeds=16, num_inputs=6,
                   radius=3.0, steps=400, lr_factor=0.5, lanczos_steps=30),
        "book": dict(widths=(64, 256, 1024), fixed_width=1024, bottlenecks=(1, 4, 16, 64), seeds=16,
                     num_inputs=6, radius=3.0, steps=800, lr_factor=0.5, lanczos_steps=30),
        "paper": dict(widths=(64, 256, 1024, 4096), fixed_width=4096, bottlenecks=(1, 3, 10, 50, 100, 500),
                      seeds=10, num_inputs=6, radius=3.0, steps=3000, lr_factor=0.5, lanczos_steps=40),
    },
    "optimization_theorem_5_1": {
        # GD on φ(f), |φ'| ≥ 1/2, one hidden tanh layer, 6 points; kernels tracked at every step
        "ci": dict(widths=(64, 1024), seeds=3, num_inputs=6, radius=3.0, steps=1500, lr_factor=1.0),
        "book": dict(widths=(64, 256, 1024, 4096, 16384), seeds=6, num_inputs=6, radius=3.0, steps=2000,
                     lr_factor=1.0),
        "paper": dict(widths=(64, 256, 1024, 4096, 16384, 65536, 262144), seeds=10, num_inputs=6, radius=3.0,
                      steps=3000, lr_factor=1.0),
    },
    # Chapter 6 — reproduction of the 2020 experiments (Section 6, Appendix B) -----------------
    "nonlinear_output": {
        # Figure 1: ΔK of f, softmax(f), swish(f) (Eq. 43–47) against m; ΔK(t) at trajectory_width
        "ci": dict(widths=(100, 300, 1000), runs=4, runs_per_piece=4, trajectory_width=1000, max_steps=200,
                   loss_tol=1e-4, lr_factor=1.0, per_decade=12, n=60, data_seed=0),
        "book": dict(widths=(30, 100, 1000, 10_000, 100_000), runs=2, runs_per_piece=1, trajectory_width=10_000,
                     max_steps=200, loss_tol=1e-4, lr_factor=1.0, per_decade=12, n=60, data_seed=0),
        "paper": dict(widths=(30, 100, 1000, 10_000, 100_000, 1_000_000), runs=10, runs_per_piece=10,
                      trajectory_width=10_000, max_steps=1_000_000, loss_tol=1e-4, lr_factor=1.0, per_decade=12,
                      n=60, data_seed=0),
    },
    "bottleneck": {
        # Figure 2: ΔK of the network of Eq. (48) (widths m, m_b, m) against m_b
        "ci": dict(width=300, bottleneck_widths=(3, 10, 30), runs=3, runs_per_piece=3, max_steps=200,
                   loss_tol=1e-4, lr_factor=1.0, per_decade=12, n=60, data_seed=0),
        "book": dict(width=10_000, bottleneck_widths=(3, 5, 10, 50, 100), runs=2, runs_per_piece=1,
                     max_steps=200, loss_tol=1e-4, lr_factor=1.0, per_decade=12, n=60, data_seed=0),
        "paper": dict(width=10_000, bottleneck_widths=(3, 5, 10, 50, 100, 500, 1000), runs=10, runs_per_piece=10,
                      max_steps=1_000_000, loss_tol=1e-4, lr_factor=1.0, per_decade=12, n=60, data_seed=0),
    },
    # Chapter 7 — assembling weak models (2022) ---------------------------------------------
    "assembly_smoothness": {
        # β = sup ‖H_g‖ over the domain D_R: random search, then projected ascent from the best points
        "ci": dict(radius=2.0, hidden=3, samples=2048, starts=0, steps=0),
        "book": dict(radius=2.0, hidden=3, samples=8192, starts=16, steps=150),
        "paper": dict(radius=2.0, hidden=3, samples=65536, starts=64, steps=400),
    },
    "assembly_theorem1": {
        # Theorem 1 / Lemma 2: quadratic term of Eq. (4) against m, three families × three kinds of weights
        "ci": dict(families=("neuron", "mlp", "square"), weights=("ones", "signs", "gaussian"),
                   widths=(10, 100, 1000), seeds=1, directions=4, radius=2.0, hidden=3, ascent_steps=20,
                   refine_steps=20),
        "book": dict(families=("neuron", "mlp", "square"), weights=("ones", "signs", "gaussian"),
                     widths=(10, 30, 100, 300, 1000, 3000), seeds=2, directions=4, radius=2.0, hidden=3,
                     ascent_steps=30, refine_steps=30),
        "paper": dict(families=("neuron", "mlp", "square"), weights=("ones", "signs", "gaussian"),
                      widths=(10, 30, 100, 300, 1000, 3000, 10_000, 30_000, 100_000), seeds=5, directions=16,
                      radius=2.0, hidden=3, ascent_steps=100, refine_steps=100),
    },
    "assembly_lemma2": {
        "ci": dict(widths=(10, 20, 30, 50, 100, 1000), draws=4000),
        "book": dict(widths=(10, 20, 30, 50, 100, 300, 1000), draws=20_000),
        "paper": dict(widths=(10, 20, 30, 50, 100, 300, 1000), draws=1_000_000),
    },
    "assembly_assumption1": {
        # median/max of |α⁽ˡ⁾| for a 3-hidden-layer tanh network, and an assembly with a dominating sub-model
        "ci": dict(network_widths=(16, 64, 256), depth=3, runs=1, widths=(10, 100, 1000), seeds=1, radius=2.0,
                   ascent_steps=20, refine_steps=20),
        "book": dict(network_widths=(16, 64, 256, 1024), depth=3, runs=2, widths=(10, 100, 1000, 3000),
                     seeds=2, radius=2.0, ascent_steps=30, refine_steps=30),
        "paper": dict(network_widths=(16, 64, 256, 1024, 4096, 16_384), depth=3, runs=5,
                      widths=(10, 100, 1000, 10_000, 100_000), seeds=5, radius=2.0, ascent_steps=100,
                      refine_steps=100),
    },
    "assembly_two_layer": {
        "ci": dict(width=8), "book": dict(width=16), "paper": dict(width=40),
    },
    "orthogonality": {
        # Figure 3 (Appendix B): mean |cos| of neuron gradients vs width; 20 images of two classes
        "ci": dict(dataset="digits", classes=(3, 8), n_per_class=10, data_seed=0, seed=0, depth=3,
                   widths=(16, 32, 64), bottleneck_widths=(8, 16, 32), bottleneck_outer=64, runs=2,
                   sampled_neurons=64, gd_steps=20, lr_factor=1.0),
        "book": dict(dataset="digits", classes=(3, 8), n_per_class=10, data_seed=0, seed=0, depth=3,
                     widths=(16, 32, 64, 128, 256, 512), bottleneck_widths=(8, 16, 32, 64, 128, 256),
                     bottleneck_outer=256, runs=2, sampled_neurons=128, gd_steps=200, lr_factor=1.0),
        "paper": dict(dataset="digits", classes=(3, 8), n_per_class=10, data_seed=0, seed=0, depth=3,
                      widths=(16, 32, 64, 128, 256, 512, 1024, 2048, 4096),
                      bottleneck_widths=(8, 16, 32, 64, 128, 256, 512, 1000), bottleneck_outer=1000, runs=5,
                      sampled_neurons=512, gd_steps=1000, lr_factor=1.0),
    },
    "orthogonality_gaussian": {
        # the same measurement on Gaussian inputs (equal-width network only)
        "ci": dict(dataset="gaussian", classes=(3, 8), n_per_class=10, data_seed=0, seed=1, depth=3,
                   widths=(16, 32, 64), bottleneck_widths=(), bottleneck_outer=64, runs=1, sampled_neurons=64,
                   gd_steps=20, lr_factor=1.0),
        "book": dict(dataset="gaussian", classes=(3, 8), n_per_class=10, data_seed=0, seed=1, depth=3,
                     widths=(16, 64, 256), bottleneck_widths=(), bottleneck_outer=256, runs=2,
                     sampled_neurons=128, gd_steps=200, lr_factor=1.0),
        "paper": dict(dataset="gaussian", classes=(3, 8), n_per_class=10, data_seed=0, seed=1, depth=3,
                      widths=(16, 64, 256, 1024, 4096), bottleneck_widths=(), bottleneck_outer=1000, runs=5,
                      sampled_neurons=512, gd_steps=1000, lr_factor=1.0),
    },
    "neuron_geometry": {
        # Theorems 2 and 4: turn of neuron gradients in B(θ₀, R), quadratic term of next-layer pre-activations
        "ci": dict(dataset="digits", classes=(3, 8), n_per_class=10, data_seed=0, seed=0, depth=3,
                   widths=(32, 256), runs=1, radius=2.0, neurons=2, directions=2, gd_steps=20, lr_factor=1.0,
                   tol=1e-3, ascent_steps=15),
        "book": dict(dataset="digits", classes=(3, 8), n_per_class=10, data_seed=0, seed=0, depth=3,
                     widths=(32, 128, 512), runs=1, radius=2.0, neurons=3, directions=3, gd_steps=200,
                     lr_factor=1.0, tol=1e-3, ascent_steps=15),
        "paper": dict(dataset="digits", classes=(3, 8), n_per_class=10, data_seed=0, seed=0, depth=3,
                      widths=(32, 64, 128, 256, 512, 1024, 2048, 4096), runs=3, radius=2.0, neurons=8,
                      directions=8, gd_steps=1000, lr_factor=1.0, tol=1e-4, ascent_steps=40),
    },
    "densenet": {
        # Appendix E: mean |cos| and ‖H_f‖ of a 3-layer DenseNet (Eq. 37) with m new neurons per layer
        "ci": dict(dataset="digits", classes=(3, 8), n_per_class=10, data_seed=0, seed=2, depth=3,
                   widths=(128, 512), bottleneck_widths=(), bottleneck_outer=0, runs=1, sampled_neurons=64,
                   gd_steps=20, lr_factor=1.0, radius=2.0, tol=1e-3),
        "book": dict(dataset="digits", classes=(3, 8), n_per_class=10, data_seed=0, seed=2, depth=3,
                     widths=(128, 256, 512, 1024), bottleneck_widths=(), bottleneck_outer=0, runs=1,
                     sampled_neurons=128, gd_steps=200, lr_factor=1.0, radius=2.0, tol=1e-3),
        "paper": dict(dataset="digits", classes=(3, 8), n_per_class=10, data_seed=0, seed=2, depth=3,
                      widths=(128, 256, 512, 1024, 2048, 4096), bottleneck_widths=(), bottleneck_outer=0, runs=3,
                      sampled_neurons=512, gd_steps=1000, lr_factor=1.0, radius=2.0, tol=1e-4),
    },
    # Chapters 8–9 — Khatri–Rao products and moderate overparameterization (Oymak & Soltanolkotabi)
    "kr_identity": {
        # (A∗B)(A∗B)ᵀ = (AAᵀ)⊙(BBᵀ) and X^{∗r} Gram = (XXᵀ)^{⊙r}; σ_min by SVD vs Gram
        "ci": dict(shapes=((6, 3), (10, 4)), orders=(1, 2, 3)),
        "book": dict(shapes=((6, 3), (10, 4), (20, 5)), orders=(1, 2, 3)),
        "paper": dict(shapes=((6, 3), (10, 4), (20, 5), (40, 6)), orders=(1, 2, 3, 4)),
    },
    "kr_sphere": {
        # ‖X‖, σ_min(X∗X), κ(X) for data uniform on the sphere; n as fractions of D = d(d+1)/2 (and n = d)
        "ci": dict(ds=(8, 16), fractions=(0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.2), seeds=2),
        "book": dict(ds=(10, 20, 40), fractions=(0.02, 0.05, 0.1, 0.175, 0.25, 0.35, 0.5, 0.65, 0.8, 0.9, 1.0, 1.1),
                     seeds=3),
        "paper": dict(ds=(10, 20, 40, 60),
                      fractions=(0.02, 0.05, 0.1, 0.175, 0.25, 0.35, 0.5, 0.65, 0.8, 0.9, 1.0, 1.1), seeds=5),
    },
    "kr_degenerate": {
        # one nearly duplicated / nearly antipodal pair at angle arctan ε
        "ci": dict(n=20, d=10, epsilons=(1e-4, 1e-3, 1e-2, 1e-1)),
        "book": dict(n=40, d=16, epsilons=(1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)),
        "paper": dict(n=100, d=30, epsilons=(1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)),
    },
    "cov_routes": {
        # Σ(X), Σ̃(X): closed form / Hermite series vs 2-D Gauss–Hermite vs Monte Carlo
        "ci": dict(n=12, d=6, activations=("softplus", "relu", "tanh", "quadratic"), samples=20_000, degree=96),
        "book": dict(n=30, d=8, activations=("softplus", "relu", "tanh", "quadratic"), samples=200_000,
                     degree=96),
        "paper": dict(n=60, d=10, activations=("softplus", "relu", "tanh", "quadratic"), samples=2_000_000,
                      degree=128),
    },
    "hermite_table": {
        "ci": dict(r_max=8), "book": dict(r_max=12), "paper": dict(r_max=20),
    },
    "lemma_6_4": {
        # PSD margins of Eq. (6.4) and λ(X) ≥ μ²σ²_min(X∗X) on sphere data of each (n, d)
        "ci": dict(shapes=((20, 8), (40, 8)), activations=("softplus", "relu", "tanh", "quadratic"), degree=96),
        "book": dict(shapes=((30, 8), (60, 8), (40, 20), (150, 20)),
                     activations=("softplus", "relu", "tanh", "quadratic"), degree=96),
        "paper": dict(shapes=((30, 8), (60, 8), (40, 20), (150, 20), (300, 40), (800, 40)),
                      activations=("softplus", "relu", "tanh", "quadratic"), degree=96),
    },
    "hermite_bounds": {
        # Lemmas H.1/H.2: μ_r²σ²_min(X^{∗(r+1)}) for r = orders, across n at fixed d
        "ci": dict(d=5, ns=(3, 5, 10, 15, 20, 30, 50, 70, 100), orders=(0, 1, 2, 3, 4, 5), degree=96),
        "book": dict(d=5, ns=(3, 5, 8, 12, 15, 20, 30, 40, 55, 70, 90, 126, 160, 210), orders=(0, 1, 2, 3, 4, 5, 6, 7),
                     degree=96),
        "paper": dict(d=6, ns=(3, 6, 10, 15, 21, 30, 45, 56, 80, 126, 180, 252, 350, 462),
                      orders=(0, 1, 2, 3, 4, 5, 6, 7), degree=96),
    },
    "schur": {
        "ci": dict(n=8, pairs=20), "book": dict(n=20, pairs=200), "paper": dict(n=50, pairs=1000),
    },
    "jacobian_vs_k": {
        # Lemmas 6.6–6.7 at W₀ across widths (even k); the width k* of Lemma 6.7's condition is added
        "ci": dict(n=20, d=10, widths=(4, 64, 1024), seeds=2),
        "book": dict(n=40, d=20, widths=(4, 8, 16, 32, 64, 128, 256, 1024, 4096), seeds=3),
        "paper": dict(n=100, d=30, widths=(4, 8, 16, 32, 64, 128, 256, 1024, 4096, 16384), seeds=5),
    },
    "jacobian_lipschitz": {
        # Lemma 6.8 on random pairs W, W + tΔ
        "ci": dict(n=20, d=10, k=32, distances=(0.01, 0.1, 1.0, 10.0), seeds=2),
        "book": dict(n=40, d=20, k=128, distances=(0.001, 0.01, 0.1, 1.0, 10.0, 100.0), seeds=3),
        "paper": dict(n=100, d=30, k=512, distances=(0.001, 0.01, 0.1, 1.0, 10.0, 100.0), seeds=5),
    },
    "random_features": {
        # Theorem 3.2: λ_min(ΦΦᵀ) against ½k(λ̃(X) − 6B/n¹⁰⁰) across widths k
        "ci": dict(n=20, d=10, widths=(5, 80, 1280), seeds=2),
        "book": dict(n=40, d=20, widths=(10, 40, 160, 640, 2560, 10240, 40960), seeds=3),
        "paper": dict(n=100, d=30, widths=(25, 100, 400, 1600, 6400, 25600, 102400), seeds=5),
    },
    "gd_moderate": {
        # Theorems 2.1 (softplus) and 2.3 (ReLU) at the theorems' step sizes, one data set, several widths
        "ci": dict(n=20, d=10, widths=(10, 40, 160, 640), steps=2000, activations=("softplus", "relu")),
        "book": dict(n=40, d=20, widths=(10, 40, 160, 640, 2560), steps=12_000, activations=("softplus", "relu")),
        "paper": dict(n=100, d=30, widths=(20, 80, 320, 1280, 5120, 20480), steps=40_000,
                      activations=("softplus", "relu")),
    },
    "sgd_moderate": {
        # Theorem 2.6: SGD at its step size (ν = 8) and at the GD step of Corollary 2.2, `runs` index sequences
        "ci": dict(n=20, d=10, k=160, nu=8.0, runs=4, epochs=50, record_every_epoch=5),
        "book": dict(n=40, d=20, k=640, nu=8.0, runs=8, epochs=200, record_every_epoch=5),
        "paper": dict(n=100, d=30, k=2560, nu=8.0, runs=16, epochs=400, record_every_epoch=10),
    },
    "phase_transition": {
        # Figure 2: P(GD fits n random labels) over (k, d); η = 0.15 softplus / 0.1 ReLU; one piece per column
        "ci": dict(n_values=(20,), activations=("softplus", "relu"), ks=tuple(range(1, 11)), ds=tuple(range(1, 11)),
                   trials=3, max_iters=15_000, tol=2.5e-3, chunk=15_000),
        "book": dict(n_values=(50,), activations=("softplus", "relu"), ks=tuple(range(1, 17)),
                     ds=tuple(range(1, 17)), trials=5, max_iters=15_000, tol=2.5e-3, chunk=1000),
        "paper": dict(n_values=(100, 200), activations=("softplus", "relu"), ks=tuple(range(1, 26)),
                      ds=tuple(range(1, 26)), trials=10, max_iters=15_000, tol=2.5e-3, chunk=1000),
    },
}
"""experiment → scale → settings.  Every size the book uses, at the three scales, in one place."""


class Settings(Mapping):
    """Read-only sizes of one experiment at one scale; keys are also attributes."""

    def __init__(self, experiment: str, scale: str, values: dict[str, Any]):
        self._experiment, self._scale, self._values = experiment, scale, dict(values)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __getattr__(self, key: str) -> Any:
        if key.startswith("_"):
            raise AttributeError(key)
        try:
            return self._values[key]
        except KeyError:
            raise AttributeError(f"experiment {self._experiment!r} has no setting {key!r}; "
                                 f"it has {', '.join(self._values)}") from None

    @property
    def scale(self) -> str:
        return self._scale

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"Settings({self._experiment!r}, {self._scale!r}: {body})"


def resolve(scale: str | None = None) -> str:
    """The scale to use: ``scale`` if given, else ``$NTKBOOK_SCALE``, else ``"book"``.

    Raises:
        ValueError: for an unknown scale, listing the valid ones.
    """
    if scale is None:
        scale = os.environ.get("NTKBOOK_SCALE", DEFAULT_SCALE)
    return V.choice("scale", scale, SCALES)


def get(experiment: str, scale: str | None = None) -> Settings:
    """Sizes of ``experiment`` at ``scale`` (see :func:`resolve`)."""
    V.choice("experiment", experiment, TABLE)
    scale = resolve(scale)
    return Settings(experiment, scale, TABLE[experiment][scale])
