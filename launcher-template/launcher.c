/*
 * The launcher that replaces an executable symlink inside a wheel (wheels cannot hold
 * symlinks). It execs its target, given relative to the launcher's own real location,
 * with the same argv (argv[0] included, so tools that switch on their name keep working)
 * and the same environment.
 *
 * The packager compiles this file once per run and writes each launcher's target into
 * `target_slot` after the marker, so no compiler runs per symlink and no path of the build
 * machine ends up in the binary.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MARKER "ROCM_SDK_LAUNCHER_TARGET="
#define TARGET_CAPACITY 1024

/* volatile: the compiler must not fold the (still empty) slot into the code. */
static volatile char target_slot[sizeof(MARKER) - 1 + TARGET_CAPACITY] __attribute__((used)) = MARKER;

int main(int argc, char **argv) {
    (void)argc;
    char target[TARGET_CAPACITY];
    size_t marker_len = sizeof(MARKER) - 1;
    size_t i;
    for (i = 0; i + 1 < TARGET_CAPACITY; i++) {
        target[i] = target_slot[marker_len + i];
        if (target[i] == '\0') break;
    }
    target[i] = '\0';
    if (target[0] == '\0') {
        fprintf(stderr, "rocm launcher: this launcher has no target (it was not configured by the packager)\n");
        return 127;
    }

    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n < 0) {
        fprintf(stderr, "rocm launcher: cannot find my own location (/proc/self/exe): %s\n", strerror(errno));
        return 127;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash == NULL) {
        fprintf(stderr, "rocm launcher: unexpected location %s\n", self);
        return 127;
    }
    *slash = '\0';

    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/%s", self, target) >= (int)sizeof(path)) {
        fprintf(stderr, "rocm launcher: path too long: %s/%s\n", self, target);
        return 127;
    }
    execv(path, argv);
    fprintf(stderr, "rocm launcher: cannot run %s: %s\n", path, strerror(errno));
    return 127;
}
