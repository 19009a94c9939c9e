/* Several traces of one job (one per rank): a per-rank table, the job-wide maximum, and a flag
 * when the ranks' peaks differ by more than a threshold (imbalanced sharding or data). Each
 * trace is replayed alone and only its numbers kept, so memory does not grow with ranks. */
#ifndef ANALYZE_MERGE_H
#define ANALYZE_MERGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "json.h"
#include "reader.h"

#define MERGE_DEFAULT_THRESHOLD 0.10 /* (max - min) / max above this is flagged */

struct merge_options {
    int refine;
    int json;
    double threshold; /* 0: MERGE_DEFAULT_THRESHOLD */
};

struct merge_rank {
    char *path;
    uint32_t rank; /* MST_NO_RANK when the trace has none */
    uint32_t pid;
    char host[MST_HOST_LEN];
    enum reader_state status;
    int readable; /* 0: the file could not be opened as a trace at all */
    uint64_t peak_bytes, peak_time_ns;
    int64_t peak_step;
    uint64_t by_category[MST_CATEGORY_MAX]; /* at its peak */
    uint64_t steady_peak_bytes;             /* peak of its steady-state step, 0 without steps */
    uint64_t allocations, frees, leaked_bytes, ooms, events;
};

struct merge_job {
    struct merge_rank *ranks; /* sorted by rank, then path */
    size_t n;
    size_t max_index, min_index; /* among readable ranks */
    uint64_t max_peak, min_peak;
    double mean_peak;
    double spread; /* (max - min) / max */
    double threshold;
    int imbalanced;
    uint64_t ooms; /* all ranks */
};

/* Replays every trace; unreadable ones are kept with readable = 0. -1 only when out of memory. */
int merge_collect(const char *const *paths, size_t n, const struct merge_options *o,
                  struct merge_job *job);
void merge_free(struct merge_job *job);
void merge_print_text(FILE *out, const struct merge_job *job);
/* Writes the job as members of the current JSON object. */
void merge_write_json(struct json *j, const struct merge_job *job);

/* `summary` of several traces: collects and prints; exit status 1 if any trace was unreadable
 * or corrupt. */
int merge_command_run(const char *const *paths, size_t n, const struct merge_options *o);

#endif /* ANALYZE_MERGE_H */
