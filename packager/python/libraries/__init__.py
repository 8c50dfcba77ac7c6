"""rocm-sdk-libraries: the ROCm math and communication libraries.

The files live in the sibling platform package; `rocm_sdk.find_libraries` locates them.
"""
