"""The reproduction runner: outputs, piece cache, resume after interruption, corrupted cache files."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass

import pytest

from ntkbook import records, reproduce, scales, sweep


class Interrupt(Exception):
    pass


@dataclass(frozen=True, kw_only=True)
class Toy(scales.ExperimentSettings):
    n: int
    offset: float


@pytest.fixture
def toy(monkeypatch):
    """A registered sweep reproduction whose pieces square numbers and count their calls."""
    monkeypatch.setitem(scales.TABLE, "toy", {s: Toy(n=5, offset=0.5) for s in scales.SCALES})
    calls = []
    state = {"fail_at": None}

    def compute(coords, settings, key):
        if coords["i"] == state["fail_at"]:
            raise Interrupt
        calls.append(coords["i"])
        return {"square": (coords["i"] + settings.offset) ** 2}

    def figure(table, settings):
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots()
        ax.plot(table["i"], table["square"])
        return fig

    r = reproduce.Reproduction(
        name="toy", experiment="toy", description="squares",
        sweep=sweep.Sweep(name="toy", pieces=lambda s: sweep.grid(i=range(s.n)), compute=compute,
                          columns={"square": "(i + offset)²"}),
        figure=figure,
        summary=lambda table, settings: {"total": float(table["square"].sum())},
    )
    monkeypatch.setitem(reproduce.REGISTRY, "toy", r)
    return calls, state


def test_outputs_and_keys(toy, tmp_path):
    calls, _ = toy
    result = reproduce.run("toy", "ci", tmp_path)
    on_disk = json.loads((tmp_path / "toy.json").read_text())
    assert on_disk == result
    for key in ("name", "scale", "settings", "seconds", "jax", "backend", "devices", "table", "summary"):
        assert key in on_disk
    assert on_disk["table"] == {"i": [0, 1, 2, 3, 4], "square": [0.25, 2.25, 6.25, 12.25, 20.25]}
    assert on_disk["summary"] == {"total": 41.25}
    assert on_disk["settings"] == {"n": 5, "offset": 0.5}
    assert (tmp_path / "toy.png").read_bytes()[:4] == b"\x89PNG" and calls == [0, 1, 2, 3, 4]
    assert not list(tmp_path.glob(".*.tmp")) and not list(tmp_path.glob(".toy*"))


def test_resume_after_interruption(toy, tmp_path):
    calls, state = toy
    state["fail_at"] = 3
    with pytest.raises(Interrupt):
        reproduce.run("toy", "ci", tmp_path)
    assert calls == [0, 1, 2] and not (tmp_path / "toy.json").exists()
    state["fail_at"] = None
    result = reproduce.run("toy", "ci", tmp_path)
    assert calls == [0, 1, 2, 3, 4]  # finished pieces were not recomputed
    assert result["cached_pieces"] == 3
    again = reproduce.run("toy", "ci", tmp_path)
    assert calls == [0, 1, 2, 3, 4] and again["cached_pieces"] == 5
    assert again["table"] == result["table"]


def test_shards_then_merge(toy, tmp_path):
    calls, _ = toy
    parts = [reproduce.run("toy", "ci", tmp_path, shard=(i, 2)) for i in range(2)]
    assert [p["pieces"] for p in parts] == [3, 2] and sorted(calls) == [0, 1, 2, 3, 4]
    assert not (tmp_path / "toy.json").exists()  # shards only fill the cache
    merged = reproduce.run("toy", "ci", tmp_path)
    assert merged["cached_pieces"] == 5 and len(calls) == 5 and (tmp_path / "toy.png").exists()
    with pytest.raises(ValueError, match="shard needs out"):
        reproduce.run("toy", "ci", shard=(0, 2))


_BOOKKEEPING = ("seconds", "compute_seconds", "cached_pieces")


def test_legacy_shards_then_merge_equal_one_run(tmp_path, monkeypatch):
    """A legacy reproduction (pieces/compute/assemble) at ci scale: shards 0/2 and 1/2 fill the piece cache,
    a call without a shard merges them, and every number of the JSON equals that of one unsharded run.  A toy
    (squares of its pieces), so that the test does not depend on which reproductions are still legacy."""
    name = "toy-legacy"
    monkeypatch.setitem(scales.TABLE, "toy", {s: Toy(n=5, offset=0.5) for s in scales.SCALES})

    def plot(result, path):
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots()
        ax.plot(result["squares"])
        fig.savefig(path)
        plt.close(fig)

    monkeypatch.setitem(reproduce.REGISTRY, name, reproduce.Reproduction(
        name=name, experiment="toy", description="squares, legacy form",
        pieces=lambda s: [{"i": i} for i in range(s.n)],
        compute=lambda piece, s: {"square": (piece["i"] + s.offset) ** 2},
        assemble=lambda s, pieces, results: {"squares": [r["square"] for r in results]}, plot=plot))
    whole = reproduce.run(name, "ci", tmp_path / "whole", plot=False)
    assert whole["squares"] == [0.25, 2.25, 6.25, 12.25, 20.25]
    sharded = tmp_path / "sharded"
    parts = [reproduce.run(name, "ci", sharded, shard=(i, 2)) for i in range(2)]
    assert [p["pieces"] for p in parts] == [(whole["pieces"] + 1) // 2, whole["pieces"] // 2]
    assert [p["cached_pieces"] for p in parts] == [0, 0] and [p["shard"] for p in parts] == [[0, 2], [1, 2]]
    assert all(p["jax"] == whole["jax"] for p in parts)
    assert not (sharded / f"{name}.json").exists() and not (sharded / f"{name}.png").exists()
    merged = reproduce.run(name, "ci", sharded)
    assert merged["cached_pieces"] == merged["pieces"] == whole["pieces"] and (sharded / f"{name}.png").exists()
    assert json.loads((sharded / f"{name}.json").read_text()) == merged
    strip = {k: v for k, v in whole.items() if k not in _BOOKKEEPING}
    assert {k: v for k, v in merged.items() if k not in _BOOKKEEPING} == strip
    with pytest.raises(ValueError, match="shard must be"):
        reproduce.run(name, "ci", sharded, shard=(2, 2))


def test_settings_change_uses_a_new_cache(toy, tmp_path, monkeypatch):
    calls, _ = toy
    reproduce.run("toy", "ci", tmp_path)
    monkeypatch.setitem(scales.TABLE["toy"], "ci", Toy(n=5, offset=1.5))
    result = reproduce.run("toy", "ci", tmp_path)
    assert len(calls) == 10 and result["table"]["square"][0] == 2.25


def test_no_output_directory_writes_nothing(toy, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = reproduce.run("toy", "book")
    assert result["scale"] == "book" and not list(tmp_path.iterdir())


def test_unknown_names_and_scales(toy):
    with pytest.raises(ValueError, match=r"unknown name 'nope'.*'toy'"):
        reproduce.run("nope", "ci")
    with pytest.raises(ValueError, match="unknown scale 'huge'"):
        reproduce.run("toy", "huge")


def test_command_line_list_and_errors():
    out = subprocess.run([sys.executable, "-m", "ntkbook", "list"], capture_output=True, text=True, check=True)
    assert "one-hidden-layer" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "ntkbook", "reproduce", "one-hidden-layer", "--scale", "huge"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "expected one of 'ci', 'book', 'paper'" in bad.stderr


# `python -m ntkbook reproduce one-hidden-layer --scale ci` (the command line's own entry point) with the ci
# sweep cut to two small widths, three seeds and one input: six real pieces (width, seed), in that order.
# The first new width compiles the solver, so the run pauses there between pieces 3 and 4, where the test
# kills it; the resumed numbers are compared with an uninterrupted run.
_TINY_CLI = textwrap.dedent("""
    import sys
    from ntkbook import cli, scales
    ci = scales.TABLE["one_hidden_layer"]["ci"]
    scales.TABLE["one_hidden_layer"]["ci"] = ci.replace(widths=(8, 16), seeds=3, inputs=(1.0,))
    sys.exit(cli.main(sys.argv[1:]))
""")


def test_killed_command_resumes_without_recomputing(tmp_path):
    """Kill the reproduction command mid-run; the rerun reuses every finished piece, and the result
    is identical to an uninterrupted run."""
    import os
    import signal
    import time

    env = os.environ | {"NTKBOOK_PROGRESS": "0"}
    cmd = [sys.executable, "-c", _TINY_CLI, "reproduce", "one-hidden-layer", "--scale", "ci"]
    out = tmp_path / "interrupted"
    proc = subprocess.Popen([*cmd, "--out", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    cache = out / ".cache" / "one-hidden-layer"
    while time.time() < deadline and len(list(cache.glob("*/*.json"))) < 3:
        assert proc.poll() is None, "the run finished before it could be interrupted"
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    finished = {p: p.stat().st_mtime_ns for p in cache.glob("*/*.json")}
    assert 3 <= len(finished) < 6 and not (out / "one-hidden-layer.json").exists()
    for p in finished:  # a kill during a write can leave a stray .tmp file, never a partial piece
        record = json.loads(p.read_text())
        assert record["sha256"] == records.digest(record["columns"])  # the sweep engine's piece-cache format

    subprocess.run([*cmd, "--out", str(out)], env=env, check=True, capture_output=True)
    resumed = json.loads((out / "one-hidden-layer.json").read_text())
    assert resumed["pieces"] == 6 and resumed["cached_pieces"] == len(finished)
    assert all(p.stat().st_mtime_ns == t for p, t in finished.items()), "finished pieces were rewritten"

    fresh = tmp_path / "fresh"
    subprocess.run([*cmd, "--out", str(fresh)], env=env, check=True, capture_output=True)
    uninterrupted = json.loads((fresh / "one-hidden-layer.json").read_text())
    assert uninterrupted["cached_pieces"] == 0
    assert resumed["rows"] == uninterrupted["rows"] and resumed["slopes"] == uninterrupted["slopes"]
