/* A small streaming JSON writer: objects, arrays, strings (escaped, invalid UTF-8 replaced),
 * integers and numbers. Keys are given with each value inside objects, NULL inside arrays. */
#ifndef ANALYZE_JSON_H
#define ANALYZE_JSON_H

#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

struct json {
    FILE *out;
    int pretty;
    int depth;
    int count[JSON_MAX_DEPTH]; /* values written at each level */
};

void json_init(struct json *j, FILE *out, int pretty);
void json_begin_object(struct json *j, const char *key);
void json_end_object(struct json *j);
void json_begin_array(struct json *j, const char *key);
void json_end_array(struct json *j);
void json_string(struct json *j, const char *key, const char *value);
void json_uint(struct json *j, const char *key, uint64_t v);
void json_int(struct json *j, const char *key, int64_t v);
void json_double(struct json *j, const char *key, double v); /* NaN and infinities: null */
void json_bool(struct json *j, const char *key, int v);
void json_null(struct json *j, const char *key);
/* Writes `s` as a quoted JSON string (no key, no separator): for other writers. */
void json_write_string(FILE *out, const char *s);

#endif /* ANALYZE_JSON_H */
