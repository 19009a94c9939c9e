/* timeline_chart: what the timeline's parts share (private to analyze/report/): the buckets
 * collected while the model replays a trace (timeline_collect.c), the chart laid out and drawn
 * from them (timeline.c), and the HTML page around the charts (timeline_html.c). */
#ifndef ANALYZE_TIMELINE_CHART_H
#define ANALYZE_TIMELINE_CHART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model.h"

#define BUCKETS 2048               /* time buckets kept while streaming; a power of two */
#define NRES    (MST_RES_LAST + 1) /* residency events, host uses (which move nothing) too */

/* One stretch of time: the state at its highest total, the state after its last event, and
 * what happened in it. Buckets merge pairwise as the trace grows, and into pixel columns. */
struct bucket {
    bool used;
    uint64_t top_total;
    uint64_t top[MST_CATEGORY_MAX];
    uint64_t end[MST_CATEGORY_MAX];
    uint64_t held_max, held_end; /* resident + spilled + dropped: what the program holds */
    uint32_t ooms;
    uint64_t oom_request; /* largest request that failed */
    uint32_t moves[NRES]; /* residency events by enum mst_residency_event */
    uint64_t moved_bytes[NRES];
};

struct ceiling_change {
    uint64_t time_ns, bytes;
};

struct collect {
    struct bucket *b;
    uint64_t width_ns; /* time per bucket */
    bool started;
    uint64_t t0, t1; /* first and last timed record */
    uint64_t cur[MST_CATEGORY_MAX];
    uint64_t cur_held;
    bool offloaded; /* the shim ever spilled or dropped memory */
    struct ceiling_change *ceil;
    size_t nceil, capceil;
    bool failed;
};

struct chart {
    FILE *out;
    const char *trace;
    struct model *m;
    struct collect *c;
    bool by_step;
    double width, height;
    double left, top, pw, ph; /* plot area */
    double ymax;
    uint64_t t0, t1;
    const struct model_step *steps;
    size_t nsteps;
    bool setup; /* step mode: time before the first step gets one unit */
    struct bucket *col;
    int ncol;
    uint64_t cat_max[MST_CATEGORY_MAX]; /* highest bytes of each category in any column */
};

/* Total bytes of a bucket's categories; a into a merged with b (b later in time). */
uint64_t timeline_sum(const uint64_t *v);
void timeline_combine(struct bucket *a, const struct bucket *b);
/* Replay `trace` into c (its buckets allocated here) and *m. 0, or -1 with err. */
int timeline_collect(const char *trace, struct collect *c, struct model **m, char *err,
                     size_t errlen);
/* The charts side by side as one SVG; standalone: with the XML prolog (not inside HTML). */
int timeline_svg(struct chart *charts, size_t n, bool standalone);
/* The page: the charts, then each trace's `top` call sites in a sortable table. */
int timeline_html(struct chart *charts, size_t n, int top);
/* A category's colour in the chart; the file name of a path. */
const char *timeline_color(int category);
const char *timeline_base_name(const char *path);

#endif /* ANALYZE_TIMELINE_CHART_H */
