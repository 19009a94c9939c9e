/* Inputs of `memshim-analyze estimate`: one struct, filled from a `key = value` file and from
 * command-line flags that use the same names (`--micro-batch 4` is `micro_batch = 4`).
 *
 * Every key is one row of a table in estimate_config.c (name, type, accepted range, help), so
 * the file parser, the flag parser, the help text and the JSON echo of the inputs cannot drift
 * apart. Errors name the key (or flag) and the accepted forms; file errors carry file:line.
 *
 *     struct estimate_config c;
 *     estimate_config_defaults(&c);
 *     if (estimate_config_load(&c, "llama-7b.conf", err, sizeof err) != 0 ||
 *         estimate_config_set(&c, "micro_batch", "8", err, sizeof err) != 0 ||
 *         estimate_config_check(&c, err, sizeof err) != 0)
 *         fprintf(stderr, "%s\n", err);
 */
#ifndef ANALYZE_ESTIMATE_CONFIG_H
#define ANALYZE_ESTIMATE_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum estimate_mode { ESTIMATE_TRAIN, ESTIMATE_INFER };
enum estimate_dtype { ESTIMATE_FP32, ESTIMATE_BF16, ESTIMATE_FP16, ESTIMATE_FP8, ESTIMATE_SAME };
enum estimate_optimizer {
    ESTIMATE_SGD,
    ESTIMATE_SGD_MOMENTUM,
    ESTIMATE_ADAM, /* Adam and AdamW: two moments */
    ESTIMATE_ADAM_8BIT,
};
enum estimate_recompute {
    ESTIMATE_RECOMPUTE_NONE,
    ESTIMATE_RECOMPUTE_SELECTIVE,
    ESTIMATE_RECOMPUTE_FULL
};
enum estimate_norm { ESTIMATE_LAYERNORM, ESTIMATE_RMSNORM };
/* Model states moved to CPU memory: ZeRO-Offload (optimizer state and gradients) and
 * ZeRO-Infinity's CPU tier (16-bit parameters as well). */
enum estimate_offload { ESTIMATE_OFFLOAD_NONE, ESTIMATE_OFFLOAD_OPTIMIZER, ESTIMATE_OFFLOAD_PARAM };

struct estimate_config {
    /* Model: either `params` alone (model states only) or the architecture (everything). */
    uint64_t params;    /* total parameters; 0 = count them from the architecture */
    uint64_t layers;    /* transformer layers L */
    uint64_t hidden;    /* hidden size h */
    uint64_t heads;     /* attention (query) heads a */
    uint64_t kv_heads;  /* key/value heads (GQA/MQA); 0 = heads */
    uint64_t head_dim;  /* 0 = hidden / heads */
    uint64_t ffn;       /* MLP inner size; 0 = 4h */
    uint64_t vocab;     /* 0 = no embedding, output layer or logits counted */
    uint64_t positions; /* rows of a learned position table (GPT-2: 1024); 0 = rotary/none */
    int gated_mlp;      /* SwiGLU-style MLP: three matrices instead of two */
    int bias;           /* linear layers have biases */
    int tied_embeddings;
    int dropout; /* dropout layers present (their 1-byte masks are stored) */
    int norm;    /* enum estimate_norm */

    /* Batch. */
    uint64_t seq_len;
    uint64_t micro_batch;
    uint64_t grad_accum;

    /* Training setup. */
    int mode;           /* enum estimate_mode */
    int precision;      /* enum estimate_dtype: fp32, or bf16/fp16 compute */
    int master_weights; /* fp32 master copy with 16-bit compute; -1 = yes for 16-bit */
    int grad_dtype;     /* enum estimate_dtype; ESTIMATE_SAME = precision */
    int optimizer;      /* enum estimate_optimizer */
    uint64_t zero;      /* ZeRO stage 0-3 */
    uint64_t dp;        /* data-parallel size N_d */
    uint64_t tp;        /* tensor-parallel size t */
    uint64_t pp;        /* pipeline-parallel size p */
    int sp;             /* sequence parallelism (with tensor parallelism) */
    int recompute;      /* enum estimate_recompute */
    int flash;          /* FlashAttention: no s x s score matrices stored */
    int offload;        /* enum estimate_offload */

    /* KV cache (inference, or generation beside training). 0 = from micro_batch / seq_len in
     * inference mode, none in training mode. */
    uint64_t kv_batch;
    uint64_t kv_context;
    int kv_dtype; /* enum estimate_dtype; ESTIMATE_SAME = precision */

    /* Report. */
    uint64_t gpu;    /* device capacity in bytes; 0 = not given */
    uint64_t tokens; /* token budget; 0 = not given */

    uint64_t given; /* bit i set: key i was given (file or flag) */
};

/* Defaults: everything 0/unset, micro_batch 1, grad_accum 1, dp tp pp 1, bf16, adam, zero 0,
 * no recompute, flash off, dropout on, bias on, tied embeddings, LayerNorm (the GPT-3 setup of
 * Korthikanti et al.). */
void estimate_config_defaults(struct estimate_config *c);

/* Sets `key` (underscores or dashes) from `value`. 0, or -1 with "unknown key 'KEY' ..." or
 * "bad value 'VALUE' (accepted: ...)"; the caller names the key or flag in front. */
int estimate_config_set(struct estimate_config *c, const char *key, const char *value, char *err,
                        size_t errlen);

/* Parses `key = value` lines ('#' starts a comment, blank lines ignored; a key may appear once).
 * `name` prefixes messages: "NAME:LINE: ...". 0, or -1 at the first error. */
int estimate_config_parse(struct estimate_config *c, const char *text, size_t len, const char *name,
                          char *err, size_t errlen);
/* Reads and parses a file (at most 1 MiB). */
int estimate_config_load(struct estimate_config *c, const char *path, char *err, size_t errlen);

/* One `--KEY VALUE` of a command line, in the order given. */
struct estimate_flag {
    char key[48];
    const char *value;
};

/* The defaults, then the file (when not NULL), then the flags in order, so that a flag
 * overrides the file. Prints what is wrong, prefixed with "estimate: ", and returns -1. */
int estimate_config_build(struct estimate_config *c, const char *file,
                          const struct estimate_flag *flags, size_t n);

/* Checks that the values make one consistent job (heads divide hidden, t divides heads, ...). */
int estimate_config_check(const struct estimate_config *c, char *err, size_t errlen);

/* Whether `key` was given explicitly. */
int estimate_config_given(const struct estimate_config *c, const char *key);
/* Whether `key` names a key, and whether it is a yes/no key (a flag may omit its value). */
int estimate_config_has_key(const char *key);
int estimate_config_is_bool(const char *key);

/* Key table access, for the help text and the JSON echo. NULL past the last key. */
const char *estimate_config_key(size_t i);
const char *estimate_config_key_help(size_t i);
/* The value of key i as written back ("bf16", "4", "yes"), into buf. */
const char *estimate_config_format(const struct estimate_config *c, size_t i, char *buf,
                                   size_t len);
/* Keys that contain `name` (or that `name` contains), as flags: "--micro-batch, --kv-batch".
 * "" when none does. Returns buf. */
const char *estimate_config_suggest(const char *name, char *buf, size_t len);
/* Accepted forms of key i, for messages. */
const char *estimate_config_accepted(size_t i, char *buf, size_t len);
/* Whether key i holds a number (JSON writes it unquoted). */
int estimate_config_is_number(size_t i);

/* Parsers exposed for the tests. Counts take decimal suffixes k M B/G T and e-notation
 * ("7.5B", "1e9"); sizes take binary k m g t with an optional "b"/"ib", as MEMSHIM_LIMIT
 * does ("80g", "79.2GiB"). 0 on success. */
int estimate_parse_count(const char *s, uint64_t *out);
int estimate_parse_size(const char *s, uint64_t *out);

#endif /* ANALYZE_ESTIMATE_CONFIG_H */
