#!/usr/bin/env bash
# Blocks until the file named by $1 exists (at most 20 s), for concurrency tests.
for _ in $(seq 400); do
  [ -e "$1" ] && { echo released; exit 0; }
  sleep 0.05
done
echo "never released" >&2
exit 1
