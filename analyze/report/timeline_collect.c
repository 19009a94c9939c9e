/* timeline_collect: the buckets of one trace, filled while the model replays it. */
#include "timeline_chart.h"

#include <stdlib.h>
#include <string.h>

/* ---- collecting ------------------------------------------------------------------------- */

uint64_t timeline_sum(const uint64_t *v)
{
    uint64_t s = 0;
    for (int i = 0; i < MST_CATEGORY_MAX; i++)
        s += v[i];
    return s;
}

/* a followed by b in time */
void timeline_combine(struct bucket *a, const struct bucket *b)
{
    if (!b->used)
        return;
    if (!a->used) {
        *a = *b;
        return;
    }
    if (b->top_total > a->top_total) {
        a->top_total = b->top_total;
        memcpy(a->top, b->top, sizeof a->top);
    }
    memcpy(a->end, b->end, sizeof a->end);
    a->held_max = b->held_max > a->held_max ? b->held_max : a->held_max;
    a->held_end = b->held_end;
    a->ooms += b->ooms;
    a->oom_request = b->oom_request > a->oom_request ? b->oom_request : a->oom_request;
    for (int i = 0; i < NRES; i++) {
        a->moves[i] += b->moves[i];
        a->moved_bytes[i] += b->moved_bytes[i];
    }
}

static void halve_resolution(struct collect *c)
{
    for (size_t i = 0; i < BUCKETS / 2; i++) {
        struct bucket merged = c->b[2 * i];
        timeline_combine(&merged, &c->b[2 * i + 1]);
        c->b[i] = merged;
    }
    memset(c->b + BUCKETS / 2, 0, BUCKETS / 2 * sizeof *c->b);
    c->width_ns *= 2;
}

static struct bucket *bucket_at(struct collect *c, uint64_t t)
{
    while ((t - c->t0) / c->width_ns >= BUCKETS)
        halve_resolution(c);
    struct bucket *b = &c->b[(t - c->t0) / c->width_ns];
    if (!b->used) {
        /* the bucket starts in the state the previous event left */
        b->used = true;
        memcpy(b->top, c->cur, sizeof b->top);
        memcpy(b->end, c->cur, sizeof b->end);
        b->top_total = timeline_sum(c->cur);
        b->held_max = b->held_end = c->cur_held;
    }
    return b;
}

static void note_ceiling(struct collect *c, uint64_t t, uint64_t bytes)
{
    if (c->nceil && c->ceil[c->nceil - 1].bytes == bytes)
        return;
    if (c->nceil == c->capceil) {
        size_t cap = c->capceil ? 2 * c->capceil : 16;
        struct ceiling_change *p = realloc(c->ceil, cap * sizeof *p);
        if (!p) {
            c->failed = true;
            return;
        }
        c->ceil = p;
        c->capceil = cap;
    }
    c->ceil[c->nceil++] = (struct ceiling_change){t, bytes};
}

static void note_record(struct bucket *b, const struct reader_record *rec)
{
    if (rec->kind == MST_REC_OOM) {
        b->ooms++;
        if (rec->u.oom.request > b->oom_request)
            b->oom_request = rec->u.oom.request;
    } else if (rec->kind == MST_REC_RESIDENCY && rec->u.residency.event < NRES) {
        b->moves[rec->u.residency.event]++;
        b->moved_bytes[rec->u.residency.event] += rec->u.residency.bytes;
    }
}

static int on_event(void *ctx, const struct model *m, const struct model_state *st,
                    const struct model_event *ev)
{
    struct collect *c = ctx;
    (void)m;
    if (ev->rec->kind < MST_REC_ALLOC || ev->rec->kind == MST_REC_ACCESS)
        return 0; /* definitions and accesses change nothing drawn */
    uint64_t t = st->time_ns;
    if (!c->started) {
        c->started = true;
        c->t0 = c->t1 = t;
    }
    if (t < c->t0) /* threads' clocks are monotonic each, records interleave */
        t = c->t0;
    if (t > c->t1)
        c->t1 = t;
    struct bucket *b = bucket_at(c, t);
    if (st->resident > b->top_total) {
        b->top_total = st->resident;
        memcpy(b->top, st->resident_by_category, sizeof b->top);
    }
    memcpy(b->end, st->resident_by_category, sizeof b->end);
    memcpy(c->cur, st->resident_by_category, sizeof c->cur);
    uint64_t held = st->resident + st->spilled + st->dropped;
    if (held > b->held_max)
        b->held_max = held;
    b->held_end = c->cur_held = held;
    c->offloaded |= st->spilled + st->dropped > 0;
    note_record(b, ev->rec);
    note_ceiling(c, t, st->ceiling);
    return c->failed;
}

int timeline_collect(const char *trace, struct collect *c, struct model **m, char *err,
                     size_t errlen)
{
    c->b = calloc(BUCKETS, sizeof *c->b);
    c->width_ns = 1;
    if (!c->b) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct model_callbacks cb = {.ctx = c, .on_event = on_event};
    struct model_options opt = {0};
    *m = model_replay(trace, &opt, &cb, err, errlen);
    if (!*m)
        return -1;
    if (model_reader_status(*m) != READER_OK)
        fprintf(stderr, "memshim-analyze: warning: %s\n", model_reader_error(*m));
    if (c->failed) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}
