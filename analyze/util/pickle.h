/* A streaming pickle writer restricted to the opcodes that both Python's unpickler and the
 * JavaScript unpickler of pytorch.org/memory_viz (torch/utils/viz/MemoryViz.js) accept:
 * PROTO 2, EMPTY_DICT, EMPTY_LIST, MARK, SETITEMS, APPENDS, BININT1, BININT2, BININT, LONG1,
 * SHORT_BINUNICODE, BINUNICODE, NONE, NEWTRUE, NEWFALSE, BINFLOAT, BINPUT, LONG_BINPUT, BINGET,
 * LONG_BINGET and STOP. The memo is used only where the caller asks (pickle_put/pickle_get).
 *
 * Containers are written as EMPTY_x MARK items... SETITEMS/APPENDS, with a SETITEMS/APPENDS
 * every PICKLE_BATCH items as Python's own pickler does: the viewer pushes a batch with
 * `arr.push(...items)`, which overflows the JavaScript call stack for very large batches.
 *
 * Usage: pickle_begin, then values (a dict's items as key, value, key, value...), pickle_end.
 * Errors (I/O, nesting deeper than PICKLE_MAX_DEPTH, unbalanced ends) are sticky and reported
 * by pickle_end. Output is buffered in the writer: `out` is complete only after pickle_end
 * (or pickle_fragment_end). */
#ifndef MEMSHIM_ANALYZE_PICKLE_H
#define MEMSHIM_ANALYZE_PICKLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PICKLE_MAX_DEPTH 16
#define PICKLE_BATCH     1000
#define PICKLE_BUFFER    8192

struct pickle_writer {
    FILE *out;
    int depth;
    bool failed;
    char kind[PICKLE_MAX_DEPTH];        /* 'd' dict or 'l' list, per open container */
    uint32_t pending[PICKLE_MAX_DEPTH]; /* items pushed since the last MARK */
    size_t len;                         /* bytes waiting in buf */
    unsigned char buf[PICKLE_BUFFER];   /* opcodes are a byte or two: stdio per op is slow */
};

void pickle_begin(struct pickle_writer *w, FILE *out);
/* Writes STOP; returns 0, or -1 if anything failed or containers are still open. */
int pickle_end(struct pickle_writer *w);

void pickle_dict_begin(struct pickle_writer *w);
void pickle_dict_end(struct pickle_writer *w);
void pickle_list_begin(struct pickle_writer *w);
void pickle_list_end(struct pickle_writer *w);

void pickle_int(struct pickle_writer *w, int64_t v);
void pickle_uint(struct pickle_writer *w, uint64_t v);
/* Bytes that are not valid UTF-8 are written as '?', so Python can always decode the string. */
void pickle_str(struct pickle_writer *w, const char *s, size_t len);
void pickle_cstr(struct pickle_writer *w, const char *s);
void pickle_none(struct pickle_writer *w);
void pickle_bool(struct pickle_writer *w, bool v);
void pickle_float(struct pickle_writer *w, double v);

/* Memo: pickle_put stores the value just written (e.g. a frames list) under `id`; pickle_get
 * pushes it again, so a value shared by many events is written once. Ids are the caller's. */
void pickle_put(struct pickle_writer *w, uint32_t id);
void pickle_get(struct pickle_writer *w, uint32_t id);

/* A fragment: the items of one list, written to a separate file (e.g. one per device while
 * the events of all devices interleave) and later copied between pickle_list_begin and
 * pickle_list_end of the main writer with pickle_copy. Writes no PROTO and no STOP; finish it
 * with pickle_fragment_end, which returns 0 or -1 as pickle_end does. */
void pickle_fragment_begin(struct pickle_writer *w, FILE *out);
int pickle_fragment_end(struct pickle_writer *w);
/* Appends everything in `from` (read from its start) to the output; returns 0 or -1. */
int pickle_copy(struct pickle_writer *w, FILE *from);

/* Dict item shorthands: key string then value. */
void pickle_key_uint(struct pickle_writer *w, const char *key, uint64_t v);
void pickle_key_int(struct pickle_writer *w, const char *key, int64_t v);
void pickle_key_cstr(struct pickle_writer *w, const char *key, const char *v);

#endif /* MEMSHIM_ANALYZE_PICKLE_H */
