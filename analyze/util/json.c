/* Streaming JSON writer. See json.h. */
#include "json.h"

#include <inttypes.h>
#include <math.h>

void json_init(struct json *j, FILE *out, int pretty)
{
    j->out = out;
    j->pretty = pretty;
    j->depth = 0;
    j->count[0] = 0;
}

/* Length of the valid UTF-8 sequence at s, or 0 if it is not one. */
static int utf8_length(const unsigned char *s)
{
    int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (n == 0 || s[0] > 0xf4)
        return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
        return 0; /* overlong, or a surrogate */
    if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
        return 0;
    return n;
}

void json_write_string(FILE *out, const char *str)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    fputc('"', out);
    while (*s) {
        if (*s == '"' || *s == '\\') {
            fputc('\\', out);
            fputc(*s++, out);
        } else if (*s == '\n') {
            fputs("\\n", out), s++;
        } else if (*s < 0x20 || *s == 0x7f) {
            fprintf(out, "\\u%04x", *s++);
        } else if (*s < 0x80) {
            fputc(*s++, out);
        } else {
            int n = utf8_length(s);
            if (n) {
                fwrite(s, 1, (size_t)n, out);
                s += n;
            } else {
                fputs("\\ufffd", out);
                s++;
            }
        }
    }
    fputc('"', out);
}

/* Separator, indentation and key before a value. */
static void prefix(struct json *j, const char *key)
{
    if (j->count[j->depth]++ > 0)
        fputc(',', j->out);
    if (j->pretty && j->depth > 0) {
        fputc('\n', j->out);
        for (int i = 0; i < j->depth; i++)
            fputs("  ", j->out);
    }
    if (key) {
        json_write_string(j->out, key);
        fputs(j->pretty ? ": " : ":", j->out);
    }
}

static void open_level(struct json *j, const char *key, char c)
{
    prefix(j, key);
    fputc(c, j->out);
    if (j->depth + 1 < JSON_MAX_DEPTH)
        j->depth++;
    j->count[j->depth] = 0;
}

static void close_level(struct json *j, char c)
{
    int had = j->count[j->depth] > 0;
    if (j->depth > 0)
        j->depth--;
    if (j->pretty && had) {
        fputc('\n', j->out);
        for (int i = 0; i < j->depth; i++)
            fputs("  ", j->out);
    }
    fputc(c, j->out);
    if (j->depth == 0)
        fputc('\n', j->out);
}

void json_begin_object(struct json *j, const char *key)
{
    open_level(j, key, '{');
}

void json_end_object(struct json *j)
{
    close_level(j, '}');
}

void json_begin_array(struct json *j, const char *key)
{
    open_level(j, key, '[');
}

void json_end_array(struct json *j)
{
    close_level(j, ']');
}

void json_string(struct json *j, const char *key, const char *value)
{
    prefix(j, key);
    json_write_string(j->out, value);
}

void json_uint(struct json *j, const char *key, uint64_t v)
{
    prefix(j, key);
    fprintf(j->out, "%" PRIu64, v);
}

void json_int(struct json *j, const char *key, int64_t v)
{
    prefix(j, key);
    fprintf(j->out, "%" PRId64, v);
}

void json_double(struct json *j, const char *key, double v)
{
    prefix(j, key);
    if (isfinite(v))
        fprintf(j->out, "%.17g", v);
    else
        fputs("null", j->out);
}

void json_bool(struct json *j, const char *key, int v)
{
    prefix(j, key);
    fputs(v ? "true" : "false", j->out);
}

void json_null(struct json *j, const char *key)
{
    prefix(j, key);
    fputs("null", j->out);
}
