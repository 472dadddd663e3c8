#!/usr/bin/env bash
# Greets, reports where it runs, writes a file into the output directory.
set -eu
echo "hello ${1:-world} from bash"
echo "cwd=$(pwd)"
echo "note from bash" >&2
echo "greeting for ${1:-world}" > greeting.txt
