"""Prints without end; the sandbox must cut the output and stop the process.
Records its pid first so the test can check it is gone."""
import os
import sys

with open(os.path.join(os.environ["SKILLROUTER_OUTPUT_DIR"], "huge.pid"), "w") as f:
    f.write(str(os.getpid()))
line = "x" * 1023 + "\n"
while True:
    sys.stdout.write(line)
