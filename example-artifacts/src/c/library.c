/*
 * A stand-in for one ROCm shared library of the bundled example build.
 *
 * Compiled once per library with:
 *   -DEXAMPLE_ID=<C identifier>   names the exported functions (`<id>_example_name`)
 *   -DEXAMPLE_TEXT="<text>"       what `<id>_example_name()` returns, after "example:"
 *   -DEXAMPLE_CALLS=<C identifier> (optional) a library this one calls, so the linker
 *                                  records it as DT_NEEDED and loading fails without it.
 */

#define EXAMPLE_JOIN2(a, b) a##b
#define EXAMPLE_JOIN(a, b) EXAMPLE_JOIN2(a, b)

const char *EXAMPLE_JOIN(EXAMPLE_ID, _example_name)(void) {
    return "example:" EXAMPLE_TEXT;
}

#ifdef EXAMPLE_CALLS
const char *EXAMPLE_JOIN(EXAMPLE_CALLS, _example_name)(void);
#endif

/* The name of the library this one depends on ("" when none): calling it proves the
 * dependency was found at load time. */
const char *EXAMPLE_JOIN(EXAMPLE_ID, _example_dependency)(void) {
#ifdef EXAMPLE_CALLS
    return EXAMPLE_JOIN(EXAMPLE_CALLS, _example_name)();
#else
    return "";
#endif
}
