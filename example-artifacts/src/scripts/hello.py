#!/usr/bin/env python3
"""Example Python tool of the bundled example build; prints its name and arguments."""

import sys

print("example:@NAME@ argv=" + " ".join(sys.argv[1:]))
