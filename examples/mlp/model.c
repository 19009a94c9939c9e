/* The MLP: parameters and their lifetimes, forward, backward and Adam. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "data.h"
#include "device.h"
#include "model.h"

#define ADAM_BETA1 0.9f
#define ADAM_BETA2 0.999f
#define ADAM_EPS   1e-8f

static size_t floats(long n)
{
    return (size_t)n * sizeof(float);
}

/* ---- Lifecycle ---- */

/* torch.nn.Linear's default: w and b uniform in +-1/sqrt(in). */
static void init_layer(struct model_layer *ly, uint64_t *rng, float *host)
{
    float bound = 1.0f / sqrtf((float)ly->in);
    for (long i = 0; i < ly->out * ly->in; i++)
        host[i] = data_rng_uniform(rng, -bound, bound);
    ly->w = device_alloc(floats(ly->out * ly->in), "parameter");
    device_copy_to_device(ly->w, host, floats(ly->out * ly->in));
    for (long i = 0; i < ly->out; i++)
        host[i] = data_rng_uniform(rng, -bound, bound);
    ly->b = device_alloc(floats(ly->out), "parameter");
    device_copy_to_device(ly->b, host, floats(ly->out));
}

/* The host buffer that stages the weights holds the largest w (b is never larger). */
static int init_layers(struct model *m, const struct options *o)
{
    m->layers = calloc((size_t)m->nlayers, sizeof(*m->layers));
    if (!m->layers)
        return -1;
    long largest = 0;
    for (long l = 0; l < m->nlayers; l++) {
        struct model_layer *ly = &m->layers[l];
        ly->in = l == 0 ? o->input : o->hidden;
        ly->out = l == m->nlayers - 1 ? o->classes : o->hidden;
        if (ly->in * ly->out > largest)
            largest = ly->in * ly->out;
    }
    float *host = malloc(floats(largest));
    if (!host)
        return -1;
    uint64_t rng = o->seed;
    for (long l = 0; l < m->nlayers; l++)
        init_layer(&m->layers[l], &rng, host);
    free(host);
    return 0;
}

int model_init(struct model *m, const struct options *o)
{
    *m = (struct model){.nlayers = o->layers,
                        .batch = o->batch,
                        .input = o->input,
                        .classes = o->classes,
                        .act = o->act,
                        .gemm = o->gemm,
                        .lr = o->lr};
    CHECK_CUBLAS(cublasCreate_v2(&m->blas));
    if (o->workspace) {
        /* As PyTorch does: the framework owns the workspace and hands it to cuBLAS. */
        m->workspace = device_alloc(o->workspace, "workspace");
        CHECK_CUBLAS(cublasSetWorkspace_v2(m->blas, m->workspace, o->workspace));
    }
    return init_layers(m, o);
}

static void free_layer(struct model_layer *ly)
{
    float *bufs[] = {ly->w, ly->b, ly->dw, ly->db, ly->mw, ly->vw, ly->mb, ly->vb, ly->z, ly->a};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        device_free(bufs[i]);
    memset(ly, 0, sizeof(*ly));
}

void model_destroy(struct model *m)
{
    for (long l = 0; m->layers && l < m->nlayers; l++)
        free_layer(&m->layers[l]);
    free(m->layers);
    device_free(m->x);
    device_free(m->labels);
    device_free(m->logp);
    device_free(m->loss);
    CHECK_CUBLAS(cublasDestroy_v2(m->blas));
    device_free(m->workspace);
    memset(m, 0, sizeof(*m));
}

long model_gemms_per_step(const struct model *m)
{
    return 3 * m->nlayers - 1;
}

/* ---- Forward ---- */

void model_load_batch(struct model *m, const float *x, const int *labels)
{
    m->x = device_alloc(floats(m->batch * m->input), "input");
    device_copy_to_device(m->x, x, floats(m->batch * m->input));
    m->labels = device_alloc(sizeof(int) * (size_t)m->batch, "input");
    device_copy_to_device(m->labels, labels, sizeof(int) * (size_t)m->batch);
}

/* Log-softmax of the last layer's logits (kept for backward), and the mean loss. */
static void loss_forward(struct model *m, struct model_layer *last)
{
    long rows = m->batch, classes = m->classes;
    m->logp = device_alloc(floats(rows * classes), "activation");
    float *row_loss = device_alloc(floats(rows), "temporary");
    void *args[] = {&m->logp, &row_loss, &last->z, &last->b, &m->labels, &rows, &classes};
    device_launch(KERNELS_log_softmax_xent_fwd, rows, args);
    device_free(last->z);
    last->z = NULL;
    m->loss = device_alloc(sizeof(float), "temporary");
    void *mean_args[] = {&m->loss, &row_loss, &rows};
    device_launch(KERNELS_mean, 1, mean_args);
    device_free(row_loss);
}

static void hidden_forward(struct model *m, struct model_layer *ly)
{
    long rows = m->batch, cols = ly->out;
    int act = m->act;
    ly->a = device_alloc(floats(rows * cols), "activation");
    void *args[] = {&ly->a, &ly->z, &ly->b, &rows, &cols, &act};
    device_launch(KERNELS_bias_act_fwd, rows * cols, args);
    if (act == MLP_ACT_RELU) {
        /* ReLU's backward reads its output, so the GEMM output dies here. */
        device_free(ly->z);
        ly->z = NULL;
    }
}

void model_forward(struct model *m)
{
    const float *h = m->x;
    for (long l = 0; l < m->nlayers; l++) {
        struct model_layer *ly = &m->layers[l];
        /* A GEMM output that forward itself frees (the logits, ReLU's input) is no saved
         * activation: nothing of it is left for backward. */
        int saved = l < m->nlayers - 1 && m->act != MLP_ACT_RELU;
        ly->z = device_alloc(floats(m->batch * ly->out), saved ? "activation" : "temporary");
        device_gemm_linear(m->blas, m->gemm, ly->z, h, ly->w, m->batch, ly->in, ly->out);
        if (l == m->nlayers - 1)
            loss_forward(m, ly);
        else
            hidden_forward(m, ly);
        h = ly->a;
    }
}

/* ---- Backward ---- */

/* Gradient of the loss with respect to the logits; the log-probabilities die here. */
static float *loss_backward(struct model *m)
{
    long rows = m->batch, classes = m->classes;
    float *dz = device_alloc(floats(rows * classes), "temporary");
    void *args[] = {&dz, &m->logp, &m->labels, &rows, &classes};
    device_launch(KERNELS_xent_bwd, rows * classes, args);
    device_free(m->logp);
    m->logp = NULL;
    return dz;
}

/* Gradients are created by the first backward that produces them, then reused (overwritten). */
static void weight_backward(struct model *m, struct model_layer *ly, float *dz, const float *h)
{
    long rows = m->batch, cols = ly->out;
    if (!ly->dw) {
        ly->dw = device_alloc(floats(ly->out * ly->in), "gradient");
        ly->db = device_alloc(floats(ly->out), "gradient");
    }
    device_gemm_grad_weight(m->blas, m->gemm, ly->dw, dz, h, m->batch, ly->in, ly->out);
    void *args[] = {&ly->db, &dz, &rows, &cols};
    device_launch(KERNELS_bias_grad, cols, args);
}

/* From dz of layer ly to dz of the layer before it (prev), through prev's activation. Frees
 * dz and prev's saved activations. */
static float *input_backward(struct model *m, struct model_layer *ly, struct model_layer *prev,
                             float *dz)
{
    long rows = m->batch, cols = prev->out;
    int act = m->act;
    float *da = device_alloc(floats(rows * cols), "temporary");
    device_gemm_grad_input(m->blas, m->gemm, da, dz, ly->w, m->batch, ly->in, ly->out);
    device_free(dz);
    float *dz_prev = device_alloc(floats(rows * cols), "temporary");
    void *args[] = {&dz_prev, &da, &prev->a, &prev->z, &prev->b, &rows, &cols, &act};
    device_launch(KERNELS_act_bwd, rows * cols, args);
    device_free(da);
    device_free(prev->a);
    device_free(prev->z);
    prev->a = prev->z = NULL;
    return dz_prev;
}

void model_backward(struct model *m)
{
    float *dz = loss_backward(m);
    for (long l = m->nlayers - 1; l >= 0; l--) {
        struct model_layer *ly = &m->layers[l];
        weight_backward(m, ly, dz, l ? m->layers[l - 1].a : m->x);
        if (l > 0)
            dz = input_backward(m, ly, &m->layers[l - 1], dz);
    }
    device_free(dz);
    device_free(m->x);
    device_free(m->labels);
    m->x = NULL;
    m->labels = NULL;
}

/* ---- Optimizer ---- */

/* Adam's moments are created, zeroed, by the first optimizer step (as torch.optim.Adam). */
static float *moment_alloc(long n)
{
    float *p = device_alloc(floats(n), "optimizer_state");
    CHECK_CUDA(cudaMemset(p, 0, floats(n)));
    return p;
}

static void adam(struct model *m, float *p, const float *g, float *mom, float *var, long n)
{
    float lr = m->lr, beta1 = ADAM_BETA1, beta2 = ADAM_BETA2, eps = ADAM_EPS;
    float c1 = 1.0f / (1.0f - powf(ADAM_BETA1, (float)m->adam_steps));
    float c2 = 1.0f / (1.0f - powf(ADAM_BETA2, (float)m->adam_steps));
    void *args[] = {&p, &g, &mom, &var, &n, &lr, &beta1, &beta2, &eps, &c1, &c2};
    device_launch(KERNELS_adam, n, args);
}

void model_optimizer_step(struct model *m)
{
    m->adam_steps++;
    for (long l = 0; l < m->nlayers; l++) {
        struct model_layer *ly = &m->layers[l];
        if (!ly->mw) {
            ly->mw = moment_alloc(ly->out * ly->in);
            ly->vw = moment_alloc(ly->out * ly->in);
            ly->mb = moment_alloc(ly->out);
            ly->vb = moment_alloc(ly->out);
        }
        adam(m, ly->w, ly->dw, ly->mw, ly->vw, ly->out * ly->in);
        adam(m, ly->b, ly->db, ly->mb, ly->vb, ly->out);
    }
}

float model_take_loss(struct model *m)
{
    float loss;
    device_copy_to_host(&loss, m->loss, sizeof(loss));
    device_free(m->loss);
    m->loss = NULL;
    return loss;
}
