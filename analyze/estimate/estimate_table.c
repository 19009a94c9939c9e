/* The strategy x tokens table of `estimate --table`. See estimate_table.h. */
#include "estimate_table.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimate.h"
#include "estimate_cost.h"
#include "json.h"
#include "reader.h"
#include "table.h"

#define MAX_STRATEGIES 32
#define MAX_LIST       16
#define DEFAULT_LINK   50.0 /* GB/s each way, as whatif assumes */

typedef unsigned long long ull;

/* ---- strategies ---- */

static void fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* "tp8" -> 8, "tp" -> the default degree; -1 when the digits are not a degree. */
static int degree(const char *word, size_t prefix, uint64_t *out)
{
    if (word[prefix] == '\0') {
        *out = UINT64_MAX;
        return 0;
    }
    char *end;
    unsigned long long v = strtoull(word + prefix, &end, 10);
    if (*end || v < 1 || v > 65536 || word[prefix] < '1' || word[prefix] > '9')
        return -1;
    *out = v;
    return 0;
}

static int strategy_word(const char *w, struct estimate_strategy *s)
{
    if (!strcmp(w, "none"))
        return 0;
    if (!strcmp(w, "selective") || !strcmp(w, "full")) {
        s->recompute = w[0] == 's' ? ESTIMATE_RECOMPUTE_SELECTIVE : ESTIMATE_RECOMPUTE_FULL;
        return 0;
    }
    if (!strncmp(w, "zero", 4) && w[4] >= '1' && w[4] <= '3' && !w[5]) {
        s->zero = w[4] - '0';
        return 0;
    }
    if (!strcmp(w, "offload") || !strcmp(w, "offload-optimizer") || !strcmp(w, "offload-param")) {
        s->offload = w[8] == 'p' ? ESTIMATE_OFFLOAD_PARAM : ESTIMATE_OFFLOAD_OPTIMIZER;
        return 0;
    }
    if (!strcmp(w, "sp")) {
        s->sp = 1;
        return 0;
    }
    if (!strncmp(w, "tp", 2))
        return degree(w, 2, &s->tp);
    if (!strncmp(w, "pp", 2))
        return degree(w, 2, &s->pp);
    return -1;
}

int estimate_table_parse_strategy(const char *text, struct estimate_strategy *s, char *err,
                                  size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (strlen(text) >= sizeof s->name || !text[0]) {
        fail(err, errlen, "bad strategy '%s' (empty or longer than %zu characters)", text,
             sizeof s->name - 1);
        return -1;
    }
    snprintf(s->name, sizeof s->name, "%s", text);
    char words[sizeof s->name], *save = NULL;
    memcpy(words, s->name, sizeof words);
    for (char *w = strtok_r(words, "+", &save); w; w = strtok_r(NULL, "+", &save)) {
        if (strategy_word(w, s) != 0) {
            fail(err, errlen,
                 "bad word '%s' in strategy '%s' (accepted, joined by '+': none, selective, "
                 "full, zero1, zero2, zero3, offload, offload-param, tp, tpN, sp, pp, ppN)",
                 w, text);
            return -1;
        }
    }
    if (s->sp && !s->tp)
        s->tp = UINT64_MAX; /* sequence parallelism rides on tensor parallelism */
    return 0;
}

static uint64_t default_tp(const struct estimate_config *c)
{
    if (c->tp > 1)
        return c->tp;
    uint64_t kv = c->kv_heads ? c->kv_heads : c->heads;
    for (uint64_t t = 8; t > 1; t /= 2)
        if (c->heads % t == 0 && (kv % t == 0 || kv < t))
            return t;
    return 1;
}

void estimate_table_apply(const struct estimate_config *base, const struct estimate_strategy *st,
                          uint64_t b, uint64_t s, struct estimate_config *out)
{
    *out = *base;
    out->recompute = st->recompute;
    out->zero = (uint64_t)st->zero;
    out->offload = st->offload;
    out->sp = st->sp;
    out->tp = st->tp == UINT64_MAX ? default_tp(base) : st->tp ? st->tp : 1;
    out->pp = st->pp == UINT64_MAX ? (base->pp > 1 ? base->pp : 4) : st->pp ? st->pp : 1;
    out->micro_batch = b;
    out->seq_len = s;
    if (out->mode == ESTIMATE_INFER) {
        out->kv_batch = b;
        out->kv_context = s;
    }
}

/* ---- arguments ---- */

struct table_args {
    const char *config;
    const char *strategies;
    const char *micro_batches;
    const char *seq_lens;
    double link_gbps, tflops;
    int csv, json, help;
    size_t n;
    struct estimate_flag flags[128];
};

int estimate_table_requested(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--table"))
            return 1;
    return 0;
}

static int parse_double(const char *flag, const char *v, double *out)
{
    char *end;
    *out = strtod(v, &end);
    if (end == v || *end || !(*out > 0) || *out > 1e9) {
        fprintf(stderr, "estimate: %s: bad value '%s' (accepted: a positive number)\n", flag, v);
        return -1;
    }
    return 0;
}

/* The table's own flags that take a value. */
static const char *const value_flags[] = {"config",   "strategies", "micro-batches",
                                          "seq-lens", "link-gbps",  "tflops"};

static int is_value_flag(const char *name)
{
    for (size_t i = 0; i < sizeof value_flags / sizeof value_flags[0]; i++)
        if (!strcmp(name, value_flags[i]))
            return 1;
    return 0;
}

static int table_flag(const char *name, const char *value, struct table_args *a)
{
    const char **slots[] = {&a->config, &a->strategies, &a->micro_batches, &a->seq_lens};
    for (size_t i = 0; i < 4; i++) {
        if (!strcmp(name, value_flags[i])) {
            *slots[i] = value;
            return 0;
        }
    }
    double *rate = !strcmp(name, "link-gbps") ? &a->link_gbps : &a->tflops;
    return parse_double(!strcmp(name, "link-gbps") ? "--link-gbps" : "--tflops", value, rate);
}

static int is_switch(const char *name, struct table_args *a)
{
    static const char *names[] = {"table", "csv", "json", "help"};
    int ignored, *slots[] = {&ignored, &a->csv, &a->json, &a->help};
    for (size_t i = 0; i < 4; i++) {
        if (!strcmp(name, names[i])) {
            *slots[i] = 1;
            return 1;
        }
    }
    return 0;
}

static int bool_word(const char *key, const char *word)
{
    struct estimate_config probe;
    char ignored[8];
    estimate_config_defaults(&probe);
    return estimate_config_set(&probe, key, word, ignored, sizeof ignored) == 0;
}

static int value_of(int argc, char **argv, int *i, const char *eq, const char **value)
{
    if (eq)
        *value = eq + 1;
    else if (*i + 1 < argc)
        *value = argv[++*i];
    else {
        fprintf(stderr, "estimate: %s needs a value\n", argv[*i]);
        return -1;
    }
    return 0;
}

/* A config key: kept for estimate_config_set after the file is read. */
static int config_flag(int argc, char **argv, int *i, const char *name, const char *eq,
                       struct table_args *a)
{
    if (!estimate_config_has_key(name)) {
        fprintf(stderr, "estimate: unknown option '--%s' (see estimate --table --help)\n", name);
        return -1;
    }
    if (a->n == sizeof a->flags / sizeof a->flags[0]) {
        fprintf(stderr, "estimate: too many options\n");
        return -1;
    }
    const char *value = "yes";
    if (estimate_config_is_bool(name) && !eq) {
        if (*i + 1 < argc && bool_word(name, argv[*i + 1]))
            value = argv[++*i];
    } else if (value_of(argc, argv, i, eq, &value) != 0) {
        return -1;
    }
    snprintf(a->flags[a->n].key, sizeof a->flags[a->n].key, "%s", name);
    a->flags[a->n++].value = value;
    return 0;
}

static int parse_one(int argc, char **argv, int *i, struct table_args *a)
{
    const char *arg = argv[*i];
    if (strncmp(arg, "--", 2) != 0 || !arg[2]) {
        fprintf(stderr, "estimate: unexpected argument '%s'\n", arg);
        return -1;
    }
    char name[48];
    const char *eq = strchr(arg + 2, '=');
    size_t n = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), arg + 2);
    if (!eq && is_switch(name, a))
        return 0;
    if (is_value_flag(name)) {
        const char *value;
        if (value_of(argc, argv, i, eq, &value) != 0)
            return -1;
        return table_flag(name, value, a);
    }
    return config_flag(argc, argv, i, name, eq, a);
}

static int parse_args(int argc, char **argv, struct table_args *a)
{
    memset(a, 0, sizeof *a);
    a->link_gbps = DEFAULT_LINK;
    for (int i = 1; i < argc; i++)
        if (parse_one(argc, argv, &i, a) != 0)
            return -1;
    if (a->csv && a->json) {
        fprintf(stderr, "estimate: --csv and --json exclude each other\n");
        return -1;
    }
    return 0;
}

static int build_base(const struct table_args *a, struct estimate_config *c)
{
    if (estimate_config_build(c, a->config, a->flags, a->n) != 0)
        return -1;
    if (!c->layers || !c->hidden || !c->heads) {
        fprintf(stderr, "estimate: --table needs the architecture (layers, hidden, heads)\n");
        return -1;
    }
    return 0;
}

/* ---- rows and columns ---- */

static const char *train_strategies =
    "none,selective,full,zero1,zero2,zero3,zero2+offload,zero3+offload-param,zero3+full,tp,tp+sp,"
    "tp+sp+selective,pp,tp+sp+pp+selective,tp+sp+pp+full,zero1+tp+sp+pp+selective";
static const char *infer_strategies = "none,tp,pp,tp+pp";

static int parse_strategies(const char *list, struct estimate_strategy *out, size_t *n)
{
    char buf[2048], err[512], *save = NULL;
    if (strlen(list) >= sizeof buf) {
        fprintf(stderr, "estimate: --strategies: list too long\n");
        return -1;
    }
    memcpy(buf, list, strlen(list) + 1);
    *n = 0;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        if (*n == MAX_STRATEGIES) {
            fprintf(stderr, "estimate: --strategies: at most %d\n", MAX_STRATEGIES);
            return -1;
        }
        if (estimate_table_parse_strategy(w, &out[*n], err, sizeof err) != 0) {
            fprintf(stderr, "estimate: --strategies: %s\n", err);
            return -1;
        }
        ++*n;
    }
    if (*n == 0) {
        fprintf(stderr, "estimate: --strategies: empty list\n");
        return -1;
    }
    return 0;
}

static int parse_counts(const char *flag, const char *list, uint64_t *out, size_t *n)
{
    char buf[512], *save = NULL;
    snprintf(buf, sizeof buf, "%s", list);
    *n = 0;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        if (*n == MAX_LIST || estimate_parse_count(w, &out[*n]) != 0 || out[*n] == 0 ||
            out[*n] > (UINT64_C(1) << 26)) {
            fprintf(stderr,
                    "estimate: %s: bad list '%s' (accepted: up to %d whole numbers 1..%llu, "
                    "comma-separated)\n",
                    flag, list, MAX_LIST, (ull)(UINT64_C(1) << 26));
            return -1;
        }
        ++*n;
    }
    if (*n == 0) {
        fprintf(stderr, "estimate: %s: empty list\n", flag);
        return -1;
    }
    return 0;
}

struct grid {
    struct estimate_config base;
    struct estimate_strategy rows[MAX_STRATEGIES];
    size_t nrows;
    uint64_t b[MAX_LIST * MAX_LIST], s[MAX_LIST * MAX_LIST]; /* columns, by tokens */
    size_t ncols;
    size_t chosen; /* the column of the detail tables */
    double link_gbps, tflops;
};

/* Columns: every micro-batch x every sequence length, fewest tokens first. */
static int make_columns(const struct table_args *a, struct grid *g)
{
    uint64_t mb[MAX_LIST], sl[MAX_LIST];
    size_t nmb, nsl;
    char def[64];
    /* serving: the KV cache's shape is the chosen column when no batch shape is given */
    int serve = g->base.mode == ESTIMATE_INFER;
    uint64_t seq = g->base.seq_len ? g->base.seq_len : serve ? g->base.kv_context : 0;
    uint64_t batch = serve && g->base.kv_batch ? g->base.kv_batch : g->base.micro_batch;
    snprintf(def, sizeof def, "%llu", (ull)seq);
    if (!a->seq_lens && !seq) {
        fprintf(stderr, "estimate: --table needs seq_len or --seq-lens\n");
        return -1;
    }
    if (parse_counts("--micro-batches", a->micro_batches ? a->micro_batches : "1,2,4,8", mb,
                     &nmb) != 0 ||
        parse_counts("--seq-lens", a->seq_lens ? a->seq_lens : def, sl, &nsl) != 0)
        return -1;
    g->ncols = 0;
    for (size_t i = 0; i < nsl; i++) {
        for (size_t j = 0; j < nmb; j++) {
            size_t k = g->ncols++;
            /* insertion by tokens, then by sequence length */
            while (k > 0 && (g->b[k - 1] * g->s[k - 1] > mb[j] * sl[i] ||
                             (g->b[k - 1] * g->s[k - 1] == mb[j] * sl[i] && g->s[k - 1] > sl[i]))) {
                g->b[k] = g->b[k - 1];
                g->s[k] = g->s[k - 1];
                k--;
            }
            g->b[k] = mb[j];
            g->s[k] = sl[i];
        }
    }
    g->chosen = 0;
    for (size_t k = 0; k < g->ncols; k++)
        if (g->b[k] == batch && g->s[k] == seq)
            g->chosen = k;
    return 0;
}

struct cell {
    struct estimate_config c;
    struct estimate_result r;
    struct estimate_cost k;
};

static int compute_cell(const struct grid *g, size_t row, size_t col, struct cell *x)
{
    char err[512];
    estimate_table_apply(&g->base, &g->rows[row], g->b[col], g->s[col], &x->c);
    const struct estimate_strategy *st = &g->rows[row];
    if (x->c.mode == ESTIMATE_INFER && (st->recompute || st->zero)) {
        fprintf(stderr, "estimate: strategy '%s': recompute and ZeRO apply to training only\n",
                st->name);
        return -1;
    }
    if (estimate_config_check(&x->c, err, sizeof err) != 0) {
        fprintf(stderr, "estimate: strategy '%s': %s\n", g->rows[row].name, err);
        return -1;
    }
    estimate_compute(&x->c, &x->r);
    estimate_cost_compute(&x->c, &x->r, g->link_gbps, g->tflops, &x->k);
    return 0;
}

/* Every cell checked before anything is printed, so that an error leaves no partial table. */
static int check_all(const struct grid *g)
{
    struct cell x;
    for (size_t i = 0; i < g->nrows; i++)
        for (size_t j = 0; j < g->ncols; j++)
            if (compute_cell(g, i, j, &x) != 0)
                return -1;
    return 0;
}

/* ---- one row per cell: CSV and JSON ---- */

static const int categories[] = {MST_CAT_PARAMETER,  MST_CAT_GRADIENT, MST_CAT_OPTIMIZER_STATE,
                                 MST_CAT_ACTIVATION, MST_CAT_KV_CACHE, MST_CAT_TEMPORARY};
#define N_CATEGORIES (sizeof categories / sizeof categories[0])

enum field_kind { F_TEXT, F_UINT, F_REAL, F_BOOL };

struct field {
    const char *name;
    enum field_kind kind;
    const char *text;
    uint64_t u;
    double d;
};

#define MAX_FIELDS 40

static size_t add(struct field *f, size_t n, const char *name, enum field_kind kind, uint64_t u,
                  double d, const char *text)
{
    f[n] = (struct field){.name = name, .kind = kind, .u = u, .d = d, .text = text};
    return n + 1;
}

static size_t cell_fields(const struct grid *g, size_t row, const struct cell *x, struct field *f)
{
    static const char *rc[] = {"none", "selective", "full"};
    static const char *off[] = {"none", "optimizer", "param"};
    const struct estimate_config *c = &x->c;
    size_t n = 0;
    n = add(f, n, "strategy", F_TEXT, 0, 0, g->rows[row].name);
    n = add(f, n, "gpus", F_UINT, c->dp * c->tp * c->pp, 0, NULL);
    n = add(f, n, "dp", F_UINT, c->dp, 0, NULL);
    n = add(f, n, "tp", F_UINT, c->tp, 0, NULL);
    n = add(f, n, "pp", F_UINT, c->pp, 0, NULL);
    n = add(f, n, "sp", F_BOOL, (uint64_t)c->sp, 0, NULL);
    n = add(f, n, "zero", F_UINT, c->zero, 0, NULL);
    n = add(f, n, "recompute", F_TEXT, 0, 0, rc[c->recompute]);
    n = add(f, n, "offload", F_TEXT, 0, 0, off[c->offload]);
    n = add(f, n, "micro_batch", F_UINT, c->micro_batch, 0, NULL);
    n = add(f, n, "seq_len", F_UINT, c->seq_len, 0, NULL);
    n = add(f, n, "tokens_per_microbatch", F_UINT, x->r.tokens_per_micro, 0, NULL);
    n = add(f, n, "tokens_per_step", F_UINT, x->r.tokens_per_step, 0, NULL);
    for (size_t i = 0; i < N_CATEGORIES; i++)
        n = add(f, n, reader_category_name((unsigned)categories[i]), F_UINT,
                x->r.bytes[categories[i]], 0, NULL);
    n = add(f, n, "total", F_UINT, x->r.total, 0, NULL);
    n = add(f, n, "gpu_bytes", F_UINT, c->gpu, 0, NULL);
    n = add(f, n, "fits", c->gpu ? F_BOOL : F_TEXT, x->r.total <= c->gpu, 0, c->gpu ? NULL : "");
    n = add(f, n, "host_bytes", F_UINT, x->r.host_bytes, 0, NULL);
    n = add(f, n, "step_flops", F_REAL, 0, x->k.step_flops, NULL);
    n = add(f, n, "recompute_flops", F_REAL, 0, x->k.recompute_flops, NULL);
    n = add(f, n, "recompute_pct", F_REAL, 0, x->k.recompute_pct, NULL);
    n = add(f, n, "dp_bytes_sent", F_REAL, 0, x->k.dp_bytes, NULL);
    n = add(f, n, "tp_bytes_sent", F_REAL, 0, x->k.tp_bytes, NULL);
    n = add(f, n, "pp_bytes_sent", F_REAL, 0, x->k.pp_bytes, NULL);
    n = add(f, n, "host_link_bytes", F_REAL, 0, x->k.link_bytes, NULL);
    n = add(f, n, "host_link_s", F_REAL, 0, x->k.link_seconds, NULL);
    n = add(f, n, "step_s", F_REAL, 0, x->k.step_seconds, NULL);
    return n;
}

static void csv_value(FILE *out, const struct field *f)
{
    switch (f->kind) {
    case F_TEXT:
        fputs(f->text, out); /* strategy words and choices: no comma, quote or newline */
        break;
    case F_UINT:
        fprintf(out, "%llu", (ull)f->u);
        break;
    case F_REAL:
        fprintf(out, "%.17g", f->d);
        break;
    case F_BOOL:
        fputs(f->u ? "true" : "false", out);
        break;
    }
}

static void print_csv(FILE *out, const struct grid *g)
{
    struct field f[MAX_FIELDS];
    struct cell x;
    for (size_t i = 0; i < g->nrows; i++) {
        for (size_t j = 0; j < g->ncols; j++) {
            compute_cell(g, i, j, &x);
            size_t n = cell_fields(g, i, &x, f);
            for (size_t k = 0; i == 0 && j == 0 && k < n; k++)
                fprintf(out, "%s%s", f[k].name, k + 1 < n ? "," : "\n");
            for (size_t k = 0; k < n; k++) {
                csv_value(out, &f[k]);
                fputc(k + 1 < n ? ',' : '\n', out);
            }
        }
    }
}

static void json_value(struct json *j, const struct field *f)
{
    switch (f->kind) {
    case F_TEXT:
        if (f->text[0])
            json_string(j, f->name, f->text);
        else
            json_null(j, f->name);
        break;
    case F_UINT:
        json_uint(j, f->name, f->u);
        break;
    case F_REAL:
        json_double(j, f->name, f->d);
        break;
    case F_BOOL:
        json_bool(j, f->name, (int)f->u);
        break;
    }
}

static void print_json(FILE *out, const struct grid *g)
{
    struct json j;
    struct field f[MAX_FIELDS];
    struct cell x;
    json_init(&j, out, 0);
    json_begin_object(&j, NULL);
    json_string(&j, "mode", g->base.mode == ESTIMATE_TRAIN ? "train" : "infer");
    json_uint(&j, "gpu_bytes", g->base.gpu);
    json_double(&j, "link_gbps", g->link_gbps);
    json_double(&j, "tflops", g->tflops);
    json_begin_array(&j, "rows");
    for (size_t i = 0; i < g->nrows; i++) {
        for (size_t k = 0; k < g->ncols; k++) {
            compute_cell(g, i, k, &x);
            size_t n = cell_fields(g, i, &x, f);
            json_begin_object(&j, NULL);
            for (size_t m = 0; m < n; m++)
                json_value(&j, &f[m]);
            json_end_object(&j);
        }
    }
    json_end_array(&j);
    json_end_object(&j);
}

/* ---- text ---- */

/* "1.2 TB" style for bytes moved (decimal, as bandwidths are quoted); "-" for none. */
static const char *volume(double bytes, char *buf, size_t len)
{
    static const char *units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    size_t u = 0;
    if (!(bytes > 0))
        return "-";
    while (bytes >= 1000 && u + 1 < sizeof units / sizeof units[0]) {
        bytes /= 1000;
        u++;
    }
    snprintf(buf, len, "%.3g %s", bytes, units[u]);
    return buf;
}

static void print_memory(FILE *out, const struct grid *g)
{
    struct table *t = table_new(2 + g->ncols);
    struct cell x;
    char a[32];
    table_cell(t, "strategy");
    table_cell(t, "GPUs");
    for (size_t k = 0; k < g->ncols; k++)
        table_cell(t, "%llux%llu", (ull)g->b[k], (ull)g->s[k]);
    for (size_t i = 0; i < g->nrows; i++) {
        for (size_t k = 0; k < g->ncols; k++) {
            compute_cell(g, i, k, &x);
            if (k == 0) {
                table_cell(t, "%s", g->rows[i].name);
                table_cell(t, "%llu", (ull)(x.c.dp * x.c.tp * x.c.pp));
            }
            int over = x.c.gpu && x.r.total > x.c.gpu;
            table_cell(t, "%s%s", table_bytes(x.r.total, a, sizeof a), over ? " !" : "");
        }
    }
    table_print(t, out, 2);
    table_free(t);
}

static void print_categories(FILE *out, const struct grid *g)
{
    struct table *t = table_new(3 + N_CATEGORIES + 1);
    struct cell x;
    char a[32];
    table_cell(t, "strategy");
    for (size_t i = 0; i < N_CATEGORIES; i++)
        table_cell(t, "%s", reader_category_name((unsigned)categories[i]));
    table_cell(t, "total");
    table_cell(t, "fits");
    table_cell(t, "CPU (offload)");
    for (size_t i = 0; i < g->nrows; i++) {
        compute_cell(g, i, g->chosen, &x);
        table_cell(t, "%s", g->rows[i].name);
        for (size_t c = 0; c < N_CATEGORIES; c++)
            table_cell(t, "%s",
                       x.r.bytes[categories[c]] ? table_bytes(x.r.bytes[categories[c]], a, sizeof a)
                                                : "-");
        table_cell(t, "%s", table_bytes(x.r.total, a, sizeof a));
        table_cell(t, "%s", !x.c.gpu ? "-" : x.r.total <= x.c.gpu ? "yes" : "no");
        table_cell(t, "%s", x.r.host_bytes ? table_bytes(x.r.host_bytes, a, sizeof a) : "-");
    }
    table_print(t, out, 2);
    table_free(t);
}

static void print_prices(FILE *out, const struct grid *g)
{
    struct table *t = table_new(g->tflops > 0 ? 8 : 7);
    struct cell x;
    char a[32];
    static const char *head[] = {"strategy",       "recompute",     "dp sent/step",
                                 "tp sent/step",   "pp sent/step",  "host link/step",
                                 "host link time", "% of step time"};
    for (size_t i = 0; i < (g->tflops > 0 ? 8u : 7u); i++)
        table_cell(t, "%s", head[i]);
    for (size_t i = 0; i < g->nrows; i++) {
        compute_cell(g, i, g->chosen, &x);
        table_cell(t, "%s", g->rows[i].name);
        if (x.k.recompute_flops > 0)
            table_cell(t, "+%.1f%% FLOPs", x.k.recompute_pct);
        else
            table_cell(t, "-");
        table_cell(t, "%s", volume(x.k.dp_bytes, a, sizeof a));
        table_cell(t, "%s", volume(x.k.tp_bytes, a, sizeof a));
        table_cell(t, "%s", volume(x.k.pp_bytes, a, sizeof a));
        table_cell(t, "%s", volume(x.k.link_bytes, a, sizeof a));
        if (x.k.link_seconds > 0)
            table_cell(t, "%.3g s", x.k.link_seconds);
        else
            table_cell(t, "-");
        if (g->tflops > 0 && x.k.link_seconds > 0)
            table_cell(t, "%.0f%%", 100 * x.k.link_seconds / x.k.step_seconds);
        else if (g->tflops > 0)
            table_cell(t, "-");
    }
    table_print(t, out, 2);
    table_free(t);
}

static void print_text(FILE *out, const struct grid *g)
{
    char a[32];
    struct cell x;
    compute_cell(g, 0, g->chosen, &x);
    fprintf(out,
            "estimate table: %s, %llu layers, hidden %llu, %llu heads, dp %llu, "
            "accumulation %llu\n",
            g->base.mode == ESTIMATE_TRAIN ? "training" : "inference", (ull)g->base.layers,
            (ull)g->base.hidden, (ull)g->base.heads, (ull)g->base.dp, (ull)g->base.grad_accum);
    fprintf(out, "\nmemory per GPU by strategy (rows) and micro-batch x sequence (columns)");
    if (g->base.gpu)
        fprintf(out, "; \"!\" = over %s", table_bytes(g->base.gpu, a, sizeof a));
    fprintf(out, "\n");
    print_memory(out, g);
    fprintf(out, "\nby category at micro-batch %llu x sequence %llu:\n", (ull)g->b[g->chosen],
            (ull)g->s[g->chosen]);
    print_categories(out, g);
    fprintf(out, "\nprice per %s at micro-batch %llu x sequence %llu, per GPU (host link %g GB/s",
            g->base.mode == ESTIMATE_TRAIN ? "optimizer step" : "prefill of the batch",
            (ull)g->b[g->chosen], (ull)g->s[g->chosen], g->link_gbps);
    if (g->tflops > 0)
        fprintf(out, ", %g TFLOP/s", g->tflops);
    fprintf(out, "):\n");
    print_prices(out, g);
    if (g->base.dp == 1 && g->base.mode == ESTIMATE_TRAIN)
        fprintf(out, "\n  dp 1: ZeRO partitions over nothing; give --dp N to see its saving\n");
}

/* ---- the command ---- */

static void print_help(FILE *out)
{
    fprintf(out,
            "usage: memshim-analyze estimate --table [--config FILE] [--KEY VALUE]...\n"
            "         [--strategies LIST] [--micro-batches LIST] [--seq-lens LIST]\n"
            "         [--link-gbps G] [--tflops T] [--csv | --json]\n\n"
            "Memory per GPU for many strategies (rows) at many tokens per micro-batch\n"
            "(columns), by category, with what each strategy costs per optimizer step.\n"
            "Every --KEY of `estimate --help` sets the model; dp applies to every row.\n\n"
            "  --strategies LIST     comma-separated; each joins words with '+': none,\n"
            "                        selective, full, zero1, zero2, zero3, offload\n"
            "                        (optimizer, ZeRO-Offload), offload-param (ZeRO-Infinity),\n"
            "                        tp, tpN, sp, pp, ppN (tp: the config's tp, else 8/4/2;\n"
            "                        pp: the config's pp, else 4). default:\n"
            "                        %s\n"
            "  --micro-batches LIST  default 1,2,4,8\n"
            "  --seq-lens LIST       default the config's seq_len\n"
            "  --link-gbps G         host link for offload, GB/s each way (default %g)\n"
            "  --tflops T            GPU rate: offload time as a share of the step\n"
            "  --csv, --json         one row per strategy, micro-batch and sequence\n",
            train_strategies, DEFAULT_LINK);
}

int estimate_table_command(int argc, char **argv)
{
    struct table_args a;
    static struct grid g;
    if (parse_args(argc, argv, &a) != 0)
        return 2;
    if (a.help) {
        print_help(stdout);
        return 0;
    }
    memset(&g, 0, sizeof g);
    if (build_base(&a, &g.base) != 0 || make_columns(&a, &g) != 0)
        return 2;
    const char *list = a.strategies                    ? a.strategies
                       : g.base.mode == ESTIMATE_TRAIN ? train_strategies
                                                       : infer_strategies;
    if (parse_strategies(list, g.rows, &g.nrows) != 0)
        return 2;
    g.link_gbps = a.link_gbps;
    g.tflops = a.tflops;
    if (check_all(&g) != 0)
        return 2;
    if (a.csv)
        print_csv(stdout, &g);
    else if (a.json)
        print_json(stdout, &g);
    else
        print_text(stdout, &g);
    return fflush(stdout) == 0 ? 0 : 1;
}
