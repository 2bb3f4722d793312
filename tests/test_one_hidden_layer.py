"""Chapter 2's one-hidden-layer helpers: the pieces of Eq. (12)–(15) against their closed forms, and the
tables the chapter shows (inputs checked)."""

import math

import jax
import pytest

from ntkbook.experiments import one_hidden_layer as ohl


def test_eq12_pieces_against_closed_forms_and_table():
    width, x = 6, 1.3
    pieces = ohl.eq12_pieces(jax.random.key(4), width=width, x=x)
    # Eq. (13): the tensor is diagonal, so its (2,2,1)-norm is max_k |σ''(w_k x)| x² (float32 network)
    assert pieces["t221"] == pytest.approx(pieces["t221_closed"], rel=1e-5)
    # Eq. (15): ∂f/∂α = v/√m with output weights v_k = ±1, so ‖∂f/∂α‖∞ = 1/√m; Eq. (12) bounds ‖H‖
    assert pieces["dfdalpha_inf"] == pytest.approx(1 / math.sqrt(width), rel=1e-6)
    assert pieces["hessian"] <= pieces["bound"] * (1 + 1e-6)
    frame = ohl.eq12_table(pieces, width=width, x=x).frame
    assert list(frame["quantity"]) == list(ohl.EQ12_NAMES.values())
    with pytest.raises(ValueError, match="bound"):
        ohl.eq12_table({k: v for k, v in pieces.items() if k != "bound"}, width=width, x=x)
    with pytest.raises(TypeError, match="width"):
        ohl.eq12_table(pieces, width=6.0, x=x)


def test_hessian_check_table_names_the_run():
    check = ohl.hessian_against_closed_form(jax.random.key(3), width=8, x=1.3)
    assert check["max_diagonal_error"] < 1e-12 and check["max_off_diagonal"] < 1e-12
    table = ohl.hessian_check_table(check, width=8, x=1.3)
    assert "m = 8, x = 1.3" in table.caption
    with pytest.raises(TypeError, match="mapping"):
        ohl.hessian_check_table([1.0], width=8, x=1.3)


def test_law_of_the_largest_curvature_against_sampled_networks():
    """The exact moments of log max_i |σ''(w_i x)| (which fix the Eq. 9 rate window) against 20 000 sampled
    networks per (m, x): sample mean and sample variance each within 5 of their standard errors
    (√(var/n) and √((μ₄ − var²)/n), μ₄ the sample fourth central moment)."""
    import numpy as np

    from ntkbook.activations import get_activation

    act, rng, n = get_activation("tanh"), np.random.default_rng(0), 20_000
    for m in (10, 100):
        for x in (0.5, 2.0):
            mean, var = ohl.max_curvature_log_moments([m], x)
            sample = np.log(np.abs(act.numpy(rng.standard_normal((n, m)) * x, 2)).max(axis=1))
            assert abs(sample.mean() - mean[0]) <= 5 * math.sqrt(var[0] / n), (m, x)
            mu4 = np.mean((sample - sample.mean()) ** 4)
            assert abs(sample.var() - var[0]) <= 5 * math.sqrt((mu4 - sample.var() ** 2) / n), (m, x)


def test_expected_slope_of_an_exact_power_law_and_the_window():
    import numpy as np

    from ntkbook import fitting

    widths = np.repeat([10, 30, 100, 1000], 3)
    assert fitting.expected_slope(widths, -0.7 * np.log(widths) + 2.0) == pytest.approx(-0.7, abs=1e-12)
    win = ohl.hessian_slope_window(widths, 1.0)
    low, high = win.window
    # M_m grows towards β_σ with m, so the mean slope lies above −1/2; the window is the mean ± 4 sd plus
    # Σ|c_i|·(−log(1 − 1e-3)) for the Lanczos values
    c = fitting.slope_weights(widths)
    assert -0.5 < win.predicted < -0.45
    assert high - win.predicted == pytest.approx(win.predicted - low)
    assert high - win.predicted == pytest.approx(4 * win.sd - np.sum(np.abs(c)) * np.log1p(-1e-3), rel=1e-12)
    with pytest.raises(ValueError, match="var_log_y"):
        fitting.slope_law_window(widths, np.zeros(widths.size), -np.ones(widths.size), law="none")
