"""The scales table and scale resolution (the claims are tested in test_claims.py)."""

import pytest

from ntkbook import scales


def test_scales_table_is_complete():
    for experiment, by_scale in scales.TABLE.items():
        assert set(by_scale) == set(scales.SCALES), experiment
        types = {type(v) for v in by_scale.values()}
        assert len(types) == 1 and issubclass(types.pop(), scales.ExperimentSettings), experiment


def test_scale_resolution(monkeypatch):
    monkeypatch.delenv("NTKBOOK_SCALE", raising=False)
    assert scales.resolve() == "book"
    monkeypatch.setenv("NTKBOOK_SCALE", "ci")
    assert scales.resolve() == "ci"
    assert scales.get("one_hidden_layer") is scales.TABLE["one_hidden_layer"]["ci"]
    monkeypatch.setenv("NTKBOOK_SCALE", "tiny")
    with pytest.raises(ValueError, match="unknown scale 'tiny'; expected one of 'ci', 'book', 'paper'"):
        scales.resolve()
    s = scales.get("one_hidden_layer", "book")
    assert s.as_dict() == {"widths": (10, 30, 100, 300, 1000, 3000, 10_000, 30_000, 100_000),
                           "inputs": (0.5, 1.0, 2.0), "seeds": 5, "tol": 1e-4}
    with pytest.raises(AttributeError, match="nope"):
        _ = s.nope
    with pytest.raises(TypeError, match="nope"):  # a misspelled field is an error, never ignored
        s.replace(nope=1)
    with pytest.raises(TypeError, match=r"OneHiddenLayer\.seeds must be an int"):
        s.replace(seeds=2.5)
    with pytest.raises(TypeError, match=r"OneHiddenLayer.widths\[1\] must be an int"):
        s.replace(widths=(8, "6", 10))
    assert s.replace(widths=[1, 2, 3]).widths == (1, 2, 3)
    with pytest.raises(ValueError, match="unknown experiment"):
        scales.get("nope", "ci")


def test_sizes_declared_in_a_chapter():
    sizes = scales.pick("ci", ci=dict(widths=(32, 64), seeds=3, lr=1), book=dict(widths=[64, 128], seeds=5, lr=1.5),
                        paper=dict(widths=range(1, 4), seeds=10, lr=2.0))
    assert sizes.scale == "ci" and sizes.widths == (32, 64) and sizes.seeds == 3
    assert sizes.lr == 1.0 and isinstance(sizes.lr, float)  # an int widens where another scale gives a float
    assert sizes.as_dict() == {"widths": (32, 64), "seeds": 3, "lr": 1.0}
    assert "seeds = 3" in repr(sizes) and "<code>32, 64</code>" in sizes._repr_html_()
    with pytest.raises(AttributeError, match="no field 'nope'; fields: widths, seeds, lr"):
        _ = sizes.nope
    with pytest.raises(AttributeError, match="frozen"):
        sizes.seeds = 4
    with pytest.raises(TypeError, match="no field 'nope'"):
        sizes.replace(nope=1)
    assert sizes.replace(seeds=4).seeds == 4
    with pytest.raises(TypeError, match=r"sizes.seeds \(scale 'ci'\) must be an int"):
        sizes.replace(seeds=2.5)
    with pytest.raises(ValueError, match=r"book lacks \['seeds'\]"):
        scales.pick("ci", ci=dict(seeds=1), book=dict(seed=1), paper=dict(seeds=1))
    with pytest.raises(TypeError, match="different types"):
        scales.pick("ci", ci=dict(act="tanh"), book=dict(act=1), paper=dict(act="relu"))
    with pytest.raises(ValueError, match="unknown scale"):
        scales.pick("tiny", ci={}, book={}, paper={})
    shapes = scales.pick("ci", ci=dict(shapes=((6, 3), (10, 4))), book=dict(shapes=((6, 3),)),
                         paper=dict(shapes=((6, 3),)))
    assert shapes.shapes == ((6, 3), (10, 4)) and "shapes = (6, 3), (10, 4)" in repr(shapes)  # pairs stay pairs
