#!/usr/bin/env python3
"""Compares two jvmpi-shim event traces (trace=<file>: JSON lines).

    scripts/trace-diff.py A.jsonl B.jsonl [--grep TEXT] [--context N]

For each thread (threads are numbered t1, t2, … in order of first appearance in each trace, so
the same program gives the same numbers), it prints how the counts of each event and call
differ, and the first place where the order of events differs. IDs are renumbered once more
over the lines compared, so `--grep` (keep only lines containing TEXT, e.g. a class name) gives
comparable numbers. Exit status: 0 when the traces agree, 1 when they differ, 2 on bad input.
Typical uses: the same agent on JDK 11 vs 25, or two versions of a program.
"""
import argparse
import collections
import json
import re
import sys

ID = re.compile(r'"([tomr])(\d+)"')


def load(path, grep):
    """Per thread: the list of normalised lines."""
    per = collections.OrderedDict()
    seen = {}
    counters = collections.Counter()

    def renumber(m):
        key = (m.group(1), m.group(2))
        if key not in seen:
            counters[m.group(1)] += 1
            seen[key] = counters[m.group(1)]
        return '"%s%d"' % (m.group(1), seen[key])

    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or (grep and grep not in line):
                continue
            try:
                v = json.loads(line)
            except ValueError as e:
                sys.exit("%s:%d: not JSON (%s)" % (path, n, e))
            line = ID.sub(renumber, line)
            v = json.loads(line)
            per.setdefault(v.get("thread") or "-", []).append((v.get("ev") or "call " + str(v.get("call")), line))
    return per


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--grep", help="compare only lines containing this text")
    ap.add_argument("--context", type=int, default=2, help="lines shown around the first difference in order")
    args = ap.parse_args()
    a, b = load(args.a, args.grep), load(args.b, args.grep)
    differ = False
    for t in list(a) + [t for t in b if t not in a]:
        la, lb = a.get(t, []), b.get(t, []),
        ca, cb = collections.Counter(k for k, _ in la), collections.Counter(k for k, _ in lb)
        lines = []
        for k in sorted(set(ca) | set(cb)):
            if ca[k] != cb[k]:
                lines.append("  %-32s %8d -> %-8d (%+d)" % (k, ca[k], cb[k], cb[k] - ca[k]))
        first = next((i for i, (x, y) in enumerate(zip(la, lb)) if x[1] != y[1]), None)
        if first is None and len(la) != len(lb):
            first = min(len(la), len(lb))
        if lines or first is not None:
            differ = True
            print("thread %s: %d -> %d events" % (t, len(la), len(lb)))
            for l in lines:
                print(l)
            if first is not None:
                print("  order differs from event %d:" % (first + 1))
                for side, seq in (("-", la), ("+", lb)):
                    for _, l in seq[max(0, first - args.context):first + args.context + 1]:
                        print("  %s %s" % (side, l))
    if not differ:
        print("the traces agree (%d threads)" % len(a))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
