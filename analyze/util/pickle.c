#include "pickle.h"

#include <string.h>

enum {
    OP_PROTO = 0x80,
    OP_STOP = '.',
    OP_MARK = '(',
    OP_EMPTY_DICT = '}',
    OP_EMPTY_LIST = ']',
    OP_SETITEMS = 'u',
    OP_APPENDS = 'e',
    OP_BININT1 = 'K',
    OP_BININT2 = 'M',
    OP_BININT = 'J',
    OP_LONG1 = 0x8a,
    OP_SHORT_BINUNICODE = 0x8c,
    OP_BINUNICODE = 'X',
    OP_NONE = 'N',
    OP_NEWTRUE = 0x88,
    OP_NEWFALSE = 0x89,
    OP_BINFLOAT = 'G',
    OP_BINPUT = 'q',
    OP_LONG_BINPUT = 'r',
    OP_BINGET = 'h',
    OP_LONG_BINGET = 'j',
};

static void flush(struct pickle_writer *w)
{
    if (!w->failed && w->len && fwrite(w->buf, 1, w->len, w->out) != w->len)
        w->failed = true;
    w->len = 0;
}

static void put(struct pickle_writer *w, const void *p, size_t n)
{
    if (w->len + n > sizeof w->buf) {
        flush(w);
        if (n > sizeof w->buf) {
            if (!w->failed && fwrite(p, 1, n, w->out) != n)
                w->failed = true;
            return;
        }
    }
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}

static void put_op(struct pickle_writer *w, uint8_t op)
{
    put(w, &op, 1);
}

static void put_le(struct pickle_writer *w, uint64_t v, int nbytes)
{
    uint8_t b[8];
    for (int i = 0; i < nbytes; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    put(w, b, (size_t)nbytes);
}

/* Every value pushed into an open container passes here first, so batches can be closed
 * between items. A dict batch is closed only after a complete key/value pair. */
static void before_push(struct pickle_writer *w)
{
    if (w->depth == 0)
        return;
    int d = w->depth - 1;
    uint32_t limit = w->kind[d] == 'd' ? 2 * PICKLE_BATCH : PICKLE_BATCH;
    if (w->pending[d] >= limit) {
        put_op(w, w->kind[d] == 'd' ? OP_SETITEMS : OP_APPENDS);
        put_op(w, OP_MARK);
        w->pending[d] = 0;
    }
    w->pending[d]++;
}

void pickle_begin(struct pickle_writer *w, FILE *out)
{
    memset(w, 0, sizeof *w);
    w->out = out;
    put_op(w, OP_PROTO);
    put_op(w, 2);
}

int pickle_end(struct pickle_writer *w)
{
    if (w->depth != 0)
        w->failed = true;
    put_op(w, OP_STOP);
    flush(w);
    return w->failed ? -1 : 0;
}

static void open_container(struct pickle_writer *w, char kind, uint8_t op)
{
    before_push(w);
    if (w->depth == PICKLE_MAX_DEPTH) {
        w->failed = true;
        return;
    }
    put_op(w, op);
    put_op(w, OP_MARK);
    w->kind[w->depth] = kind;
    w->pending[w->depth] = 0;
    w->depth++;
}

static void close_container(struct pickle_writer *w, char kind, uint8_t op)
{
    if (w->depth == 0 || w->kind[w->depth - 1] != kind) {
        w->failed = true;
        return;
    }
    put_op(w, op);
    w->depth--;
}

void pickle_fragment_begin(struct pickle_writer *w, FILE *out)
{
    memset(w, 0, sizeof *w);
    w->out = out;
    w->kind[0] = 'l';
    w->depth = 1; /* inside the list the main writer opens around the copy */
}

int pickle_fragment_end(struct pickle_writer *w)
{
    if (w->depth != 1)
        w->failed = true;
    flush(w);
    if (!w->failed && fflush(w->out) != 0)
        w->failed = true;
    return w->failed ? -1 : 0;
}

int pickle_copy(struct pickle_writer *w, FILE *from)
{
    char buf[1 << 16];
    size_t n;
    flush(w);
    if (fflush(from) != 0 || fseek(from, 0, SEEK_SET) != 0)
        w->failed = true;
    while (!w->failed && (n = fread(buf, 1, sizeof buf, from)) > 0)
        if (fwrite(buf, 1, n, w->out) != n)
            w->failed = true;
    if (ferror(from))
        w->failed = true;
    /* the fragment closed its own batches; what follows starts a fresh count */
    if (w->depth > 0)
        w->pending[w->depth - 1] = 0;
    return w->failed ? -1 : 0;
}

void pickle_put(struct pickle_writer *w, uint32_t id)
{
    /* not a push: the memo refers to the value already on the stack */
    if (id <= UINT8_MAX) {
        put_op(w, OP_BINPUT);
        put_le(w, id, 1);
    } else {
        put_op(w, OP_LONG_BINPUT);
        put_le(w, id, 4);
    }
}

void pickle_get(struct pickle_writer *w, uint32_t id)
{
    before_push(w);
    if (id <= UINT8_MAX) {
        put_op(w, OP_BINGET);
        put_le(w, id, 1);
    } else {
        put_op(w, OP_LONG_BINGET);
        put_le(w, id, 4);
    }
}

void pickle_dict_begin(struct pickle_writer *w)
{
    open_container(w, 'd', OP_EMPTY_DICT);
}

void pickle_dict_end(struct pickle_writer *w)
{
    close_container(w, 'd', OP_SETITEMS);
}

void pickle_list_begin(struct pickle_writer *w)
{
    open_container(w, 'l', OP_EMPTY_LIST);
}

void pickle_list_end(struct pickle_writer *w)
{
    close_container(w, 'l', OP_APPENDS);
}

/* LONG1: the shortest little-endian two's-complement form. The viewer turns up to 8 bytes
 * into a Number; our values (addresses, sizes, times) stay below 2^63. */
static void put_long1(struct pickle_writer *w, uint64_t bits, bool negative)
{
    uint8_t b[9];
    int n = 0;
    do {
        b[n++] = (uint8_t)bits;
        bits = negative ? (uint64_t)((int64_t)bits >> 8) : bits >> 8;
    } while (n < 8 &&
             !(bits == (negative ? UINT64_MAX : 0) && (b[n - 1] & 0x80) == (negative ? 0x80 : 0)));
    if (n == 8 && !negative && (b[7] & 0x80))
        b[n++] = 0; /* an unsigned value >= 2^63 needs a ninth, positive sign byte */
    put_op(w, OP_LONG1);
    put_op(w, (uint8_t)n);
    put(w, b, (size_t)n);
}

void pickle_int(struct pickle_writer *w, int64_t v)
{
    if (v >= 0) {
        pickle_uint(w, (uint64_t)v);
        return;
    }
    before_push(w);
    if (v >= INT32_MIN) {
        put_op(w, OP_BININT);
        put_le(w, (uint64_t)v, 4);
    } else {
        put_long1(w, (uint64_t)v, true);
    }
}

void pickle_uint(struct pickle_writer *w, uint64_t v)
{
    before_push(w);
    if (v <= UINT8_MAX) {
        put_op(w, OP_BININT1);
        put_le(w, v, 1);
    } else if (v <= UINT16_MAX) {
        put_op(w, OP_BININT2);
        put_le(w, v, 2);
    } else if (v <= INT32_MAX) {
        put_op(w, OP_BININT);
        put_le(w, v, 4);
    } else {
        put_long1(w, v, false);
    }
}

/* Length of the well-formed UTF-8 sequence at s (1-4), or 0 if the byte there starts none. */
static size_t utf8_seq_len(const uint8_t *s, size_t avail)
{
    uint8_t c = s[0];
    if (c < 0x80)
        return 1;
    size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    if (n == 0 || c > 0xf4 || n > avail)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    /* overlong forms, UTF-16 surrogates and code points above U+10FFFF */
    if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0) || (c == 0xf0 && s[1] < 0x90) ||
        (c == 0xf4 && s[1] >= 0x90))
        return 0;
    return n;
}

static void put_utf8(struct pickle_writer *w, const uint8_t *s, size_t len)
{
    size_t run = 0; /* start of the pending valid run */
    size_t i = 0;
    while (i < len) {
        size_t n = utf8_seq_len(s + i, len - i);
        if (n) {
            i += n;
            continue;
        }
        put(w, s + run, i - run);
        put(w, "?", 1);
        run = ++i;
    }
    put(w, s + run, len - run);
}

void pickle_str(struct pickle_writer *w, const char *s, size_t len)
{
    before_push(w);
    if (len > UINT32_MAX) {
        w->failed = true;
        return;
    }
    if (len < 256) {
        put_op(w, OP_SHORT_BINUNICODE);
        put_le(w, len, 1);
    } else {
        put_op(w, OP_BINUNICODE);
        put_le(w, len, 4);
    }
    put_utf8(w, (const uint8_t *)s, len);
}

void pickle_cstr(struct pickle_writer *w, const char *s)
{
    pickle_str(w, s, strlen(s));
}

void pickle_none(struct pickle_writer *w)
{
    before_push(w);
    put_op(w, OP_NONE);
}

void pickle_bool(struct pickle_writer *w, bool v)
{
    before_push(w);
    put_op(w, v ? OP_NEWTRUE : OP_NEWFALSE);
}

void pickle_float(struct pickle_writer *w, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(bits >> (56 - 8 * i)); /* BINFLOAT is big-endian */
    before_push(w);
    put_op(w, OP_BINFLOAT);
    put(w, b, sizeof b);
}

void pickle_key_uint(struct pickle_writer *w, const char *key, uint64_t v)
{
    pickle_cstr(w, key);
    pickle_uint(w, v);
}

void pickle_key_int(struct pickle_writer *w, const char *key, int64_t v)
{
    pickle_cstr(w, key);
    pickle_int(w, v);
}

void pickle_key_cstr(struct pickle_writer *w, const char *key, const char *v)
{
    pickle_cstr(w, key);
    pickle_cstr(w, v);
}
