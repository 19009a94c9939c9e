/* Inputs of `memshim-analyze estimate`: key table, value parsers, config files. */
#include "estimate_config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EC_VALUE_MAX 256 /* longest key or value a file line may hold */
#define EC_FILE_MAX  (1u << 20)

enum ec_type { EC_COUNT, EC_SIZE, EC_BOOL, EC_CHOICE };

struct ec_choice {
    const char *name; /* the first name of a value is the one written back */
    int value;
};

struct ec_key {
    const char *name;
    enum ec_type type;
    size_t offset;
    uint64_t min, max; /* counts */
    const struct ec_choice *choices;
    const char *help;
};

static const struct ec_choice mode_choices[] = {
    {"train", ESTIMATE_TRAIN},
    {"training", ESTIMATE_TRAIN},
    {"infer", ESTIMATE_INFER},
    {"inference", ESTIMATE_INFER},
    {NULL, 0},
};
static const struct ec_choice precision_choices[] = {
    {"bf16", ESTIMATE_BF16},
    {"fp16", ESTIMATE_FP16},
    {"fp32", ESTIMATE_FP32},
    {"bf16-mixed", ESTIMATE_BF16},
    {"fp16-mixed", ESTIMATE_FP16},
    {"float32", ESTIMATE_FP32},
    {NULL, 0},
};
static const struct ec_choice grad_choices[] = {
    {"same", ESTIMATE_SAME},
    {"fp32", ESTIMATE_FP32},
    {"bf16", ESTIMATE_BF16},
    {"fp16", ESTIMATE_FP16},
    {NULL, 0},
};
static const struct ec_choice kv_choices[] = {
    {"same", ESTIMATE_SAME},
    {"fp32", ESTIMATE_FP32},
    {"bf16", ESTIMATE_BF16},
    {"fp16", ESTIMATE_FP16},
    {"fp8", ESTIMATE_FP8},
    {"int8", ESTIMATE_FP8},
    {NULL, 0},
};
static const struct ec_choice optimizer_choices[] = {
    {"adam", ESTIMATE_ADAM},
    {"adamw", ESTIMATE_ADAM},
    {"sgd", ESTIMATE_SGD},
    {"sgd-momentum", ESTIMATE_SGD_MOMENTUM},
    {"momentum", ESTIMATE_SGD_MOMENTUM},
    {"adam8bit", ESTIMATE_ADAM_8BIT},
    {"adamw8bit", ESTIMATE_ADAM_8BIT},
    {"adam-8bit", ESTIMATE_ADAM_8BIT},
    {NULL, 0},
};
static const struct ec_choice recompute_choices[] = {
    {"none", ESTIMATE_RECOMPUTE_NONE},
    {"off", ESTIMATE_RECOMPUTE_NONE},
    {"selective", ESTIMATE_RECOMPUTE_SELECTIVE},
    {"full", ESTIMATE_RECOMPUTE_FULL},
    {NULL, 0},
};
static const struct ec_choice offload_choices[] = {
    {"none", ESTIMATE_OFFLOAD_NONE},
    {"off", ESTIMATE_OFFLOAD_NONE},
    {"optimizer", ESTIMATE_OFFLOAD_OPTIMIZER},
    {"cpu", ESTIMATE_OFFLOAD_OPTIMIZER},
    {"param", ESTIMATE_OFFLOAD_PARAM},
    {"params", ESTIMATE_OFFLOAD_PARAM},
    {NULL, 0},
};
static const struct ec_choice norm_choices[] = {
    {"layernorm", ESTIMATE_LAYERNORM},
    {"rmsnorm", ESTIMATE_RMSNORM},
    {NULL, 0},
};

#define OFF(f) offsetof(struct estimate_config, f)
#define BIG    (UINT64_C(1) << 50)

/* The order is the order of the help text and the JSON echo. */
static const struct ec_key keys[] = {
    {"params", EC_COUNT, OFF(params), 1, BIG, NULL, "total parameters (7.5B, 350M, 1.3e9)"},
    {"layers", EC_COUNT, OFF(layers), 1, 1u << 20, NULL, "transformer layers"},
    {"hidden", EC_COUNT, OFF(hidden), 1, 1u << 24, NULL, "hidden size"},
    {"heads", EC_COUNT, OFF(heads), 1, 1u << 16, NULL, "attention heads"},
    {"kv_heads", EC_COUNT, OFF(kv_heads), 1, 1u << 16, NULL,
     "key/value heads (GQA); default heads"},
    {"head_dim", EC_COUNT, OFF(head_dim), 1, 1u << 16, NULL, "head size; default hidden/heads"},
    {"ffn", EC_COUNT, OFF(ffn), 1, 1u << 26, NULL, "MLP inner size; default 4*hidden"},
    {"vocab", EC_COUNT, OFF(vocab), 1, 1u << 26, NULL, "vocabulary size; default none"},
    {"positions", EC_COUNT, OFF(positions), 1, 1u << 26, NULL,
     "learned position rows; default none"},
    {"gated_mlp", EC_BOOL, OFF(gated_mlp), 0, 0, NULL, "SwiGLU MLP (3 matrices); default no"},
    {"bias", EC_BOOL, OFF(bias), 0, 0, NULL, "linear layers have biases; default yes"},
    {"tied_embeddings", EC_BOOL, OFF(tied_embeddings), 0, 0, NULL,
     "output layer shares the embedding; default yes"},
    {"dropout", EC_BOOL, OFF(dropout), 0, 0, NULL, "dropout layers (1-byte masks); default yes"},
    {"norm", EC_CHOICE, OFF(norm), 0, 0, norm_choices, "layernorm | rmsnorm"},
    {"seq_len", EC_COUNT, OFF(seq_len), 1, 1u << 26, NULL, "sequence length s"},
    {"micro_batch", EC_COUNT, OFF(micro_batch), 1, 1u << 26, NULL, "micro-batch b; default 1"},
    {"grad_accum", EC_COUNT, OFF(grad_accum), 1, 1u << 30, NULL,
     "micro-batches per optimizer step; default 1"},
    {"mode", EC_CHOICE, OFF(mode), 0, 0, mode_choices, "train | infer"},
    {"precision", EC_CHOICE, OFF(precision), 0, 0, precision_choices,
     "bf16 | fp16 (mixed, fp32 master) | fp32"},
    {"master_weights", EC_BOOL, OFF(master_weights), 0, 0, NULL,
     "fp32 master copy with bf16/fp16; default yes"},
    {"grad_dtype", EC_CHOICE, OFF(grad_dtype), 0, 0, grad_choices, "same | fp32 | bf16 | fp16"},
    {"optimizer", EC_CHOICE, OFF(optimizer), 0, 0, optimizer_choices,
     "adam | adamw | sgd | momentum | adam8bit"},
    {"zero", EC_COUNT, OFF(zero), 0, 3, NULL, "ZeRO stage 0-3"},
    {"dp", EC_COUNT, OFF(dp), 1, 1u << 24, NULL, "data-parallel size"},
    {"tp", EC_COUNT, OFF(tp), 1, 1u << 16, NULL, "tensor-parallel size"},
    {"pp", EC_COUNT, OFF(pp), 1, 1u << 16, NULL, "pipeline-parallel size"},
    {"sp", EC_BOOL, OFF(sp), 0, 0, NULL, "sequence parallelism; default no"},
    {"recompute", EC_CHOICE, OFF(recompute), 0, 0, recompute_choices, "none | selective | full"},
    {"flash", EC_BOOL, OFF(flash), 0, 0, NULL, "FlashAttention; default no"},
    {"offload", EC_CHOICE, OFF(offload), 0, 0, offload_choices,
     "none | optimizer (ZeRO-Offload) | param (ZeRO-Infinity, CPU)"},
    {"kv_batch", EC_COUNT, OFF(kv_batch), 1, 1u << 26, NULL, "sequences in the KV cache"},
    {"kv_context", EC_COUNT, OFF(kv_context), 1, 1u << 30, NULL, "tokens per sequence cached"},
    {"kv_dtype", EC_CHOICE, OFF(kv_dtype), 0, 0, kv_choices, "same | bf16 | fp16 | fp32 | fp8"},
    {"gpu", EC_SIZE, OFF(gpu), 0, 0, NULL, "device memory (80g, 79.2GiB)"},
    {"tokens", EC_COUNT, OFF(tokens), 1, BIG, NULL, "token budget (1e9, 300B)"},
};
#define EC_KEYS (sizeof keys / sizeof keys[0])
_Static_assert(EC_KEYS <= 64, "`given` is a 64-bit mask");

static void fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

void estimate_config_defaults(struct estimate_config *c)
{
    memset(c, 0, sizeof *c);
    c->micro_batch = 1;
    c->grad_accum = 1;
    c->dp = c->tp = c->pp = 1;
    c->precision = ESTIMATE_BF16;
    c->master_weights = -1;
    c->grad_dtype = ESTIMATE_SAME;
    c->kv_dtype = ESTIMATE_SAME;
    c->optimizer = ESTIMATE_ADAM;
    c->bias = 1;
    c->tied_embeddings = 1;
    c->dropout = 1;
}

/* ---- value parsers ---- */

/* A non-negative decimal with optional fraction and exponent, then a suffix; no sign, no hex,
 * no inf/nan (strtod would accept all of those). */
static int parse_number(const char *s, double *val, const char **suffix)
{
    const char *p = s;
    if (!isdigit((unsigned char)*p) && *p != '.')
        return -1;
    while (isdigit((unsigned char)*p) || *p == '.')
        p++;
    if ((*p == 'e' || *p == 'E') && (isdigit((unsigned char)p[1]) || p[1] == '+' || p[1] == '-'))
        p += 2;
    while (isdigit((unsigned char)*p))
        p++;
    char buf[64];
    size_t n = (size_t)(p - s);
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    *val = strtod(buf, &end);
    if (errno || *end != '\0' || !isfinite(*val))
        return -1;
    *suffix = p;
    return 0;
}

static int to_u64(double v, uint64_t *out)
{
    /* Values are counts and bytes: they must come out whole (7.5B is, 2.5 layers is not). */
    if (v < 0 || v >= 0x1p63 || v != floor(v))
        return -1;
    *out = (uint64_t)v;
    return 0;
}

int estimate_parse_count(const char *s, uint64_t *out)
{
    double v;
    const char *suf;
    if (parse_number(s, &v, &suf) != 0)
        return -1;
    static const struct {
        char c;
        double mult;
    } units[] = {{'k', 1e3}, {'K', 1e3}, {'m', 1e6}, {'M', 1e6},  {'b', 1e9},
                 {'B', 1e9}, {'g', 1e9}, {'G', 1e9}, {'t', 1e12}, {'T', 1e12}};
    if (*suf) {
        size_t i = 0;
        while (i < sizeof units / sizeof units[0] && units[i].c != *suf)
            i++;
        if (i == sizeof units / sizeof units[0] || suf[1] != '\0')
            return -1;
        v *= units[i].mult;
    }
    return to_u64(v, out);
}

int estimate_parse_size(const char *s, uint64_t *out)
{
    double v;
    const char *suf;
    if (parse_number(s, &v, &suf) != 0)
        return -1;
    if (*suf) {
        const char *u = strchr("kmgt", tolower((unsigned char)*suf));
        if (!u)
            return -1;
        v = ldexp(v, 10 * (int)(u - "kmgt" + 1));
        suf++;
        if (tolower((unsigned char)*suf) == 'i')
            suf++;
        if (tolower((unsigned char)*suf) == 'b')
            suf++;
        if (*suf)
            return -1;
    }
    /* "79.2g" is not a whole number of bytes; round it, as nobody means a fraction of one. */
    return to_u64(floor(v + 0.5), out);
}

static int parse_bool(const char *s, int *out)
{
    static const char *yes[] = {"yes", "on", "true", "1"};
    static const char *no[] = {"no", "off", "false", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0)
            return *out = 1, 0;
        if (strcasecmp(s, no[i]) == 0)
            return *out = 0, 0;
    }
    return -1;
}

/* Choice names compare case-insensitively with '-' and '_' alike. */
static int same_name(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char x = (char)tolower((unsigned char)*a), y = (char)tolower((unsigned char)*b);
        if (x == '_')
            x = '-';
        if (y == '_')
            y = '-';
        if (x != y)
            return 0;
    }
    return *a == *b;
}

static int parse_choice(const struct ec_choice *ch, const char *s, int *out)
{
    for (; ch->name; ch++) {
        if (same_name(ch->name, s))
            return *out = ch->value, 0;
    }
    return -1;
}

/* ---- keys ---- */

static int find_key(const char *name)
{
    for (size_t i = 0; i < EC_KEYS; i++) {
        if (same_name(keys[i].name, name))
            return (int)i;
    }
    return -1;
}

static void accepted(const struct ec_key *k, char *buf, size_t len)
{
    switch (k->type) {
    case EC_COUNT:
        snprintf(buf, len, "a whole number %llu..%llu, e.g. 4096, 1e9, 7.5B",
                 (unsigned long long)k->min, (unsigned long long)k->max);
        return;
    case EC_SIZE:
        snprintf(buf, len, "bytes with k/m/g/t (binary), e.g. 80g, 79.2GiB, 24576m");
        return;
    case EC_BOOL:
        snprintf(buf, len, "yes/no, on/off, true/false, 1/0");
        return;
    case EC_CHOICE: {
        size_t n = 0;
        buf[0] = '\0';
        for (const struct ec_choice *ch = k->choices; ch->name && n < len; ch++)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", ch->name);
        return;
    }
    }
}

static int set_key(struct estimate_config *c, size_t i, const char *value)
{
    const struct ec_key *k = &keys[i];
    void *field = (char *)c + k->offset;
    uint64_t u;
    int v;
    switch (k->type) {
    case EC_COUNT:
        if (estimate_parse_count(value, &u) != 0 || u < k->min || u > k->max)
            return -1;
        *(uint64_t *)field = u;
        break;
    case EC_SIZE:
        if (estimate_parse_size(value, &u) != 0 || u == 0)
            return -1;
        *(uint64_t *)field = u;
        break;
    case EC_BOOL:
        if (parse_bool(value, &v) != 0)
            return -1;
        *(int *)field = v;
        break;
    case EC_CHOICE:
        if (parse_choice(k->choices, value, &v) != 0)
            return -1;
        *(int *)field = v;
        break;
    }
    c->given |= UINT64_C(1) << i;
    return 0;
}

int estimate_config_set(struct estimate_config *c, const char *key, const char *value, char *err,
                        size_t errlen)
{
    int i = find_key(key);
    if (i < 0) {
        fail(err, errlen, "unknown key '%s' (memshim-analyze estimate --help lists them)", key);
        return -1;
    }
    if (set_key(c, (size_t)i, value) != 0) {
        char acc[256];
        accepted(&keys[i], acc, sizeof acc);
        fail(err, errlen, "bad value '%s' (accepted: %s)", value, acc);
        return -1;
    }
    return 0;
}

int estimate_config_given(const struct estimate_config *c, const char *key)
{
    int i = find_key(key);
    return i >= 0 && (c->given >> i) & 1;
}

int estimate_config_has_key(const char *key)
{
    return find_key(key) >= 0;
}

int estimate_config_is_bool(const char *key)
{
    int i = find_key(key);
    return i >= 0 && keys[i].type == EC_BOOL;
}

/* ---- files ---- */

static const char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* One line without its newline. Returns 0, or -1 with the message (without file:line). */
static int parse_line(struct estimate_config *c, const char *line, size_t len, unsigned lines_of[],
                      unsigned lineno, char *err, size_t errlen)
{
    if (memchr(line, '\0', len)) {
        fail(err, errlen, "NUL byte in a text file");
        return -1;
    }
    const char *hash = memchr(line, '#', len);
    if (hash)
        len = (size_t)(hash - line);
    char buf[2 * EC_VALUE_MAX];
    if (len >= sizeof buf) {
        fail(err, errlen, "line longer than %zu characters", sizeof buf - 1);
        return -1;
    }
    memcpy(buf, line, len);
    buf[len] = '\0';
    char *eq = strchr(buf, '=');
    if (!eq) {
        if (*trim(buf) == '\0')
            return 0;
        fail(err, errlen, "expected 'key = value', got '%s'", trim(buf));
        return -1;
    }
    *eq = '\0';
    const char *key = trim(buf), *value = trim(eq + 1);
    if (*key == '\0' || *value == '\0') {
        fail(err, errlen, "expected 'key = value' with both sides non-empty");
        return -1;
    }
    int i = find_key(key);
    if (i >= 0 && lines_of[i]) {
        fail(err, errlen, "%s: already set on line %u", keys[i].name, lines_of[i]);
        return -1;
    }
    char why[400];
    if (estimate_config_set(c, key, value, why, sizeof why) != 0) {
        fail(err, errlen, "%s%s%s", i >= 0 ? keys[i].name : "", i >= 0 ? ": " : "", why);
        return -1;
    }
    lines_of[i] = lineno;
    return 0;
}

int estimate_config_parse(struct estimate_config *c, const char *text, size_t len, const char *name,
                          char *err, size_t errlen)
{
    unsigned lines_of[EC_KEYS] = {0};
    unsigned lineno = 0;
    size_t pos = 0;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        lineno++;
        char msg[512];
        if (parse_line(c, text + pos, n, lines_of, lineno, msg, sizeof msg) != 0) {
            fail(err, errlen, "%s:%u: %s", name, lineno, msg);
            return -1;
        }
        pos += n + 1;
    }
    return 0;
}

int estimate_config_load(struct estimate_config *c, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fail(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *text = malloc(EC_FILE_MAX + 1);
    size_t n = text ? fread(text, 1, EC_FILE_MAX + 1, f) : 0;
    int bad = !text || ferror(f);
    fclose(f);
    int rc = -1;
    if (bad)
        fail(err, errlen, "%s: cannot read", path);
    else if (n > EC_FILE_MAX)
        fail(err, errlen, "%s: larger than %u bytes, not a config file", path, EC_FILE_MAX);
    else
        rc = estimate_config_parse(c, text, n, path, err, errlen);
    free(text);
    return rc;
}

/* ---- consistency ---- */

static int check_architecture(const struct estimate_config *c, char *err, size_t errlen)
{
    if (!c->layers || !c->hidden || !c->heads) {
        fail(err, errlen, "the architecture needs layers, hidden and heads together (missing %s)",
             !c->layers   ? "layers"
             : !c->hidden ? "hidden"
                          : "heads");
        return -1;
    }
    if (!c->head_dim && c->hidden % c->heads) {
        fail(err, errlen, "heads (%llu) must divide hidden (%llu), or give head_dim",
             (unsigned long long)c->heads, (unsigned long long)c->hidden);
        return -1;
    }
    if (c->kv_heads && (c->kv_heads > c->heads || c->heads % c->kv_heads)) {
        fail(err, errlen, "kv_heads (%llu) must divide heads (%llu)",
             (unsigned long long)c->kv_heads, (unsigned long long)c->heads);
        return -1;
    }
    if (c->heads % c->tp) {
        fail(err, errlen, "tp (%llu) must divide heads (%llu)", (unsigned long long)c->tp,
             (unsigned long long)c->heads);
        return -1;
    }
    if (c->pp > c->layers) {
        fail(err, errlen, "pp (%llu) exceeds layers (%llu)", (unsigned long long)c->pp,
             (unsigned long long)c->layers);
        return -1;
    }
    if (!c->seq_len && (c->mode == ESTIMATE_TRAIN || !c->kv_context)) {
        fail(err, errlen, "seq_len is needed to size activations (kv_context when serving)");
        return -1;
    }
    return 0;
}

int estimate_config_check(const struct estimate_config *c, char *err, size_t errlen)
{
    int arch = c->layers || c->hidden || c->heads;
    if (!arch && !c->params) {
        fail(err, errlen, "give the model: params, or layers + hidden + heads (+ vocab, ffn)");
        return -1;
    }
    if (arch && check_architecture(c, err, errlen) != 0)
        return -1;
    if (!arch && (c->kv_batch || c->kv_context)) {
        fail(err, errlen, "the KV cache needs the architecture (layers, hidden, heads)");
        return -1;
    }
    if ((c->kv_batch != 0) != (c->kv_context != 0) && c->mode == ESTIMATE_TRAIN) {
        fail(err, errlen, "kv_batch and kv_context go together");
        return -1;
    }
    if (c->offload && c->mode != ESTIMATE_TRAIN) {
        fail(err, errlen, "offload applies to training only");
        return -1;
    }
    if (c->offload == ESTIMATE_OFFLOAD_OPTIMIZER && c->zero < 1) {
        fail(err, errlen,
             "offload = optimizer needs zero = 1, 2 or 3 (ZeRO-Offload partitions "
             "what it moves)");
        return -1;
    }
    if (c->offload == ESTIMATE_OFFLOAD_PARAM && c->zero != 3) {
        fail(err, errlen, "offload = param needs zero = 3 (parameters are partitioned first)");
        return -1;
    }
    if (c->precision == ESTIMATE_FP32 && c->master_weights == 1) {
        fail(err, errlen, "master_weights applies to bf16/fp16 precision only");
        return -1;
    }
    return 0;
}

/* ---- table access ---- */

const char *estimate_config_key(size_t i)
{
    return i < EC_KEYS ? keys[i].name : NULL;
}

const char *estimate_config_key_help(size_t i)
{
    return i < EC_KEYS ? keys[i].help : NULL;
}

/* `name` with dashes as underscores, lower case; "" when it does not fit. */
static void normalize(const char *name, char *out, size_t len)
{
    size_t n = 0;
    for (; name[n] && n + 1 < len; n++)
        out[n] = name[n] == '-' ? '_' : (char)tolower((unsigned char)name[n]);
    out[name[n] ? 0 : n] = '\0';
}

const char *estimate_config_suggest(const char *name, char *buf, size_t len)
{
    char want[64];
    size_t n = 0;
    normalize(name, want, sizeof want);
    buf[0] = '\0';
    for (size_t i = 0; i < EC_KEYS && want[0] && n < len; i++) {
        if (!strstr(keys[i].name, want) && !strstr(want, keys[i].name))
            continue;
        n += (size_t)snprintf(buf + n, len - n, "%s--", n ? ", " : "");
        for (const char *k = keys[i].name; *k && n + 1 < len; k++)
            buf[n++] = *k == '_' ? '-' : *k;
        buf[n < len ? n : len - 1] = '\0';
    }
    return buf;
}

const char *estimate_config_accepted(size_t i, char *buf, size_t len)
{
    if (i >= EC_KEYS)
        return NULL;
    accepted(&keys[i], buf, len);
    return buf;
}

int estimate_config_is_number(size_t i)
{
    return i < EC_KEYS && (keys[i].type == EC_COUNT || keys[i].type == EC_SIZE);
}

const char *estimate_config_format(const struct estimate_config *c, size_t i, char *buf, size_t len)
{
    if (i >= EC_KEYS)
        return NULL;
    const struct ec_key *k = &keys[i];
    const void *field = (const char *)c + k->offset;
    switch (k->type) {
    case EC_COUNT:
    case EC_SIZE:
        snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)field);
        break;
    case EC_BOOL: {
        int v = *(const int *)field;
        snprintf(buf, len, "%s", v < 0 ? "auto" : v ? "yes" : "no");
        break;
    }
    case EC_CHOICE: {
        const struct ec_choice *ch = k->choices;
        while (ch->name && ch->value != *(const int *)field)
            ch++;
        snprintf(buf, len, "%s", ch->name ? ch->name : "?");
        break;
    }
    }
    return buf;
}

int estimate_config_build(struct estimate_config *c, const char *file,
                          const struct estimate_flag *flags, size_t n)
{
    char err[512];
    estimate_config_defaults(c);
    if (file && estimate_config_load(c, file, err, sizeof err) != 0) {
        fprintf(stderr, "estimate: %s\n", err);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (estimate_config_set(c, flags[i].key, flags[i].value, err, sizeof err) != 0) {
            fprintf(stderr, "estimate: --%s: %s\n", flags[i].key, err);
            return -1;
        }
    }
    return 0;
}
