"""nb.tables.show: numbers formatted to their significance, units, aligned text, HTML."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ntkbook import tables


@pytest.mark.parametrize(("value", "text"), [
    (4096, "4,096"),
    (np.int64(1234567), "1,234,567"),
    (0.30861234, "0.3086"),
    (0.0524412, "0.05244"),
    (12.3456, "12.35"),
    (1234.56, "1,235"),
    (123456.7, "123,457"),
    (9.99996, "10.00"),           # rounding carries into a new digit: still four significant digits
    (0.0099996, "0.01000"),
    (1.2e-5, "1.200e-05"),
    (-3.25e7, "-3.250e+07"),
    (1.0, "1.000"),
    (0.0, "0"),
    (math.nan, "–"),
    (math.inf, "∞"),
    (-math.inf, "−∞"),
    (True, "yes"),
])
def test_format_number(value, text):
    assert tables.format_number(value) == text


def test_format_number_digits_and_html():
    assert tables.format_number(0.30861234, 2) == "0.31"
    assert tables.format_number(1.2e-5, html_output=True) == "1.200×10<sup>−5</sup>"
    with pytest.raises(TypeError, match="not a number"):
        tables.format_number("x")


def test_plain_text_is_aligned_with_units_and_caption():
    t = tables.show({"m": np.array([64.0, 1024.0, 16384.0]), "‖H‖": [0.30861234, 0.0524412, 1.2e-5],
                     "activation": ["tanh", "relu", "softplus"], "time": [1.5, 22.25, 0.125]},
                    caption="Demo table.", units={"time": "s"})
    lines = repr(t).splitlines()
    assert lines[0] == "Demo table."
    assert lines[1].split() == ["m", "‖H‖", "activation", "time", "(s)"]
    assert set(lines[2]) <= {"-", " "}
    body = lines[3:]
    assert [row.split()[0] for row in body] == ["64", "1,024", "16,384"]  # integral floats as integers
    width = len(lines[2])
    assert all(len(row) <= width for row in body)
    # numbers are right-aligned: their last characters line up
    ends = {row.index(cell) + len(cell) for row, cell in zip(body, ["0.3086", "0.05244", "1.200e-05"], strict=True)}
    assert len(ends) == 1
    # no two numbers run together
    assert "0.30860.5244" not in repr(t)


def test_html_table():
    t = tables.show([{"m": 64, "ratio": 0.5, "name": "a<b"}, {"m": 128, "ratio": 1.25e-7, "name": "c"}],
                    caption="Caption & more")
    html = t._repr_html_()
    assert html.startswith('<div class="ntkbook-table-wrap"><table class="ntkbook-table">')
    assert "<caption>Caption &amp; more</caption>" in html
    assert '<td class="num">1.250×10<sup>−7</sup></td>' in html
    assert '<td class="text">a&lt;b</td>' in html and '<th class="num">m</th>' in html


def test_show_accepts_frames_dicts_and_rows():
    frame = pd.DataFrame({"a": [1, 2]}, index=pd.Index(["x", "y"], name="key"))
    assert repr(tables.show(frame)).splitlines()[0].split() == ["key", "a"]  # a named index is shown
    assert repr(tables.show(pd.DataFrame({"a": [1, 2]}))).splitlines()[0].split() == ["a"]
    assert tables.show({"a": np.arange(3)}).frame["a"].tolist() == [0, 1, 2]
    assert repr(tables.show({"v": [[1.0, 2.5]]})).splitlines()[-1].strip() == "[1.000, 2.500]"
    with pytest.raises(ValueError, match="equal lengths"):
        tables.show({"a": [1, 2], "b": [1]})
    with pytest.raises(ValueError, match="units names columns"):
        tables.show({"a": [1]}, units={"b": "s"})
    with pytest.raises(TypeError, match="list of row dicts"):
        tables.show([1, 2])
    with pytest.raises(ValueError, match="digits"):
        tables.show({"a": [1.5]}, digits=0)


def test_digits_per_column():
    t = tables.show({"a": [0.123456], "b": [0.123456]}, digits={"a": 2})
    assert repr(t).splitlines()[-1].split() == ["0.12", "0.1235"]


def test_a_count_among_ratios_stays_an_integer():
    t = tables.show({"statistic": ["samples", "worst ratio", "exact"], "value": [8, 0.5, 1.0]})
    assert [line.split()[-1] for line in repr(t).splitlines()[2:]] == ["8", "0.5000", "1.000"]


def test_geometric_means():
    sweep = {"width": np.array([1, 1, 2, 2]), "a": np.array([1.0, 4.0, 2.0, 8.0])}
    out = tables.geometric_means(sweep, "width", ("a",))
    np.testing.assert_allclose(out["a"], [2.0, 4.0])
    out = tables.geometric_means(sweep, "width", ("a",), where=sweep["a"] < 5)
    np.testing.assert_allclose(out["a"], [2.0, 2.0])


def test_settings_side_by_side():
    from ntkbook import scales
    a, b = scales.get("nonlinear_output", "ci"), scales.get("bottleneck", "ci")
    frame = tables.settings({"Figure 1": a, "Figure 2": b}).frame
    keys = list(dict.fromkeys([*a.as_dict(), *b.as_dict()]))
    assert list(frame["setting"]) == keys
    row = dict(zip(frame["setting"], frame["Figure 2"], strict=True))
    assert row["widths"] == "—" and row["width"] == str(b.width)
    assert dict(zip(frame["setting"], frame["Figure 1"], strict=True))["widths"] == ", ".join(map(str, a.widths))
    with pytest.raises(TypeError, match="columns"):
        tables.settings({"x": {"a": 1}})
    with pytest.raises(TypeError, match="columns"):
        tables.settings({})


def test_quantities_two_columns_in_order():
    t = tables.quantities({"max_error": 1e-15, "samples": 12}, caption="c")
    assert list(t.frame.columns) == ["quantity", "value"]
    assert list(t.frame["quantity"]) == ["max_error", "samples"]
    assert t.caption == "c"
    with pytest.raises(TypeError, match="mapping"):
        tables.quantities([1.0])
    with pytest.raises(ValueError, match="at least one"):
        tables.quantities({})


def test_fit_cells_and_order_fit_against_an_exact_power_law():
    from ntkbook.fitting import ORDER_WINDOWS

    x = np.repeat([16.0, 64.0, 256.0], 2)
    y = 3.0 * x**-0.5 * np.tile([1.0, 1.01], 3)
    # independent reference: the least-squares slope of log y on log x in closed form
    lx, ly = np.log(x), np.log(y)
    slope = np.sum((lx - lx.mean()) * (ly - ly.mean())) / np.sum((lx - lx.mean()) ** 2)
    cells = tables.fit_cells(x, y)
    assert list(cells) == ["fitted exponent", "95% CI"]
    assert cells["fitted exponent"] == pytest.approx(slope, rel=1e-12)
    assert slope == pytest.approx(-0.5, abs=1e-12)
    low, high = (float(v) for v in cells["95% CI"].strip("[]").split(", "))
    assert low < -0.5 < high
    row = tables.order_fit(x, y, "decay")
    assert list(row) == ["predicted exponent", "window", "fitted exponent", "95% CI"]
    win = ORDER_WINDOWS["decay"]
    assert row["predicted exponent"] == win.predicted
    # windows are half-open [low, high): the text says so
    assert row["window"] == "[-2, -0.25)"
    assert tables.order_fit(x, y, "constant")["window"] == "[-0.25, 0.25)"
    assert row["fitted exponent"] == cells["fitted exponent"] and row["95% CI"] == cells["95% CI"]
    with pytest.raises(ValueError, match="expect"):
        tables.order_fit(x, y, "growth")
    with pytest.raises(TypeError, match="expect"):
        tables.order_fit(x, y, 0)
    with pytest.raises(ValueError, match="same number"):
        tables.fit_cells(x, y[:3])


def test_summarize_one_row_per_coordinate():
    import pandas as pd

    rows = pd.DataFrame({"width": [8, 8, 8, 32, 32, 32], "seed": [0, 1, 2] * 2, "d": [1.0, 2.0, 4.0, 3.0, 3.0, 3.0],
                         "e": [-1.0, 0.0, 1.0, 5.0, 6.0, 7.0], "ok": [True] * 6})
    t = tables.summarize(rows, "width", {"width": "m", "d": "‖w − w₀‖"}, stat="gmean", spread=True)
    assert list(t.frame.columns) == ["m", "‖w − w₀‖"]
    assert t.frame["m"].tolist() == [8, 32]
    assert t.frame["‖w − w₀‖"].tolist() == ["2.000 (1.000–4.000)", "3.000 (3.000–3.000)"]  # (1·2·4)^(1/3) = 2
    assert t.caption.startswith("Geometric means over 3 runs per row, smallest–largest in brackets.")
    plain = tables.summarize(rows, "width", caption="Two widths.")
    assert list(plain.frame.columns) == ["width", "d", "e"]  # numeric columns, not the seed or booleans
    assert plain.frame["e"].tolist() == [0.0, 6.0] and plain.caption == "Means over 3 runs per row. Two widths."
    t2 = tables.summarize(rows, "width", ["e"], stat="max", transpose=True)
    assert list(t2.frame.columns) == ["quantity", "width = 8", "width = 32"]
    assert t2.frame.iloc[0].tolist() == ["e", 1.0, 7.0]
    with pytest.raises(ValueError, match="values <= 0"):
        tables.summarize(rows, "width", ["e"], stat="gmean")
    with pytest.raises(ValueError, match="no column 'nope'"):
        tables.summarize(rows, "width", ["nope"])
    with pytest.raises(ValueError, match="unknown stat"):
        tables.summarize(rows, "width", stat="mode")
