/* `summary` report, text and JSON. See summary.h. */
#include "summary.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "merge.h"
#include "runs.h"
#include "site_label.h"
#include "table.h"
#include "summary_tensors.h"

typedef unsigned long long ull;

#define DEFAULT_TOP    10
#define DEFAULT_FRAMES 6
#define MAX_FRAMES     64

/* ---- site ranking -------------------------------------------------------------------------- */

static uint64_t site_bytes(const struct model_site *s, enum summary_order order)
{
    return order == SUMMARY_BY_PEAK   ? s->bytes_at_peak
           : order == SUMMARY_BY_EXIT ? s->bytes_at_exit
                                      : s->max_bytes;
}

size_t summary_top_sites(const struct model *m, enum summary_order order,
                         const struct model_site **out, size_t max)
{
    size_t n, k = 0;
    const struct model_site *sites = model_sites(m, &n);
    /* selection by insertion into a short sorted list: max is small, n may be large */
    for (size_t i = 0; i < n && max; i++) {
        uint64_t b = site_bytes(&sites[i], order);
        if (b == 0 && !(order == SUMMARY_BY_EXIT && sites[i].count_at_exit))
            continue;
        if (k == max && b <= site_bytes(out[k - 1], order))
            continue;
        size_t j = k < max ? k++ : k - 1;
        while (j > 0 && site_bytes(out[j - 1], order) < b) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = &sites[i];
    }
    return k;
}

/* ---- text ---------------------------------------------------------------------------------- */

static const char *status_name(enum reader_state s)
{
    static const char *const names[] = {"ok", "truncated", "corrupt", "io-error"};
    return names[s];
}

static void print_process(FILE *out, struct model *m)
{
    const struct reader *r = model_reader(m);
    const struct mst_file_header *h = reader_header(r);
    const struct model_totals *t = model_totals(m);
    char b1[32], b2[32];
    fprintf(out, "Trace      %s\n", reader_path(r));
    fprintf(out, "Process    pid %u", h->pid);
    if (h->rank != MST_NO_RANK)
        fprintf(out, ", rank %u", h->rank);
    fprintf(out, ", host %s\n", h->host);
    if (*reader_label(r))
        fprintf(out, "Label      %s\n", reader_label(r));
    for (uint32_t d = 0; d < reader_device_count(r); d++) {
        const struct reader_device *dev = reader_device(r, d);
        if (dev)
            fprintf(out, "Device %-3u %s, %s, compute capability %u.%u\n", d, dev->name,
                    table_bytes(dev->total_bytes, b1, sizeof b1), dev->cc_major, dev->cc_minor);
    }
    if (t->ceiling)
        fprintf(out, "Ceiling    %s, policy %s\n", table_bytes(t->ceiling, b1, sizeof b1),
                reader_policy_name(t->policy));
    else
        fprintf(out, "Ceiling    none\n");
    fprintf(out, "Recorded   %s, %llu events%s\n",
            table_duration(t->last_ns - t->first_ns, b2, sizeof b2), (ull)t->events,
            reader_summary(r) ? ", clean end"
                              : ", no end record (the process did not exit "
                                "cleanly, or the trace was cut)");
    if (reader_summary(r) && reader_summary(r)->events_lost)
        fprintf(out, "WARNING    the shim lost %llu events (buffers full): totals are low\n",
                (ull)reader_summary(r)->events_lost);
    if (model_reader_status(m) != READER_OK)
        fprintf(out, "WARNING    %s; the report covers what came before\n", model_reader_error(m));
}

static void print_categories(FILE *out, const struct model_peak *p, const struct model_step *s)
{
    struct table *t = table_new(s ? 5 : 3);
    char b[32];
    table_cell(t, "category");
    table_cell(t, "at peak");
    table_cell(t, "%%");
    if (s) {
        table_cell(t, "step %lld peak", (long long)s->step);
        table_cell(t, "%%");
    }
    for (int c = 1; c <= MST_CATEGORY_MAX; c++) {
        int cat = c % MST_CATEGORY_MAX; /* unknown last */
        if (!p->by_category[cat] && !(s && s->peak_by_category[cat]))
            continue;
        table_cell(t, "%s%s", reader_category_name((unsigned)cat),
                   p->inferred_by_category[cat] ? " *" : "");
        table_cell(t, "%s", table_bytes(p->by_category[cat], b, sizeof b));
        table_cell(t, "%s", table_percent(p->by_category[cat], p->bytes, b, sizeof b));
        if (s) {
            table_cell(t, "%s", table_bytes(s->peak_by_category[cat], b, sizeof b));
            table_cell(t, "%s",
                       table_percent(s->peak_by_category[cat], s->peak_bytes, b, sizeof b));
        }
    }
    table_cell(t, "total");
    table_cell(t, "%s", table_bytes(p->bytes, b, sizeof b));
    table_cell(t, "%s", p->bytes ? "100.0%" : "-");
    if (s) {
        table_cell(t, "%s", table_bytes(s->peak_bytes, b, sizeof b));
        table_cell(t, "%s", s->peak_bytes ? "100.0%" : "-");
    }
    table_print(t, out, 2);
    table_free(t);
}

/* Only worth a line when the process used several devices. */
static void print_devices(FILE *out, struct model *m)
{
    int used = 0;
    for (unsigned d = 0; d < 256; d++)
        used += model_device_peak(m, (uint8_t)d)->used;
    if (used < 2)
        return;
    for (unsigned d = 0; d < 256; d++) {
        const struct model_device_peak *p = model_device_peak(m, (uint8_t)d);
        char b1[32], b2[32];
        if (p->used)
            fprintf(out, "  device %u peak %s at %s\n", d, table_bytes(p->bytes, b1, sizeof b1),
                    table_duration(p->time_ns, b2, sizeof b2));
    }
}

static void print_peak(FILE *out, struct model *m)
{
    const struct model_peak *p = model_peak(m);
    const struct model_step *steady = model_steady_step(m);
    const struct model_totals *t = model_totals(m);
    char b1[32], b2[32];
    fprintf(out, "\nPeak resident %s at %s", table_bytes(p->bytes, b1, sizeof b1),
            table_duration(p->time_ns, b2, sizeof b2));
    if (p->step != MODEL_NO_STEP)
        fprintf(out, ", step %lld", (long long)p->step);
    else
        fprintf(out, ", before the first step");
    if (p->phase)
        fprintf(out, ", phase \"%s\"", reader_string(model_reader(m), p->phase));
    fprintf(out, " (%llu allocations live)\n", (ull)p->live_count);
    if (p->bytes > p->requested)
        fprintf(out,
                "Rounding      %s of it charged above the sizes asked for (granules, size "
                "classes)\n",
                table_bytes(p->bytes - p->requested, b1, sizeof b1));
    print_devices(out, m);
    fputc('\n', out);
    print_categories(out, p, steady && steady->peak_bytes ? steady : NULL);
    uint64_t inferred_at_peak = 0;
    for (int c = 0; c < MST_CATEGORY_MAX; c++)
        inferred_at_peak += p->inferred_by_category[c];
    if (t->inferred_allocations)
        fprintf(out,
                "  * inferred: %s of the peak was recorded as unknown and given its category "
                "from its\n    lifetime (%llu allocations in all; --no-refine shows the recorded "
                "categories)\n",
                table_bytes(inferred_at_peak, b1, sizeof b1), (ull)t->inferred_allocations);
    fprintf(out, "\nAllocations %llu (%s in all), frees %llu", (ull)t->allocations,
            table_bytes(t->allocated_bytes, b1, sizeof b1), (ull)t->frees);
    if (t->unknown_frees)
        fprintf(out, ", frees of unknown addresses %llu", (ull)t->unknown_frees);
    fprintf(out, "\nAlive at exit %llu allocations, %s\n", (ull)t->live_at_exit,
            table_bytes(t->live_bytes_at_exit, b1, sizeof b1));
}

static int is_main(const char *frame)
{
    return strncmp(frame, "main ", 5) == 0 || strncmp(frame, "main+", 5) == 0;
}

/* Index of the first Python frame of a site (innermost first), or `n` when it has none. */
static size_t first_python_frame(struct model *m, uint32_t site, size_t n)
{
    const struct reader *r = model_reader(m);
    for (size_t i = 0; i < n && site; i++) {
        const struct reader_frame *f = reader_frame(r, site);
        const struct reader_module *mod = f ? reader_module(r, f->module_id) : NULL;
        if (!f)
            break;
        if (mod && (mod->flags & MST_MODULE_F_PYTHON))
            return i;
        site = f->parent;
    }
    return n;
}

/* Up to `limit` innermost frames. A site called from Python also gets up to `limit` of its
 * Python frames, which a framework's native frames (dozens deep) would otherwise hide. */
static void print_site_frames(FILE *out, struct model *m, uint32_t site, size_t limit)
{
    const char *frames[MAX_FRAMES];
    size_t nf = model_site_frames(m, site, frames, MAX_FRAMES);
    size_t py = first_python_frame(m, site, nf);
    if (nf == 0)
        fprintf(out, "       (no call stack recorded)\n");
    for (size_t f = 0; f < nf && f < limit && f < py; f++) {
        fprintf(out, "       %s\n", frames[f]);
        if (is_main(frames[f]))
            return; /* what lies above main is the C runtime starting the program */
    }
    if (py == nf)
        return;
    if (py > limit)
        fprintf(out, "       ... %zu native frames\n", py - limit);
    for (size_t f = py; f < nf && f < py + limit; f++)
        fprintf(out, "       %s\n", frames[f]);
}

static void print_sites(FILE *out, struct model *m, enum summary_order order, const char *title,
                        const struct summary_options *o)
{
    const struct model_site *top[256];
    size_t max = o->top < 256 ? o->top : 256;
    size_t n = summary_top_sites(m, order, top, max);
    if (n == 0)
        return;
    uint64_t whole = order == SUMMARY_BY_PEAK   ? model_peak(m)->bytes
                     : order == SUMMARY_BY_EXIT ? model_totals(m)->live_bytes_at_exit
                                                : 0;
    fprintf(out, "\n%s\n", title);
    struct site_labels *labels = site_labels_new(m);
    for (size_t i = 0; i < n; i++) {
        const struct model_site *s = top[i];
        uint64_t bytes = site_bytes(s, order);
        uint64_t count = order == SUMMARY_BY_PEAK ? s->count_at_peak : s->count_at_exit;
        char b1[32], b2[32];
        fprintf(out, "  #%zu %s (%s) in %llu allocations, %s%s", i + 1,
                table_bytes(bytes, b1, sizeof b1), table_percent(bytes, whole, b2, sizeof b2),
                (ull)count, reader_category_name(s->category), s->inferred ? " (inferred)" : "");
        /* the innermost frame is shared with other sites (a wrapper): name the site apart */
        if (site_labels_depth(labels, s->site) > 0)
            fprintf(out, ", from %s", site_labels_name(labels, m, s->site));
        fputc('\n', out);
        print_site_frames(out, m, s->site, o->frames < MAX_FRAMES ? o->frames : MAX_FRAMES);
    }
    site_labels_free(labels);
}

static void print_ooms(FILE *out, struct model *m)
{
    size_t n;
    const struct mst_rec_oom *ooms = model_ooms(m, &n);
    const struct model_totals *t = model_totals(m);
    if (!t->ooms)
        return;
    fprintf(out, "\nOut-of-memory events: %llu\n", (ull)t->ooms);
    for (size_t i = 0; i < n && i < 10; i++) {
        const struct mst_rec_oom *o = &ooms[i];
        char b1[32], b2[32], b3[32], b4[32];
        fprintf(out, "  at %s: %s requested (%s) with %s resident, ceiling %s",
                table_duration(o->time_ns, b4, sizeof b4), table_bytes(o->request, b1, sizeof b1),
                reader_kind_name(o->kind), table_bytes(o->resident, b2, sizeof b2),
                o->ceiling ? table_bytes(o->ceiling, b3, sizeof b3) : "none");
        if (o->phase)
            fprintf(out, ", phase \"%s\"", reader_string(model_reader(m), o->phase));
        fprintf(out, "\n    resident:");
        for (int c = 0; c < MST_CATEGORY_MAX; c++)
            if (o->by_category[c])
                fprintf(out, " %s %s", reader_category_name((unsigned)c),
                        table_bytes(o->by_category[c], b1, sizeof b1));
        fputc('\n', out);
        const char *frames[3];
        size_t nf = model_site_frames(m, o->site, frames, 3);
        for (size_t f = 0; f < nf; f++)
            fprintf(out, "    %s %s\n", f ? "  " : "at", frames[f]);
    }
    if (n < t->ooms)
        fprintf(out, "  (%llu more)\n", (ull)(t->ooms - (n < 10 ? n : 10)));
}

static void print_residency(FILE *out, const struct model_totals *t)
{
    fprintf(out, "\nSpill and recompute (ceiling enforcement):\n");
    int any = 0;
    for (unsigned e = MST_RES_SPILL; e <= MST_RES_LAST; e++) {
        char b1[32], b2[32];
        if (!t->residency_count[e])
            continue;
        any = 1;
        fprintf(out, "  %-9s %llu times, %s, %s", reader_residency_name(e),
                (ull)t->residency_count[e], table_bytes(t->residency_bytes[e], b1, sizeof b1),
                table_duration(t->residency_ns[e], b2, sizeof b2));
        if (t->residency_flops[e])
            fprintf(out, ", %.3g GFLOP", (double)t->residency_flops[e] / 1e9);
        fputc('\n', out);
    }
    if (!any)
        fprintf(out, "  none (no spill, restore, drop or recompute happened)\n");
}

static void print_steps(FILE *out, struct model *m)
{
    size_t n;
    const struct model_step *steps = model_steps(m, &n);
    if (n == 0) {
        fprintf(out, "\nNo step boundaries in the trace (memshim_step_begin or an NVTX rule).\n");
        return;
    }
    fprintf(out, "\nPer-step peaks:\n");
    struct table *t = table_new(6);
    table_cell(t, "step");
    table_cell(t, "peak");
    table_cell(t, "at start");
    table_cell(t, "at end");
    table_cell(t, "allocations");
    table_cell(t, "duration");
    /* long runs: the first 5, then every k-th, then the last 5 */
    size_t stride = n > 40 ? n / 20 : 1;
    for (size_t i = 0; i < n; i++) {
        if (stride > 1 && i >= 5 && i + 5 < n && i % stride)
            continue;
        char b[32];
        table_cell(t, "%lld%s", (long long)steps[i].step, steps[i].complete ? "" : " (last)");
        table_cell(t, "%s", table_bytes(steps[i].peak_bytes, b, sizeof b));
        table_cell(t, "%s", table_bytes(steps[i].start_bytes, b, sizeof b));
        table_cell(t, "%s", table_bytes(steps[i].end_bytes, b, sizeof b));
        table_cell(t, "%llu", (ull)steps[i].allocations);
        table_cell(t, "%s", table_duration(steps[i].end_ns - steps[i].start_ns, b, sizeof b));
    }
    table_print(t, out, 2);
    table_free(t);
    if (stride > 1)
        fprintf(out, "  (%zu steps; every %zu-th shown)\n", n, stride);
}

void summary_print_text(FILE *out, struct model *m, const struct summary_options *o)
{
    print_process(out, m);
    print_peak(out, m);
    summary_tensors_print(out, m);
    print_sites(out, m, SUMMARY_BY_PEAK, "Top call sites at the peak (innermost frame first):", o);
    print_sites(out, m, SUMMARY_BY_EXIT,
                "Alive at exit, by call site (leaks, unless meant to live):", o);
    print_ooms(out, m);
    print_residency(out, model_totals(m));
    print_steps(out, m);
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static void json_categories(struct json *j, const char *key, const uint64_t *by)
{
    json_begin_object(j, key);
    for (int c = 0; c < MST_CATEGORY_MAX; c++)
        json_uint(j, reader_category_name((unsigned)c), by[c]);
    json_end_object(j);
}

static void json_step_number(struct json *j, const char *key, int64_t step)
{
    if (step == MODEL_NO_STEP)
        json_null(j, key);
    else
        json_int(j, key, step);
}

static void json_header(struct json *j, struct model *m)
{
    const struct reader *r = model_reader(m);
    const struct mst_file_header *h = reader_header(r);
    const struct model_totals *t = model_totals(m);
    json_string(j, "trace", reader_path(r));
    json_uint(j, "pid", h->pid);
    if (h->rank == MST_NO_RANK)
        json_null(j, "rank");
    else
        json_uint(j, "rank", h->rank);
    json_string(j, "host", h->host);
    json_string(j, "label", reader_label(r));
    json_begin_array(j, "devices");
    for (uint32_t d = 0; d < reader_device_count(r); d++) {
        const struct reader_device *dev = reader_device(r, d);
        if (!dev)
            continue;
        json_begin_object(j, NULL);
        json_uint(j, "ordinal", d);
        json_string(j, "name", dev->name);
        json_uint(j, "total_bytes", dev->total_bytes);
        json_uint(j, "ceiling_bytes", dev->ceiling_bytes);
        json_end_object(j);
    }
    json_end_array(j);
    json_uint(j, "ceiling_bytes", t->ceiling);
    json_string(j, "policy", reader_policy_name(t->policy));
    json_string(j, "status", status_name(model_reader_status(m)));
    if (model_reader_status(m) != READER_OK)
        json_string(j, "error", model_reader_error(m));
    json_bool(j, "clean_end", reader_summary(r) != NULL);
    json_uint(j, "events_lost", reader_summary(r) ? reader_summary(r)->events_lost : 0);
    json_uint(j, "events", t->events);
    json_uint(j, "duration_ns", t->last_ns - t->first_ns);
}

static void json_sites(struct json *j, struct model *m, const char *key, enum summary_order order,
                       const struct summary_options *o)
{
    const struct model_site *top[256];
    size_t n = summary_top_sites(m, order, top, o->top < 256 ? o->top : 256);
    json_begin_array(j, key);
    struct site_labels *labels = site_labels_new(m);
    for (size_t i = 0; i < n; i++) {
        const struct model_site *s = top[i];
        json_begin_object(j, NULL);
        json_uint(j, "site", s->site);
        json_string(j, "label", site_labels_name(labels, m, s->site));
        json_uint(j, "bytes", site_bytes(s, order));
        json_uint(j, "count", order == SUMMARY_BY_PEAK ? s->count_at_peak : s->count_at_exit);
        json_string(j, "category", reader_category_name(s->category));
        json_bool(j, "inferred", s->inferred);
        json_uint(j, "allocations", s->allocations);
        json_uint(j, "allocated_bytes", s->allocated_bytes);
        json_uint(j, "max_bytes", s->max_bytes);
        const char *frames[MAX_FRAMES];
        size_t nf = model_site_frames(m, s->site, frames, MAX_FRAMES);
        json_begin_array(j, "frames");
        for (size_t f = 0; f < nf; f++)
            json_string(j, NULL, frames[f]);
        json_end_array(j);
        json_end_object(j);
    }
    site_labels_free(labels);
    json_end_array(j);
}

static void json_ooms(struct json *j, struct model *m)
{
    size_t n;
    const struct mst_rec_oom *ooms = model_ooms(m, &n);
    json_uint(j, "ooms", model_totals(m)->ooms);
    json_begin_array(j, "oom_events");
    for (size_t i = 0; i < n; i++) {
        json_begin_object(j, NULL);
        json_uint(j, "time_ns", ooms[i].time_ns);
        json_uint(j, "request", ooms[i].request);
        json_uint(j, "ceiling", ooms[i].ceiling);
        json_uint(j, "resident", ooms[i].resident);
        json_string(j, "kind", reader_kind_name(ooms[i].kind));
        json_string(j, "phase", reader_string(model_reader(m), ooms[i].phase));
        json_uint(j, "site", ooms[i].site);
        json_categories(j, "by_category", ooms[i].by_category);
        json_end_object(j);
    }
    json_end_array(j);
}

static void json_residency(struct json *j, const struct model_totals *t)
{
    json_begin_object(j, "residency");
    for (unsigned e = MST_RES_SPILL; e <= MST_RES_LAST; e++) {
        json_begin_object(j, reader_residency_name(e));
        json_uint(j, "count", t->residency_count[e]);
        json_uint(j, "bytes", t->residency_bytes[e]);
        json_uint(j, "duration_ns", t->residency_ns[e]);
        json_uint(j, "flops", t->residency_flops[e]);
        json_end_object(j);
    }
    json_uint(j, "recompute_flops",
              t->residency_flops[MST_RES_RECOMPUTE] + t->residency_flops[MST_RES_HOST_USE]);
    json_end_object(j);
}

static void json_steps(struct json *j, struct model *m)
{
    size_t n;
    const struct model_step *steps = model_steps(m, &n);
    json_begin_array(j, "steps");
    for (size_t i = 0; i < n; i++) {
        json_begin_object(j, NULL);
        json_int(j, "step", steps[i].step);
        json_uint(j, "peak_bytes", steps[i].peak_bytes);
        json_uint(j, "peak_time_ns", steps[i].peak_time_ns);
        json_uint(j, "start_ns", steps[i].start_ns);
        json_uint(j, "end_ns", steps[i].end_ns);
        json_uint(j, "start_bytes", steps[i].start_bytes);
        json_uint(j, "end_bytes", steps[i].end_bytes);
        json_uint(j, "allocations", steps[i].allocations);
        json_uint(j, "frees", steps[i].frees);
        json_bool(j, "complete", steps[i].complete);
        json_end_object(j);
    }
    json_end_array(j);
    const struct model_step *s = model_steady_step(m);
    if (!s) {
        json_null(j, "steady_step");
        return;
    }
    json_begin_object(j, "steady_step");
    json_int(j, "step", s->step);
    json_uint(j, "peak_bytes", s->peak_bytes);
    json_categories(j, "by_category", s->peak_by_category);
    json_end_object(j);
}

static void json_device_peaks(struct json *j, struct model *m)
{
    json_begin_array(j, "device_peaks");
    for (unsigned d = 0; d < 256; d++) {
        const struct model_device_peak *p = model_device_peak(m, (uint8_t)d);
        if (!p->used)
            continue;
        json_begin_object(j, NULL);
        json_uint(j, "device", d);
        json_uint(j, "peak_bytes", p->bytes);
        json_uint(j, "peak_time_ns", p->time_ns);
        json_step_number(j, "peak_step", p->step);
        json_end_object(j);
    }
    json_end_array(j);
}

void summary_write_json(struct json *j, struct model *m, const struct summary_options *o)
{
    const struct model_peak *p = model_peak(m);
    const struct model_totals *t = model_totals(m);
    json_header(j, m);
    json_uint(j, "peak_bytes", p->bytes);
    json_uint(j, "peak_time_ns", p->time_ns);
    json_step_number(j, "peak_step", p->step);
    json_string(j, "peak_phase", reader_string(model_reader(m), p->phase));
    json_uint(j, "peak_live_allocations", p->live_count);
    json_uint(j, "peak_rounding_bytes", p->bytes > p->requested ? p->bytes - p->requested : 0);
    json_categories(j, "by_category_at_peak", p->by_category);
    json_categories(j, "inferred_by_category_at_peak", p->inferred_by_category);
    json_device_peaks(j, m);
    summary_tensors_json(j, m);
    json_uint(j, "allocations", t->allocations);
    json_uint(j, "frees", t->frees);
    json_uint(j, "unknown_frees", t->unknown_frees);
    json_uint(j, "allocated_bytes", t->allocated_bytes);
    json_uint(j, "leaked_bytes", t->live_bytes_at_exit);
    json_uint(j, "leaked_allocations", t->live_at_exit);
    json_categories(j, "by_category_at_exit", t->live_by_category_at_exit);
    json_uint(j, "inferred_allocations", t->inferred_allocations);
    json_uint(j, "inferred_bytes", t->inferred_bytes);
    json_ooms(j, m);
    json_residency(j, t);
    json_steps(j, m);
    json_sites(j, m, "top_sites", SUMMARY_BY_PEAK, o);
    json_sites(j, m, "leaks", SUMMARY_BY_EXIT, o);
}

/* ---- command ------------------------------------------------------------------------------- */

static int parse(int argc, char **argv, struct summary_options *o)
{
    static const struct option options[] = {
        {"json", no_argument, NULL, 'j'},
        {"no-refine", no_argument, NULL, 'R'},
        {"top", required_argument, NULL, 't'},
        {"frames", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'H'},
        {"config", required_argument, NULL, 'C'},
        {0, 0, 0, 0},
    };
    *o = (struct summary_options){.refine = 1, .top = DEFAULT_TOP, .frames = DEFAULT_FRAMES};
    int c;
    while ((c = getopt_long(argc, argv, "jt:", options, NULL)) != -1) {
        switch (c) {
        case 'j':
            o->json = 1;
            break;
        case 'R':
            o->refine = 0;
            break;
        case 't':
            o->top = strtoul(optarg, NULL, 10);
            break;
        case 'f':
            o->frames = strtoul(optarg, NULL, 10);
            break;
        case 'H':
            o->help = 1;
            return 0;
        case 'C':
            o->config = optarg;
            break;
        default:
            return -1;
        }
    }
    return 0;
}

static int summarize_one(const char *path, const struct summary_options *o)
{
    char err[512];
    struct model_options mo = {.refine = o->refine};
    struct model *m = model_replay(path, &mo, NULL, err, sizeof err);
    if (!m) {
        fprintf(stderr, "memshim-analyze: %s\n", err);
        return 1;
    }
    enum reader_state st = model_reader_status(m);
    if (st != READER_OK)
        fprintf(stderr, "memshim-analyze: %s: %s\n", st == READER_TRUNCATED ? "warning" : "error",
                model_reader_error(m));
    if (o->json) {
        struct json j;
        json_init(&j, stdout, 1);
        json_begin_object(&j, NULL);
        summary_write_json(&j, m, o);
        json_end_object(&j);
    } else {
        summary_print_text(stdout, m, o);
    }
    model_free(m);
    return st == READER_OK || st == READER_TRUNCATED ? 0 : 1;
}

int summary_command(int argc, char **argv)
{
    struct summary_options o;
    if (parse(argc, argv, &o) != 0)
        return 2;
    if (o.help)
        return CLI_EXIT_HELP;
    struct cli_traces traces;
    if (cli_traces(argc, argv, optind, &traces) != 0)
        return 2;
    int rc;
    const char *const *paths = (const char *const *)traces.paths;
    if (traces.count > 1 && runs_apply(paths, traces.count)) {
        struct runs_options ro = {.refine = o.refine, .json = o.json, .config = o.config};
        rc = runs_command_run(paths, traces.count, &ro);
    } else if (o.config) {
        fprintf(stderr, "memshim-analyze summary: --config goes with a folder of labelled runs "
                        "(MEMSHIM_LABEL); for one trace use `estimate --config FILE --trace`\n");
        rc = 2;
    } else if (traces.count == 1) {
        rc = summarize_one(traces.paths[0], &o);
    } else {
        struct merge_options mo = {.refine = o.refine, .json = o.json};
        rc = merge_command_run((const char *const *)traces.paths, traces.count, &mo);
    }
    cli_traces_free(&traces);
    return fflush(stdout) == 0 ? rc : 1;
}
