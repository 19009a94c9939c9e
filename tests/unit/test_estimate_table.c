/* estimate --table: offload, the prices of each strategy, and the table as users call it.
 * Every expected number is worked out by hand from the paper named beside it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_capture.h"
#include "estimate.h"
#include "estimate_cost.h"
#include "estimate_table.h"

#define run(out, ...) cli_capture((out), estimate_command, "estimate", __VA_ARGS__)

static struct cli_output o;

static struct estimate_config zero_fig1(unsigned stage)
{
    struct estimate_config c;
    estimate_config_defaults(&c);
    c.params = 7500000000;
    c.precision = ESTIMATE_FP16;
    c.dp = 64;
    c.zero = stage;
    return c;
}

static void compute(const struct estimate_config *c, struct estimate_result *r,
                    struct estimate_cost *k)
{
    char err[256];
    cr_assert_eq(estimate_config_check(c, err, sizeof err), 0, "%s", err);
    estimate_compute(c, r);
    estimate_cost_compute(c, r, 50, 0, k);
}

/* ZeRO-Offload (arXiv:2101.06840) §4.1, Fig. 2: the GPU keeps the fp16 parameters (2M), the
 * CPU the fp16 gradients (2M) and the fp32 parameters, momentum and variance (12M); per step
 * 2M of gradients go down and 2M of parameters come back. With Ψ = 7.5B on one GPU:
 * GPU 15 GB, CPU 105 GB, link 30 GB, 0.6 s at 50 GB/s. With N_d = 64 each process moves and
 * holds 1/64 of what the CPU holds: 1.640625 GB, link 0.46875 GB. */
Test(estimate_offload, zero_offload_optimizer)
{
    struct estimate_config c = zero_fig1(2);
    c.dp = 1;
    c.offload = ESTIMATE_OFFLOAD_OPTIMIZER;
    struct estimate_result r;
    struct estimate_cost k;
    compute(&c, &r, &k);
    cr_expect_eq(r.total, 15000000000ull);
    cr_expect_eq(r.bytes[MST_CAT_PARAMETER], 15000000000ull);
    cr_expect_eq(r.bytes[MST_CAT_GRADIENT], 0);
    cr_expect_eq(r.bytes[MST_CAT_OPTIMIZER_STATE], 0);
    cr_expect_eq(r.host_bytes, 105000000000ull);
    cr_expect_float_eq(k.link_bytes, 30e9, 1);
    cr_expect_float_eq(k.link_seconds, 0.6, 1e-12);

    c.dp = 64;
    compute(&c, &r, &k);
    cr_expect_eq(r.host_bytes, 1640625000ull);
    cr_expect_float_eq(k.link_bytes, 468750000.0, 1);
}

/* ZeRO-Infinity (arXiv:2104.07857) §4: the fp16 parameters are loaded for the forward and the
 * backward and the gradients stored once, 2 x 3 x Ψ bytes per step (45 GB for 7.5B); only the
 * layer in use is on the GPU. Everything else, 16 bytes per parameter, is in CPU memory. */
Test(estimate_offload, zero_infinity_params)
{
    struct estimate_config c = zero_fig1(3);
    c.dp = 1;
    c.offload = ESTIMATE_OFFLOAD_PARAM;
    struct estimate_result r;
    struct estimate_cost k;
    compute(&c, &r, &k);
    cr_expect_eq(r.total, 0, "no architecture: no layer to gather");
    cr_expect_eq(r.host_bytes, 120000000000ull);
    cr_expect_float_eq(k.link_bytes, 45e9, 1);

    c.params = 0;
    c.layers = 2;
    c.hidden = 64;
    c.heads = 4;
    c.seq_len = 16;
    compute(&c, &r, &k);
    /* One layer with biases and two LayerNorms: 12h² + 13h = 49984 parameters, fp16. */
    cr_expect_eq(r.bytes[MST_CAT_TEMPORARY], 2 * 49984);
    cr_expect_eq(r.bytes[MST_CAT_PARAMETER], 0);
}

Test(estimate_offload, needs_zero_and_training)
{
    struct estimate_config c = zero_fig1(0);
    char err[256];
    c.offload = ESTIMATE_OFFLOAD_OPTIMIZER;
    cr_expect_neq(estimate_config_check(&c, err, sizeof err), 0);
    cr_expect(strstr(err, "zero = 1, 2 or 3"), "%s", err);
    c.zero = 2;
    c.offload = ESTIMATE_OFFLOAD_PARAM;
    cr_expect_neq(estimate_config_check(&c, err, sizeof err), 0);
    cr_expect(strstr(err, "zero = 3"), "%s", err);
    run(&o, "--params", "1B", "--offload", "optimizer", "--zero", "2", NULL);
    cr_expect_eq(o.rc, 0, "%s", o.err);
    cr_expect(strstr(o.out, "offload     14.0 GiB of model states in CPU memory") ||
                  strstr(o.out, "of model states in CPU memory"),
              "%s", o.out);
}

/* ZeRO §7.2: data parallelism and ZeRO-1/2 send 2Ψ per step (reduce-scatter + all-gather),
 * ZeRO-3 3Ψ, each times (N_d - 1)/N_d on a ring. fp16, Ψ = 7.5B, N_d = 64:
 * 2·2·7.5e9·63/64 = 29.53125 GB and 3·2·7.5e9·63/64 = 44.296875 GB. */
Test(estimate_cost, data_parallel_volume)
{
    static const double want[] = {29.53125e9, 29.53125e9, 29.53125e9, 44.296875e9};
    for (unsigned stage = 0; stage <= 3; stage++) {
        struct estimate_config c = zero_fig1(stage);
        struct estimate_result r;
        struct estimate_cost k;
        compute(&c, &r, &k);
        cr_expect_float_eq(k.dp_bytes, want[stage], 1, "stage %u: %f", stage, k.dp_bytes);
    }
    /* Accumulating 4 micro-batches: ZeRO-2 reduce-scatters each one, ZeRO-3 also gathers. */
    struct estimate_config c = zero_fig1(2);
    c.grad_accum = 4;
    struct estimate_result r;
    struct estimate_cost k;
    compute(&c, &r, &k);
    cr_expect_float_eq(k.dp_bytes, (4 + 1) * 2 * 7.5e9 * 63 / 64, 1);
    c.zero = 3;
    compute(&c, &r, &k);
    cr_expect_float_eq(k.dp_bytes, 4 * 3 * 2 * 7.5e9 * 63 / 64, 1);
}

/* GPT-3 175B (Korthikanti Table 3 shapes): a = 96, h = 12288, L = 96, s = 2048, V = 51200. */
static struct estimate_config gpt3(void)
{
    struct estimate_config c;
    estimate_config_defaults(&c);
    c.layers = 96;
    c.hidden = 12288;
    c.heads = 96;
    c.vocab = 51200;
    c.seq_len = 2048;
    return c;
}

/* Narayanan et al. (arXiv:2104.04473) Eq. 3: with full recompute a step costs
 * 96·B·s·l·h²·(1 + s/6h + V/16lh) FLOPs; without, three forwards, 72·B·s·l·h²·(1 + s/6h +
 * V/12lh). For GPT-3 at B = 1 the recompute is 24(1 + s/6h)/(72(1 + s/6h + V/12lh)) = 33.2%.
 * Selective recompute (Korthikanti §4.2.2) redoes QKᵀ and the product with V, 4·B·s²·h per
 * layer: (s/18h)/(1 + s/6h + V/12lh) = 0.90%. */
Test(estimate_cost, recompute_flops)
{
    struct estimate_config c = gpt3();
    double B = 1, s = 2048, l = 96, h = 12288, V = 51200;
    double model = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    double hardware = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    struct estimate_result r;
    struct estimate_cost k;
    compute(&c, &r, &k);
    cr_expect_float_eq(k.step_flops / model, 1.0, 1e-12);
    cr_expect_eq(k.recompute_flops, 0);

    c.recompute = ESTIMATE_RECOMPUTE_FULL;
    compute(&c, &r, &k);
    cr_expect_float_eq((k.step_flops + k.recompute_flops) / hardware, 1.0, 1e-12);
    cr_expect_eq(round(k.recompute_pct * 10), 332, "%f", k.recompute_pct);

    c.recompute = ESTIMATE_RECOMPUTE_SELECTIVE;
    compute(&c, &r, &k);
    cr_expect_float_eq(k.recompute_flops, 4 * B * s * s * h * l, 1);
    cr_expect_eq(round(k.recompute_pct * 100), 90, "%f", k.recompute_pct);
    c.flash = 1; /* FlashAttention keeps no scores: selective recompute has nothing to redo */
    compute(&c, &r, &k);
    cr_expect_eq(k.recompute_flops, 0);
    c.flash = 0;

    /* t = 8, p = 8 share the work; accumulation 64 multiplies it; the share stays. */
    c.tp = c.pp = 8;
    c.grad_accum = 64;
    compute(&c, &r, &k);
    cr_expect_float_eq(k.step_flops / (model * 64 / 64), 1.0, 1e-12);
}

/* Narayanan §3.3: tensor parallelism moves 8·b·s·h·(t-1)/t elements per layer and micro-batch
 * (four all-reduces); full recompute repeats the forward's two. Pipeline parallelism sends
 * b·s·h each way per micro-batch, /t with sequence parallelism. bf16, b = 1, s = 2048. */
Test(estimate_cost, model_parallel_volume)
{
    struct estimate_config c = gpt3();
    c.tp = 8;
    double bsh = 2048.0 * 12288 * 2;
    struct estimate_result r;
    struct estimate_cost k;
    compute(&c, &r, &k);
    cr_expect_float_eq(k.tp_bytes, 96 * 8 * bsh * 7 / 8, 1);
    cr_expect_eq(k.pp_bytes, 0);
    c.recompute = ESTIMATE_RECOMPUTE_FULL;
    compute(&c, &r, &k);
    cr_expect_float_eq(k.tp_bytes, 96 * 12 * bsh * 7 / 8, 1);

    c.recompute = ESTIMATE_RECOMPUTE_NONE;
    c.pp = 8;
    c.sp = 1;
    c.grad_accum = 64;
    compute(&c, &r, &k);
    cr_expect_float_eq(k.tp_bytes, 64 * 12 * 8 * bsh * 7 / 8, 1, "12 layers a stage");
    cr_expect_float_eq(k.pp_bytes, 64 * 2 * bsh / 8, 1);
}

/* Serving runs one forward pass: the two all-reduces of the forward per layer, one pipeline
 * send. Llama-2-70B-like, t = 8, 16 sequences of 4096 tokens, bf16:
 * 80 layers x 2 x 2·7/8 x 16·4096·8192·2 bytes = 300.6 GB. */
Test(estimate_cost, serving_volume)
{
    struct estimate_config c;
    estimate_config_defaults(&c);
    c.mode = ESTIMATE_INFER;
    c.layers = 80;
    c.hidden = 8192;
    c.heads = 64;
    c.kv_heads = 8;
    c.seq_len = 4096;
    c.micro_batch = 16;
    c.tp = 8;
    struct estimate_result r;
    struct estimate_cost k;
    compute(&c, &r, &k);
    double bsh = 16.0 * 4096 * 8192 * 2;
    cr_expect_float_eq(k.tp_bytes, 80 * 2 * 2 * 7.0 / 8 * bsh, 1);
    cr_expect_eq(k.recompute_flops, 0);
    c.pp = 4;
    compute(&c, &r, &k);
    cr_expect_float_eq(k.pp_bytes, bsh, 1);
}

Test(estimate_table, strategy_words)
{
    struct estimate_strategy s;
    char err[512];
    cr_assert_eq(estimate_table_parse_strategy("zero3+offload-param+full", &s, err, sizeof err), 0);
    cr_expect_eq(s.zero, 3);
    cr_expect_eq(s.offload, ESTIMATE_OFFLOAD_PARAM);
    cr_expect_eq(s.recompute, ESTIMATE_RECOMPUTE_FULL);
    cr_assert_eq(estimate_table_parse_strategy("sp+pp2", &s, err, sizeof err), 0);
    cr_expect_eq(s.tp, UINT64_MAX, "sp brings tensor parallelism");
    cr_expect_eq(s.pp, 2);
    cr_expect_neq(estimate_table_parse_strategy("zero4", &s, err, sizeof err), 0);
    cr_expect(strstr(err, "bad word 'zero4' in strategy 'zero4' (accepted"), "%s", err);
    cr_expect_neq(estimate_table_parse_strategy("tp0", &s, err, sizeof err), 0);

    /* Default degrees: the config's, else the largest of 8/4/2 dividing the heads. */
    struct estimate_config base = gpt3(), c;
    base.heads = 12;
    base.hidden = 768;
    estimate_table_parse_strategy("tp+pp", &s, err, sizeof err);
    estimate_table_apply(&base, &s, 4, 512, &c);
    cr_expect_eq(c.tp, 4);
    cr_expect_eq(c.pp, 4);
    cr_expect_eq(c.micro_batch, 4);
    cr_expect_eq(c.seq_len, 512);
    base.tp = 2;
    estimate_table_apply(&base, &s, 4, 512, &c);
    cr_expect_eq(c.tp, 2);
    estimate_table_parse_strategy("none", &s, err, sizeof err);
    estimate_table_apply(&base, &s, 4, 512, &c);
    cr_expect_eq(c.tp, 1, "the config's tp is not the none row's");
}

static const char *config(const char *name)
{
    static char path[4][4096];
    static unsigned next;
    const char *src = getenv("MEMSHIM_SOURCE_DIR");
    cr_assert(src, "MEMSHIM_SOURCE_DIR is set by the test environment");
    char *p = path[next++ % 4];
    snprintf(p, sizeof path[0], "%s/examples/configs/%s", src, name);
    return p;
}

static size_t lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* The table as users call it: every cell is the estimate of the same job given alone. */
Test(estimate_table, command_matches_single_estimates)
{
    run(&o, "--table", "--config", config("gpt3-175b.conf"), "--dp", "16", "--strategies",
        "none,zero1+tp+sp+pp+selective", "--micro-batches", "1,2", "--seq-lens", "2048,4096",
        "--csv", NULL);
    cr_assert_eq(o.rc, 0, "%s", o.err);
    cr_expect_eq(lines(o.out), 1 + 2 * 4, "%s", o.out);
    cr_expect(strstr(o.out,
                     "strategy,gpus,dp,tp,pp,sp,zero,recompute,offload,micro_batch,"
                     "seq_len,tokens_per_microbatch,tokens_per_step,parameter,gradient,"
                     "optimizer_state,activation,kv_cache,temporary,total,gpu_bytes,fits,") ==
                  o.out,
              "%s", o.out);
    static struct cli_output one;
    cli_capture(&one, estimate_command, "estimate", "--config", config("gpt3-175b.conf"), "--dp",
                "16", "--zero", "1", "--sp", "--recompute", "selective", "--micro-batch", "2",
                "--seq-len", "4096", "--json", NULL);
    const char *t = strstr(one.out, "\"total_bytes\":");
    cr_assert(t, "%s", one.out);
    char want[128];
    snprintf(want, sizeof want,
             "zero1+tp+sp+pp+selective,1024,16,8,8,true,1,selective,none,2,4096,"
             "8192,");
    const char *row = strstr(o.out, want);
    cr_assert(row, "%s", o.out);
    unsigned long long total = strtoull(t + strlen("\"total_bytes\":"), NULL, 10);
    char cell[32];
    snprintf(cell, sizeof cell, ",%llu,", total);
    cr_expect(strstr(row, cell) && strstr(row, cell) < strchr(row, '\n'), "%llu in %s", total, row);
}

Test(estimate_table, text_and_errors)
{
    run(&o, "--table", "--config", config("llama2-70b-serve.conf"), "--micro-batches", "1,16",
        "--seq-lens", "4096", NULL);
    cr_assert_eq(o.rc, 0, "%s", o.err);
    cr_expect(strstr(o.out, "memory per GPU by strategy"), "%s", o.out);
    cr_expect(strstr(o.out, "16x4096"), "%s", o.out);
    /* KV cache, 2·80·(8/8 heads)·128·4096·16·2 bytes = 2.50 GiB on each of 8 GPUs. */
    cr_expect(strstr(o.out, "kv_cache"), "%s", o.out);
    run(&o, "--table", "--config", config("llama2-70b-serve.conf"), "--strategies", "tp",
        "--micro-batches", "16", "--seq-lens", "4096", "--json", NULL);
    cr_assert_eq(o.rc, 0, "%s", o.err);
    cr_expect(strstr(o.out, "\"kv_cache\":2684354560"), "%s", o.out);

    run(&o, "--table", "--layers", "2", "--hidden", "64", "--heads", "4", NULL);
    cr_expect_eq(o.rc, 2);
    cr_expect(strstr(o.err, "needs seq_len or --seq-lens"), "%s", o.err);
    run(&o, "--table", "--layers", "2", "--hidden", "64", "--heads", "4", "--seq-len", "8",
        "--strategies", "zero9", NULL);
    cr_expect_eq(o.rc, 2);
    cr_expect(strstr(o.err, "bad word 'zero9'"), "%s", o.err);
    cr_expect_eq(o.out[0], '\0', "nothing printed on error");
    run(&o, "--table", "--layers", "2", "--hidden", "64", "--heads", "3", "--seq-len", "8",
        "--strategies", "tp4", NULL);
    cr_expect_eq(o.rc, 2);
    cr_expect(strstr(o.err, "strategy 'tp4'"), "%s", o.err);
    run(&o, "--table", "--help", NULL);
    cr_expect_eq(o.rc, 0);
    cr_expect(strstr(o.out, "--strategies LIST"), "%s", o.out);
}
