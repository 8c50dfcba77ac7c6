"""A ROCm platform package: native files installed beside the other ROCm packages.

Its directory is found through the matching pure package's `_dist_info`; nothing here is
meant to be imported for its own sake.
"""
