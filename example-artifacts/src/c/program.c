/*
 * A stand-in for one ROCm executable of the bundled example build. It prints
 * "example:<text> argv0=<argv[0]>" so a test can tell which binary ran and how it was
 * called, and, when built with -DEXAMPLE_CALLS=<id>, the name returned by the library it
 * links against ("uses example:<library>"), which proves that library loaded.
 *
 *   -DEXAMPLE_TEXT="<text>"
 *   -DEXAMPLE_CALLS=<C identifier> (optional)
 */

#include <stdio.h>

#define EXAMPLE_JOIN2(a, b) a##b
#define EXAMPLE_JOIN(a, b) EXAMPLE_JOIN2(a, b)

#ifdef EXAMPLE_CALLS
const char *EXAMPLE_JOIN(EXAMPLE_CALLS, _example_name)(void);
#endif

int main(int argc, char **argv) {
    (void)argc;
    printf("example:%s argv0=%s\n", EXAMPLE_TEXT, argv[0]);
#ifdef EXAMPLE_CALLS
    printf("uses %s\n", EXAMPLE_JOIN(EXAMPLE_CALLS, _example_name)());
#endif
    return 0;
}
