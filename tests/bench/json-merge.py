#!/usr/bin/env python3
"""json-merge.py - make bench: add the keys of JSON objects to another.

    tests/bench/json-merge.py build/bench.json build/bench-audit.json

The first file (an object; created when absent) gains every key of the
others (each an object; a missing one is skipped with a note), and is
written back with its keys in the order they came.
"""
import json
import os
import sys


def main(argv):
    if len(argv) < 2:
        print("usage: json-merge.py INTO FROM...", file=sys.stderr)
        return 2
    into = argv[0]
    merged = {}
    if os.path.exists(into):
        with open(into, encoding="utf-8") as f:
            merged = json.load(f)
    for path in argv[1:]:
        if not os.path.exists(path):
            print(f"json-merge: {path} is absent: nothing of it in {into}", file=sys.stderr)
            continue
        with open(path, encoding="utf-8") as f:
            merged.update(json.load(f))
    with open(into, "w", encoding="utf-8") as f:
        json.dump(merged, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
