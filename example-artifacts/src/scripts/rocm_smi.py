#!/usr/bin/env python3
"""Example rocm-smi. Like the real tool, it finds its data next to its *real* location,
so it breaks when copied elsewhere instead of being reached through a link or launcher."""

import os
import sys

here = os.path.dirname(os.path.realpath(__file__))
with open(os.path.join(here, "rocm_smi_data.txt"), encoding="utf-8") as data:
    print("example:rocm-smi " + data.read().strip() + " argv=" + " ".join(sys.argv[1:]))
