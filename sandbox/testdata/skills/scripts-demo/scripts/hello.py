"""Greets from Python and imports a helper module beside it (which must not
leave __pycache__ in the skill folder)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helper  # noqa: E402

print(helper.greet(sys.argv[1] if len(sys.argv) > 1 else "world"))
with open("py-out.txt", "w") as f:
    f.write("written by python\n")
