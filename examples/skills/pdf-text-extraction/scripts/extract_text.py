#!/usr/bin/env python3
"""Extract text from a PDF with whatever extractor is available.

Usage: extract_text.py FILE.pdf [--pages 1-3,7] [-o OUT] [--info] [--raw] [--password PW]

Tries pdftotext (poppler), then pypdf, then pdfminer.six. Pages are separated by
"\\f--- page N ---". Exit status: 0 ok, 2 usage/no extractor, 3 no text (scanned PDF?).
"""
import argparse
import shutil
import subprocess
import sys


def parse_pages(spec, count):
    if not spec:
        return list(range(1, count + 1)) if count else []
    pages = []
    for part in spec.split(","):
        part = part.strip()
        if "-" in part:
            a, b = part.split("-", 1)
            lo, hi = int(a or 1), int(b or count)
            pages.extend(range(lo, hi + 1))
        elif part:
            pages.append(int(part))
    bad = [p for p in pages if p < 1 or (count and p > count)]
    if bad:
        raise SystemExit(f"page(s) out of range 1..{count}: {bad}")
    return pages


def count_pages_pdfinfo(path, password):
    if not shutil.which("pdfinfo"):
        return 0, {}
    cmd = ["pdfinfo"] + (["-upw", password] if password else []) + [path]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"pdfinfo failed: {r.stderr.strip()}")
    info = {}
    for line in r.stdout.splitlines():
        k, _, v = line.partition(":")
        info[k.strip()] = v.strip()
    return int(info.get("Pages", "0") or 0), info


def with_pdftotext(path, pages, password, raw):
    count, info = count_pages_pdfinfo(path, password)
    out = []
    for p in parse_pages(pages, count) or [None]:
        cmd = ["pdftotext", "-raw" if raw else "-layout", "-enc", "UTF-8"]
        if password:
            cmd += ["-upw", password]
        if p:
            cmd += ["-f", str(p), "-l", str(p)]
        r = subprocess.run(cmd + [path, "-"], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"pdftotext failed: {r.stderr.strip()}")
        out.append((p or 1, r.stdout))
    return out, count, info


def with_pypdf(path, pages, password, raw):
    import pypdf  # noqa: raises ImportError when missing
    reader = pypdf.PdfReader(path)
    if reader.is_encrypted and not reader.decrypt(password or ""):
        raise SystemExit("the PDF is encrypted; pass --password")
    count = len(reader.pages)
    info = {k.lstrip("/"): str(v) for k, v in (reader.metadata or {}).items()}
    info["Pages"] = str(count)
    return [(p, reader.pages[p - 1].extract_text() or "") for p in parse_pages(pages, count)], count, info


def with_pdfminer(path, pages, password, raw):
    from pdfminer.high_level import extract_text
    from pdfminer.pdfpage import PDFPage
    with open(path, "rb") as f:
        count = sum(1 for _ in PDFPage.get_pages(f, password=password or ""))
    out = [(p, extract_text(path, page_numbers=[p - 1], password=password or "")) for p in parse_pages(pages, count)]
    return out, count, {"Pages": str(count)}


EXTRACTORS = [
    ("pdftotext", lambda: shutil.which("pdftotext") is not None, with_pdftotext),
    ("pypdf", lambda: __import__("importlib").util.find_spec("pypdf") is not None, with_pypdf),
    ("pdfminer.six", lambda: __import__("importlib").util.find_spec("pdfminer") is not None, with_pdfminer),
]


def main():
    ap = argparse.ArgumentParser(description="Extract text from a PDF.")
    ap.add_argument("file")
    ap.add_argument("--pages", help="1-based pages, e.g. 1-3,7")
    ap.add_argument("-o", "--output", help="write text here instead of stdout")
    ap.add_argument("--info", action="store_true", help="print page count and metadata only")
    ap.add_argument("--raw", action="store_true", help="content-stream order instead of layout (pdftotext)")
    ap.add_argument("--password", help="user password of an encrypted PDF")
    args = ap.parse_args()

    for name, available, run in EXTRACTORS:
        if not available():
            continue
        pages, count, info = run(args.file, args.pages, args.password, args.raw)
        print(f"extractor: {name}, {count} pages", file=sys.stderr)
        if args.info:
            for k in sorted(info):
                print(f"{k}: {info[k]}")
            return 0
        text = "".join(f"\f--- page {p} ---\n{t.rstrip()}\n" for p, t in pages).lstrip("\f")
        if args.output:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
        chars = sum(len(t.strip()) for _, t in pages)
        if pages and chars < 20 * len(pages):
            print("almost no text found: this looks like a scanned PDF; run OCR (ocrmypdf --skip-text in.pdf out.pdf)",
                  file=sys.stderr)
            return 3
        return 0
    print("no PDF extractor found: install poppler-utils (pdftotext), or `pip install pypdf`", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
