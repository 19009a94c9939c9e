/* estimate: the command (arguments, text and JSON reports, the micro-batch sweep, the
 * comparison with a measured trace). The formulas are in estimate_formulas.c; see estimate.h. */
#include "estimate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "estimate_formulas.h"
#include "estimate_table.h"
#include "json.h"
#include "model.h"
#include "reader.h"
#include "table.h"

/* ---- the command: arguments ---- */

#define ESTIMATE_MAX_FLAGS 128

struct estimate_args {
    const char *config;
    const char *trace;
    int json;
    int help;
    size_t n;
    struct estimate_flag flags[ESTIMATE_MAX_FLAGS];
};

/* Whether `word` is a yes/no value (so a yes/no flag may be followed by it or stand alone). */
static int is_bool_word(const char *key, const char *word)
{
    struct estimate_config probe;
    char ignored[8];
    estimate_config_defaults(&probe);
    return estimate_config_set(&probe, key, word, ignored, sizeof ignored) == 0;
}

static int take_value(int argc, char **argv, int *i, const char *eq, const char **value)
{
    if (eq) {
        *value = eq + 1;
        return 0;
    }
    if (*i + 1 >= argc) {
        fprintf(stderr, "estimate: %s needs a value\n", argv[*i]);
        return -1;
    }
    *value = argv[++*i];
    return 0;
}

static int parse_flag(int argc, char **argv, int *i, struct estimate_args *a)
{
    const char *arg = argv[*i] + 2, *eq = strchr(arg, '=');
    size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
    char name[48];
    if (n >= sizeof name)
        n = sizeof name - 1;
    memcpy(name, arg, n);
    name[n] = '\0';
    if (!strcmp(name, "help") || !strcmp(name, "json")) {
        *(name[0] == 'h' ? &a->help : &a->json) = 1;
        return 0;
    }
    if (!strcmp(name, "config") || !strcmp(name, "trace"))
        return take_value(argc, argv, i, eq, name[0] == 'c' ? &a->config : &a->trace);
    if (!estimate_config_has_key(name)) {
        char like[256];
        estimate_config_suggest(name, like, sizeof like);
        fprintf(stderr, "estimate: unknown option '--%s' (%s%s%s)\n", name,
                like[0] ? "did you mean " : "", like, like[0] ? "? see --help" : "see --help");
        return -1;
    }
    if (a->n == ESTIMATE_MAX_FLAGS) {
        fprintf(stderr, "estimate: more than %d options\n", ESTIMATE_MAX_FLAGS);
        return -1;
    }
    const char *value = "yes";
    if (estimate_config_is_bool(name) && !eq) {
        if (*i + 1 < argc && is_bool_word(name, argv[*i + 1]))
            value = argv[++*i];
    } else if (take_value(argc, argv, i, eq, &value) != 0) {
        return -1;
    }
    snprintf(a->flags[a->n].key, sizeof a->flags[a->n].key, "%s", name);
    a->flags[a->n++].value = value;
    return 0;
}

static int parse_args(int argc, char **argv, struct estimate_args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--", 2) != 0 || argv[i][2] == '\0') {
            fprintf(stderr, "estimate: unexpected argument '%s' (a trace goes after --trace)\n",
                    argv[i]);
            return -1;
        }
        if (parse_flag(argc, argv, &i, a) != 0)
            return -1;
    }
    return 0;
}

/* The file first, then the flags in order, so that a flag overrides the file. */
static int build_config(const struct estimate_args *a, struct estimate_config *c)
{
    char err[512];
    if (estimate_config_build(c, a->config, a->flags, a->n) != 0)
        return -1;
    if (estimate_config_check(c, err, sizeof err) != 0) {
        fprintf(stderr, "estimate: %s\n", err);
        return -1;
    }
    return 0;
}

/* ---- the command: text report ---- */

/* The categories the model produces, in report order. */
static const int estimate_categories[] = {MST_CAT_PARAMETER,       MST_CAT_GRADIENT,
                                          MST_CAT_OPTIMIZER_STATE, MST_CAT_ACTIVATION,
                                          MST_CAT_KV_CACHE,        MST_CAT_TEMPORARY};
#define N_CATEGORIES (sizeof estimate_categories / sizeof estimate_categories[0])

typedef unsigned long long ull;

static const char *bytes_str(double b, char *buf, size_t len)
{
    return table_bytes(sat(b), buf, len);
}

/* "7.50 B", "124.44 M": parameter and token counts as papers write them. */
static const char *count_str(double n, char *buf, size_t len)
{
    static const struct {
        double div;
        const char *unit;
    } units[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "k"}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (n >= units[i].div) {
            snprintf(buf, len, "%.2f %s", n / units[i].div, units[i].unit);
            return buf;
        }
    }
    snprintf(buf, len, "%.0f", n);
    return buf;
}

static const char *dtype_name(int dtype)
{
    static const char *names[] = {"fp32", "bf16", "fp16", "fp8"};
    return dtype >= 0 && dtype < 4 ? names[dtype] : "?";
}

static const char *optimizer_name(int o)
{
    static const char *names[] = {"sgd", "sgd+momentum", "adam", "adam 8-bit"};
    return o >= 0 && o < 4 ? names[o] : "?";
}

static void print_model(FILE *out, const struct estimate_config *c, const struct estimate_result *r)
{
    char a[32], b[32];
    fprintf(out, "estimate for one GPU: %s, %s parameters, %s on this rank\n",
            c->mode == ESTIMATE_TRAIN ? "training" : "inference",
            count_str((double)r->params_total, a, sizeof a),
            count_str((double)r->params_rank, b, sizeof b));
    if (r->has_architecture)
        fprintf(
            out,
            "  model     %llu layers, hidden %llu, %llu heads (%llu kv), ffn %llu, vocab %llu\n",
            (ull)c->layers, (ull)c->hidden, (ull)c->heads,
            (ull)(c->kv_heads ? c->kv_heads : c->heads), (ull)(c->ffn ? c->ffn : 4 * c->hidden),
            (ull)c->vocab);
    if (c->mode == ESTIMATE_TRAIN && c->seq_len)
        fprintf(out, "  batch     micro-batch %llu x sequence %llu, accumulation %llu, dp %llu\n",
                (ull)c->micro_batch, (ull)c->seq_len, (ull)c->grad_accum, (ull)c->dp);
    if (r->bytes[MST_CAT_KV_CACHE])
        fprintf(out, "  kv cache  %llu sequences x %llu tokens, %s\n", (ull)r->kv_batch,
                (ull)r->kv_context,
                dtype_name(c->kv_dtype == ESTIMATE_SAME ? c->precision : c->kv_dtype));
}

static void print_setup(FILE *out, const struct estimate_config *c, const struct estimate_result *r)
{
    static const char *rc[] = {"none", "selective", "full"};
    if (c->mode == ESTIMATE_INFER) {
        fprintf(out, "  setup     %s weights, tp %llu, pp %llu, flash %s\n",
                dtype_name(c->precision), (ull)c->tp, (ull)c->pp, c->flash ? "on" : "off");
        return;
    }
    int master = c->precision != ESTIMATE_FP32 && c->master_weights != 0;
    fprintf(out, "  setup     %s%s, %s: %g + %g + %g bytes/parameter, ZeRO %llu over dp %llu\n",
            dtype_name(c->precision), master ? " + fp32 master" : "", optimizer_name(c->optimizer),
            r->param_bytes, r->grad_bytes, r->optimizer_bytes, (ull)c->zero, (ull)c->dp);
    fprintf(out, "            tp %llu, pp %llu%s, recompute %s, flash %s\n", (ull)c->tp, (ull)c->pp,
            c->sp ? ", sequence parallel" : "", rc[c->recompute], c->flash ? "on" : "off");
}

static void print_table(FILE *out, const struct estimate_result *r)
{
    struct table *t = table_new(4);
    char b[32];
    table_cell(t, "category");
    table_cell(t, "estimate");
    table_cell(t, "bytes");
    table_cell(t, "%%");
    for (size_t i = 0; i < N_CATEGORIES; i++) {
        int cat = estimate_categories[i];
        if (cat == MST_CAT_TEMPORARY && !r->bytes[cat])
            continue;
        table_cell(t, "%s", reader_category_name((unsigned)cat));
        table_cell(t, "%s", table_bytes(r->bytes[cat], b, sizeof b));
        table_cell(t, "%llu", (ull)r->bytes[cat]);
        table_cell(t, "%s", table_percent(r->bytes[cat], r->total, b, sizeof b));
    }
    table_cell(t, "total");
    table_cell(t, "%s", table_bytes(r->total, b, sizeof b));
    table_cell(t, "%llu", (ull)r->total);
    table_cell(t, "%s", r->total ? "100.0%" : "-");
    fputc('\n', out);
    table_print(t, out, 2);
    table_free(t);
}

static void print_activation(FILE *out, const struct estimate_config *c,
                             const struct estimate_result *r)
{
    char a[32], b[32], d[32];
    if (!r->has_architecture) {
        fprintf(out, "  activation and KV cache need layers, hidden and heads\n");
        return;
    }
    if (c->mode == ESTIMATE_INFER) {
        fprintf(out,
                "  activation  prefill of %llu x %llu tokens: one sub-layer's live tensors %s, "
                "last-position logits %s\n",
                (ull)r->kv_batch, (ull)r->kv_context, bytes_str(r->layer_bytes, a, sizeof a),
                bytes_str((double)r->act_output, b, sizeof b));
        return;
    }
    fprintf(out, "  activation  %llu layers x %llu micro-batch%s x %s, embedding %s, output %s\n",
            (ull)r->layers_per_stage, (ull)r->in_flight, r->in_flight == 1 ? "" : "es",
            bytes_str(r->layer_bytes, a, sizeof a),
            bytes_str((double)r->act_embedding, b, sizeof b),
            c->pp > 1 ? "on the last stage" : bytes_str((double)r->act_output, d, sizeof d));
    if (r->act_recompute)
        fprintf(out, "              + one layer rebuilt during backward, %s\n",
                bytes_str((double)r->act_recompute, a, sizeof a));
    if (!c->vocab)
        fprintf(out, "              (no vocab: embedding, output layer and logits left out)\n");
    if (r->bytes[MST_CAT_TEMPORARY])
        fprintf(out, "  temporary   ZeRO-3 gathers one layer's parameters at a time, %s\n",
                bytes_str((double)r->bytes[MST_CAT_TEMPORARY], a, sizeof a));
}

static void print_fit(FILE *out, const struct estimate_config *c, const struct estimate_result *r)
{
    char a[32], b[32], p[32];
    if (r->host_bytes)
        fprintf(out, "  offload     %s of model states in CPU memory\n",
                table_bytes(r->host_bytes, a, sizeof a));
    if (!c->gpu)
        return;
    if (r->total <= c->gpu)
        fprintf(out, "  fits        in %s: yes, %s left (%s)\n", table_bytes(c->gpu, a, sizeof a),
                table_bytes(c->gpu - r->total, b, sizeof b),
                table_percent(c->gpu - r->total, c->gpu, p, sizeof p));
    else
        fprintf(out, "  fits        in %s: no, %s over\n", table_bytes(c->gpu, a, sizeof a),
                table_bytes(r->total - c->gpu, b, sizeof b));
}

static void print_tokens(FILE *out, const struct estimate_config *c,
                         const struct estimate_result *r)
{
    char a[32], b[32];
    if (c->mode != ESTIMATE_TRAIN || !r->tokens_per_micro)
        return;
    fprintf(out,
            "  tokens      %llu per step = micro-batch %llu x %llu x accumulation %llu x dp %llu\n",
            (ull)r->tokens_per_step, (ull)c->micro_batch, (ull)c->seq_len, (ull)c->grad_accum,
            (ull)c->dp);
    fprintf(out, "  per token   %s of the peak per token of a micro-batch, %s of activation\n",
            bytes_str(r->bytes_per_token, a, sizeof a),
            bytes_str(r->activation_per_token, b, sizeof b));
    if (c->tokens)
        fprintf(out,
                "  budget      %s tokens = %llu optimizer updates, %llu micro-batches per "
                "replica\n",
                count_str((double)c->tokens, a, sizeof a), (ull)r->updates, (ull)r->micro_steps);
}

/* ---- the command: micro-batch sweep ---- */

/* Memory against tokens per step: the same job at micro-batch 1, 2, 4, ..., up to twice the
 * chosen one, and on until it stops fitting when --gpu is given. */
static int sweep_next(const struct estimate_config *c, uint64_t mb, struct estimate_result *r)
{
    if (mb > (UINT64_C(1) << 20))
        return 0;
    if (mb > 2 * c->micro_batch) {
        struct estimate_config prev = *c;
        prev.micro_batch = mb / 2;
        estimate_compute(&prev, r);
        if (!c->gpu || r->total > c->gpu)
            return 0;
    }
    struct estimate_config s = *c;
    s.micro_batch = mb;
    estimate_compute(&s, r);
    return 1;
}

static void print_sweep(FILE *out, const struct estimate_config *c)
{
    static const char *head[] = {
        "micro-batch", "tokens/step", "activation", "total", "fits", "updates", ""};
    struct table *t = table_new(7);
    char a[32];
    struct estimate_result r;
    for (size_t i = 0; i < 7; i++)
        table_cell(t, "%s", head[i]);
    for (uint64_t mb = 1; sweep_next(c, mb, &r); mb *= 2) {
        table_cell(t, "%llu", (ull)mb);
        table_cell(t, "%llu", (ull)r.tokens_per_step);
        table_cell(t, "%s", table_bytes(r.bytes[MST_CAT_ACTIVATION], a, sizeof a));
        table_cell(t, "%s", table_bytes(r.total, a, sizeof a));
        table_cell(t, "%s", !c->gpu ? "-" : r.total <= c->gpu ? "yes" : "no");
        table_cell(t, "%llu", (ull)r.updates);
        table_cell(t, "%s", mb == c->micro_batch ? "<- chosen" : "");
    }
    fputc('\n', out);
    table_print(t, out, 2);
    table_free(t);
}

/* ---- the command: beside a measurement ---- */

struct measured {
    char path[4096];
    size_t traces;          /* traces replayed (ranks of a job) */
    struct model_peak peak; /* of the trace with the highest peak */
};

/* Replays every trace named (a directory: every rank) and keeps the highest peak, the rank a
 * per-GPU estimate must fit. Categories of `unknown` allocations are inferred by lifetime. */
static int measure(const char *operand, struct measured *m)
{
    char *argv[] = {(char *)operand};
    struct cli_traces t;
    if (cli_traces(1, argv, 0, &t) != 0)
        return -1;
    memset(m, 0, sizeof *m);
    struct model_options opt = {.refine = 1};
    int rc = 0;
    for (size_t i = 0; i < t.count && rc == 0; i++) {
        char err[512];
        struct model *md = model_replay(t.paths[i], &opt, NULL, err, sizeof err);
        if (!md) {
            fprintf(stderr, "estimate: %s\n", err);
            rc = -1;
            break;
        }
        if (model_reader_status(md) != READER_OK)
            fprintf(stderr, "estimate: warning: %s\n", model_reader_error(md));
        const struct model_peak *pk = model_peak(md);
        if (m->traces++ == 0 || pk->bytes > m->peak.bytes) {
            m->peak = *pk;
            snprintf(m->path, sizeof m->path, "%s", t.paths[i]);
        }
        model_free(md);
    }
    cli_traces_free(&t);
    return rc;
}

static void print_measured(FILE *out, const struct estimate_result *r, const struct measured *m)
{
    struct table *t = table_new(4);
    char a[32];
    fprintf(out, "\n  measured: %s, peak %s", m->path, table_bytes(m->peak.bytes, a, sizeof a));
    if (m->peak.step != MODEL_NO_STEP)
        fprintf(out, " in step %lld", (long long)m->peak.step);
    if (m->traces > 1)
        fprintf(out, " (highest of %zu traces)", m->traces);
    fprintf(out, "; ratio = measured / estimate\n");
    table_cell(t, "category");
    table_cell(t, "estimate");
    table_cell(t, "measured");
    table_cell(t, "ratio");
    for (int c = 1; c <= MST_CATEGORY_MAX; c++) {
        unsigned cat = (unsigned)(c % MST_CATEGORY_MAX); /* unknown last */
        uint64_t e = r->bytes[cat], got = m->peak.by_category[cat];
        if (!e && !got)
            continue;
        table_cell(t, "%s", reader_category_name(cat));
        table_cell(t, "%s", table_bytes(e, a, sizeof a));
        table_cell(t, "%s", table_bytes(got, a, sizeof a));
        if (e)
            table_cell(t, "%.2f", (double)got / (double)e);
        else
            table_cell(t, "-");
    }
    table_cell(t, "total");
    table_cell(t, "%s", table_bytes(r->total, a, sizeof a));
    table_cell(t, "%s", table_bytes(m->peak.bytes, a, sizeof a));
    table_cell(t, "%.2f", r->total ? (double)m->peak.bytes / (double)r->total : 0.0);
    table_print(t, out, 2);
    table_free(t);
}

/* ---- the command: JSON ---- */

static void json_inputs(struct json *j, const struct estimate_config *c)
{
    char buf[64];
    json_begin_object(j, "inputs");
    for (size_t i = 0; estimate_config_key(i); i++) {
        const char *v = estimate_config_format(c, i, buf, sizeof buf);
        if (estimate_config_is_number(i))
            json_uint(j, estimate_config_key(i), strtoull(v, NULL, 10));
        else
            json_string(j, estimate_config_key(i), v);
    }
    json_end_object(j);
}

static void json_fits(struct json *j, const struct estimate_config *c, uint64_t total)
{
    if (c->gpu)
        json_bool(j, "fits", total <= c->gpu);
    else
        json_null(j, "fits");
}

static void json_result(struct json *j, const struct estimate_config *c,
                        const struct estimate_result *r)
{
    json_uint(j, "params_total", r->params_total);
    json_uint(j, "params_per_rank", r->params_rank);
    json_uint(j, "layer_params", r->layer_params);
    json_begin_object(j, "bytes_per_param");
    json_double(j, "parameter", r->param_bytes);
    json_double(j, "gradient", r->grad_bytes);
    json_double(j, "optimizer_state", r->optimizer_bytes);
    json_end_object(j);
    json_begin_object(j, "by_category");
    for (size_t i = 0; i < N_CATEGORIES; i++)
        json_uint(j, reader_category_name((unsigned)estimate_categories[i]),
                  r->bytes[estimate_categories[i]]);
    json_end_object(j);
    json_begin_object(j, "activation_detail");
    json_uint(j, "layers_per_stage", r->layers_per_stage);
    json_uint(j, "microbatches_in_flight", r->in_flight);
    json_double(j, "layer_bytes", r->layer_bytes);
    json_uint(j, "layers", r->act_layers);
    json_uint(j, "embedding", r->act_embedding);
    json_uint(j, "output", r->act_output);
    json_uint(j, "recompute", r->act_recompute);
    json_end_object(j);
    json_begin_object(j, "kv_cache_detail");
    json_uint(j, "batch", r->kv_batch);
    json_uint(j, "context", r->kv_context);
    json_end_object(j);
    json_uint(j, "total_bytes", r->total);
    json_uint(j, "host_bytes", r->host_bytes);
    json_uint(j, "gpu_bytes", c->gpu);
    json_fits(j, c, r->total);
}

static void json_tokens(struct json *j, const struct estimate_config *c,
                        const struct estimate_result *r)
{
    json_uint(j, "tokens_per_microbatch", r->tokens_per_micro);
    json_uint(j, "tokens_per_step", r->tokens_per_step);
    json_double(j, "bytes_per_token", r->bytes_per_token);
    json_double(j, "activation_bytes_per_token", r->activation_per_token);
    if (!c->tokens || !r->tokens_per_step) {
        json_null(j, "token_budget");
        return;
    }
    json_begin_object(j, "token_budget");
    json_uint(j, "tokens", c->tokens);
    json_uint(j, "optimizer_updates", r->updates);
    json_uint(j, "micro_steps", r->micro_steps);
    json_end_object(j);
    if (!r->has_architecture)
        return;
    struct estimate_result s;
    json_begin_array(j, "sweep");
    for (uint64_t mb = 1; sweep_next(c, mb, &s); mb *= 2) {
        json_begin_object(j, NULL);
        json_uint(j, "micro_batch", mb);
        json_uint(j, "tokens_per_step", s.tokens_per_step);
        json_uint(j, "activation_bytes", s.bytes[MST_CAT_ACTIVATION]);
        json_uint(j, "total_bytes", s.total);
        json_fits(j, c, s.total);
        json_uint(j, "optimizer_updates", s.updates);
        json_end_object(j);
    }
    json_end_array(j);
}

static void json_measured(struct json *j, const struct estimate_result *r, const struct measured *m)
{
    json_begin_object(j, "trace");
    json_string(j, "path", m->path);
    json_uint(j, "traces", m->traces);
    json_uint(j, "peak_bytes", m->peak.bytes);
    if (m->peak.step == MODEL_NO_STEP)
        json_null(j, "peak_step");
    else
        json_int(j, "peak_step", m->peak.step);
    json_begin_object(j, "by_category");
    for (unsigned cat = 0; cat < MST_CATEGORY_MAX; cat++) {
        uint64_t e = r->bytes[cat], got = m->peak.by_category[cat];
        json_begin_object(j, reader_category_name(cat));
        json_uint(j, "estimate", e);
        json_uint(j, "measured", got);
        if (e)
            json_double(j, "ratio", (double)got / (double)e);
        else
            json_null(j, "ratio");
        json_end_object(j);
    }
    json_end_object(j);
    json_end_object(j);
}

/* ---- the command ---- */

static void print_help(FILE *out)
{
    fprintf(out, "usage: memshim-analyze estimate [--config FILE] [--KEY VALUE]... [--json] "
                 "[--trace TRACE]\n\n"
                 "Analytic memory of one GPU training or serving a decoder-only transformer, by\n"
                 "category. Every --KEY is also a config-file key (`key = value`, '#' comments);\n"
                 "flags override the file. Exit status 1 when --gpu is given and it does not "
                 "fit.\n\n");
    char buf[64];
    for (size_t i = 0; estimate_config_key(i); i++) {
        snprintf(buf, sizeof buf, "--%s", estimate_config_key(i));
        for (char *p = buf; *p; p++)
            *p = *p == '_' ? '-' : *p;
        fprintf(out, "  %-19s %s\n", buf, estimate_config_key_help(i));
    }
    fprintf(out, "  %-19s %s\n  %-19s %s\n  %-19s %s\n", "--config FILE", "read keys from FILE",
            "--json", "print one JSON object", "--trace TRACE",
            "compare with measured traces (a directory: the rank with the highest peak)");
    fprintf(out, "  %-19s %s\n", "--table",
            "strategies x tokens per micro-batch, with their costs (estimate --table --help)");
}

static void report_json(FILE *out, const struct estimate_config *c, const struct estimate_result *r,
                        const struct measured *m)
{
    struct json j;
    json_init(&j, out, 0);
    json_begin_object(&j, NULL);
    json_string(&j, "mode", c->mode == ESTIMATE_TRAIN ? "train" : "infer");
    json_inputs(&j, c);
    json_result(&j, c, r);
    json_tokens(&j, c, r);
    if (m)
        json_measured(&j, r, m);
    json_end_object(&j); /* the writer ends the top level with a newline */
}

static void report_text(FILE *out, const struct estimate_config *c, const struct estimate_result *r,
                        const struct measured *m)
{
    print_model(out, c, r);
    print_setup(out, c, r);
    print_table(out, r);
    fputc('\n', out);
    print_activation(out, c, r);
    print_fit(out, c, r);
    print_tokens(out, c, r);
    if (c->tokens && c->mode == ESTIMATE_TRAIN && r->has_architecture)
        print_sweep(out, c);
    if (m)
        print_measured(out, r, m);
}

int estimate_command(int argc, char **argv)
{
    struct estimate_args args;
    struct estimate_config c;
    if (estimate_table_requested(argc, argv))
        return estimate_table_command(argc, argv);
    if (parse_args(argc, argv, &args) != 0)
        return 2;
    if (args.help) {
        print_help(stdout);
        return 0;
    }
    if (build_config(&args, &c) != 0)
        return 2;
    struct estimate_result r;
    estimate_compute(&c, &r);
    struct measured m;
    if (args.trace && measure(args.trace, &m) != 0)
        return 1;
    if (args.json)
        report_json(stdout, &c, &r, args.trace ? &m : NULL);
    else
        report_text(stdout, &c, &r, args.trace ? &m : NULL);
    if (fflush(stdout) != 0)
        return 1;
    return c.gpu && r.total > c.gpu ? 1 : 0;
}
