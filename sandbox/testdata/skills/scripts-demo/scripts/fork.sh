#!/usr/bin/env bash
# Starts background processes and exits at once: one in the script's process
# group, one that leaves it with setsid. Both record their pids. Their output
# goes to /dev/null so only the sandbox's clean-up can end them.
sleep 300 >/dev/null 2>&1 &
echo $! > "$SKILLROUTER_OUTPUT_DIR/bg.pid"
setsid sleep 300 >/dev/null 2>&1 &
echo $! > "$SKILLROUTER_OUTPUT_DIR/setsid.pid"
echo "forked"
