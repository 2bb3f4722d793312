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


def test_summarize_geometric_means():
    sweep = {"width": np.array([1, 1, 2, 2]), "a": np.array([1.0, 4.0, 2.0, 8.0])}
    out = tables.summarize(sweep, "width", ("a",))
    np.testing.assert_allclose(out["a"], [2.0, 4.0])
    out = tables.summarize(sweep, "width", ("a",), where=sweep["a"] < 5)
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
