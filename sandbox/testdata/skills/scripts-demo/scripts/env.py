"""Prints its whole environment as JSON, and what it can read of the
environment of the process named by argv[1] (the proxy), if given."""
import json
import os
import sys

out = {"env": dict(os.environ)}
if len(sys.argv) > 1:
    try:
        with open("/proc/%s/environ" % sys.argv[1], "rb") as f:
            out["parent_environ"] = f.read().decode("utf-8", "replace")
    except OSError as e:
        out["parent_environ_error"] = str(e)
print(json.dumps(out))
