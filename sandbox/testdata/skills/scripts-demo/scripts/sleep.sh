#!/usr/bin/env bash
# Sleeps far longer than any test timeout; a child sleeps too and records its
# pid so the test can check the whole tree was killed.
sleep 30 &
echo $! > "$SKILLROUTER_OUTPUT_DIR/sleep-child.pid"
echo "sleeping"
sleep 30
