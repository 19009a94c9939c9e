/* Text report helpers. See table.h. */
#include "table.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *table_bytes(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 6)
        v /= 1024, u++;
    snprintf(buf, len, v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, units[u]);
    return buf;
}

const char *table_percent(uint64_t part, uint64_t whole, char *buf, size_t len)
{
    if (whole == 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1f%%", 100.0 * (double)part / (double)whole);
    return buf;
}

const char *table_duration(uint64_t ns, char *buf, size_t len)
{
    if (ns >= 1000000000ull)
        snprintf(buf, len, "%.3f s", (double)ns / 1e9);
    else if (ns >= 1000000ull)
        snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
    else if (ns >= 1000ull)
        snprintf(buf, len, "%.1f us", (double)ns / 1e3);
    else
        snprintf(buf, len, "%llu ns", (unsigned long long)ns);
    return buf;
}

struct table {
    size_t columns;
    char **cells;
    size_t n, cap;
};

struct table *table_new(size_t columns)
{
    struct table *t = calloc(1, sizeof *t);
    if (t)
        t->columns = columns ? columns : 1;
    return t;
}

void table_free(struct table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

void table_cell(struct table *t, const char *fmt, ...)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        char **c = realloc(t->cells, cap * sizeof *c);
        if (!c)
            return;
        t->cells = c;
        t->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    t->cells[t->n++] = s;
}

/* Numbers, byte counts and percentages read best right-aligned. */
static int numeric(const char *s)
{
    return s && (isdigit((unsigned char)s[0]) || (s[0] == '-' && s[1] == '\0'));
}

void table_print(const struct table *t, FILE *out, int indent)
{
    size_t *width = calloc(t->columns, sizeof *width);
    if (!width)
        return;
    for (size_t i = 0; i < t->n; i++) {
        size_t w = t->cells[i] ? strlen(t->cells[i]) : 0;
        if (w > width[i % t->columns])
            width[i % t->columns] = w;
    }
    for (size_t i = 0; i < t->n; i++) {
        size_t c = i % t->columns;
        const char *s = t->cells[i] ? t->cells[i] : "";
        if (c == 0)
            fprintf(out, "%*s", indent, "");
        int w = (int)width[c];
        int last = c + 1 == t->columns || i + 1 == t->n;
        if (numeric(s) && i >= t->columns)
            fprintf(out, "%*s", w, s);
        else if (last)
            fputs(s, out);
        else
            fprintf(out, "%-*s", w, s);
        if (!last)
            fputs("  ", out);
        if (last) {
            fputc('\n', out);
            if (i < t->columns) {
                size_t total = 0;
                for (size_t k = 0; k < t->columns; k++)
                    total += width[k] + (k ? 2 : 0);
                fprintf(out, "%*s", indent, "");
                for (size_t k = 0; k < total; k++)
                    fputc('-', out);
                fputc('\n', out);
            }
        }
    }
    free(width);
}
