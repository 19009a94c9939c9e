/* whatif_report: the whatif command's text tables and JSON. */
#include "whatif_report.h"

#include <math.h>
#include <string.h>

#include "reader.h"
#include "table.h"

typedef unsigned long long ull;

/* ---- reports ------------------------------------------------------------------------------- */

/* Copies are serialised and not overlapped with compute: the time the traffic adds at worst. */
static double move_seconds(const struct whatif_rates *r, uint64_t bytes)
{
    return (double)bytes / r->link;
}

static double recompute_seconds(const struct whatif_rates *r, const struct whatif_recompute *c)
{
    return (double)c->flops / r->gemm + (double)c->moved_bytes / r->link;
}

/* The auto policy at its own rates (those it chose by). */
static double auto_seconds(const struct whatif_rates *r, const struct whatif_auto *a)
{
    return (double)a->t.d2h / (double)r->auto_d2h + (double)a->t.h2d / (double)r->auto_h2d +
           (double)a->flops / (double)r->auto_gemm;
}

static const char *rate_source(int from)
{
    static const char *const k[] = {"default", "measured", "option"};
    return k[from >= 0 && from <= 2 ? from : 0];
}

static const char *flops_text(uint64_t f, char *buf, size_t len)
{
    if (f == 0)
        snprintf(buf, len, "0");
    else if (f >= 1000000000000ull)
        snprintf(buf, len, "%.3g TFLOP", (double)f / 1e12);
    else if (f >= 1000000000ull)
        snprintf(buf, len, "%.3g GFLOP", (double)f / 1e9);
    else
        snprintf(buf, len, "%.3g MFLOP", (double)f / 1e6);
    return buf;
}

static const char *seconds_text(double s, char *buf, size_t len)
{
    return table_duration((uint64_t)(s * 1e9 + 0.5), buf, len);
}

static const char *policy_key(int p)
{
    static const char *const k[] = {"min", "lru", "shim"};
    return k[p];
}

void whatif_report_header(FILE *out, const struct whatif_info *in, const struct whatif_rates *r)
{
    char b1[32], b2[32];
    fprintf(out, "Trace      %s\n", in->path);
    if (in->status != READER_OK)
        fprintf(out, "WARNING    %s; the replay covers what came before\n", in->error);
    fprintf(out, "Device     %d: peak %s as recorded; smallest workable ceiling %s", in->device,
            table_bytes(in->peak, b1, sizeof b1), table_bytes(in->min_ceiling, b2, sizeof b2));
    if (in->min_ceiling_op)
        fprintf(out, " (op #%llu)\n", (ull)in->min_ceiling_op);
    else
        fprintf(out, " (at an allocation)\n");
    fprintf(out, "           at the shim's granules and chunks %s",
            table_bytes(in->shim_min_ceiling, b2, sizeof b2));
    if (in->shim_min_ceiling_op)
        fprintf(out, " (op #%llu)\n", (ull)in->shim_min_ceiling_op);
    else
        fprintf(out, " (at an allocation)\n");
    fprintf(out, "Accesses   %llu ops, %llu accesses (%llu outside tracked allocations)\n",
            (ull)in->ops, (ull)in->accesses, (ull)in->untracked_accesses);
    if (!in->has_accesses)
        fprintf(out, "WARNING    no access records (run with MEMSHIM_ACCESS=all): nothing is "
                     "known to be movable\n");
    if (in->unobserved)
        fprintf(out,
                "Unobserved %llu of %llu allocations never touched by a recorded op stay "
                "resident (at most %s at once)\n",
                (ull)in->unobserved, (ull)in->buffers,
                table_bytes(in->unobserved_max, b1, sizeof b1));
    fprintf(out, "Rates      link %.4g GB/s each way, GEMM %.4g TFLOP/s (%s)\n", r->link / 1e9,
            r->gemm / 1e12, r->gemm_source);
    if (in->auto_h2d)
        fprintf(out, "Auto       h2d %.4g GB/s (%s), d2h %.4g GB/s (%s), GEMM %.4g TFLOP/s (%s)\n",
                (double)in->auto_h2d / 1e9, rate_source(in->auto_from[0]),
                (double)in->auto_d2h / 1e9, rate_source(in->auto_from[1]),
                (double)in->auto_gemm / 1e12, rate_source(in->auto_from[2]));
    fprintf(out,
            "Shim       spills cudaMalloc/cuMemAlloc ranges of %s or more, rounded to %s; "
            "smaller share chunks, spilled whole; a range an op needs back without room %s\n",
            table_bytes(in->spill_min, b1, sizeof b1), table_bytes(in->granule, b2, sizeof b2),
            in->no_host_use ? "fails (--no-host-use)" : "is used in host memory");
}

/* Bytes moved, with the out-of-memory failures and host uses when there are any. */
static void traffic_text(struct table *tb, const struct whatif_traffic *t)
{
    char b[32], oom[32] = "", host[32] = "";
    if (t->failures)
        snprintf(oom, sizeof oom, ", %llu OOM", (ull)t->failures);
    if (t->host_uses)
        snprintf(host, sizeof host, ", %llu in host", (ull)t->host_uses);
    table_cell(tb, "%s%s%s", table_bytes(whatif_bytes(t), b, sizeof b), oom, host);
}

static void cell_traffic(struct table *tb, const struct whatif_result *res, int p)
{
    if (!res->feasible)
        table_cell(tb, "-");
    else if (p == WHATIF_SHIM && !res->have_shim)
        table_cell(tb, "n/a");
    else
        traffic_text(tb, &res->t[p]);
}

void whatif_report_totals(FILE *out, const struct whatif_result *res, size_t n,
                          const struct whatif_rates *r)
{
    struct table *tb = table_new(10);
    char b[32], b2[32];
    const char *head[] = {
        "ceiling",           "fits",      "MIN moved", "LRU moved",  "shim moved",
        "drop GEMM outputs", "+time MIN", "+time LRU", "+time shim", "+time drop"};
    for (size_t i = 0; i < 10; i++)
        table_cell(tb, "%s", head[i]);
    for (size_t i = 0; i < n; i++) {
        const struct whatif_result *x = &res[i];
        table_cell(tb, "%s", table_bytes(x->limit, b, sizeof b));
        table_cell(tb, "%s", x->fits ? "yes" : x->feasible ? "no" : "never");
        for (int p = 0; p < WHATIF_POLICIES; p++)
            cell_traffic(tb, x, p);
        if (!x->feasible)
            table_cell(tb, "-");
        else
            table_cell(tb, "%s + %s", flops_text(x->r.flops, b, sizeof b),
                       table_bytes(x->r.moved_bytes, b2, sizeof b2));
        for (int p = 0; p < WHATIF_POLICIES; p++) {
            if (!x->feasible || (p == WHATIF_SHIM && !x->have_shim))
                table_cell(tb, "-");
            else
                table_cell(tb, "%s",
                           seconds_text(move_seconds(r, whatif_bytes(&x->t[p])), b, sizeof b));
        }
        if (!x->feasible)
            table_cell(tb, "-");
        else
            table_cell(tb, "%s", seconds_text(recompute_seconds(r, &x->r), b, sizeof b));
    }
    table_print(tb, out, 2);
    table_free(tb);
    if (n == 0 || !res[0].have_shim)
        return;
    fprintf(out, "\nAuto policy (DTR victims, each spilled or recomputed, the cheaper):\n");
    tb = table_new(6);
    const char *ahead[] = {"ceiling",    "auto moved",    "spilled",
                           "recomputed", "GEMM replayed", "+time auto"};
    for (size_t i = 0; i < 6; i++)
        table_cell(tb, "%s", ahead[i]);
    for (size_t i = 0; i < n; i++) {
        const struct whatif_result *x = &res[i];
        const struct whatif_auto *a = &x->a;
        table_cell(tb, "%s", table_bytes(x->limit, b, sizeof b));
        if (!x->feasible) {
            for (int c = 0; c < 5; c++)
                table_cell(tb, "-");
            continue;
        }
        traffic_text(tb, &a->t);
        table_cell(tb, "%llu", (ull)a->t.evictions);
        table_cell(tb, "%llu (%s)", (ull)a->drops, table_bytes(a->dropped_bytes, b, sizeof b));
        table_cell(tb, "%s", flops_text(a->flops, b, sizeof b));
        table_cell(tb, "%s", seconds_text(auto_seconds(r, a), b2, sizeof b2));
    }
    table_print(tb, out, 2);
    table_free(tb);
}

void whatif_report_steps(FILE *out, const struct whatif_result *x)
{
    size_t first = x->steps[0].peak == 0 && x->nsteps > 1 ? 1 : 0; /* empty prologue */
    size_t n = x->nsteps - first;
    size_t stride = n > 40 ? n / 20 : 1;
    char b[32], b2[32];
    fprintf(out, "\nPer step at %s:\n", table_bytes(x->limit, b, sizeof b));
    struct table *tb = table_new(7);
    const char *head[] = {"step", "peak", "fits", "MIN", "LRU", "shim", "drop GEMM outputs"};
    for (size_t i = 0; i < 7; i++)
        table_cell(tb, "%s", head[i]);
    for (size_t k = 0; k < n; k++) {
        if (stride > 1 && k >= 5 && k + 5 < n && k % stride)
            continue;
        const struct whatif_step *s = &x->steps[first + k];
        if (s->step < 0)
            table_cell(tb, "before");
        else
            table_cell(tb, "%lld", (long long)s->step);
        table_cell(tb, "%s", table_bytes(s->peak, b, sizeof b));
        table_cell(tb, "%s", s->peak <= x->limit ? "yes" : "no");
        for (int p = 0; p < WHATIF_POLICIES; p++) {
            if (p == WHATIF_SHIM && !x->have_shim)
                table_cell(tb, "n/a");
            else
                table_cell(tb, "%s", table_bytes(whatif_bytes(&s->t[p]), b, sizeof b));
        }
        table_cell(tb, "%s + %s", flops_text(s->r.flops, b, sizeof b),
                   table_bytes(s->r.moved_bytes, b2, sizeof b2));
    }
    table_print(tb, out, 2);
    table_free(tb);
    if (stride > 1)
        fprintf(out, "  (%zu steps; every %zu-th shown)\n", n, stride);
}

static void json_traffic(struct json *j, const char *key, const struct whatif_traffic *t,
                         const struct whatif_rates *r)
{
    json_begin_object(j, key);
    json_uint(j, "d2h_bytes", t->d2h);
    json_uint(j, "h2d_bytes", t->h2d);
    json_uint(j, "moved_bytes", whatif_bytes(t));
    json_uint(j, "evictions", t->evictions);
    json_uint(j, "loads", t->loads);
    json_uint(j, "failures", t->failures);
    json_uint(j, "host_uses", t->host_uses);
    if (r)
        json_double(j, "added_s", move_seconds(r, whatif_bytes(t)));
    json_end_object(j);
}

static void json_recompute(struct json *j, const struct whatif_recompute *c,
                           const struct whatif_rates *r)
{
    json_begin_object(j, "recompute");
    json_uint(j, "flops", c->flops);
    json_uint(j, "recomputes", c->recomputes);
    json_uint(j, "moved_bytes", c->moved_bytes);
    if (r)
        json_double(j, "added_s", recompute_seconds(r, c));
    json_end_object(j);
}

static void json_auto(struct json *j, const struct whatif_auto *a, const struct whatif_rates *r)
{
    json_begin_object(j, "auto");
    json_uint(j, "d2h_bytes", a->t.d2h);
    json_uint(j, "h2d_bytes", a->t.h2d);
    json_uint(j, "moved_bytes", whatif_bytes(&a->t));
    json_uint(j, "evictions", a->t.evictions);
    json_uint(j, "loads", a->t.loads);
    json_uint(j, "failures", a->t.failures);
    json_uint(j, "host_uses", a->t.host_uses);
    json_uint(j, "drops", a->drops);
    json_uint(j, "dropped_bytes", a->dropped_bytes);
    json_uint(j, "recomputes", a->recomputes);
    json_uint(j, "flops", a->flops);
    if (r)
        json_double(j, "added_s", auto_seconds(r, a));
    json_end_object(j);
}

static void json_policies(struct json *j, const struct whatif_result *x,
                          const struct whatif_traffic *t, const struct whatif_recompute *c,
                          const struct whatif_auto *a, const struct whatif_rates *r)
{
    for (int p = 0; p < WHATIF_POLICIES; p++) {
        if (!x->feasible || (p == WHATIF_SHIM && !x->have_shim))
            json_null(j, policy_key(p));
        else
            json_traffic(j, policy_key(p), &t[p], r);
    }
    if (!x->feasible)
        json_null(j, "recompute");
    else
        json_recompute(j, c, r);
    if (!x->feasible || !x->have_shim)
        json_null(j, "auto");
    else
        json_auto(j, a, r);
}

void whatif_report_json_result(struct json *j, const struct whatif_result *x,
                               const struct whatif_rates *r, int steps)
{
    json_begin_object(j, NULL);
    json_uint(j, "limit_bytes", x->limit);
    json_bool(j, "fits", x->fits);
    json_bool(j, "feasible", x->feasible);
    json_bool(j, "shim_feasible", x->shim_feasible);
    json_policies(j, x, x->t, &x->r, &x->a, r);
    if (steps) {
        json_begin_array(j, "steps");
        for (size_t i = 0; i < x->nsteps; i++) {
            const struct whatif_step *s = &x->steps[i];
            json_begin_object(j, NULL);
            if (s->step < 0)
                json_null(j, "step");
            else
                json_int(j, "step", s->step);
            json_uint(j, "peak_bytes", s->peak);
            json_bool(j, "fits", s->peak <= x->limit);
            json_policies(j, x, s->t, &s->r, &s->a, NULL);
            json_end_object(j);
        }
        json_end_array(j);
    }
    json_end_object(j);
}

void whatif_report_json_info(struct json *j, const struct whatif_info *in,
                             const struct whatif_rates *r)
{
    static const char *const status[] = {"ok", "truncated", "corrupt", "io-error"};
    json_string(j, "trace", in->path);
    json_string(j, "status", status[in->status & 3]);
    if (in->status != READER_OK)
        json_string(j, "error", in->error);
    json_uint(j, "device", (uint64_t)in->device);
    json_uint(j, "peak_bytes", in->peak);
    json_uint(j, "min_ceiling_bytes", in->min_ceiling);
    if (in->min_ceiling_op)
        json_uint(j, "min_ceiling_op", in->min_ceiling_op);
    else
        json_null(j, "min_ceiling_op");
    json_uint(j, "shim_min_ceiling_bytes", in->shim_min_ceiling);
    if (in->shim_min_ceiling_op)
        json_uint(j, "shim_min_ceiling_op", in->shim_min_ceiling_op);
    else
        json_null(j, "shim_min_ceiling_op");
    json_bool(j, "has_accesses", in->has_accesses);
    json_uint(j, "ops", in->ops);
    json_uint(j, "accesses", in->accesses);
    json_uint(j, "untracked_accesses", in->untracked_accesses);
    json_uint(j, "allocations", in->buffers);
    json_uint(j, "unobserved_allocations", in->unobserved);
    json_uint(j, "unobserved_max_bytes", in->unobserved_max);
    json_uint(j, "recomputable_uses", in->recomputable_uses);
    json_double(j, "link_bytes_per_s", r->link);
    json_double(j, "gemm_flops_per_s", r->gemm);
    json_string(j, "gemm_rate_source", r->gemm_source);
    json_begin_object(j, "auto_rates");
    json_uint(j, "h2d_bytes_per_s", in->auto_h2d);
    json_uint(j, "d2h_bytes_per_s", in->auto_d2h);
    json_uint(j, "gemm_flops_per_s", in->auto_gemm);
    json_string(j, "h2d_source", rate_source(in->auto_from[0]));
    json_string(j, "d2h_source", rate_source(in->auto_from[1]));
    json_string(j, "gemm_source", rate_source(in->auto_from[2]));
    json_uint(j, "measured_h2d_bytes_per_s", in->measured_h2d);
    json_uint(j, "measured_d2h_bytes_per_s", in->measured_d2h);
    json_uint(j, "measured_gemm_flops_per_s", in->measured_gemm);
    json_end_object(j);
    json_uint(j, "spill_min_bytes", in->spill_min);
    json_uint(j, "granule_bytes", in->granule);
    json_bool(j, "host_use", !in->no_host_use);
}
