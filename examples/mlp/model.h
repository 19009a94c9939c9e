/* The MLP on the device: parameters, gradients and Adam state, and one training step split in
 * the phases a framework has. Memory follows PyTorch's pattern: parameters live for the whole
 * run, gradients from the first backward on, Adam moments from the first optimizer step on,
 * and each step's inputs, activations and temporaries are allocated in the step and freed
 * before it ends. Every CUDA or cuBLAS failure exits the program (check.h).
 */
#ifndef MLP_MODEL_H
#define MLP_MODEL_H

#include <cublas_api.h>

#include "options.h"

struct model_layer {
    long in, out;
    float *w, *b;             /* w is out x in, row-major (as torch.nn.Linear); b is out */
    float *dw, *db;           /* gradients */
    float *mw, *vw, *mb, *vb; /* Adam moments */
    float *z;                 /* this step's GEMM output; kept for backward only with GELU */
    float *a;                 /* this step's activation, the next layer's input */
};

struct model {
    long nlayers, batch, input, classes;
    int act;
    enum options_gemm gemm;
    float lr;
    long adam_steps;
    struct model_layer *layers;
    cublasHandle_t blas;
    void *workspace;
    /* This step's device buffers. */
    float *x;
    int *labels;
    float *logp;
    float *loss;
};

/* Returns 0, or -1 when out of host memory. Weights are initialized from o->seed. */
int model_init(struct model *m, const struct options *o);
void model_destroy(struct model *m);

/* Copy a batch (batch x input row-major, and its labels) to fresh device buffers. */
void model_load_batch(struct model *m, const float *x, const int *labels);
void model_forward(struct model *m);
void model_backward(struct model *m);
void model_optimizer_step(struct model *m);
/* Read this step's mean loss back to the host and free the last buffers of the step. */
float model_take_loss(struct model *m);

/* GEMMs one training step issues: one per layer forward, two per layer backward except the
 * first layer's input gradient, which nothing needs (as in PyTorch). */
long model_gemms_per_step(const struct model *m);

#endif /* MLP_MODEL_H */
