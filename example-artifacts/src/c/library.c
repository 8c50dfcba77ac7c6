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

#ifdef EXAMPLE_HIP_RUNTIME
/* The fat example's HIP runtime: what clang's HIP registration code and a kernel launch
 * call, so a fat library's imports bind. Nothing runs on a GPU: registration hands back
 * a handle, a launch succeeds. */
#include <stddef.h>
#include <stdint.h>
static void *example_registered[256];
static int example_n_registered;
void **__hipRegisterFatBinary(const void *wrapper) {
    int slot = example_n_registered < 255 ? example_n_registered++ : 255;
    example_registered[slot] = (void *)wrapper;
    return &example_registered[slot];
}
void __hipRegisterFunction(void **module, const void *host, char *device, const char *name, int limit, void *tid,
                           void *bid, void *block, void *grid, int *size) {}
void __hipRegisterVar(void **module, char *host, char *device, const char *name, int ext, size_t size, int constant,
                      int global) {}
void __hipUnregisterFatBinary(void **module) {}
int __hipPushCallConfiguration(uint64_t grid, uint32_t grid_z, uint64_t block, uint32_t block_z, size_t shared,
                               void *stream) {
    return 0;
}
int __hipPopCallConfiguration(void *grid, void *block, size_t *shared, void **stream) {
    return 0;
}
int hipLaunchKernel(const void *function, uint64_t grid, uint32_t grid_z, uint64_t block, uint32_t block_z, void **args,
                    size_t shared, void *stream) {
    return 0;
}
#endif

#ifdef EXAMPLE_KPACK_LOADER
/* A kpack-enabled runtime carries rocm-kpack's loader (`kpack_load_code_object`, KPACK.md
 * §2): its presence is what says the runtime can load code objects from `.kpack` archives.
 * Here it finds nothing (KPACK_ERROR_ARCHIVE_NOT_FOUND). */
#include <stddef.h>
#include <stdint.h>
int kpack_load_code_object(void *cache, const void *metadata, const char *binary_path, uint32_t index,
                           const char *const *arches, size_t n_arches, void **out, size_t *out_size) {
    return 13;
}
#endif
