/* The trainer's command line. */
#ifndef MLP_OPTIONS_H
#define MLP_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum options_gemm {
    OPTIONS_GEMM_SGEMM, /* cublasSgemm_v2 */
    OPTIONS_GEMM_EX,    /* cublasGemmEx, fp32 in and out, fp32 compute */
};

struct options {
    long steps;
    long batch;
    long input;  /* features per sample */
    long hidden; /* width of every hidden layer */
    long layers; /* linear layers, >= 1 */
    long classes;
    uint64_t seed;
    float lr;
    int act; /* MLP_ACT_* */
    enum options_gemm gemm;
    size_t workspace; /* bytes of cuBLAS workspace we allocate; 0 leaves it to cuBLAS */
    bool tags;        /* call the memshim app API (tags and step marks) */
};

/* Fill o from argv. Returns 0 to train, 1 after printing the usage for --help, or -1 after
 * printing what is wrong; all messages go to stderr. */
int options_parse(int argc, char **argv, struct options *o);

#endif /* MLP_OPTIONS_H */
