#!/usr/bin/env bash
set -euo pipefail
width="$1"; shift
for f in "$@"; do
  echo "would resize $f to ${width}px wide"
done
