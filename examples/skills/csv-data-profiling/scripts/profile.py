#!/usr/bin/env python3
"""Profile a CSV/TSV file: types, missing values, distinct counts, ranges, top values.

Usage: profile.py FILE [--json] [--max-rows N] [--delimiter D]
Standard library only.
"""
import argparse
import collections
import csv
import datetime
import io
import json
import math
import re
import sys

MISSING = {"", "na", "n/a", "nan", "null", "none", "-", "?"}
BOOLS = {"true", "false", "yes", "no", "y", "n", "t", "f", "0", "1"}
INT_RE = re.compile(r"^[+-]?\d+$")
FLOAT_RE = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")
DATE_FORMATS = ("%Y-%m-%d", "%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y")
DATETIME_FORMATS = ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%f")


def read_text(path):
    raw = open(path, "rb").read()
    for enc in ("utf-8-sig", "latin-1"):
        try:
            return raw.decode(enc), enc
        except UnicodeDecodeError:
            continue
    raise SystemExit("cannot decode file")


def parse_date(v, formats):
    for f in formats:
        try:
            return datetime.datetime.strptime(v, f)
        except ValueError:
            pass
    return None


def classify(v):
    s = v.strip()
    if INT_RE.match(s):
        return "integer"
    if FLOAT_RE.match(s):
        return "float"
    if s.lower() in BOOLS:
        return "boolean"
    if parse_date(s, DATE_FORMATS):
        return "date"
    if parse_date(s, DATETIME_FORMATS):
        return "datetime"
    return "string"


class Column:
    def __init__(self, name):
        self.name = name
        self.missing = 0
        self.values = collections.Counter()
        self.kinds = collections.Counter()
        self.whitespace = 0

    def add(self, v):
        if v.strip().lower() in MISSING:
            self.missing += 1
            return
        if v != v.strip():
            self.whitespace += 1
        self.values[v] += 1
        self.kinds[classify(v)] += 1

    def kind(self):
        kinds = set(self.kinds)
        if not kinds:
            return "empty"
        if kinds <= {"integer"}:
            return "integer"
        if kinds <= {"integer", "float"}:
            return "float"
        if kinds <= {"boolean", "integer"} and all(k.strip().lower() in BOOLS for k in self.values):
            return "boolean" if "boolean" in kinds else "integer"
        if len(kinds) == 1:
            return kinds.pop()
        return "string"

    def profile(self, rows):
        kind = self.kind()
        present = sum(self.values.values())
        out = {
            "column": self.name,
            "type": kind,
            "missing": self.missing,
            "missing_pct": round(100.0 * self.missing / rows, 1) if rows else 0.0,
            "distinct": len(self.values),
            "top": [[v, n] for v, n in self.values.most_common(5)],
        }
        if kind in ("integer", "float"):
            nums = [float(v) for v in self.values.elements()]
            out["min"], out["max"] = min(nums), max(nums)
            out["mean"] = round(math.fsum(nums) / len(nums), 4)
        elif kind in ("date", "datetime"):
            fmts = DATE_FORMATS if kind == "date" else DATETIME_FORMATS
            ds = [parse_date(v.strip(), fmts) for v in self.values]
            lo, hi = min(ds), max(ds)
            if kind == "date":
                lo, hi = lo.date(), hi.date()
            out["min"], out["max"] = lo.isoformat(), hi.isoformat()
        elif present:
            lens = [len(v) for v in self.values]
            out["min_length"], out["max_length"] = min(lens), max(lens)
        warnings = []
        numeric = self.kinds["integer"] + self.kinds["float"]
        dates = self.kinds["date"] + self.kinds["datetime"]
        for label, n, ok in (("numbers", numeric, ("integer", "float")), ("dates", dates, ("date", "datetime"))):
            if kind == "string" and present and n / present >= 0.5:
                odd = sorted({v for v in self.values if classify(v) not in ok})[:3]
                warnings.append(f"mixed types: mostly {label}, but also {odd}")
        if present and len(self.values) == present and present > 20:
            warnings.append("possible identifier: every value is unique")
        if len(self.values) == 1 and rows > 1:
            warnings.append("constant column: a single distinct value")
        if rows and self.missing / rows > 0.2:
            warnings.append(f"high missing rate: {out['missing_pct']}% empty")
        if self.whitespace:
            warnings.append(f"leading/trailing whitespace in {self.whitespace} values")
        out["warnings"] = warnings
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a report")
    ap.add_argument("--max-rows", type=int, default=0, help="profile only the first N data rows")
    ap.add_argument("--delimiter", help="field delimiter (default: detected)")
    args = ap.parse_args()

    text, encoding = read_text(args.file)
    delim = args.delimiter
    if not delim:
        try:
            delim = csv.Sniffer().sniff(text[:64 * 1024], delimiters=",;\t|").delimiter
        except csv.Error:
            delim = "\t" if args.file.lower().endswith(".tsv") else ","
    reader = csv.reader(io.StringIO(text), delimiter=delim)
    try:
        header = next(reader)
    except StopIteration:
        raise SystemExit(f"{args.file}: empty file")
    cols = [Column(h.strip() or f"column_{i + 1}") for i, h in enumerate(header)]
    rows = ragged = 0
    for row in reader:
        if not row:
            continue
        if args.max_rows and rows >= args.max_rows:
            break
        rows += 1
        if len(row) != len(cols):
            ragged += 1
        for c, v in zip(cols, row):
            c.add(v)
        for c in cols[len(row):]:
            c.add("")
    profiles = [c.profile(rows) for c in cols]
    summary = {"file": args.file, "encoding": encoding, "delimiter": delim, "rows": rows,
               "columns": len(cols), "ragged_rows": ragged}
    if args.json:
        json.dump({"summary": summary, "columns": profiles}, sys.stdout, indent=2, default=str)
        print()
        return
    print(f"{args.file}: {rows} rows x {len(cols)} columns (encoding {encoding}, delimiter {delim!r})")
    if ragged:
        print(f"WARNING ragged rows: {ragged} rows do not have {len(cols)} fields")
    for p in profiles:
        rng = ""
        if "min" in p:
            rng = f" range {p['min']} .. {p['max']}" + (f", mean {p['mean']}" if "mean" in p else "")
        elif "min_length" in p:
            rng = f" length {p['min_length']} .. {p['max_length']}"
        print(f"\n{p['column']}: {p['type']}, {p['missing']} missing ({p['missing_pct']}%), {p['distinct']} distinct{rng}")
        print("  top: " + ", ".join(f"{v!r} x{n}" for v, n in p["top"]))
        for w in p["warnings"]:
            print(f"  WARNING {w}")


if __name__ == "__main__":
    main()
