"""The unit tests of the Python code the packages ship, run by `tests/it/python.rs`."""
