#!/usr/bin/env bash
# A background child that keeps stdout open after the script exits.
sleep 300 &
echo $! > "$SKILLROUTER_OUTPUT_DIR/hold.pid"
echo "forked, child holds stdout"
