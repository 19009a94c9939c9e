/* tensor_lines: see tensor_lines.h. */
#include "tensor_lines.h"

#include <stdlib.h>
#include <string.h>

#define TL_FRAME_MAX 1400

/* The row of frame `name` (NULL included), added when new; -1 when out of memory. */
static int64_t tl_row(struct tensor_lines *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (name ? t->rows[i].frame && strcmp(t->rows[i].frame, name) == 0 : !t->rows[i].frame)
            return (int64_t)i;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        struct tensor_line *rows = realloc(t->rows, cap * sizeof *rows);
        if (!rows)
            return -1;
        t->rows = rows;
        t->cap = cap;
    }
    struct tensor_line *row = &t->rows[t->n];
    *row = (struct tensor_line){.frame = name ? strdup(name) : NULL};
    if (name && !row->frame)
        return -1;
    return (int64_t)t->n++;
}

/* The row of `site`, naming it the first time. */
static int64_t tl_site_row(struct tensor_lines *t, const struct reader *r, uint32_t site,
                           tensor_lines_namer name)
{
    if (site >= t->nsites) {
        size_t n = t->nsites ? t->nsites : 256;
        while (n <= site)
            n *= 2;
        uint32_t *by = realloc(t->by_site, n * sizeof *by);
        if (!by)
            return -1;
        memset(by + t->nsites, 0, (n - t->nsites) * sizeof *by);
        t->by_site = by;
        t->nsites = n;
    }
    if (t->by_site[site])
        return (int64_t)t->by_site[site] - 1;
    char buf[TL_FRAME_MAX];
    int64_t row = tl_row(t, name(r, site, buf, sizeof buf));
    if (row >= 0)
        t->by_site[site] = (uint32_t)row + 1;
    return row;
}

int tensor_lines_add(struct tensor_lines *t, const struct reader *r, uint32_t site, uint64_t bytes,
                     tensor_lines_namer name, const char **frame)
{
    int64_t row = tl_site_row(t, r, site, name);
    if (row < 0)
        return -1;
    t->rows[row].tensors++;
    t->rows[row].bytes += bytes;
    if (frame)
        *frame = t->rows[row].frame;
    return 0;
}

const char *tensor_lines_name(struct tensor_lines *t, const struct reader *r, uint32_t site,
                              tensor_lines_namer name, int *failed)
{
    int64_t row = tl_site_row(t, r, site, name);
    if (row < 0) {
        *failed = 1;
        return NULL;
    }
    return t->rows[row].frame;
}

static int tl_cmp(const void *a, const void *b)
{
    const struct tensor_line *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return x->tensors < y->tensors ? 1 : x->tensors > y->tensors ? -1 : 0;
}

void tensor_lines_take(struct tensor_lines *t, struct tensor_line **rows, size_t *n)
{
    *rows = t->rows;
    *n = t->n;
    if (t->n)
        qsort(t->rows, t->n, sizeof *t->rows, tl_cmp);
    t->rows = NULL;
    t->n = t->cap = 0;
}

void tensor_lines_free_rows(struct tensor_line *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(rows[i].frame);
    free(rows);
}

void tensor_lines_free(struct tensor_lines *t)
{
    tensor_lines_free_rows(t->rows, t->n);
    free(t->by_site);
    memset(t, 0, sizeof *t);
}
