/* mlp-train: trains an MLP on synthetic data with the CUDA runtime and cuBLAS, printing
 * "step N loss X" per step. Built twice from the same sources: mlp-train for a GPU (kernels by
 * nvcc) and mlp-train-sim for simcuda (kernels as host functions). It is the workload memshim's
 * tests run under the shim, so its memory behaves like a framework's (see model.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include <nvtx3/nvToolsExt.h>

#include "apptags.h"
#include "check.h"
#include "data.h"
#include "kernels.h"
#include "model.h"
#include "options.h"

struct host_batch {
    float *x;
    int *labels;
};

/* One training step inside the NVTX ranges memshim uses to find steps and phases. */
static float train_step(struct model *m, struct data *d, struct host_batch *hb, long step)
{
    char range[32];
    snprintf(range, sizeof(range), "step %ld", step);
    apptags_step_begin((uint64_t)step);
    nvtxRangePushA(range);
    data_next_batch(d, m->batch, hb->x, hb->labels);
    model_load_batch(m, hb->x, hb->labels);
    nvtxRangePushA("forward");
    model_forward(m);
    nvtxRangePop();
    nvtxRangePushA("backward");
    model_backward(m);
    nvtxRangePop();
    nvtxRangePushA("optimizer");
    model_optimizer_step(m);
    nvtxRangePop();
    float loss = model_take_loss(m);
    nvtxRangePop();
    return loss;
}

static long parameter_count(const struct model *m)
{
    long n = 0;
    for (long l = 0; l < m->nlayers; l++)
        n += m->layers[l].out * (m->layers[l].in + 1);
    return n;
}

static int train(const struct options *o, struct data *d, struct model *m)
{
    struct host_batch hb = {malloc(sizeof(float) * (size_t)(o->batch * o->input)),
                            malloc(sizeof(int) * (size_t)o->batch)};
    if (!hb.x || !hb.labels) {
        free(hb.x);
        free(hb.labels);
        return -1;
    }
    fprintf(stderr, "mlp-train: %ld layers, %ld parameters, %ld GEMMs per step\n", m->nlayers,
            parameter_count(m), model_gemms_per_step(m));
    for (long step = 1; step <= o->steps; step++)
        printf("step %ld loss %.9g\n", step, train_step(m, d, &hb, step));
    free(hb.x);
    free(hb.labels);
    return 0;
}

int main(int argc, char **argv)
{
    struct options o;
    int parsed = options_parse(argc, argv, &o);
    if (parsed)
        return parsed > 0 ? 0 : CHECK_EXIT_USAGE;
    apptags_enable(o.tags);
    CHECK_CUDA(kernels_register());

    struct data d;
    struct model m;
    if (data_init(&d, o.input, o.classes, o.seed) || model_init(&m, &o) || train(&o, &d, &m)) {
        fprintf(stderr, "mlp-train: out of host memory\n");
        return CHECK_EXIT_ERROR;
    }
    model_destroy(&m);
    data_destroy(&d);
    return fflush(stdout) ? CHECK_EXIT_ERROR : 0;
}
