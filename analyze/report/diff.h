/* `diff`: two traces (before and after a change) side by side.
 *
 *     memshim-analyze diff [--json] [--top N] A B
 *
 * Compares the peak, then each category and each call site by the bytes it held resident at
 * its trace's peak (these add up to the peak, so the deltas explain the change of the peak),
 * with the most each held at any one time beside them. Call sites are matched across the two
 * traces by their symbolized stacks, since frame ids differ between runs. Ratio is B / A. */
#ifndef ANALYZE_DIFF_H
#define ANALYZE_DIFF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <memshim/trace_format.h>

struct diff_row {
    const char *name; /* category name, or the site's innermost frame (owned for sites) */
    char *stack;      /* sites: frames innermost first, '\n'-separated (owned) */
    uint8_t category;
    uint64_t at_peak[2]; /* bytes resident at the peak of A and of B */
    uint64_t max[2];     /* the most resident at any one time in A and in B */
};

struct diff_result {
    const char *paths[2];
    uint64_t peak[2];
    uint64_t peak_time_ns[2];
    int64_t peak_step[2];
    struct diff_row categories[MST_CATEGORY_MAX]; /* indexed by category */
    struct diff_row *sites;                       /* sorted by |delta at peak|, then |delta max| */
    size_t nsites;
};

/* Replays both traces and fills `out`. Returns 0, or -1 with a message in err. */
int diff_traces(const char *a, const char *b, struct diff_result *out, char *err, size_t errlen);
void diff_result_free(struct diff_result *r);

void diff_print_text(FILE *out, const struct diff_result *r, size_t top);
void diff_print_json(FILE *out, const struct diff_result *r, size_t top);

/* The `diff` command (commands.h). */
int diff_command(int argc, char **argv);

#endif /* ANALYZE_DIFF_H */
