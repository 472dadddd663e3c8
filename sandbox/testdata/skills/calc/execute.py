"""Executable skill entry point (Lazy Skills protocol):
  --help-json           print the tool schema as JSON
  --run-json '<args>'   run with JSON arguments, print a JSON result
"""
import json
import math
import sys

SCHEMA = {
    "name": "calc_numbers",
    "description": "Add or multiply a list of numbers.",
    "parameters": {
        "type": "object",
        "properties": {
            "operation": {"type": "string", "enum": ["add", "multiply"]},
            "numbers": {"type": "array", "items": {"type": "number"}},
        },
        "required": ["operation", "numbers"],
    },
}


def main(argv):
    if argv[1:2] == ["--help-json"]:
        print(json.dumps(SCHEMA))
        return 0
    if argv[1:2] == ["--run-json"] and len(argv) == 3:
        args = json.loads(argv[2])
        op, nums = args.get("operation"), args.get("numbers", [])
        if op == "crash":
            print("this is not JSON")
            print("Traceback: simulated failure in calc", file=sys.stderr)
            return 2
        if op == "garbage":
            print("not json at all")
            return 0
        if op == "add":
            return emit({"result": sum(nums)})
        if op == "multiply":
            return emit({"result": math.prod(nums)})
        return emit({"error": "unknown operation %r" % op})
    print("usage: execute.py --help-json | --run-json JSON", file=sys.stderr)
    return 64


def emit(obj):
    print(json.dumps(obj))
    return 0


sys.exit(main(sys.argv))
