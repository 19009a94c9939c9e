/* estimate_formulas: see estimate_formulas.h. Published formulas: ZeRO for model states,
 * Korthikanti et al. for activations. */
#include "estimate_formulas.h"

#include "estimate.h"

#include <math.h>
#include <string.h>

/* bitsandbytes' 8-bit optimizers quantize each state block-wise, one fp32 absmax per block of
 * 2048 values (Dettmers et al. 2022, arXiv:2110.02861 §2). */
#define ADAM8BIT_BLOCK 2048.0

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* ---- shapes ---- */

struct shape {
    double L, h, a, q, kv, ffn, v; /* q, kv: widths of the query and of the key/value heads */
    double head_dim, kv_heads;
};

static struct shape shape_of(const struct estimate_config *c)
{
    struct shape s;
    s.L = (double)c->layers;
    s.h = (double)c->hidden;
    s.a = (double)c->heads;
    s.head_dim = c->head_dim ? (double)c->head_dim : s.h / s.a;
    s.kv_heads = c->kv_heads ? (double)c->kv_heads : s.a;
    s.q = s.a * s.head_dim;
    s.kv = s.kv_heads * s.head_dim;
    s.ffn = c->ffn ? (double)c->ffn : 4 * s.h;
    s.v = (double)c->vocab;
    return s;
}

static double dtype_bytes(int dtype, int fallback)
{
    switch (dtype) {
    case ESTIMATE_FP32:
        return 4;
    case ESTIMATE_BF16:
    case ESTIMATE_FP16:
        return 2;
    case ESTIMATE_FP8:
        return 1;
    default:
        return dtype_bytes(fallback, ESTIMATE_BF16);
    }
}

/* ---- parameters ---- */

static double norm_params(const struct estimate_config *c, double h)
{
    return c->norm == ESTIMATE_RMSNORM ? h : 2 * h; /* RMSNorm has no bias */
}

static double layer_params(const struct estimate_config *c, const struct shape *s)
{
    double attn = s->h * s->q + 2 * s->h * s->kv + s->q * s->h;
    double mlp = (c->gated_mlp ? 3 : 2) * s->h * s->ffn;
    if (c->bias) {
        attn += s->q + 2 * s->kv + s->h;
        mlp += (c->gated_mlp ? 2 : 1) * s->ffn + s->h;
    }
    return attn + mlp + 2 * norm_params(c, s->h);
}

/* Whole model and the most loaded rank. Megatron-LM's convention: the first pipeline stage
 * holds ceil(L/p) layers and the embedding, the last the output layer; with p = 1 one stage
 * holds all; tensor parallelism divides everything by t. */
static void count_params(const struct estimate_config *c, struct estimate_result *r)
{
    double t = (double)c->tp, p = (double)c->pp;
    if (!r->has_architecture) {
        r->params_total = c->params;
        r->params_rank = sat((double)c->params / (t * p));
        return;
    }
    struct shape s = shape_of(c);
    double layer = layer_params(c, &s);
    double embedding = s.v * s.h + (double)c->positions * s.h;
    double head = norm_params(c, s.h) + (c->tied_embeddings ? 0 : s.v * s.h);
    double total = s.L * layer + embedding + head;
    double rank = ((double)r->layers_per_stage * layer + embedding + (c->pp == 1 ? head : 0)) / t;
    if (c->params) { /* given count wins; keep the counted split across ranks */
        rank *= (double)c->params / total;
        total = (double)c->params;
    }
    r->layer_params = sat(round(layer));
    r->params_total = sat(round(total));
    r->params_rank = sat(rank);
}

/* ---- model states (ZeRO §3, §5) ---- */

static void per_param_bytes(const struct estimate_config *c, struct estimate_result *r)
{
    if (c->mode == ESTIMATE_INFER) {
        r->param_bytes = dtype_bytes(c->precision, ESTIMATE_BF16);
        r->grad_bytes = r->optimizer_bytes = 0;
        return;
    }
    int mixed = c->precision != ESTIMATE_FP32;
    int master = mixed && c->master_weights != 0;
    double state = mixed && !master ? 2 : 4; /* optimizer moments follow the master dtype */
    r->param_bytes = mixed ? 2 : 4;
    r->grad_bytes = dtype_bytes(c->grad_dtype, c->precision);
    double moments = 0;
    switch (c->optimizer) {
    case ESTIMATE_SGD:
        moments = 0;
        break;
    case ESTIMATE_SGD_MOMENTUM:
        moments = state;
        break;
    case ESTIMATE_ADAM:
        moments = 2 * state;
        break;
    case ESTIMATE_ADAM_8BIT:
        moments = 2 * (1 + 4 / ADAM8BIT_BLOCK);
        break;
    }
    r->optimizer_bytes = (master ? 4 : 0) + moments;
}

static void model_states(const struct estimate_config *c, struct estimate_result *r)
{
    double psi = (double)r->params_rank, nd = (double)c->dp;
    double param = psi * r->param_bytes, grad = psi * r->grad_bytes;
    double opt = psi * r->optimizer_bytes;
    if (c->mode == ESTIMATE_TRAIN) {
        /* P_os, P_os+g, P_os+g+p: each stage partitions one more state over N_d. */
        opt /= c->zero >= 1 ? nd : 1;
        grad /= c->zero >= 2 ? nd : 1;
        param /= c->zero >= 3 ? nd : 1;
    }
    if (c->mode == ESTIMATE_TRAIN && c->offload != ESTIMATE_OFFLOAD_NONE) {
        /* The CPU runs the optimizer on the fp32 state and receives the gradients as they are
         * reduced; the GPU keeps reduce buckets only, left out like other transient buffers. */
        double host = opt + grad + (c->offload == ESTIMATE_OFFLOAD_PARAM ? param : 0);
        r->host_bytes = sat(host);
        opt = grad = 0;
        param = c->offload == ESTIMATE_OFFLOAD_PARAM ? 0 : param;
    }
    r->bytes[MST_CAT_PARAMETER] = sat(param);
    r->bytes[MST_CAT_GRADIENT] = sat(grad);
    r->bytes[MST_CAT_OPTIMIZER_STATE] = sat(opt);
    /* ZeRO-3 gathers each layer's full parameters before using it (§5.3): at least one
     * layer's worth is resident beyond the shard. */
    int gathers = c->zero == 3 && (c->dp > 1 || c->offload == ESTIMATE_OFFLOAD_PARAM);
    if (c->mode == ESTIMATE_TRAIN && gathers && r->has_architecture)
        r->bytes[MST_CAT_TEMPORARY] = sat((double)r->layer_params / (double)c->tp * r->param_bytes);
}

/* ---- activations (Korthikanti et al. §4, Table 2) ---- */

struct act_setup {
    double s, b;    /* sequence, micro-batch */
    double e;       /* bytes per activation element */
    int dropout;    /* masks stored */
    int scores;     /* the a·s² attention-score tensors are stored */
    int flash;      /* FlashAttention: only its fp32 log-sum-exp per row is stored */
    int gated;      /* gated MLP: the first linear has two ffn-wide outputs */
    double t, sp_t; /* tensor-parallel divisor of the split part, and of the rest (SP) */
};

/* Bytes one layer stores for one micro-batch. Per token: the LayerNorm inputs, the inputs of
 * the QKV and first MLP linears and the two dropout masks stay whole under tensor parallelism
 * (the "10" of Eq. 2); Q, K, V, the attention output, the MLP's inner tensors and the scores
 * are split (the "24" and 5as/h). Sequence parallelism splits the rest too (Eq. 3). */
static double layer_bytes(const struct shape *sh, const struct act_setup *st)
{
    double whole = st->e * 4 * sh->h + (st->dropout ? 2 * sh->h : 0);
    /* Q, K, V and the attention output; fc1 output(s) and fc2 input. */
    double split = st->e * (2 * sh->q + 2 * sh->kv + (st->gated ? 3 : 2) * sh->ffn);
    double scores = 0;
    if (st->scores && st->flash)
        scores = 4 * sh->a; /* fp32 log-sum-exp per head and query */
    else if (st->scores)    /* softmax output, dropout mask and dropout output: 5as at 16 bit */
        scores = sh->a * st->s * (st->e + (st->dropout ? 1 + st->e : 0));
    return st->s * st->b * (whole / st->sp_t + (split + scores) / st->t);
}

static struct act_setup act_setup_of(const struct estimate_config *c, double s, double b)
{
    struct act_setup st;
    st.s = s;
    st.b = b;
    st.e = dtype_bytes(c->precision, ESTIMATE_BF16);
    st.dropout = c->dropout && c->mode == ESTIMATE_TRAIN;
    st.scores = c->recompute != ESTIMATE_RECOMPUTE_SELECTIVE;
    st.flash = c->flash;
    st.gated = c->gated_mlp;
    st.t = (double)c->tp;
    st.sp_t = c->sp ? (double)c->tp : 1;
    return st;
}

static void activations_train(const struct estimate_config *c, const struct shape *sh,
                              struct estimate_result *r)
{
    struct act_setup st = act_setup_of(c, (double)c->seq_len, (double)c->micro_batch);
    double sbh = st.s * st.b * sh->h;
    double layer = layer_bytes(sh, &st);
    if (c->recompute == ESTIMATE_RECOMPUTE_FULL) {
        /* Only each layer's input is kept (2sbh, /t with SP); backward rebuilds one layer
         * at a time, so one full layer is resident on top (Chen et al. 2016). */
        r->act_recompute = sat(layer);
        layer = st.e * sbh / st.sp_t;
    }
    r->layer_bytes = layer;
    double n = (double)r->layers_per_stage * (double)r->in_flight;
    r->act_layers = sat(n * layer);
    if (sh->v > 0 && st.dropout) /* §4.3: embedding dropout mask, sbhp/t */
        r->act_embedding = sat(sbh * (double)r->in_flight / st.sp_t);
    if (sh->v > 0 && c->pp == 1) /* §4.3: final norm and output inputs, fp32 logits */
        r->act_output = sat(2 * st.e * sbh / st.sp_t + 4 * st.s * st.b * sh->v / st.t);
}

/* Serving keeps nothing for a backward pass: tensors die as soon as they are consumed. The
 * transient peak is one sub-layer's live tensors while the whole KV batch is prefilled at once
 * (chunked prefill lowers it): the residual stream and its normalized copy, plus either Q, K, V,
 * the attention output and the scores, or the MLP's inner tensors. Then the fp32 logits of the
 * last position of every sequence. */
static void activations_infer(const struct estimate_config *c, const struct shape *sh,
                              struct estimate_result *r)
{
    double s = (double)c->kv_context, b = (double)c->kv_batch, t = (double)c->tp;
    double e = dtype_bytes(c->precision, ESTIMATE_BF16);
    double scores = c->flash ? 4 * sh->a : e * sh->a * s;
    double attention = e * (2 * sh->q + 2 * sh->kv) / t + scores / t;
    double mlp = e * (c->gated_mlp ? 3 : 2) * sh->ffn / t;
    r->layer_bytes = s * b * (e * 2 * sh->h + (attention > mlp ? attention : mlp));
    r->act_layers = sat(r->layer_bytes);
    r->act_output = sat(4 * b * sh->v / t);
}

/* ---- KV cache ---- */

static void kv_cache(const struct estimate_config *c, const struct shape *sh,
                     struct estimate_result *r)
{
    if (!c->kv_batch || !c->kv_context)
        return;
    /* Tensor parallelism splits the KV heads; with fewer KV heads than ranks each rank keeps
     * one (replicated), as Megatron-LM and vLLM do. */
    double heads = ceil(sh->kv_heads / (double)c->tp);
    double bytes = 2 * (double)r->layers_per_stage * heads * sh->head_dim * (double)c->kv_context *
                   (double)c->kv_batch * dtype_bytes(c->kv_dtype, c->precision);
    r->bytes[MST_CAT_KV_CACHE] = sat(bytes);
    r->kv_batch = c->kv_batch;
    r->kv_context = c->kv_context;
}

/* ---- all together ---- */

static struct estimate_config effective(const struct estimate_config *in)
{
    struct estimate_config c = *in;
    if (c.mode == ESTIMATE_INFER) {
        if (!c.kv_batch)
            c.kv_batch = c.micro_batch;
        if (!c.kv_context)
            c.kv_context = c.seq_len;
    }
    return c;
}

static void tokens(const struct estimate_config *c, struct estimate_result *r)
{
    r->tokens_per_micro = sat_mul(c->micro_batch, c->seq_len);
    if (c->mode == ESTIMATE_TRAIN)
        r->tokens_per_step = sat_mul(sat_mul(r->tokens_per_micro, c->grad_accum), c->dp);
    if (r->tokens_per_micro)
        r->bytes_per_token = (double)r->total / (double)r->tokens_per_micro;
    if (r->tokens_per_micro && r->in_flight)
        r->activation_per_token = (double)r->bytes[MST_CAT_ACTIVATION] /
                                  ((double)r->in_flight * (double)r->tokens_per_micro);
    if (c->tokens && r->tokens_per_step) {
        r->updates = c->tokens / r->tokens_per_step + (c->tokens % r->tokens_per_step != 0);
        r->micro_steps = sat_mul(r->updates, c->grad_accum);
    }
}

void estimate_compute(const struct estimate_config *in, struct estimate_result *r)
{
    struct estimate_config c = effective(in);
    memset(r, 0, sizeof *r);
    r->has_architecture = c.layers && c.hidden && c.heads;
    r->layers_per_stage = c.layers ? (c.layers + c.pp - 1) / c.pp : 0;
    if (c.mode == ESTIMATE_TRAIN)
        r->in_flight = c.grad_accum < c.pp ? c.grad_accum : c.pp;
    count_params(&c, r);
    per_param_bytes(&c, r);
    model_states(&c, r);
    if (r->has_architecture) {
        struct shape sh = shape_of(&c);
        if (c.mode == ESTIMATE_TRAIN)
            activations_train(&c, &sh, r);
        else
            activations_infer(&c, &sh, r);
        kv_cache(&c, &sh, r);
    }
    r->bytes[MST_CAT_ACTIVATION] =
        sat_add(sat_add(r->act_layers, r->act_embedding), sat_add(r->act_output, r->act_recompute));
    for (int i = 0; i < MST_CATEGORY_MAX; i++)
        r->total = sat_add(r->total, r->bytes[i]);
    tokens(&c, r);
}
