"""One-off: the archived pieces of ``nonlinear-output`` and ``bottleneck`` (written by the legacy runner of
``ntkbook.reproduce``, one result dict per piece) rewritten in the layout of the sweep engine that computes
them now (``ntkbook.sweep``: one row per run and kernel), number for number, so that ``python -m ntkbook
reproduce NAME --scale paper --out results/paper`` resumes from them and chapter 6 reads them.

Usage: ``python results/paper/convert_legacy_cache.py LEGACY_CACHE NEW_CACHE [SCALE]`` (default scale
``paper``); checked on the ``ci`` scale by converting the legacy pieces of a ``ci`` run and comparing them
with the pieces the sweep engine computes (identical but for the float64 rounding of the terms A and B).
"""

import json
import math
import sys
from pathlib import Path

import pandas as pd

from ntkbook import records, scales, sweep
from ntkbook.reproductions import appendix_b as ab
from ntkbook.reproductions import bottleneck, nonlinear_output

NAN = math.nan


def rows(training: str, kinds: tuple[str, ...], c: dict) -> pd.DataFrame:
    """The rows ``appendix_b.train_runs`` returns, from a legacy piece result ``c``."""
    n = len(c["steps"])
    swish = training == "swish"
    per_run = {"steps": c["steps"], "final_loss": c["final_loss"], "cap_hit": c["cap_hit"],
               "stalled": c.get("stalled", [False] * n),  # cross-entropy pieces from before the stall rule
               "trapped": c["trapped"] if swish else [NAN] * n,
               "lowest_logit": c["lowest_target_logit"] if swish else [NAN] * n,
               "lr": c["lr"], "lambda_max": c["lambda_max"], "record_steps": [c["record_steps"]] * n,
               "loss_curve": c["loss_curve"]}
    frames = []
    for name in kinds:
        split = c["split"].get(name, {"term_a": [NAN] * n, "term_b": [NAN] * n})
        frames.append(pd.DataFrame({"seed": c["seeds"], "output": name, "delta_k": c["delta_k"][name],
                                    "final_change": c["final_change"][name], **per_run, "term_a": split["term_a"],
                                    "term_b": split["term_b"], "curve": c["curves"][name]}))
    return pd.concat(frames, ignore_index=True)


def convert(legacy: Path, new: Path, scale: str) -> None:
    for name, module in (("nonlinear-output", nonlinear_output), ("bottleneck", bottleneck)):
        settings = scales.get(module.SWEEP.name, scale)
        source = legacy / name / f"{scale}-{records.digest(settings.as_dict())[:12]}"
        store = sweep.PieceCache(sweep.cache_directory(module.SWEEP, settings, new))
        for path in sorted(source.glob("*.json")):
            record = json.loads(path.read_text())
            piece, c = record["piece"], record["columns"]
            coords = ({"width": piece["width"], "training": piece["training"], "first_seed": piece["seeds"][0]}
                      if name == "nonlinear-output" else
                      {"bottleneck_width": piece["bottleneck_width"], "first_seed": piece["seeds"][0]})
            assert piece["seeds"] == ab.block(coords["first_seed"], settings), piece
            frame = rows(piece.get("training", "cross_entropy"), ab.KERNELS[piece.get("training", "cross_entropy")]
                         if name == "nonlinear-output" else ("linear",), c)
            if name == "bottleneck":
                frame = frame.drop(columns="output")
            store.save(coords, {str(k): records.to_jsonable(frame[k].tolist()) if k not in ("term_a", "term_b",
                                "trapped", "lowest_logit") else frame[k].tolist() for k in frame.columns},
                       record["seconds"])
            print(name, coords, "->", store.path(coords).name)


if __name__ == "__main__":
    convert(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "paper")
