#!/usr/bin/env python3
"""The SUMMARY lines of scripts/bench.sh as one table by JDK: a row per ratio, a column per JDK.

    scripts/bench-table.py target/bench/summary.txt [JDK...]

Reads lines `SUMMARY|goal|JDK|what|value|target` (what each scripts/bench-*.sh ends with) and
prints a markdown table whose rows are the ratios and whose columns are the JDKs, in the order
given (by default the order they first appear). A round-by-round spread that a line gives in its
text ("rounds 0.83-1.06") moves into the cell, after the value; a count that differs from JDK to
JDK ("34224 live objects") is a row of its own per position, labelled with the first JDK's count;
the rows are grouped by goal, in the order the goals first appear.
What is not here: the goals' verdicts (bench.sh's flat table has them) and any figure of
another run.
"""
import re
import sys

SPREAD = re.compile(r"\s*\((?:\d+ )?rounds ([0-9.]+-[0-9.]+)(?:, their median [0-9.]+)?\)")
COUNT = re.compile(r"\b(\d{4,})\b")


def rows(lines):
    order, table, seen = [], {}, {}
    for line in lines:
        f = line.rstrip("\n").split("|")
        if len(f) < 6 or f[0] != "SUMMARY":
            continue
        goal, jdk, what, value, target = f[1], f[2], f[3], f[4], f[5]
        m = SPREAD.search(what)
        spread = m.group(1).replace("-", "–") if m else None
        what = SPREAD.sub("", what)
        key_what = COUNT.sub("N", what)
        n = seen.get((goal, key_what, jdk), 0)
        seen[(goal, key_what, jdk)] = n + 1
        key = (goal, key_what, n)
        if key not in table:
            order.append(key)
            table[key] = {"label": what, "target": target, "cells": {}}
        cell = value if spread is None else f"{value} ({spread})"
        table[key]["cells"][jdk] = cell
    return order, table


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: bench-table.py SUMMARY_FILE [JDK...]")
    with open(sys.argv[1]) as fh:
        lines = fh.readlines()
    order, table = rows(lines)
    jdks = sys.argv[2:]
    if not jdks:
        for key in order:
            for j in table[key]["cells"]:
                if j not in jdks:
                    jdks.append(j)
    print("| goal | ratio | " + " | ".join(f"JDK {j}" for j in jdks) + " | target |")
    print("|---|---|" + "---|" * len(jdks) + "---|")
    # Grouped by goal, in the order the goals first appeared (as bench.sh's flat table).
    goals = []
    for key in order:
        if key[0] not in goals:
            goals.append(key[0])
    for key in sorted(order, key=lambda k: (goals.index(k[0]), order.index(k))):
        r = table[key]
        cells = [r["cells"].get(j, "") for j in jdks]
        print(f"| {key[0]} | {r['label']} | " + " | ".join(cells) + f" | {r['target']} |")


if __name__ == "__main__":
    main()
