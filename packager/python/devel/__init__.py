"""rocm-sdk-devel: headers, CMake files, static libraries and tools of the ROCm SDK.

The tree ships as a tarball beside this file and is unpacked into site-packages on first
use: run `rocm-sdk init`, or `rocm-sdk path --root` to unpack it and print where it is.
"""
