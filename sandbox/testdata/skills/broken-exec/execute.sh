#!/usr/bin/env bash
echo "I do not speak JSON"
