#!/usr/bin/env python3
"""Test a Python regular expression against examples that must and must not match.

Usage:
  test_regex.py PATTERN [--match S]... [--no-match S]... [--file F] [--search] [--flags ims]

--file reads one example per line: "+ text" must match, "- text" must not.
By default the whole string must match (re.fullmatch); --search finds a match anywhere.
Exit status 1 when any example fails.
"""
import argparse
import re
import sys
import time

# Quantified groups that themselves end in a quantifier: the classic
# catastrophic-backtracking shape, e.g. (a+)+ or (\w+\s?)*.
NESTED = re.compile(r"\((?:[^()\\]|\\.)*[+*?}]\)[+*{]")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pattern")
    ap.add_argument("--match", action="append", default=[], help="example that must match")
    ap.add_argument("--no-match", action="append", default=[], help="example that must not match")
    ap.add_argument("--file", help='examples file: lines "+ text" or "- text"')
    ap.add_argument("--search", action="store_true", help="match anywhere (re.search) instead of the whole string")
    ap.add_argument("--flags", default="", help="any of i (ignore case), m (multiline), s (dotall), x (verbose)")
    args = ap.parse_args()

    flags = 0
    for ch in args.flags:
        flags |= {"i": re.I, "m": re.M, "s": re.S, "x": re.X}[ch]
    try:
        rx = re.compile(args.pattern, flags)
    except re.error as e:
        print(f"invalid pattern: {e} (at position {e.pos})", file=sys.stderr)
        return 1

    must, must_not = list(args.match), list(args.no_match)
    if args.file:
        for n, line in enumerate(open(args.file, encoding="utf-8"), 1):
            line = line.rstrip("\n")
            if line.startswith("+ "):
                must.append(line[2:])
            elif line.startswith("- "):
                must_not.append(line[2:])
            elif line.strip():
                print(f"{args.file}:{n}: expected '+ ' or '- ' prefix, skipped", file=sys.stderr)
    if not must and not must_not:
        print("give examples with --match / --no-match or --file", file=sys.stderr)
        return 2

    run = rx.search if args.search else rx.fullmatch
    failures = 0
    for s in must:
        t = time.perf_counter()
        m = run(s)
        slow = time.perf_counter() - t > 0.1
        if m:
            groups = {k: v for k, v in m.groupdict().items()} or (m.groups() or "")
            print(f"ok    match     {s!r} {groups if groups else ''}".rstrip())
        else:
            failures += 1
            print(f"FAIL  no match  {s!r} (expected a match)")
        if slow:
            print(f"      slow: {s!r} took over 100 ms — check for backtracking")
    for s in must_not:
        t = time.perf_counter()
        m = run(s)
        if m:
            failures += 1
            print(f"FAIL  match     {s!r} matched {m.group(0)!r} (expected no match)")
        else:
            print(f"ok    no match  {s!r}")
        if time.perf_counter() - t > 0.1:
            print(f"      slow: {s!r} took over 100 ms — check for backtracking")

    if NESTED.search(args.pattern):
        print("warning: nested quantifiers (like (a+)+) can backtrack catastrophically on non-matching input")
    print(f"{len(must) + len(must_not) - failures}/{len(must) + len(must_not)} examples passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
