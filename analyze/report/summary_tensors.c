/* summary_tensors: see summary_tensors.h. */
#include "summary_tensors.h"

#include "table.h"
#include "tensors.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The tensor view reads the trace again; a trace without tensors (the model counted none)
 * is not read twice for nothing. */
static int summary_tensors_load(struct model *m, struct tensors_peak *tp)
{
    char err[256];
    memset(tp, 0, sizeof *tp);
    if (!model_totals(m)->tensor_allocs)
        return 0;
    return tensors_analyze(reader_path(model_reader(m)), tp, err, sizeof err) == 0 && tp->tensors;
}

static void summary_tensors_row(struct table *t, const char *name, uint64_t bytes, uint64_t whole)
{
    char b[32];
    table_cell(t, "%s", name);
    table_cell(t, "%s", table_bytes(bytes, b, sizeof b));
    table_cell(t, "%s", table_percent(bytes, whole, b, sizeof b));
}

#define SUMMARY_TENSORS_LINES 10 /* program lines printed; --json has them all */

static void summary_tensors_lines_print(FILE *out, const char *title,
                                        const struct tensor_line *rows, size_t n, size_t most)
{
    if (!n)
        return;
    fprintf(out, "\n%s\n", title);
    for (size_t i = 0; i < n && i < most; i++) {
        char b[32];
        fprintf(out, "  %10s in %llu tensors  %s\n", table_bytes(rows[i].bytes, b, sizeof b),
                (unsigned long long)rows[i].tensors,
                rows[i].frame ? rows[i].frame : "(no Python frame)");
    }
    if (n > most)
        fprintf(out, "  ... %zu more lines (--json lists them all)\n", n - most);
}

void summary_tensors_print(FILE *out, struct model *m)
{
    struct tensors_peak tp;
    if (!summary_tensors_load(m, &tp)) {
        tensors_peak_free(&tp);
        return;
    }
    uint64_t outside = 0;
    for (int c = 0; c < MST_CATEGORY_MAX; c++)
        outside += tp.outside[c];
    uint64_t whole = tp.peak_bytes + tp.cached + outside;
    fprintf(out,
            "\nTensors inside the caching allocator (%llu tensors, %llu backward passes), when "
            "they peaked:\n",
            (unsigned long long)tp.tensors, (unsigned long long)tp.backward_passes);
    struct table *t = table_new(3);
    table_cell(t, "category");
    table_cell(t, "bytes");
    table_cell(t, "%%");
    for (int c = 1; c <= MST_CATEGORY_MAX; c++) {
        int cat = c % MST_CATEGORY_MAX; /* unknown last */
        if (tp.by_category[cat])
            summary_tensors_row(t, reader_category_name((unsigned)cat), tp.by_category[cat], whole);
    }
    summary_tensors_row(t, "cached (no tensor)", tp.cached, whole);
    if (outside)
        summary_tensors_row(t, "outside the allocator", outside, whole);
    summary_tensors_row(t, "total", whole, whole);
    table_print(t, out, 2);
    table_free(t);
    summary_tensors_lines_print(out,
                                "Tensors alive at that peak, by the program's line:", tp.peak_lines,
                                tp.npeak_lines, SUMMARY_TENSORS_LINES);
    summary_tensors_lines_print(out, "Tensors allocated outside backward, by the program's line:",
                                tp.program_lines, tp.nlines, SUMMARY_TENSORS_LINES);
    summary_tensors_lines_print(out, "Tensors allocated by backward, by the line that called it:",
                                tp.backward_calls, tp.ncalls, SIZE_MAX);
    if (tp.nforward_lines) {
        char title[160];
        snprintf(title, sizeof title,
                 "Tensors allocated by backward, by the forward line of their operation "
                 "(%llu of %llu tensors linked):",
                 (unsigned long long)tp.linked, (unsigned long long)tp.backward);
        summary_tensors_lines_print(out, title, tp.forward_lines, tp.nforward_lines,
                                    SUMMARY_TENSORS_LINES);
    }
    tensors_peak_free(&tp);
}

static void summary_tensors_categories(struct json *j, const char *key, const uint64_t *by)
{
    json_begin_object(j, key);
    for (int c = 0; c < MST_CATEGORY_MAX; c++)
        json_uint(j, reader_category_name((unsigned)c), by[c]);
    json_end_object(j);
}

/* A program line under `key`, null for a site without a Python frame (or a tensor without a
 * forward line). */
static void summary_tensors_frame(struct json *j, const char *key, const char *frame)
{
    if (frame)
        json_string(j, key, frame);
    else
        json_null(j, key);
}

static void summary_tensors_live(struct json *j, const struct tensors_peak *tp)
{
    json_begin_array(j, "live_at_peak");
    for (size_t i = 0; i < tp->nlive; i++) {
        json_begin_object(j, NULL);
        json_uint(j, "addr", tp->live[i].addr);
        json_uint(j, "size", tp->live[i].size);
        json_string(j, "category", reader_category_name(tp->live[i].category));
        json_bool(j, "autograd", tp->live[i].autograd);
        summary_tensors_frame(j, "frame", tp->live[i].frame);
        summary_tensors_frame(j, "forward", tp->live[i].forward);
        json_end_object(j);
    }
    json_end_array(j);
}

static void summary_tensors_lines(struct json *j, const char *key, const struct tensor_line *rows,
                                  size_t n)
{
    json_begin_array(j, key);
    for (size_t i = 0; i < n; i++) {
        json_begin_object(j, NULL);
        summary_tensors_frame(j, "frame", rows[i].frame);
        json_uint(j, "tensors", rows[i].tensors);
        json_uint(j, "bytes", rows[i].bytes);
        json_end_object(j);
    }
    json_end_array(j);
}

void summary_tensors_json(struct json *j, struct model *m)
{
    struct tensors_peak tp;
    if (!summary_tensors_load(m, &tp)) {
        tensors_peak_free(&tp);
        json_null(j, "tensors");
        return;
    }
    json_begin_object(j, "tensors");
    json_uint(j, "count", tp.tensors);
    json_uint(j, "backward_passes", tp.backward_passes);
    json_uint(j, "peak_bytes", tp.peak_bytes);
    json_uint(j, "peak_time_ns", tp.time_ns);
    summary_tensors_categories(j, "by_category_at_peak", tp.by_category);
    json_uint(j, "cached_at_peak", tp.cached);
    json_uint(j, "pool_at_peak", tp.pool);
    summary_tensors_categories(j, "outside_pool_at_peak", tp.outside);
    summary_tensors_live(j, &tp);
    summary_tensors_lines(j, "backward_calls", tp.backward_calls, tp.ncalls);
    summary_tensors_lines(j, "program_lines", tp.program_lines, tp.nlines);
    summary_tensors_lines(j, "peak_lines", tp.peak_lines, tp.npeak_lines);
    summary_tensors_lines(j, "forward_lines", tp.forward_lines, tp.nforward_lines);
    json_uint(j, "backward_tensors", tp.backward);
    json_uint(j, "backward_linked", tp.linked);
    json_end_object(j);
    tensors_peak_free(&tp);
}
