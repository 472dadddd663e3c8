#!/usr/bin/env bash
# Tries to write into its own skill folder; prints what happened.
if echo pwned > "$SKILLROUTER_SKILL_DIR/pwned.txt" 2>/dev/null; then
  echo "wrote-skill-dir"
else
  echo "skill-dir-read-only"
fi
if echo ok > "$SKILLROUTER_OUTPUT_DIR/allowed.txt"; then echo "wrote-output-dir"; fi
if echo ok > "$HOME/home.txt"; then echo "wrote-home"; fi
if echo ok > "$TMPDIR/tmp.txt"; then echo "wrote-tmpdir"; fi
echo devnull > /dev/null && echo "wrote-dev-null"
