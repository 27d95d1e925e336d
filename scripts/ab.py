#!/usr/bin/env python3
"""Paired A/B of two strata-bench binaries: the same benchmarks, binaries alternating.

    scripts/ab.py --rounds 5 --a OLD --b NEW [--a-flags "..."] [--b-flags "..."] -- FLAGS...

Each round runs A then B (the order flips every round, so neither always runs on the
warmer machine), each in a fresh database directory, with the shared FLAGS. Every
result line (`name : X micros/op;`) is matched by its position in the run (a suite
repeats names such as readrandom). Printed per row: the median over rounds of the
paired ratio A's µs/op over B's (above 1: B is faster) and its range. Machine noise
moves both sides of a pair alike; a row is a change only when its range clears 1.
"""

import argparse
import re
import shlex
import statistics
import subprocess
import sys
import tempfile

LINE = re.compile(r"^(\S+)\s*:\s*([0-9.]+) micros/op")


def run(binary, flags):
    with tempfile.TemporaryDirectory(prefix="ab-") as db:
        out = subprocess.run(
            [binary, f"--db={db}", *flags],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    rows = []
    for line in out.splitlines():
        m = LINE.match(line.strip())
        if m:
            rows.append((m.group(1), float(m.group(2))))
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--a", required=True, help="binary A (before)")
    p.add_argument("--b", required=True, help="binary B (after)")
    p.add_argument("--a-flags", default="", help="flags for A only")
    p.add_argument("--b-flags", default="", help="flags for B only")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("flags", nargs="*", help="flags for both (after --)")
    args = p.parse_args()

    ratios = {}
    names = []
    for r in range(args.rounds):
        sides = [("a", args.a, args.a_flags), ("b", args.b, args.b_flags)]
        if r % 2:
            sides.reverse()
        got = {}
        for side, binary, own in sides:
            got[side] = run(binary, args.flags + shlex.split(own))
        a, b = got["a"], got["b"]
        if [n for n, _ in a] != [n for n, _ in b]:
            sys.exit("the two binaries ran different benchmarks")
        names = [n for n, _ in a]
        for i, ((_, ua), (_, ub)) in enumerate(zip(a, b)):
            if ub > 0:
                ratios.setdefault(i, []).append(ua / ub)
        line = " ".join(f"{n}={ua / ub:.3f}" for (n, ua), (_, ub) in zip(a, b) if ub > 0)
        print(f"round {r + 1}: {line}", flush=True)

    print(f"\nA/B over {args.rounds} rounds: A's µs/op over B's (median, range)")
    for i, name in enumerate(names):
        rs = ratios.get(i, [])
        if rs:
            print(f"{name:<14} {statistics.median(rs):6.3f}  ({min(rs):.3f}-{max(rs):.3f})")


if __name__ == "__main__":
    main()
