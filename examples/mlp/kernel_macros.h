/* The macro layer that lets kernels.inc be written once and compiled twice: by nvcc as
 * __global__ functions, and by the C compiler as simcuda host kernels.
 *
 * A kernel is declared with its parameters as (type, name) pairs and followed by its body:
 *
 *     MLP_KERNEL(scale, (float *, x), (float, a), (long, n))
 *     {
 *         MLP_FOR_EACH(i, n) x[i] *= a;
 *     }
 *
 * On the GPU MLP_FOR_EACH is a grid-stride loop; on simcuda the kernel runs once per launch on
 * the calling thread, so the same loop visits every index in order. The simcuda build also
 * emits, per kernel, the entry point simcuda calls (void name(void **params, launch)) that
 * unpacks cuLaunchKernel-style parameters, and the parameter sizes cuFuncGetParamInfo reports.
 */
#ifndef MLP_KERNEL_MACROS_H
#define MLP_KERNEL_MACROS_H

/* ---- Mapping a macro over up to 12 (type, name) pairs, with the pair's index ---- */

#define MLP_NARGS(...) MLP_NARGS_(__VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)

#define MLP_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, n, ...) n

#define MLP_CAT(a, b)  MLP_CAT_(a, b)
#define MLP_CAT_(a, b) a##b

#define MLP_MAP(m, ...)       MLP_CAT(MLP_MAP_, MLP_NARGS(__VA_ARGS__))(m, __VA_ARGS__)
#define MLP_MAP_1(m, a)       m(0, a)
#define MLP_MAP_2(m, a, b)    m(0, a), m(1, b)
#define MLP_MAP_3(m, a, ...)  m(0, a), MLP_MAP_2S(m, 1, __VA_ARGS__)
#define MLP_MAP_4(m, a, ...)  m(0, a), MLP_MAP_3S(m, 1, __VA_ARGS__)
#define MLP_MAP_5(m, a, ...)  m(0, a), MLP_MAP_4S(m, 1, __VA_ARGS__)
#define MLP_MAP_6(m, a, ...)  m(0, a), MLP_MAP_5S(m, 1, __VA_ARGS__)
#define MLP_MAP_7(m, a, ...)  m(0, a), MLP_MAP_6S(m, 1, __VA_ARGS__)
#define MLP_MAP_8(m, a, ...)  m(0, a), MLP_MAP_7S(m, 1, __VA_ARGS__)
#define MLP_MAP_9(m, a, ...)  m(0, a), MLP_MAP_8S(m, 1, __VA_ARGS__)
#define MLP_MAP_10(m, a, ...) m(0, a), MLP_MAP_9S(m, 1, __VA_ARGS__)
#define MLP_MAP_11(m, a, ...) m(0, a), MLP_MAP_10S(m, 1, __VA_ARGS__)
#define MLP_MAP_12(m, a, ...) m(0, a), MLP_MAP_11S(m, 1, __VA_ARGS__)
/* The ...S forms carry the index of their first pair, so indices count up from 0. */
#define MLP_MAP_1S(m, i, a)       m(i, a)
#define MLP_MAP_2S(m, i, a, ...)  m(i, a), MLP_MAP_1S(m, i + 1, __VA_ARGS__)
#define MLP_MAP_3S(m, i, a, ...)  m(i, a), MLP_MAP_2S(m, i + 1, __VA_ARGS__)
#define MLP_MAP_4S(m, i, a, ...)  m(i, a), MLP_MAP_3S(m, i + 1, __VA_ARGS__)
#define MLP_MAP_5S(m, i, a, ...)  m(i, a), MLP_MAP_4S(m, i + 1, __VA_ARGS__)
#define MLP_MAP_6S(m, i, a, ...)  m(i, a), MLP_MAP_5S(m, i + 1, __VA_ARGS__)
#define MLP_MAP_7S(m, i, a, ...)  m(i, a), MLP_MAP_6S(m, i + 1, __VA_ARGS__)
#define MLP_MAP_8S(m, i, a, ...)  m(i, a), MLP_MAP_7S(m, i + 1, __VA_ARGS__)
#define MLP_MAP_9S(m, i, a, ...)  m(i, a), MLP_MAP_8S(m, i + 1, __VA_ARGS__)
#define MLP_MAP_10S(m, i, a, ...) m(i, a), MLP_MAP_9S(m, i + 1, __VA_ARGS__)
#define MLP_MAP_11S(m, i, a, ...) m(i, a), MLP_MAP_10S(m, i + 1, __VA_ARGS__)

/* Per-pair expansions: p is "(type, name)". */
#define MLP_PAIR_TYPE(t, n) t
#define MLP_PAIR_DECL(t, n) t n
#define MLP_DECL(i, p)      MLP_PAIR_DECL p
#define MLP_SIZE(i, p)      sizeof(MLP_PAIR_TYPE p)
#define MLP_ARG(i, p)       *(MLP_PAIR_TYPE p *)params[i]

/* ---- The two builds ---- */

#ifdef __CUDACC__

#define MLP_DEVICE            static __device__ __forceinline__
#define MLP_KERNEL(name, ...) static __global__ void name(MLP_MAP(MLP_DECL, __VA_ARGS__))
#define MLP_FOR_EACH(i, n)                                                                         \
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                            \
         i += (long)gridDim.x * blockDim.x)

#else

#include <stddef.h>
#include <simcuda.h>

#define MLP_DEVICE static inline
#define MLP_KERNEL(name, ...)                                                                      \
    static void name##_body(MLP_MAP(MLP_DECL, __VA_ARGS__));                                       \
    static const size_t name##_param_sizes[] = {MLP_MAP(MLP_SIZE, __VA_ARGS__)};                   \
    static void name(void **params, const simcuda_launch *launch)                                  \
    {                                                                                              \
        (void)launch;                                                                              \
        name##_body(MLP_MAP(MLP_ARG, __VA_ARGS__));                                                \
    }                                                                                              \
    static void name##_body(MLP_MAP(MLP_DECL, __VA_ARGS__))
#define MLP_FOR_EACH(i, n) for (long i = 0; i < (n); i++)

#endif

#endif /* MLP_KERNEL_MACROS_H */
