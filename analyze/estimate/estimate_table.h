/* `memshim-analyze estimate --table`: the estimate of estimate.h for many strategies side by
 * side (rows: none, selective or full recompute, ZeRO 1/2/3, CPU offload, tensor, sequence and
 * pipeline parallelism and their combinations) at many tokens per micro-batch (columns:
 * micro-batch x sequence length), each cell the bytes per GPU by category, whether they fit,
 * and the price (estimate_cost.h): recompute FLOPs, bytes sent per step, host-link time.
 * Text, or one row per (strategy, micro-batch, sequence) as CSV or JSON. */
#ifndef ANALYZE_ESTIMATE_TABLE_H
#define ANALYZE_ESTIMATE_TABLE_H

#include "estimate_config.h"

/* A row's strategy: '+'-joined words (see estimate_table_parse_strategy). */
struct estimate_strategy {
    char name[64];
    int recompute; /* enum estimate_recompute */
    int zero;
    int offload; /* enum estimate_offload */
    int sp;
    uint64_t tp, pp; /* 0: not used (1); UINT64_MAX: the default degree */
};

/* Parses "none", "selective", "full", "zero1".."zero3", "offload" (optimizer), "offload-param",
 * "tp", "tpN", "sp", "pp", "ppN" joined by '+' ("zero3+offload-param+full"). 0, or -1 with a
 * message naming the word and the accepted forms. */
int estimate_table_parse_strategy(const char *text, struct estimate_strategy *s, char *err,
                                  size_t errlen);

/* The configuration of one cell: `base` with the strategy's fields replaced (a strategy that
 * does not name recompute/ZeRO/offload/parallelism has none), at micro-batch `b` and sequence
 * `s`. Default degrees: the base's tp and pp when above 1, else the largest of 8, 4, 2 that
 * divides the heads (tp) and 4 (pp). In inference the KV cache holds b sequences of s tokens. */
void estimate_table_apply(const struct estimate_config *base, const struct estimate_strategy *st,
                          uint64_t b, uint64_t s, struct estimate_config *out);

/* Whether argv asks for the table (holds --table). */
int estimate_table_requested(int argc, char **argv);

/* The command: estimate --table [--strategies LIST] [--micro-batches LIST] [--seq-lens LIST]
 * [--link-gbps G] [--tflops T] [--csv | --json] [--config FILE] [--KEY VALUE]... Exit 0, or 2
 * on usage errors. */
int estimate_table_command(int argc, char **argv);

#endif /* ANALYZE_ESTIMATE_TABLE_H */
