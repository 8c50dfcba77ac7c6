#!/bin/sh
# Example hipcc: like the real driver, it finds the compiler relative to its own location.
echo "example:hipcc"
exec "$(dirname "$0")/../lib/llvm/bin/clang" "$@"
