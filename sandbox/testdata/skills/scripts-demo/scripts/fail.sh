#!/usr/bin/env bash
echo "about to fail"
echo "something went wrong" >&2
exit 3
