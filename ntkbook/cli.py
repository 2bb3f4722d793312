"""Command line: ``python -m ntkbook reproduce NAME --scale ... --out DIR`` and ``python -m ntkbook list``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import reproduce, scales, sweep


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ntkbook", description="Reproduce the experiments of the book.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the reproductions")
    rep = sub.add_parser("reproduce", help="run one reproduction and write NAME.json and NAME.png")
    rep.add_argument("name", help="reproduction name (see `list`)")
    rep.add_argument("--scale", default=None, help=f"one of {', '.join(scales.SCALES)} "
                                                   "(default: $NTKBOOK_SCALE or 'book')")
    rep.add_argument("--out", default="results", help="output directory (default: ./results)")
    rep.add_argument("--no-resume", action="store_true", help="recompute pieces already in the cache")
    rep.add_argument("--shard", default=None, metavar="i/n",
                     help="compute only share i of n of the pieces into the shared cache under --out (e.g. a Slurm "
                          "array: --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT); a last call without "
                          "--shard merges the shares and draws the figure")
    args = parser.parse_args(argv)

    if args.command == "list":
        for name in reproduce.names():
            r = reproduce.get(name)
            print(f"{name:24s} {r.description}")
        return 0
    try:
        shard = None if args.shard is None else sweep.parse_shard(args.shard)
        result = reproduce.run(args.name, args.scale, args.out, resume=not args.no_resume, shard=shard)
    except ValueError as err:
        parser.exit(2, f"error: {err}\n")
    if shard is not None:
        print(f"{result['name']} at scale {result['scale']}, shard {shard[0]}/{shard[1]}: {result['pieces']} "
              f"pieces ({result['cached_pieces']} from the cache) in {result['seconds']:.1f} s on "
              f"{result['backend']} -> {args.out}/.cache")
        return 0
    print(f"{result['name']} at scale {result['scale']}: {result['pieces']} pieces "
          f"({result['cached_pieces']} from the cache) in {result['seconds']:.1f} s on {result['backend']} "
          f"-> {args.out}/{result['name']}.json")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
