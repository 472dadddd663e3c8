#!/usr/bin/env bash
# Prints a greeting for its first argument.
echo "hello, ${1:-nobody}"
