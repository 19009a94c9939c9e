/* `summary`: the answer to "where did my GPU memory go" for one trace, or a per-rank table
 * for several. Text for people, --json for programs (schema in README, section analyze). */
#ifndef ANALYZE_SUMMARY_H
#define ANALYZE_SUMMARY_H

#include <stddef.h>
#include <stdio.h>

#include "json.h"
#include "model.h"

struct summary_options {
    int json;
    int refine;         /* infer categories of `unknown` by lifetime (default on) */
    size_t top;         /* call sites listed (default 10) */
    size_t frames;      /* frames shown per site (default 6) */
    int help;           /* --help given: print the usage, nothing else */
    const char *config; /* estimate configuration beside a folder of labelled runs */
};

enum summary_order {
    SUMMARY_BY_PEAK, /* bytes resident at the process peak */
    SUMMARY_BY_EXIT, /* bytes alive at exit */
    SUMMARY_BY_MAX,  /* the most the site held at any moment */
};

/* The sites with the most bytes in `order` (ties: lower site id first), at most `max`,
 * skipping sites with zero bytes in that order. Returns how many were written to out. */
size_t summary_top_sites(const struct model *m, enum summary_order order,
                         const struct model_site **out, size_t max);

void summary_print_text(FILE *out, struct model *m, const struct summary_options *o);
/* Writes the report as members of the current JSON object (the caller opens and closes it). */
void summary_write_json(struct json *j, struct model *m, const struct summary_options *o);

/* memshim-analyze summary [--json] [--no-refine] [--top N] TRACE|DIR... */
int summary_command(int argc, char **argv);

#endif /* ANALYZE_SUMMARY_H */
