"""Self-tests run by `rocm-sdk test` against the installed ROCm packages.

Module names match the reference's layout (`base_test`, `core_test`, `libraries_test`,
`devel_test`, `profiler_test`), so tests written against it run here too.
"""
