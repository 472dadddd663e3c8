#!/usr/bin/env python3
import sys
print("fields of", sys.argv[1:])
