/* A folder of labelled runs as a table. See runs.h. */
#include "runs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimate.h"
#include "json.h"
#include "merge.h"
#include "model.h"
#include "reader.h"
#include "table.h"

typedef unsigned long long ull;

struct run {
    const struct merge_rank *m;
    char label[MST_LABEL_LEN];
    int labelled;
    char device[64]; /* name of the first device the trace defines; "" when none */
    int has_estimate;
    struct estimate_result est;
    char why[640]; /* why there is no estimate for this row */
};

/* The first device's name: devices are defined before their first allocation, near the start. */
static void read_device(struct reader *r, char *out, size_t len)
{
    struct reader_record rec;
    for (int i = 0; i < 4096 && !reader_device_count(r); i++)
        if (reader_next(r, &rec) != READER_RECORD)
            break;
    const struct reader_device *d = NULL;
    for (uint32_t o = 0; !d && o < reader_device_count(r); o++)
        d = reader_device(r, o);
    snprintf(out, len, "%s", d && d->name ? d->name : "");
}

/* The label, or the file name without its directory and .mst for an unlabelled trace. */
static int read_label(const char *path, char *out, size_t len, char *device, size_t dlen)
{
    char err[256];
    struct reader *r = reader_open(path, err, sizeof err);
    device[0] = '\0';
    if (r)
        read_device(r, device, dlen);
    const char *label = r ? reader_label(r) : "";
    int labelled = *label != '\0';
    if (labelled) {
        snprintf(out, len, "%s", label);
    } else {
        const char *base = strrchr(path, '/');
        snprintf(out, len, "%s", base ? base + 1 : path);
        size_t n = strlen(out);
        if (n > 4 && !strcmp(out + n - 4, ".mst"))
            out[n - 4] = '\0';
    }
    if (r)
        reader_close(r);
    return labelled;
}

int runs_apply(const char *const *paths, size_t n)
{
    int ranked = 0;
    for (size_t i = 0; i < n; i++) {
        char err[256];
        struct reader *r = reader_open(paths[i], err, sizeof err);
        if (!r)
            continue;
        int labelled = *reader_label(r) != '\0';
        ranked |= reader_header(r)->rank != MST_NO_RANK;
        reader_close(r);
        if (labelled)
            return 1;
    }
    return n > 1 && !ranked;
}

/* The row's estimate: the configuration file, then the label's key=value pairs. */
static void estimate_row(struct run *row, const struct estimate_config *base)
{
    struct estimate_config c = *base;
    char pairs[MST_LABEL_LEN], err[256], *save = NULL;
    snprintf(pairs, sizeof pairs, "%s", row->label);
    for (char *kv = strtok_r(pairs, ",", &save); row->labelled && kv;
         kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            snprintf(row->why, sizeof row->why, "label part '%s' is not key=value", kv);
            return;
        }
        *eq = '\0';
        if (estimate_config_set(&c, kv, eq + 1, err, sizeof err) != 0) {
            snprintf(row->why, sizeof row->why, "%s: %s", kv, err);
            return;
        }
    }
    if (estimate_config_check(&c, err, sizeof err) != 0) {
        snprintf(row->why, sizeof row->why, "%s", err);
        return;
    }
    estimate_compute(&c, &row->est);
    row->has_estimate = 1;
}

static int by_label(const void *a, const void *b)
{
    return strverscmp(((const struct run *)a)->label, ((const struct run *)b)->label);
}

/* Categories that hold bytes in some row, measured or estimated, in the trace format's order. */
static unsigned used_categories(const struct run *rows, size_t n, int *used)
{
    unsigned k = 0;
    for (int c = 0; c < MST_CATEGORY_MAX; c++) {
        used[c] = 0;
        for (size_t i = 0; i < n; i++)
            used[c] |= rows[i].m->by_category[c] != 0 ||
                       (rows[i].has_estimate && rows[i].est.bytes[c] != 0);
        k += (unsigned)used[c];
    }
    return k;
}

static void print_text(FILE *out, const struct run *rows, size_t n, int with_estimate)
{
    int used[MST_CATEGORY_MAX];
    unsigned ncat = used_categories(rows, n, used);
    size_t cols = 2 + ncat + (with_estimate ? 2 : 0) + 1;
    struct table *t = table_new(cols);
    char b[32];
    fprintf(out,
            "Runs: %zu traces of different settings (a table by label, not the ranks of one "
            "job)\nbytes at each run's peak, by category%s\n\n",
            n, with_estimate ? "; estimate from the configuration and the label's key=value" : "");
    table_cell(t, "label");
    table_cell(t, "peak");
    for (int c = 0; c < MST_CATEGORY_MAX; c++)
        if (used[c])
            table_cell(t, "%s", reader_category_name((unsigned)c));
    if (with_estimate) {
        table_cell(t, "estimate");
        table_cell(t, "peak/est");
    }
    table_cell(t, "status");
    for (size_t i = 0; i < n; i++) {
        const struct run *r = &rows[i];
        table_cell(t, "%s", r->label);
        table_cell(t, "%s", table_bytes(r->m->peak_bytes, b, sizeof b));
        for (int c = 0; c < MST_CATEGORY_MAX; c++)
            if (used[c])
                table_cell(t, "%s", table_bytes(r->m->by_category[c], b, sizeof b));
        if (with_estimate && r->has_estimate) {
            table_cell(t, "%s", table_bytes(r->est.total, b, sizeof b));
            table_cell(t, "%.2f",
                       r->est.total ? (double)r->m->peak_bytes / (double)r->est.total : 0.0);
        } else if (with_estimate) {
            table_cell(t, "-");
            table_cell(t, "-");
        }
        table_cell(t, "%s", r->m->readable ? "ok" : "unreadable");
    }
    table_print(t, out, 2);
    table_free(t);
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(rows[i].device, "simcuda")) {
            fprintf(out, "  device: simcuda, simulated on the host (no GPU was used)\n");
            break;
        }
    }
    for (size_t i = 0; with_estimate && i < n; i++)
        if (!rows[i].has_estimate)
            fprintf(out, "  no estimate for '%s': %s\n", rows[i].label, rows[i].why);
}

static void json_row(struct json *j, const struct run *r)
{
    json_begin_object(j, NULL);
    json_string(j, "label", r->label);
    json_bool(j, "labelled", r->labelled);
    json_string(j, "trace", r->m->path);
    json_string(j, "device", r->device);
    json_uint(j, "peak_bytes", r->m->peak_bytes);
    if (r->m->peak_step == MODEL_NO_STEP)
        json_null(j, "peak_step");
    else
        json_int(j, "peak_step", r->m->peak_step);
    json_begin_object(j, "by_category_at_peak");
    for (int c = 0; c < MST_CATEGORY_MAX; c++)
        json_uint(j, reader_category_name((unsigned)c), r->m->by_category[c]);
    json_end_object(j);
    if (!r->has_estimate) {
        json_null(j, "estimate");
    } else {
        json_begin_object(j, "estimate");
        json_uint(j, "total_bytes", r->est.total);
        json_begin_object(j, "by_category");
        for (int c = 0; c < MST_CATEGORY_MAX; c++)
            json_uint(j, reader_category_name((unsigned)c), r->est.bytes[c]);
        json_end_object(j);
        json_end_object(j);
    }
    json_end_object(j);
}

static int load_config(const char *path, struct estimate_config *c)
{
    char err[512];
    estimate_config_defaults(c);
    if (estimate_config_load(c, path, err, sizeof err) != 0) {
        fprintf(stderr, "memshim-analyze summary: --config: %s\n", err);
        return -1;
    }
    return 0;
}

int runs_command_run(const char *const *paths, size_t n, const struct runs_options *o)
{
    struct estimate_config base;
    if (o->config && load_config(o->config, &base) != 0)
        return 2;
    struct merge_options mo = {.refine = o->refine};
    struct merge_job job;
    struct run *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows || merge_collect(paths, n, &mo, &job) != 0) {
        free(rows);
        fprintf(stderr, "memshim-analyze: out of memory\n");
        return 1;
    }
    int rc = 0;
    for (size_t i = 0; i < job.n; i++) {
        rows[i].m = &job.ranks[i];
        rows[i].labelled = read_label(job.ranks[i].path, rows[i].label, sizeof rows[i].label,
                                      rows[i].device, sizeof rows[i].device);
        if (o->config)
            estimate_row(&rows[i], &base);
        if (!job.ranks[i].readable || job.ranks[i].status == READER_CORRUPT ||
            job.ranks[i].status == READER_IO_ERROR)
            rc = 1;
    }
    qsort(rows, job.n, sizeof *rows, by_label);
    if (o->json) {
        struct json j;
        json_init(&j, stdout, 1);
        json_begin_object(&j, NULL);
        json_uint(&j, "traces", job.n);
        json_begin_array(&j, "runs");
        for (size_t i = 0; i < job.n; i++)
            json_row(&j, &rows[i]);
        json_end_array(&j);
        json_end_object(&j);
    } else {
        print_text(stdout, rows, job.n, o->config != NULL);
    }
    free(rows);
    merge_free(&job);
    return rc;
}
