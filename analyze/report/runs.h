/* `summary` of a folder of runs: traces of one program at different settings (a sweep of batch
 * sizes, sequence lengths, strategies), told apart by MEMSHIM_LABEL, are rows of a table and
 * not the ranks of one job, so no rank column and no imbalance warning. Each row is the peak
 * and the bytes by category at that peak; with an estimate configuration, a label made of
 * `key=value` pairs (`micro_batch=8,seq_len=1024`) sets those estimate keys for its row and
 * the estimate stands beside the measurement. */
#ifndef ANALYZE_RUNS_H
#define ANALYZE_RUNS_H

#include <stddef.h>

/* Whether the traces are runs rather than ranks: any carries a label, or none has a rank. */
int runs_apply(const char *const *paths, size_t n);

struct runs_options {
    int refine;
    int json;
    const char *config; /* estimate configuration file, or NULL */
};

/* Prints the table (or JSON); exit status 1 if a trace was unreadable or corrupt, 2 when the
 * configuration is bad. */
int runs_command_run(const char *const *paths, size_t n, const struct runs_options *o);

#endif /* ANALYZE_RUNS_H */
