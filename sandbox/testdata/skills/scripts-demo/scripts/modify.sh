#!/usr/bin/env bash
# Appends to a file created by an earlier call in the same conversation.
echo more >> greeting.txt
echo appended
