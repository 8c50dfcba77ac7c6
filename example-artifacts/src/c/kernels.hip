/*
 * A fat stand-in for one ROCm GPU library of the bundled example build (the fat mode):
 * `library.c`'s functions plus one kernel and its launch, compiled by clang++-15 as HIP
 * for several GPU targets, so the library carries a `.hip_fatbin` of clang offload
 * bundles and registers it with the HIP runtime (`__hipRegisterFatBinary`) when loaded.
 *
 * Compiled with the same -D options as `library.c`.
 */

extern "C" {
#include "library.c"
}

#define __global__ __attribute__((global))

typedef struct {
    unsigned x, y, z;
} example_dim3;

extern "C" int hipLaunchKernel(const void *function, example_dim3 grid, example_dim3 block, void **args,
                               unsigned long shared_bytes, void *stream);

__global__ void EXAMPLE_JOIN(EXAMPLE_ID, _example_kernel)(float *x, float a) {
    x[0] *= a;
}

/* Launches the kernel once: through the runtime, which finds its code object. */
extern "C" int EXAMPLE_JOIN(EXAMPLE_ID, _example_launch)(float *x) {
    float a = 2.0f;
    void *args[] = {&x, &a};
    example_dim3 one = {1, 1, 1};
    return hipLaunchKernel((const void *)&EXAMPLE_JOIN(EXAMPLE_ID, _example_kernel), one, one, args, 0, 0);
}
