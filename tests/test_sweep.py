"""The sweep engine: keys from coordinates, tidy tables, the piece cache, resume, shards."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

import jax
import numpy as np
import pandas as pd
import pytest

from ntkbook import scales, sweep


@dataclass(frozen=True, kw_only=True)
class Toy(scales.ExperimentSettings):
    widths: tuple[int, ...]
    seeds: int
    offset: float


SETTINGS = Toy(widths=(3, 5), seeds=2, offset=0.5)


def _make(calls: list | None = None, version: str = "1") -> sweep.Sweep:
    def compute(coords, settings, key):
        if calls is not None:
            calls.append(dict(coords))
        draws = jax.random.normal(key, (coords["width"],))
        return {"index": list(range(coords["width"])), "draw": draws, "mean": float(draws.mean()) + settings.offset,
                "flag": np.nan if coords["seed"] == 0 else 1.0}

    return sweep.Sweep(name="toy", pieces=lambda s: sweep.grid(width=s.widths, seed=range(s.seeds)), compute=compute,
                       columns={"index": "row index", "draw": "N(0, 1) draw", "mean": "mean draw + offset",
                                "flag": "NaN for seed 0"}, version=version)


def test_grid_is_a_product_in_order():
    assert sweep.grid(a=(1, 2), b=("x", "y")) == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2, "b": "x"},
                                                  {"a": 2, "b": "y"}]
    assert sweep.grid(m=np.array([4, 8])) == [{"m": 4}, {"m": 8}]
    assert type(sweep.grid(m=np.array([4]))[0]["m"]) is int


def test_piece_key_depends_on_coordinates_only():
    a = sweep.piece_key("toy", {"width": 3, "seed": 1})
    b = sweep.piece_key("toy", {"seed": 1, "width": 3})  # order of the coordinates does not matter
    assert np.array_equal(jax.random.key_data(a), jax.random.key_data(b))
    others = [sweep.piece_key("toy", {"width": 3, "seed": 2}), sweep.piece_key("other", {"width": 3, "seed": 1})]
    for o in others:
        assert not np.array_equal(jax.random.key_data(a), jax.random.key_data(o))
    # and the same key in a fresh process
    code = ("import jax, json; from ntkbook.sweep import piece_key; "
            "print(json.dumps(jax.random.key_data(piece_key('toy', {'width': 3, 'seed': 1})).tolist()))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert json.loads(out) == jax.random.key_data(a).tolist()


def test_run_returns_a_tidy_table():
    table = sweep.run(_make(), SETTINGS, show_progress=False)
    assert list(table.columns) == ["width", "seed", "index", "draw", "mean", "flag"]
    assert len(table) == 2 * 3 + 2 * 5
    assert table.attrs["pieces"] == 4 and table.attrs["cached_pieces"] == 0
    one = table[(table.width == 5) & (table.seed == 1)]
    key = sweep.piece_key("toy", {"width": 5, "seed": 1})
    np.testing.assert_array_equal(one["draw"].to_numpy(), np.asarray(jax.random.normal(key, (5,))).astype(float))
    assert table["flag"][table.seed == 0].isna().all()


def test_a_piece_alone_equals_the_piece_in_the_sweep():
    full = sweep.run(_make(), SETTINGS, show_progress=False)
    alone = sweep.run(_make(), SETTINGS.replace(widths=(5,), seeds=2), show_progress=False)
    pd.testing.assert_frame_equal(full[full.width == 5].reset_index(drop=True), alone)


def test_cache_resume_and_identical_numbers(tmp_path):
    calls: list = []
    first = sweep.run(_make(calls), SETTINGS, cache=tmp_path, show_progress=False)
    assert len(calls) == 4
    again = sweep.run(_make(calls), SETTINGS, cache=tmp_path, show_progress=False)
    assert len(calls) == 4 and again.attrs["cached_pieces"] == 4
    pd.testing.assert_frame_equal(first, again)  # NaN, float32 draws and ints survive the cache exactly
    sweep.run(_make(calls), SETTINGS, cache=tmp_path, resume=False, show_progress=False)
    assert len(calls) == 8


def test_only_cached_reads_an_archive_and_computes_nothing(tmp_path):
    calls: list = []
    sweep.run(_make(calls), SETTINGS, cache=tmp_path, shard=(0, 2), show_progress=False)
    assert len(calls) == 2
    part = sweep.run(_make(calls), SETTINGS, cache=tmp_path, only_cached=True, show_progress=False)
    assert len(calls) == 2 and part.attrs["pieces"] == part.attrs["cached_pieces"] == 2
    whole = sweep.run(_make(), SETTINGS, show_progress=False)
    pd.testing.assert_frame_equal(part, whole[whole.seed == 0].reset_index(drop=True))
    with pytest.raises(ValueError, match="cache"):
        sweep.run(_make(), SETTINGS, only_cached=True)


def test_changed_settings_or_version_never_reuse_a_piece(tmp_path):
    calls: list = []
    sweep.run(_make(calls), SETTINGS, cache=tmp_path, show_progress=False)
    sweep.run(_make(calls), SETTINGS.replace(offset=1.5), cache=tmp_path, show_progress=False)
    sweep.run(_make(calls, version="2"), SETTINGS, cache=tmp_path, show_progress=False)
    assert len(calls) == 12


def test_corrupted_piece_is_recomputed(tmp_path):
    calls: list = []
    sweep.run(_make(calls), SETTINGS, cache=tmp_path, show_progress=False)
    files = sorted(tmp_path.glob("toy/*/*.json"))
    assert len(files) == 4
    record = json.loads(files[0].read_text())
    record["columns"]["mean"][0] += 1.0  # the checksum no longer matches
    files[0].write_text(json.dumps(record))
    files[1].write_text("{ not json")
    with pytest.warns(UserWarning, match="corrupted cache file"):
        table = sweep.run(_make(calls), SETTINGS, cache=tmp_path, show_progress=False)
    assert len(calls) == 6 and table.attrs["cached_pieces"] == 2
    pd.testing.assert_frame_equal(table, sweep.run(_make(), SETTINGS, show_progress=False))


def test_shards_meet_in_the_cache(tmp_path):
    calls: list = []
    parts = [sweep.run(_make(calls), SETTINGS, cache=tmp_path, shard=(i, 3), show_progress=False) for i in range(3)]
    assert sorted(p.attrs["pieces"] for p in parts) == [1, 1, 2] and len(calls) == 4
    merged = sweep.run(_make(calls), SETTINGS, cache=tmp_path, show_progress=False)
    assert len(calls) == 4 and merged.attrs["cached_pieces"] == 4
    pd.testing.assert_frame_equal(merged, sweep.run(_make(), SETTINGS, show_progress=False))
    assert sweep.parse_shard("2/5") == (2, 5)
    for bad in ("5/5", "a/b", "1", "-1/3"):
        with pytest.raises(ValueError, match="shard"):
            sweep.parse_shard(bad)


def test_bad_sweeps_are_errors():
    with pytest.raises(TypeError, match="settings must be the typed settings"):
        sweep.run(_make(), {"widths": (3,)})
    dup = sweep.Sweep(name="toy", pieces=lambda s: [{"width": 3, "seed": 0}] * 2, compute=lambda c, s, k: {"x": 1})
    with pytest.raises(ValueError, match="appears twice"):
        sweep.run(dup, SETTINGS, show_progress=False)
    wrong = sweep.Sweep(name="toy", pieces=lambda s: [{"width": 3}], compute=lambda c, s, k: {"y": [1, 2]},
                        columns={"x": "declared"})
    with pytest.raises(ValueError, match="missing"):
        sweep.run(wrong, SETTINGS, show_progress=False)
    liar = sweep.Sweep(name="toy", pieces=lambda s: [{"width": 3}], compute=lambda c, s, k: {"width": [4]})
    with pytest.raises(ValueError, match="disagrees"):
        sweep.run(liar, SETTINGS, show_progress=False)
    ragged = sweep.Sweep(name="toy", pieces=lambda s: [{"width": 3}], compute=lambda c, s, k: {"a": [1], "b": [1, 2]})
    with pytest.raises(ValueError, match="different lengths"):
        sweep.run(ragged, SETTINGS, show_progress=False)


def _draw(key, width):
    """A piece of the function form: one normal draw shifted by the width, and three sub-items."""
    return {"a": jax.random.normal(key, ()) + width, "b": jax.numpy.arange(3.0) * width}


def _scalar_draw(key, width):
    return {"a": jax.random.normal(key, ()) * width}


def test_function_form_keys_come_from_coordinates():
    full = sweep.run(_draw, width=(1, 2), seed=range(3), show_progress=False)
    assert list(full.columns) == ["width", "seed", "a", "b"]
    assert len(full) == 2 * 3 * 3  # three sub-items per piece
    alone = sweep.run(_draw, width=(2,), seed=(1,), show_progress=False)
    row = full[(full.width == 2) & (full.seed == 1)].reset_index(drop=True)
    pd.testing.assert_frame_equal(alone, row, check_dtype=False)
    # the key of a piece is piece_key(function name, coordinates); the seed is not passed to the function
    expected = float(jax.random.normal(sweep.piece_key("_draw", {"width": 2, "seed": 1}), ()) + 2)
    assert float(alone.a[0]) == expected


def test_function_form_jit_and_vmap_give_the_same_numbers():
    plain = sweep.run(_scalar_draw, width=(1, 3), seed=range(4), show_progress=False)
    jitted = sweep.run(_scalar_draw, width=(1, 3), seed=range(4), jit=True, show_progress=False)
    vmapped = sweep.run(_scalar_draw, width=(1, 3), seed=range(4), vmap_seeds=True, show_progress=False)
    np.testing.assert_allclose(jitted.a, plain.a, rtol=1e-6)
    np.testing.assert_allclose(vmapped.a, plain.a, rtol=1e-6)
    assert vmapped.seed.tolist() == [0, 1, 2, 3, 0, 1, 2, 3]


def test_function_form_cache_resumes_and_keys_on_source(tmp_path):
    calls = []

    def counted(key, width):
        calls.append(width)
        return {"a": float(width)}

    first = sweep.run(counted, width=(1, 2), seed=range(2), cache=tmp_path, show_progress=False, settings={"n": 1})
    again = sweep.run(counted, width=(1, 2), seed=range(2), cache=tmp_path, show_progress=False, settings={"n": 1})
    assert len(calls) == 4 and again.attrs["cached_pieces"] == 4
    pd.testing.assert_frame_equal(first, again)
    sweep.run(counted, width=(1, 2), seed=range(2), cache=tmp_path, show_progress=False, settings={"n": 2})
    assert len(calls) == 8  # other settings: another cache directory


def test_function_form_bad_input():
    with pytest.raises(ValueError, match="grid"):
        sweep.run(_draw)
    with pytest.raises(ValueError, match="seed"):
        sweep.run(_draw, width=(1,), vmap_seeds=True)
    with pytest.raises(ValueError, match="name"):
        sweep.run(lambda key, width: {"a": 1.0}, width=(1,))
    with pytest.raises(TypeError, match="function or a Sweep"):
        sweep.run(3, width=(1,))
    with pytest.raises(ValueError, match="appears twice"):
        sweep.run(_draw, width=(1, 1), show_progress=False)


def _paired(key, width, treatment):
    return {"a": jax.random.normal(key, ()) * (1.0 if treatment == "x" else 2.0)}


def test_same_key_across_pairs_the_draws():
    rows = sweep.run(_paired, width=(1, 2), treatment=("x", "y"), seed=range(3), same_key_across=("treatment",),
                     show_progress=False)
    x, y = rows[rows.treatment == "x"].a.to_numpy(), rows[rows.treatment == "y"].a.to_numpy()
    np.testing.assert_allclose(y, 2 * x, rtol=1e-6)  # the same draw, treated twice
    assert len(set(np.round(x, 6))) == 6  # widths and seeds still differ
    with pytest.raises(ValueError, match="same_key_across"):
        sweep.run(_paired, width=(1,), treatment=("x",), seed=(0,), same_key_across=("seed",))
