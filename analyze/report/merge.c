/* Per-rank table and job-wide numbers. See merge.h. */
#include "merge.h"

#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "table.h"

typedef unsigned long long ull;

static void collect_one(struct merge_rank *r, const char *path, const struct merge_options *o)
{
    char err[512];
    struct model_options mo = {.refine = o->refine};
    struct model *m = model_replay(path, &mo, NULL, err, sizeof err);
    r->rank = MST_NO_RANK;
    r->peak_step = MODEL_NO_STEP;
    if (!m) {
        fprintf(stderr, "memshim-analyze: %s\n", err);
        r->status = READER_CORRUPT;
        return;
    }
    const struct mst_file_header *h = reader_header(model_reader(m));
    const struct model_peak *p = model_peak(m);
    const struct model_totals *t = model_totals(m);
    const struct model_step *steady = model_steady_step(m);
    r->readable = 1;
    r->rank = h->rank;
    r->pid = h->pid;
    memcpy(r->host, h->host, sizeof r->host);
    r->status = model_reader_status(m);
    if (r->status != READER_OK)
        fprintf(stderr, "memshim-analyze: %s: %s\n",
                r->status == READER_TRUNCATED ? "warning" : "error", model_reader_error(m));
    r->peak_bytes = p->bytes;
    r->peak_time_ns = p->time_ns;
    r->peak_step = p->step;
    memcpy(r->by_category, p->by_category, sizeof r->by_category);
    r->steady_peak_bytes = steady ? steady->peak_bytes : 0;
    r->allocations = t->allocations;
    r->frees = t->frees;
    r->leaked_bytes = t->live_bytes_at_exit;
    r->ooms = t->ooms;
    r->events = t->events;
    model_free(m);
}

static int by_rank(const void *a, const void *b)
{
    const struct merge_rank *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return strcmp(x->path, y->path);
}

static void job_numbers(struct merge_job *job)
{
    size_t readable = 0;
    double sum = 0;
    for (size_t i = 0; i < job->n; i++) {
        const struct merge_rank *r = &job->ranks[i];
        job->ooms += r->ooms;
        if (!r->readable)
            continue;
        if (readable == 0 || r->peak_bytes > job->max_peak)
            job->max_peak = r->peak_bytes, job->max_index = i;
        if (readable == 0 || r->peak_bytes < job->min_peak)
            job->min_peak = r->peak_bytes, job->min_index = i;
        sum += (double)r->peak_bytes;
        readable++;
    }
    job->mean_peak = readable ? sum / (double)readable : 0;
    job->spread =
        job->max_peak ? (double)(job->max_peak - job->min_peak) / (double)job->max_peak : 0;
    job->imbalanced = readable > 1 && job->spread > job->threshold;
}

int merge_collect(const char *const *paths, size_t n, const struct merge_options *o,
                  struct merge_job *job)
{
    memset(job, 0, sizeof *job);
    job->threshold = o->threshold > 0 ? o->threshold : MERGE_DEFAULT_THRESHOLD;
    job->ranks = calloc(n ? n : 1, sizeof *job->ranks);
    if (!job->ranks)
        return -1;
    for (size_t i = 0; i < n; i++) {
        job->ranks[i].path = strdup(paths[i]);
        if (!job->ranks[i].path) {
            job->n = i;
            merge_free(job);
            return -1;
        }
        collect_one(&job->ranks[i], paths[i], o);
    }
    job->n = n;
    qsort(job->ranks, n, sizeof *job->ranks, by_rank);
    job_numbers(job);
    return 0;
}

void merge_free(struct merge_job *job)
{
    for (size_t i = 0; i < job->n; i++)
        free(job->ranks[i].path);
    free(job->ranks);
    memset(job, 0, sizeof *job);
}

static const char *status_name(const struct merge_rank *r)
{
    static const char *const names[] = {"ok", "truncated", "corrupt", "io-error"};
    return r->readable ? names[r->status] : "unreadable";
}

static void rank_row(struct table *t, const struct merge_job *job, size_t i)
{
    const struct merge_rank *r = &job->ranks[i];
    char b[32];
    if (r->rank == MST_NO_RANK)
        table_cell(t, "-");
    else
        table_cell(t, "%u", r->rank);
    table_cell(t, "%s:%u", r->host, r->pid);
    table_cell(t, "%s", table_bytes(r->peak_bytes, b, sizeof b));
    if (r->peak_step == MODEL_NO_STEP)
        table_cell(t, "-");
    else
        table_cell(t, "%lld", (long long)r->peak_step);
    table_cell(t, "%s", table_percent(r->peak_bytes, job->max_peak, b, sizeof b));
    table_cell(t, "%s", table_bytes(r->steady_peak_bytes, b, sizeof b));
    table_cell(t, "%llu", (ull)r->ooms);
    table_cell(t, "%s", table_bytes(r->leaked_bytes, b, sizeof b));
    table_cell(t, "%s%s", status_name(r),
               job->imbalanced && r->readable && i == job->max_index ? "  <- max" : "");
}

void merge_print_text(FILE *out, const struct merge_job *job)
{
    char b1[32], b2[32];
    fprintf(out, "Job of %zu traces\n\n", job->n);
    struct table *t = table_new(9);
    const char *head[] = {"rank",        "host:pid", "peak",          "peak step", "of max",
                          "steady step", "OOMs",     "alive at exit", "status"};
    for (size_t i = 0; i < 9; i++)
        table_cell(t, "%s", head[i]);
    for (size_t i = 0; i < job->n; i++)
        rank_row(t, job, i);
    table_print(t, out, 2);
    table_free(t);
    if (job->max_peak == 0 && job->min_peak == 0 && job->ooms == 0) {
        fprintf(out, "\nNo device memory was allocated in any trace.\n");
        return;
    }
    const struct merge_rank *max = &job->ranks[job->max_index];
    fprintf(out, "\nJob-wide maximum %s on ", table_bytes(job->max_peak, b1, sizeof b1));
    if (max->rank == MST_NO_RANK)
        fprintf(out, "%s", max->path);
    else
        fprintf(out, "rank %u", max->rank);
    if (max->peak_step != MODEL_NO_STEP)
        fprintf(out, " (step %lld)", (long long)max->peak_step);
    fprintf(out, "; smallest peak %s, mean %s\n", table_bytes(job->min_peak, b2, sizeof b2),
            table_bytes((uint64_t)job->mean_peak, b1, sizeof b1));
    fprintf(out, "At that peak:");
    for (int c = 0; c < MST_CATEGORY_MAX; c++)
        if (max->by_category[c])
            fprintf(out, " %s %s (%s)", reader_category_name((unsigned)c),
                    table_bytes(max->by_category[c], b1, sizeof b1),
                    table_percent(max->by_category[c], max->peak_bytes, b2, sizeof b2));
    fputc('\n', out);
    if (job->imbalanced)
        fprintf(out,
                "IMBALANCE: peaks differ by %.1f%% of the maximum (threshold %.0f%%); every "
                "rank must fit the largest, so the others waste the difference.\n",
                100 * job->spread, 100 * job->threshold);
    else
        fprintf(out, "Balanced: peaks differ by %.1f%% of the maximum (threshold %.0f%%).\n",
                100 * job->spread, 100 * job->threshold);
    if (job->ooms)
        fprintf(out, "Out-of-memory events in the job: %llu\n", (ull)job->ooms);
}

static void json_rank(struct json *j, const struct merge_rank *r)
{
    json_begin_object(j, NULL);
    json_string(j, "trace", r->path);
    if (r->rank == MST_NO_RANK)
        json_null(j, "rank");
    else
        json_uint(j, "rank", r->rank);
    json_uint(j, "pid", r->pid);
    json_string(j, "host", r->host);
    json_string(j, "status", status_name(r));
    json_uint(j, "peak_bytes", r->peak_bytes);
    json_uint(j, "peak_time_ns", r->peak_time_ns);
    if (r->peak_step == MODEL_NO_STEP)
        json_null(j, "peak_step");
    else
        json_int(j, "peak_step", r->peak_step);
    json_begin_object(j, "by_category_at_peak");
    for (int c = 0; c < MST_CATEGORY_MAX; c++)
        json_uint(j, reader_category_name((unsigned)c), r->by_category[c]);
    json_end_object(j);
    json_uint(j, "steady_step_peak_bytes", r->steady_peak_bytes);
    json_uint(j, "allocations", r->allocations);
    json_uint(j, "frees", r->frees);
    json_uint(j, "leaked_bytes", r->leaked_bytes);
    json_uint(j, "ooms", r->ooms);
    json_uint(j, "events", r->events);
    json_end_object(j);
}

void merge_write_json(struct json *j, const struct merge_job *job)
{
    json_uint(j, "traces", job->n);
    json_uint(j, "peak_bytes", job->max_peak);
    if (job->n) {
        const struct merge_rank *max = &job->ranks[job->max_index];
        if (max->rank == MST_NO_RANK)
            json_null(j, "peak_rank");
        else
            json_uint(j, "peak_rank", max->rank);
        json_string(j, "peak_trace", max->path);
        json_begin_object(j, "by_category_at_peak"); /* of the rank with the maximum */
        for (int c = 0; c < MST_CATEGORY_MAX; c++)
            json_uint(j, reader_category_name((unsigned)c), max->by_category[c]);
        json_end_object(j);
    }
    json_uint(j, "min_peak_bytes", job->min_peak);
    json_double(j, "mean_peak_bytes", job->mean_peak);
    json_double(j, "spread", job->spread);
    json_double(j, "imbalance_threshold", job->threshold);
    json_bool(j, "imbalanced", job->imbalanced);
    json_uint(j, "ooms", job->ooms);
    json_begin_array(j, "ranks");
    for (size_t i = 0; i < job->n; i++)
        json_rank(j, &job->ranks[i]);
    json_end_array(j);
}

int merge_command_run(const char *const *paths, size_t n, const struct merge_options *o)
{
    struct merge_job job;
    if (merge_collect(paths, n, o, &job) != 0) {
        fprintf(stderr, "memshim-analyze: out of memory\n");
        return 1;
    }
    if (o->json) {
        struct json j;
        json_init(&j, stdout, 1);
        json_begin_object(&j, NULL);
        merge_write_json(&j, &job);
        json_end_object(&j);
    } else {
        merge_print_text(stdout, &job);
    }
    int rc = 0;
    for (size_t i = 0; i < job.n; i++)
        if (!job.ranks[i].readable || job.ranks[i].status == READER_CORRUPT ||
            job.ranks[i].status == READER_IO_ERROR)
            rc = 1;
    merge_free(&job);
    return rc;
}
