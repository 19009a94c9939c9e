/* Golden numbers for the analytic estimate, from the papers it implements. */
#include <criterion/criterion.h>
#include <math.h>

#include "estimate.h"

#define GB 1e9 /* the ZeRO paper's unit */

static struct estimate_config base(void)
{
    struct estimate_config c;
    estimate_config_defaults(&c);
    return c;
}

static void check(const struct estimate_config *c)
{
    char err[256];
    cr_assert_eq(estimate_config_check(c, err, sizeof err), 0, "%s", err);
}

/* ZeRO (Rajbhandari et al. 2020, arXiv:1910.02054), Figure 1: Ψ = 7.5B, N_d = 64, K = 12,
 * mixed-precision Adam. Baseline 120 GB, P_os 31.4 GB, P_os+g 16.6 GB, P_os+g+p 1.9 GB. */
Test(estimate_zero, figure1)
{
    static const double exact[] = {120e9, 31.40625e9, 16.640625e9, 1.875e9};
    static const double paper[] = {120.0, 31.4, 16.6, 1.9};
    for (unsigned stage = 0; stage <= 3; stage++) {
        struct estimate_config c = base();
        c.params = 7500000000;
        c.dp = 64;
        c.precision = ESTIMATE_FP16;
        c.zero = stage;
        check(&c);
        struct estimate_result r;
        estimate_compute(&c, &r);
        cr_expect_eq(r.total, (uint64_t)exact[stage], "stage %u: %llu", stage,
                     (unsigned long long)r.total);
        cr_expect_float_eq(round(r.total / GB * 10) / 10, paper[stage], 1e-9, "stage %u", stage);
        cr_expect_eq(r.bytes[MST_CAT_ACTIVATION], 0, "no architecture, no activations");
        cr_expect_eq(r.bytes[MST_CAT_TEMPORARY], 0);
    }
}

/* ZeRO §3.1: 2Ψ + 2Ψ + KΨ with K = 12; Megatron-LM accumulates gradients in fp32 (18 bytes),
 * and its distributed optimizer (ZeRO-1) holds 6 + 12/N_d bytes per parameter. */
Test(estimate_zero, bytes_per_parameter)
{
    struct estimate_config c = base();
    c.params = 1000000000;
    struct estimate_result r;
    estimate_compute(&c, &r);
    cr_expect_eq(r.total, 16 * c.params);
    cr_expect_float_eq(r.param_bytes + r.grad_bytes + r.optimizer_bytes, 16.0, 1e-12);

    c.grad_dtype = ESTIMATE_FP32;
    estimate_compute(&c, &r);
    cr_expect_eq(r.total, 18 * c.params);

    c.zero = 1;
    c.dp = 8;
    estimate_compute(&c, &r);
    cr_expect_eq(r.total, (uint64_t)((6 + 12.0 / 8) * 1e9));

    c = base();
    c.params = 1000000000;
    c.precision = ESTIMATE_FP32;
    estimate_compute(&c, &r);
    cr_expect_eq(r.total, 16 * c.params, "fp32 Adam: 4 + 4 + 8");
    c.optimizer = ESTIMATE_SGD;
    estimate_compute(&c, &r);
    cr_expect_eq(r.total, 8 * c.params, "fp32 SGD: 4 + 4");
    c.optimizer = ESTIMATE_SGD_MOMENTUM;
    estimate_compute(&c, &r);
    cr_expect_eq(r.total, 12 * c.params);

    /* 8-bit Adam: two 1-byte states plus one fp32 absmax per 2048-value block, on top of the
     * fp32 master copy: 2 + 2 + 4 + 2 x (1 + 4/2048). */
    c = base();
    c.params = 2048000000;
    c.optimizer = ESTIMATE_ADAM_8BIT;
    estimate_compute(&c, &r);
    cr_expect_eq(r.total, c.params * 10 + 2 * 4 * (c.params / 2048));
}

/* The GPT-3 175B row of Korthikanti et al. (arXiv:2205.05198) Table 3: a = 96, h = 12288,
 * L = 96, t = 8, p = 8, s = 2048, micro-batch 1, v = 51200 (their vocabulary). */
static struct estimate_config gpt3(void)
{
    struct estimate_config c = base();
    c.layers = 96;
    c.hidden = 12288;
    c.heads = 96;
    c.vocab = 51200;
    c.seq_len = 2048;
    c.micro_batch = 1;
    return c;
}

static double sbh(const struct estimate_config *c)
{
    return (double)c->seq_len * (double)c->micro_batch * (double)c->hidden;
}

/* Table 2, one row per configuration, per layer: for GPT-3 5as/h = 80 (§5). */
Test(estimate_korthikanti, table2_per_layer)
{
    struct {
        uint64_t t;
        int sp, recompute;
        double coefficient; /* bytes per layer / sbh */
    } rows[] = {
        {1, 0, ESTIMATE_RECOMPUTE_NONE, 34 + 80},                  /* Eq. 1 */
        {8, 0, ESTIMATE_RECOMPUTE_NONE, 10 + 24.0 / 8 + 80.0 / 8}, /* Eq. 2 */
        {8, 1, ESTIMATE_RECOMPUTE_NONE, 34.0 / 8 + 80.0 / 8},      /* Eq. 3 */
        {8, 0, ESTIMATE_RECOMPUTE_SELECTIVE, 10 + 24.0 / 8},
        {8, 1, ESTIMATE_RECOMPUTE_SELECTIVE, 34.0 / 8},
        {8, 0, ESTIMATE_RECOMPUTE_FULL, 2},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct estimate_config c = gpt3();
        c.tp = rows[i].t;
        c.sp = rows[i].sp;
        c.recompute = rows[i].recompute;
        check(&c);
        struct estimate_result r;
        estimate_compute(&c, &r);
        cr_expect_float_eq(r.layer_bytes, sbh(&c) * rows[i].coefficient, 1e-6, "row %zu: %f", i,
                           r.layer_bytes / sbh(&c));
    }
}

/* §5: selective recompute cuts the activation memory by 70% for GPT-3 (5as/h = 80) and by 65%
 * for MT-NLG 530B (a = 128, h = 20480, so 5as/h = 64). */
Test(estimate_korthikanti, selective_saving)
{
    struct estimate_config c = gpt3();
    struct estimate_result none, sel;
    estimate_compute(&c, &none);
    c.recompute = ESTIMATE_RECOMPUTE_SELECTIVE;
    estimate_compute(&c, &sel);
    cr_expect_eq(round(100 * (1 - sel.layer_bytes / none.layer_bytes)), 70);

    c.hidden = 20480;
    c.heads = 128;
    c.layers = 105;
    estimate_compute(&c, &sel);
    c.recompute = ESTIMATE_RECOMPUTE_NONE;
    estimate_compute(&c, &none);
    cr_expect_eq(round(100 * (1 - sel.layer_bytes / none.layer_bytes)), 65);
}

/* Eq. 4 and §4.3 for the first pipeline stage of GPT-3 175B with t = 8, p = 8, SP and
 * selective recompute (global batch 64, so 64 micro-batches and 8 in flight): the stage holds
 * L/p layers for p micro-batches, sbhL/t·34 bytes, plus the embedding-dropout mask sbhp/t; the
 * output layer lives on the last stage. */
Test(estimate_korthikanti, gpt3_first_stage)
{
    struct estimate_config c = gpt3();
    c.tp = 8;
    c.pp = 8;
    c.sp = 1;
    c.recompute = ESTIMATE_RECOMPUTE_SELECTIVE;
    c.grad_accum = 64;
    check(&c);
    struct estimate_result r;
    estimate_compute(&c, &r);
    cr_expect_eq(r.layers_per_stage, 12);
    cr_expect_eq(r.in_flight, 8);
    cr_expect_eq(r.act_layers, 10267656192ull); /* 2048·12288·96·34/8 */
    cr_expect_eq(r.act_embedding, 25165824ull); /* 2048·12288·8/8 */
    cr_expect_eq(r.act_output, 0);
    cr_expect_eq(r.bytes[MST_CAT_ACTIVATION], 10267656192ull + 25165824ull);

    /* Fewer micro-batches than stages: only that many are in flight. */
    c.grad_accum = 2;
    estimate_compute(&c, &r);
    cr_expect_eq(r.in_flight, 2);
    cr_expect_eq(r.act_layers, 10267656192ull / 4);
}

/* The 22B row of Table 3 (a = 64, h = 6144, L = 48, t = 8, p = 1): with p = 1 §4.3 adds the
 * final LayerNorm and output-layer inputs and the fp32 logits, 4sbh/t·(1 + v/h). */
Test(estimate_korthikanti, megatron_22b_with_output)
{
    struct estimate_config c = gpt3();
    c.layers = 48;
    c.hidden = 6144;
    c.heads = 64;
    c.tp = 8;
    c.sp = 1;
    c.recompute = ESTIMATE_RECOMPUTE_SELECTIVE;
    check(&c);
    struct estimate_result r;
    estimate_compute(&c, &r);
    double x = sbh(&c);
    cr_expect_float_eq((double)r.act_layers, x * 48 * 34 / 8, 1);
    cr_expect_float_eq((double)r.act_embedding, x / 8, 1);
    cr_expect_float_eq((double)r.act_output, 4 * x / 8 * (1 + 51200.0 / 6144), 1);
    cr_expect_eq(r.bytes[MST_CAT_ACTIVATION], 2627207168ull);
}

/* Full recompute keeps 2sbh per layer, and rebuilds one layer at a time during backward. */
Test(estimate_korthikanti, full_recompute)
{
    struct estimate_config c = gpt3();
    c.tp = 8;
    c.recompute = ESTIMATE_RECOMPUTE_FULL;
    c.vocab = 0;
    struct estimate_result r;
    estimate_compute(&c, &r);
    cr_expect_float_eq((double)r.act_layers, 2 * sbh(&c) * 96, 1);
    cr_expect_float_eq((double)r.act_recompute, sbh(&c) * (10 + 24.0 / 8 + 80.0 / 8), 1);
    c.sp = 1;
    estimate_compute(&c, &r);
    cr_expect_float_eq((double)r.act_layers, 2 * sbh(&c) * 96 / 8, 1);
}

/* FlashAttention stores no a·s² scores, only an fp32 log-sum-exp per head and query. */
Test(estimate_korthikanti, flash_removes_scores)
{
    struct estimate_config c = gpt3();
    c.flash = 1;
    struct estimate_result r;
    estimate_compute(&c, &r);
    double x = sbh(&c);
    cr_expect_float_eq(r.layer_bytes, 34 * x + 4.0 * 96 * 2048, 1e-6);
}

/* Gradient accumulation does not add activations (one micro-batch at a time without pipeline
 * parallelism), but it multiplies the tokens per step. */
Test(estimate_tokens, accumulation_and_budget)
{
    struct estimate_config c = gpt3();
    c.micro_batch = 4;
    c.dp = 16;
    struct estimate_result one, many;
    estimate_compute(&c, &one);
    c.grad_accum = 8;
    c.tokens = 1000000000;
    estimate_compute(&c, &many);
    cr_expect_eq(one.bytes[MST_CAT_ACTIVATION], many.bytes[MST_CAT_ACTIVATION]);
    cr_expect_eq(many.tokens_per_step, 4ull * 2048 * 8 * 16);
    cr_expect_eq(many.updates, (1000000000ull + 1048575) / 1048576); /* 954 */
    cr_expect_eq(many.updates, 954);
    cr_expect_eq(many.micro_steps, 954 * 8);
    cr_expect_float_eq(many.bytes_per_token, (double)many.total / (4.0 * 2048), 1e-6);
}

/* Parameter counts of published models. GPT-2 small: 124,439,808 (12 layers, 768 hidden,
 * vocab 50257, 1024 learned positions, biases, tied output). */
Test(estimate_params, gpt2_small)
{
    struct estimate_config c = base();
    c.layers = 12;
    c.hidden = 768;
    c.heads = 12;
    c.vocab = 50257;
    c.positions = 1024;
    c.seq_len = 1024;
    check(&c);
    struct estimate_result r;
    estimate_compute(&c, &r);
    cr_expect_eq(r.params_total, 124439808ull);
}

/* Llama-2-7B: 6,738,415,616 (32 layers, 4096 hidden, SwiGLU 11008, RMSNorm, no biases, vocab
 * 32000, untied output). */
static struct estimate_config llama2_7b(void)
{
    struct estimate_config c = base();
    c.layers = 32;
    c.hidden = 4096;
    c.heads = 32;
    c.ffn = 11008;
    c.vocab = 32000;
    c.gated_mlp = 1;
    c.bias = 0;
    c.norm = ESTIMATE_RMSNORM;
    c.tied_embeddings = 0;
    c.dropout = 0;
    c.seq_len = 4096;
    return c;
}

Test(estimate_params, llama2_7b)
{
    struct estimate_config c = llama2_7b();
    check(&c);
    struct estimate_result r;
    estimate_compute(&c, &r);
    cr_expect_eq(r.params_total, 6738415616ull);
}

/* KV cache, 2·L·kv_heads·head_dim·context·batch·bytes. Llama-2-7B in fp16: 0.5 MiB per token,
 * so 2 GiB for one 4096-token sequence. Llama-2-70B (80 layers, 8 KV heads of 128): 320 KiB
 * per token. */
Test(estimate_kv, llama2)
{
    struct estimate_config c = llama2_7b();
    c.mode = ESTIMATE_INFER;
    c.precision = ESTIMATE_FP16;
    c.kv_batch = 1;
    c.kv_context = 4096;
    check(&c);
    struct estimate_result r;
    estimate_compute(&c, &r);
    cr_expect_eq(r.bytes[MST_CAT_KV_CACHE], 2ull << 30);
    cr_expect_eq(r.kv_batch, 1);
    cr_expect_eq(r.kv_context, 4096);
    cr_expect_eq(r.bytes[MST_CAT_PARAMETER], 2 * 6738415616ull);
    cr_expect_eq(r.bytes[MST_CAT_GRADIENT] + r.bytes[MST_CAT_OPTIMIZER_STATE], 0);

    c.layers = 80;
    c.hidden = 8192;
    c.heads = 64;
    c.kv_heads = 8;
    c.ffn = 28672;
    check(&c);
    estimate_compute(&c, &r);
    cr_expect_eq(r.params_total, 68976648192ull, "Llama-2-70B");
    cr_expect_eq(r.bytes[MST_CAT_KV_CACHE], 327680ull * 4096);

    c.tp = 8; /* one KV head per rank */
    estimate_compute(&c, &r);
    cr_expect_eq(r.bytes[MST_CAT_KV_CACHE], 327680ull * 4096 / 8);
    c.kv_dtype = ESTIMATE_FP8;
    estimate_compute(&c, &r);
    cr_expect_eq(r.bytes[MST_CAT_KV_CACHE], 327680ull * 4096 / 16);
}

/* Serving: one sub-layer's live tensors while prefilling. Llama-2-7B, one 4096-token sequence:
 * without FlashAttention the attention sub-layer dominates (residual + norm 4h, Q K V and
 * output 8h at 2 bytes, the fp16 scores 2as), with it the SwiGLU MLP (3 x 11008 at 2 bytes). */
Test(estimate_kv, prefill_activation)
{
    struct estimate_config c = llama2_7b(); /* seq_len 4096, micro-batch 1: the KV defaults */
    c.mode = ESTIMATE_INFER;
    struct estimate_result r;
    estimate_compute(&c, &r);
    cr_expect_eq(r.kv_batch, 1);
    cr_expect_eq(r.kv_context, 4096);
    cr_expect_eq(r.bytes[MST_CAT_KV_CACHE], 2ull << 30);
    cr_expect_eq(r.act_layers, 4096ull * (4 * 4096 + 8 * 4096 + 2 * 32 * 4096));
    cr_expect_eq(r.act_output, 4 * 32000);
    c.flash = 1;
    estimate_compute(&c, &r);
    cr_expect_eq(r.act_layers, 4096ull * (4 * 4096 + 6 * 11008));
}

/* ZeRO-3 must gather one layer's full parameters to run it: reported as temporary. */
Test(estimate_zero, stage3_gathers_a_layer)
{
    struct estimate_config c = llama2_7b();
    c.zero = 3;
    c.dp = 8;
    struct estimate_result r;
    estimate_compute(&c, &r);
    cr_expect_eq(r.bytes[MST_CAT_TEMPORARY], 2 * r.layer_params);
    cr_expect_eq(r.bytes[MST_CAT_PARAMETER], (uint64_t)ceil(2 * 6738415616.0 / 8));
}

/* Tensor and pipeline parallelism: the first stage holds ceil(L/p) layers and the embedding,
 * all divided by t. */
Test(estimate_params, model_parallel_split)
{
    struct estimate_config c = llama2_7b();
    c.tp = 2;
    c.pp = 4;
    check(&c);
    struct estimate_result r;
    estimate_compute(&c, &r);
    double expect = (8.0 * (double)r.layer_params + 32000.0 * 4096) / 2;
    cr_expect_float_eq((double)r.params_rank, expect, 1);
}
