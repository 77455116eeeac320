"""Summarise a py-spy ``--format raw`` profile (collapsed stacks): where the samples went.

    python -m bench.pyspy_top <py-spy-0.txt> [--grep kspark] [--top 25]

Prints, per process, the number of samples, then the functions with the most
inclusive and self samples (idle threads dropped: py-spy marks them only in
``--idle`` mode, so a stack counts when any of its frames is not a wait).
"""

from __future__ import annotations

import argparse
import re
from collections import Counter

__all__ = ["main"]

_WAIT = re.compile(r"\b(readinto|recv_into|wait|select|poll|_wait_for_tstate_lock|sleep|accept)\b")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--grep", default="", help="only stacks containing this text")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args(argv)
    per_process: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    self_: Counter[str] = Counter()
    total = 0
    with open(args.path) as fh:
        lines = fh.readlines()
    for line in lines:
        stack, _, n = line.rstrip().rpartition(" ")
        if not stack or (args.grep and args.grep not in stack):
            continue
        frames = stack.split(";")
        if _WAIT.search(frames[-1]):
            continue
        count = int(n)
        total += count
        per_process[frames[0][:90]] += count
        for f in set(frames[1:]):
            inclusive[f] += count
        self_[frames[-1]] += count
    print(f"{total} busy samples")
    for p, c in per_process.most_common(8):
        print(f"  {c:7d} {100 * c / total:5.1f}%  {p}")
    print("inclusive:")
    for f, c in inclusive.most_common(args.top):
        print(f"  {c:7d} {100 * c / total:5.1f}%  {f[:150]}")
    print("self:")
    for f, c in self_.most_common(args.top):
        print(f"  {c:7d} {100 * c / total:5.1f}%  {f[:150]}")


if __name__ == "__main__":
    main()
