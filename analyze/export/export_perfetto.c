#include "export_perfetto.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "model.h"

typedef unsigned long long ull;

/* A thread id no OS thread has (Linux tids stay below 2^22): the "steps" track. */
#define STEPS_TID 2147483647u

/* With a resolution, the resident counter is written at most twice per window of that many
 * nanoseconds: at the window's highest total (so no peak is lost) and at its end. */
struct window {
    bool open;
    uint64_t id;
    uint64_t max_total, max_ns, last_ns;
    uint64_t max[MST_CATEGORY_MAX];
    uint64_t last[MST_CATEGORY_MAX];
};

struct perfetto_ctx {
    FILE *out;
    uint64_t resolution_ns; /* 0: every change */
    struct window win;
    bool first_event;
    uint32_t pid;
    uint64_t offset_ns; /* this trace's start after the earliest trace's start */
    uint64_t resident[MST_CATEGORY_MAX];
    uint64_t spilled, dropped, ceiling;
    bool step_open;
    int64_t step;
    uint64_t step_start_ns;
};

/* Opens one event object up to and including its "ts" (or "pid" for metadata). */
static void event_begin(struct perfetto_ctx *c, const char *ph, const char *name, uint32_t tid)
{
    fputs(c->first_event ? "\n" : ",\n", c->out);
    c->first_event = false;
    fprintf(c->out, "{\"ph\":\"%s\",\"pid\":%u,\"tid\":%u,\"name\":", ph, c->pid, tid);
    json_write_string(c->out, name);
}

static void put_ts(struct perfetto_ctx *c, const char *key, uint64_t ns)
{
    fprintf(c->out, ",\"%s\":%llu.%03llu", key, (ull)(ns / 1000), (ull)(ns % 1000));
}

static void event_ts(struct perfetto_ctx *c, const char *ph, const char *name, uint32_t tid,
                     uint64_t time_ns)
{
    event_begin(c, ph, name, tid);
    put_ts(c, "ts", c->offset_ns + time_ns);
}

static void metadata(struct perfetto_ctx *c, const char *what, uint32_t tid, const char *name)
{
    event_begin(c, "M", what, tid);
    fputs(",\"args\":{\"name\":", c->out);
    json_write_string(c->out, name);
    fputs("}}", c->out);
}

static uint32_t os_tid(const struct model *m, uint32_t thread)
{
    const struct reader_thread *t = reader_thread(model_reader(m), thread);
    return t ? t->os_tid : thread;
}

static void counter1(struct perfetto_ctx *c, const char *name, uint64_t time_ns, uint64_t v)
{
    event_ts(c, "C", name, 0, time_ns);
    fprintf(c->out, ",\"args\":{\"bytes\":%llu}}", (ull)v);
}

static void resident_event(struct perfetto_ctx *c, uint64_t time_ns, const uint64_t *bytes)
{
    if (memcmp(bytes, c->resident, sizeof c->resident) == 0)
        return;
    memcpy(c->resident, bytes, sizeof c->resident);
    event_ts(c, "C", "resident", 0, time_ns);
    fputs(",\"args\":{", c->out);
    /* Every category in every sample: Chrome's viewer takes its series from the first sample
     * and draws only those, so a category that starts later would never show. */
    for (int i = 0; i < MST_CATEGORY_MAX; i++)
        fprintf(c->out, "%s\"%s\":%llu", i ? "," : "", reader_category_name((unsigned)i),
                (ull)bytes[i]);
    fputs("}}", c->out);
}

static void window_flush(struct perfetto_ctx *c)
{
    struct window *w = &c->win;
    if (!w->open)
        return;
    resident_event(c, w->max_ns, w->max);
    if (w->last_ns > w->max_ns)
        resident_event(c, w->last_ns, w->last);
    w->open = false;
}

static void window_add(struct perfetto_ctx *c, const struct model_state *st)
{
    struct window *w = &c->win;
    uint64_t id = st->time_ns / c->resolution_ns;
    if (w->open && id != w->id)
        window_flush(c);
    if (!w->open || st->resident > w->max_total) {
        w->max_total = st->resident;
        w->max_ns = st->time_ns;
        memcpy(w->max, st->resident_by_category, sizeof w->max);
    }
    w->open = true;
    w->id = id;
    w->last_ns = st->time_ns;
    memcpy(w->last, st->resident_by_category, sizeof w->last);
}

static void counters(struct perfetto_ctx *c, const struct model_state *st)
{
    if (c->resolution_ns)
        window_add(c, st);
    else
        resident_event(c, st->time_ns, st->resident_by_category);
    if (st->spilled != c->spilled)
        counter1(c, "spilled", st->time_ns, c->spilled = st->spilled);
    if (st->dropped != c->dropped)
        counter1(c, "dropped", st->time_ns, c->dropped = st->dropped);
    if (st->ceiling != c->ceiling)
        counter1(c, "ceiling", st->time_ns, c->ceiling = st->ceiling);
}

static void close_step(struct perfetto_ctx *c, uint64_t end_ns)
{
    if (!c->step_open)
        return;
    char name[32];
    snprintf(name, sizeof name, "step %lld", (long long)c->step);
    event_ts(c, "X", name, STEPS_TID, c->step_start_ns);
    put_ts(c, "dur", end_ns - c->step_start_ns);
    fputs("}", c->out);
    c->step_open = false;
}

static void oom(struct perfetto_ctx *c, const struct model *m, const struct mst_rec_oom *o)
{
    event_ts(c, "i", "OOM", os_tid(m, o->thread), o->time_ns);
    fprintf(c->out,
            ",\"s\":\"p\",\"args\":{\"request\":%llu,\"resident\":%llu,\"ceiling\":%llu,"
            "\"device\":%u,\"kind\":",
            (ull)o->request, (ull)o->resident, (ull)o->ceiling, o->device);
    json_write_string(c->out, reader_kind_name(o->kind));
    fputs(",\"site\":", c->out);
    json_write_string(c->out, o->site ? model_frame_name((struct model *)m, o->site) : "");
    fputs(",\"phase\":", c->out);
    json_write_string(c->out, reader_string(model_reader(m), o->phase));
    fputs("}}", c->out);
}

static void residency(struct perfetto_ctx *c, const struct model *m,
                      const struct mst_rec_residency *r, const struct model_alloc *a)
{
    event_ts(c, "i", reader_residency_name(r->event), os_tid(m, r->thread), r->time_ns);
    fprintf(c->out,
            ",\"s\":\"t\",\"args\":{\"addr\":\"0x%llx\",\"bytes\":%llu,\"duration_ns\":%llu,"
            "\"category\":",
            (ull)r->addr, (ull)r->bytes, (ull)r->duration_ns);
    json_write_string(c->out, a ? reader_category_name(a->category) : "unknown");
    fputs("}}", c->out);
}

static void thread_name(struct perfetto_ctx *c, const struct model *m,
                        const struct mst_rec_thread *t)
{
    const struct reader_thread *rt = reader_thread(model_reader(m), t->id);
    char name[64];
    if (rt && rt->name && *rt->name)
        snprintf(name, sizeof name, "%s", rt->name);
    else
        snprintf(name, sizeof name, "thread %u", t->os_tid);
    metadata(c, "thread_name", t->os_tid, name);
}

static int on_event(void *ctx, const struct model *m, const struct model_state *st,
                    const struct model_event *ev)
{
    struct perfetto_ctx *c = ctx;
    const struct reader_record *rec = ev->rec;
    switch (rec->kind) {
    case MST_REC_THREAD:
        thread_name(c, m, &rec->u.thread);
        break;
    case MST_REC_PHASE_PUSH:
        event_ts(c, "B", reader_string(model_reader(m), rec->u.phase.name_id),
                 os_tid(m, rec->u.phase.thread), rec->u.phase.time_ns);
        fputs("}", c->out);
        break;
    case MST_REC_PHASE_POP:
        event_ts(c, "E", "", os_tid(m, rec->u.phase.thread), rec->u.phase.time_ns);
        fputs("}", c->out);
        break;
    case MST_REC_STEP:
        close_step(c, rec->u.step.time_ns);
        c->step_open = true;
        c->step = (int64_t)rec->u.step.step;
        c->step_start_ns = rec->u.step.time_ns;
        break;
    case MST_REC_OOM:
        oom(c, m, &rec->u.oom);
        break;
    case MST_REC_RESIDENCY:
        residency(c, m, &rec->u.residency, ev->alloc);
        break;
    default:
        break;
    }
    counters(c, st);
    return 0;
}

static void on_end(void *ctx, const struct model *m, const struct model_state *st)
{
    (void)m;
    window_flush(ctx);
    close_step(ctx, st->time_ns);
}

static void process_name(struct perfetto_ctx *c, const struct mst_file_header *h)
{
    char name[160];
    char host[MST_HOST_LEN + 1];
    memcpy(host, h->host, MST_HOST_LEN);
    host[MST_HOST_LEN] = '\0';
    if (h->rank != MST_NO_RANK)
        snprintf(name, sizeof name, "memshim rank %u (pid %u, %s)", h->rank, h->pid, host);
    else
        snprintf(name, sizeof name, "memshim pid %u (%s)", h->pid, host);
    metadata(c, "process_name", 0, name);
    metadata(c, "thread_name", STEPS_TID, "steps");
}

/* Wall-clock start of each trace, from its header, so processes share one time axis. */
static int wall_bases(char *const *traces, size_t n, uint64_t *base, uint32_t *pid, char *err,
                      size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        struct reader *r = reader_open(traces[i], err, errlen);
        if (!r)
            return -1;
        base[i] = reader_header(r)->wall_base_ns;
        pid[i] = reader_header(r)->pid;
        reader_close(r);
    }
    return 0;
}

/* Two ranks on two hosts may share a pid, and the viewer would merge them: later ones move
 * above the Linux pid range. */
static uint32_t unique_pid(const uint32_t *assigned, size_t i, uint32_t pid)
{
    for (size_t j = 0; j < i; j++) {
        if (assigned[j] == pid) {
            pid += 1u << 22;
            j = (size_t)-1; /* check the new value against all again */
        }
    }
    return pid;
}

static int export_one(struct perfetto_ctx *c, const char *trace, char *err, size_t errlen)
{
    struct model_callbacks cb = {.ctx = c, .on_event = on_event, .on_end = on_end};
    struct model_options opt = {0};
    struct model *m = model_replay(trace, &opt, &cb, err, errlen);
    if (!m)
        return -1;
    if (model_reader_status(m) != READER_OK)
        fprintf(stderr, "memshim-analyze: warning: %s\n", model_reader_error(m));
    model_free(m);
    return 0;
}

int export_perfetto(char *const *traces, size_t n, uint64_t resolution_ns, FILE *out, char *err,
                    size_t errlen)
{
    uint64_t *base = calloc(n ? n : 1, sizeof *base);
    uint32_t *pid = calloc(n ? n : 1, sizeof *pid);
    int rc = base && pid ? wall_bases(traces, n, base, pid, err, errlen) : -1;
    uint64_t earliest = UINT64_MAX;
    for (size_t i = 0; rc == 0 && i < n; i++)
        earliest = base[i] < earliest ? base[i] : earliest;

    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", out);
    bool first = true;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        struct perfetto_ctx c = {.out = out, .resolution_ns = resolution_ns, .first_event = first};
        c.pid = pid[i] = unique_pid(pid, i, pid[i]);
        c.offset_ns = base[i] - earliest;
        struct reader *r = reader_open(traces[i], err, errlen);
        if (!r) {
            rc = -1;
            break;
        }
        process_name(&c, reader_header(r));
        reader_close(r);
        rc = export_one(&c, traces[i], err, errlen);
        first = c.first_event;
    }
    fputs("\n]}\n", out);
    free(base);
    free(pid);
    return rc;
}
