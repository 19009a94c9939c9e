#include "diff.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define HASH_NONFATAL_OOM 1
#include <uthash.h>

#include "cli.h"
#include "json.h"
#include "model.h"
#include "site_label.h"
#include "svg.h"

#define MAX_STACK 64

typedef unsigned long long ull;

struct site_entry {
    char *key; /* the stack: what matches a site across traces */
    struct diff_row row;
    UT_hash_handle hh;
};

struct side_ctx {
    uint64_t cat_max[MST_CATEGORY_MAX];
};

static int track_max(void *ctx, const struct model *m, const struct model_state *st,
                     const struct model_event *ev)
{
    struct side_ctx *s = ctx;
    (void)m;
    (void)ev;
    for (int i = 0; i < MST_CATEGORY_MAX; i++)
        if (st->resident_by_category[i] > s->cat_max[i])
            s->cat_max[i] = st->resident_by_category[i];
    return 0;
}

static char *stack_key(struct model *m, const struct site_labels *labels, uint32_t site,
                       char **name)
{
    const char *frames[MAX_STACK];
    size_t n = site ? model_site_frames(m, site, frames, MAX_STACK) : 0;
    if (n == 0) {
        *name = strdup("(no stack recorded)");
        return strdup("");
    }
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(frames[i]) + 1;
    char *key = malloc(len), *p = key;
    for (size_t i = 0; key && i < n; i++)
        p += sprintf(p, "%s%s", i ? "\n" : "", frames[i]);
    *name = strdup(site_labels_name(labels, m, site));
    return key;
}

static int add_site(struct site_entry **table, struct model *m, const struct site_labels *labels,
                    const struct model_site *s, int side)
{
    char *name = NULL;
    char *key = stack_key(m, labels, s->site, &name);
    if (!key || !name) {
        free(key);
        free(name);
        return -1;
    }
    struct site_entry *e = NULL;
    HASH_FIND_STR(*table, key, e);
    if (e) {
        free(key);
        free(name);
    } else {
        e = calloc(1, sizeof *e);
        if (!e) {
            free(key);
            free(name);
            return -1;
        }
        e->key = key;
        e->row.name = name;
        e->row.category = s->category;
        HASH_ADD_KEYPTR(hh, *table, e->key, strlen(e->key), e);
    }
    /* different frame ids can symbolize alike (e.g. inlined paths): they add up */
    e->row.at_peak[side] += s->bytes_at_peak;
    e->row.max[side] += s->max_bytes;
    return 0;
}

static uint64_t absdiff(uint64_t a, uint64_t b)
{
    return a > b ? a - b : b - a;
}

static int by_delta(const void *pa, const void *pb)
{
    const struct diff_row *a = pa, *b = pb;
    uint64_t da = absdiff(a->at_peak[0], a->at_peak[1]), db = absdiff(b->at_peak[0], b->at_peak[1]);
    if (da != db)
        return da < db ? 1 : -1;
    da = absdiff(a->max[0], a->max[1]), db = absdiff(b->max[0], b->max[1]);
    if (da != db)
        return da < db ? 1 : -1;
    return strcmp(a->stack, b->stack);
}

static int collect_sites(struct diff_result *r, struct model *const *m)
{
    struct site_entry *table = NULL, *e, *tmp;
    int rc = 0;
    for (int side = 0; side < 2 && rc == 0; side++) {
        size_t n;
        const struct model_site *sites = model_sites(m[side], &n);
        struct site_labels *labels = site_labels_new(m[side]);
        for (size_t i = 0; i < n && rc == 0; i++)
            rc = add_site(&table, m[side], labels, &sites[i], side);
        site_labels_free(labels);
    }
    size_t count = HASH_COUNT(table), k = 0;
    r->sites = calloc(count ? count : 1, sizeof *r->sites);
    HASH_ITER(hh, table, e, tmp)
    {
        HASH_DEL(table, e);
        if (r->sites) {
            r->sites[k] = e->row;
            r->sites[k++].stack = e->key;
        } else {
            free((char *)e->row.name);
            free(e->key);
        }
        free(e);
    }
    r->nsites = k;
    if (!r->sites)
        return -1;
    qsort(r->sites, r->nsites, sizeof *r->sites, by_delta);
    return rc;
}

static void fill_side(struct diff_result *r, int side, struct model *m, const struct side_ctx *s)
{
    const struct model_peak *p = model_peak(m);
    r->peak[side] = p->bytes;
    r->peak_time_ns[side] = p->time_ns;
    r->peak_step[side] = p->step;
    for (int i = 0; i < MST_CATEGORY_MAX; i++) {
        r->categories[i].name = reader_category_name((unsigned)i);
        r->categories[i].category = (uint8_t)i;
        r->categories[i].at_peak[side] = p->by_category[i];
        r->categories[i].max[side] = s->cat_max[i];
    }
}

int diff_traces(const char *a, const char *b, struct diff_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->paths[0] = a;
    out->paths[1] = b;
    struct model *m[2] = {NULL, NULL};
    struct side_ctx s[2] = {0};
    struct model_options opt = {0};
    int rc = 0;
    for (int side = 0; side < 2 && rc == 0; side++) {
        struct model_callbacks cb = {.ctx = &s[side], .on_event = track_max};
        m[side] = model_replay(side ? b : a, &opt, &cb, err, errlen);
        if (!m[side]) {
            rc = -1;
            break;
        }
        if (model_reader_status(m[side]) != READER_OK)
            fprintf(stderr, "memshim-analyze: warning: %s\n", model_reader_error(m[side]));
        fill_side(out, side, m[side], &s[side]);
    }
    if (rc == 0 && collect_sites(out, m) != 0) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    for (int side = 0; side < 2; side++)
        if (m[side])
            model_free(m[side]);
    return rc;
}

void diff_result_free(struct diff_result *r)
{
    for (size_t i = 0; i < r->nsites; i++) {
        free((char *)r->sites[i].name);
        free(r->sites[i].stack);
    }
    free(r->sites);
    r->sites = NULL;
    r->nsites = 0;
}

/* ---- text ------------------------------------------------------------------------------- */

static void signed_bytes(char *buf, size_t len, uint64_t a, uint64_t b)
{
    char v[32];
    svg_format_bytes(v, sizeof v, (double)absdiff(a, b));
    snprintf(buf, len, "%s%s", a == b ? "" : b > a ? "+" : "-", v);
}

static void ratio(char *buf, size_t len, uint64_t a, uint64_t b)
{
    if (a == 0)
        snprintf(buf, len, "%s", b ? "new" : "-");
    else
        snprintf(buf, len, "%.2f", (double)b / (double)a);
}

static void text_row(FILE *out, const char *label, int width, uint64_t a, uint64_t b)
{
    char sa[32], sb[32], d[40], q[16];
    svg_format_bytes(sa, sizeof sa, (double)a);
    svg_format_bytes(sb, sizeof sb, (double)b);
    signed_bytes(d, sizeof d, a, b);
    ratio(q, sizeof q, a, b);
    fprintf(out, "  %-*s %12s %12s %13s %7s\n", width, label, sa, sb, d, q);
}

static void text_header(FILE *out, const char *label, int width)
{
    fprintf(out, "  %-*s %12s %12s %13s %7s\n", width, label, "A", "B", "delta", "B/A");
}

/* Long C++ names are cut from the left: the end of a name says the most. */
static const char *tail(const char *s, size_t width, char *buf, size_t len)
{
    size_t n = strlen(s);
    if (n <= width)
        return s;
    snprintf(buf, len, "...%s", s + n - (width - 3));
    return buf;
}

void diff_print_text(FILE *out, const struct diff_result *r, size_t top)
{
    fprintf(out, "A: %s\nB: %s\n\n", r->paths[0], r->paths[1]);
    text_header(out, "", 16);
    text_row(out, "peak", 16, r->peak[0], r->peak[1]);
    fprintf(out, "\nby category, bytes at each trace's peak (most at any time in brackets)\n");
    text_header(out, "category", 16);
    for (int i = 0; i < MST_CATEGORY_MAX; i++) {
        const struct diff_row *c = &r->categories[i];
        if (!(c->at_peak[0] | c->at_peak[1] | c->max[0] | c->max[1]))
            continue;
        text_row(out, c->name, 16, c->at_peak[0], c->at_peak[1]);
        text_row(out, "  (most at once)", 16, c->max[0], c->max[1]);
    }
    fprintf(out, "\nby call site, bytes at each trace's peak, largest change first\n");
    text_header(out, "call site", 48);
    for (size_t i = 0; i < r->nsites && i < top; i++) {
        char buf[64];
        const struct diff_row *s = &r->sites[i];
        text_row(out, tail(s->name, 48, buf, sizeof buf), 48, s->at_peak[0], s->at_peak[1]);
    }
    if (r->nsites > top)
        fprintf(out, "  ... %zu more sites (--top N shows more)\n", r->nsites - top);
}

/* ---- JSON ------------------------------------------------------------------------------- */

static void json_compare(FILE *out, const uint64_t *at_peak, const uint64_t *max)
{
    fprintf(out, "\"a\":%llu,\"b\":%llu,\"delta\":%lld,\"ratio\":", (ull)at_peak[0],
            (ull)at_peak[1], (long long)at_peak[1] - (long long)at_peak[0]);
    if (at_peak[0])
        fprintf(out, "%.6g", (double)at_peak[1] / (double)at_peak[0]);
    else
        fputs("null", out);
    if (max)
        fprintf(out, ",\"max_a\":%llu,\"max_b\":%llu", (ull)max[0], (ull)max[1]);
}

static void json_side(FILE *out, const struct diff_result *r, int side)
{
    fputs("{\"trace\":", out);
    json_write_string(out, r->paths[side]);
    fprintf(out, ",\"peak_bytes\":%llu,\"peak_time_ns\":%llu,\"peak_step\":", (ull)r->peak[side],
            (ull)r->peak_time_ns[side]);
    if (r->peak_step[side] == MODEL_NO_STEP)
        fputs("null}", out);
    else
        fprintf(out, "%lld}", (long long)r->peak_step[side]);
}

static void json_site(FILE *out, const struct diff_row *s)
{
    fputs("{\"site\":", out);
    json_write_string(out, s->name);
    fputs(",\"stack\":[", out);
    const char *p = s->stack;
    for (int first = 1; *p; first = 0) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char frame[1024];
        snprintf(frame, sizeof frame, "%.*s", (int)(n < sizeof frame ? n : sizeof frame - 1), p);
        fputs(first ? "" : ",", out);
        json_write_string(out, frame);
        p += n + (nl ? 1 : 0);
    }
    fputs("],\"category\":", out);
    json_write_string(out, reader_category_name(s->category));
    fputc(',', out);
    json_compare(out, s->at_peak, s->max);
    fputc('}', out);
}

void diff_print_json(FILE *out, const struct diff_result *r, size_t top)
{
    fputs("{\"a\":", out);
    json_side(out, r, 0);
    fputs(",\"b\":", out);
    json_side(out, r, 1);
    fputs(",\"peak\":{", out);
    json_compare(out, r->peak, NULL);
    fputs("},\"categories\":[", out);
    const char *sep = "";
    for (int i = 0; i < MST_CATEGORY_MAX; i++) {
        const struct diff_row *c = &r->categories[i];
        if (!(c->at_peak[0] | c->at_peak[1] | c->max[0] | c->max[1]))
            continue;
        fprintf(out, "%s{\"category\":", sep);
        json_write_string(out, c->name);
        fputc(',', out);
        json_compare(out, c->at_peak, c->max);
        fputc('}', out);
        sep = ",";
    }
    fputs("],\"sites\":[", out);
    for (size_t i = 0; i < r->nsites && i < top; i++) {
        fputs(i ? "," : "", out);
        json_site(out, &r->sites[i]);
    }
    fprintf(out, "],\"sites_total\":%zu}\n", r->nsites);
}

/* ---- command ---------------------------------------------------------------------------- */

static int usage(void)
{
    fprintf(stderr, "usage: memshim-analyze diff [--json] [--top N] A B\n");
    return 2;
}

int diff_command(int argc, char **argv)
{
    static const struct option options[] = {
        {"json", no_argument, NULL, 'j'},
        {"top", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'H'},
        {0, 0, 0, 0},
    };
    bool json = false;
    long top = 20;
    int c;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        if (c == 'H')
            return CLI_EXIT_HELP;
        if (c == 'j')
            json = true;
        else if (c == 't' && (top = strtol(optarg, NULL, 10)) > 0)
            continue;
        else
            return usage();
    }
    if (argc - optind != 2)
        return usage();
    struct diff_result r;
    char err[256] = "";
    if (diff_traces(argv[optind], argv[optind + 1], &r, err, sizeof err) != 0) {
        fprintf(stderr, "memshim-analyze diff: %s\n", err);
        diff_result_free(&r);
        return 1;
    }
    if (json)
        diff_print_json(stdout, &r, (size_t)top);
    else
        diff_print_text(stdout, &r, (size_t)top);
    diff_result_free(&r);
    return 0;
}
