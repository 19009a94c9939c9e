/* The pickle writer: exact bytes for each value kind (checked against what Python's pickle
 * writes for the same values), batching, memo, fragments and error reporting. The round trip
 * through Python's unpickler is in tests/e2e/viz_check.py. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "pickle.h"

struct buf {
    char *data;
    size_t len;
    FILE *f;
};

static void open_buf(struct buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->f = open_memstream(&b->data, &b->len);
    cr_assert_not_null(b->f);
}

static void close_buf(struct buf *b)
{
    fclose(b->f);
}

/* Bytes of one value between PROTO 2 and STOP, as hex. */
static char *hex_of(const unsigned char *p, size_t n)
{
    char *s = malloc(2 * n + 1);
    for (size_t i = 0; i < n; i++)
        sprintf(s + 2 * i, "%02x", p[i]);
    s[2 * n] = '\0';
    return s;
}

static void expect_value(void (*write)(struct pickle_writer *, const void *), const void *arg,
                         const char *hex)
{
    struct buf b;
    open_buf(&b);
    struct pickle_writer w;
    pickle_begin(&w, b.f);
    write(&w, arg);
    cr_assert_eq(pickle_end(&w), 0);
    close_buf(&b);
    cr_assert_geq(b.len, 3);
    cr_assert_eq((unsigned char)b.data[0], 0x80);
    cr_assert_eq(b.data[1], 2);
    cr_assert_eq(b.data[b.len - 1], '.');
    char *got = hex_of((unsigned char *)b.data + 2, b.len - 3);
    cr_expect_str_eq(got, hex);
    free(got);
    free(b.data);
}

static void write_int(struct pickle_writer *w, const void *arg)
{
    pickle_int(w, *(const int64_t *)arg);
}

static void write_uint(struct pickle_writer *w, const void *arg)
{
    pickle_uint(w, *(const uint64_t *)arg);
}

static void write_str(struct pickle_writer *w, const void *arg)
{
    pickle_cstr(w, arg);
}

Test(viz_pickle, integers_match_python)
{
    static const struct {
        int64_t v;
        const char *hex;
    } cases[] = {
        {0, "4b00"},
        {255, "4bff"},
        {256, "4d0001"},
        {65535, "4dffff"},
        {65536, "4a00000100"},
        {2147483647, "4affffff7f"},
        {2147483648LL, "8a050000008000"},
        {-1, "4affffffff"},
        {-2147483648LL, "4a00000080"},
        {-2147483649LL, "8a05ffffff7fff"},
        {-1099511627776LL, "8a060000000000ff"},
        {INT64_MAX, "8a08ffffffffffffff7f"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_value(write_int, &cases[i].v, cases[i].hex);
}

Test(viz_pickle, unsigned_beyond_int64_gets_a_sign_byte)
{
    uint64_t v = 1ull << 63;
    expect_value(write_uint, &v, "8a09000000000000008000");
    v = UINT64_MAX;
    expect_value(write_uint, &v, "8a09ffffffffffffffff00");
}

Test(viz_pickle, strings_short_long_and_invalid_utf8)
{
    expect_value(write_str, "ab", "8c026162");
    expect_value(write_str, "\xc3\xa9", "8c02c3a9"); /* é stays as it is */
    /* a lone continuation byte, a truncated sequence and an overlong '/' become '?' */
    expect_value(write_str,
                 "a\x80"
                 "b\xe2\x82"
                 "c\xc0\xaf",
                 "8c08613f623f3f633f3f");

    char long_text[301];
    memset(long_text, 'x', 300);
    long_text[300] = '\0';
    struct buf b;
    open_buf(&b);
    struct pickle_writer w;
    pickle_begin(&w, b.f);
    pickle_cstr(&w, long_text);
    cr_assert_eq(pickle_end(&w), 0);
    close_buf(&b);
    cr_assert_eq(b.len, 2 + 5 + 300 + 1);
    cr_expect_eq(b.data[2], 'X');
    cr_expect_eq(memcmp(b.data + 3, "\x2c\x01\x00\x00", 4), 0);
    free(b.data);
}

static void write_float(struct pickle_writer *w, const void *arg)
{
    pickle_float(w, *(const double *)arg);
}

static void write_misc(struct pickle_writer *w, const void *arg)
{
    (void)arg;
    pickle_list_begin(w);
    pickle_none(w);
    pickle_bool(w, true);
    pickle_bool(w, false);
    pickle_list_end(w);
}

Test(viz_pickle, floats_none_and_bools)
{
    double v = 1.5;
    expect_value(write_float, &v, "473ff8000000000000");
    expect_value(write_misc, NULL,
                 "5d284e8889"
                 "65");
}

static void write_dict(struct pickle_writer *w, const void *arg)
{
    (void)arg;
    pickle_dict_begin(w);
    pickle_key_uint(w, "a", 1);
    pickle_key_cstr(w, "b", "c");
    pickle_dict_end(w);
}

Test(viz_pickle, dict_is_empty_dict_mark_setitems)
{
    expect_value(write_dict, NULL,
                 "7d28"
                 "8c0161"
                 "4b01"
                 "8c0162"
                 "8c0163"
                 "75");
}

static size_t count_byte(const char *p, size_t n, char c)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += p[i] == c;
    return k;
}

Test(viz_pickle, long_lists_are_batched)
{
    struct buf b;
    open_buf(&b);
    struct pickle_writer w;
    pickle_begin(&w, b.f);
    pickle_list_begin(&w);
    for (int i = 0; i < 2500; i++)
        pickle_uint(&w, 7); /* 'K' 0x07: no byte equal to APPENDS or MARK */
    pickle_list_end(&w);
    cr_assert_eq(pickle_end(&w), 0);
    close_buf(&b);
    /* batches of 1000: two closed in the middle, one at the end */
    cr_expect_eq(count_byte(b.data, b.len, 'e'), 3);
    cr_expect_eq(count_byte(b.data, b.len, '('), 3);
    free(b.data);
}

Test(viz_pickle, memo_put_and_get)
{
    struct buf b;
    open_buf(&b);
    struct pickle_writer w;
    pickle_begin(&w, b.f);
    pickle_list_begin(&w);
    pickle_list_begin(&w);
    pickle_list_end(&w);
    pickle_put(&w, 3);
    pickle_get(&w, 3);
    pickle_get(&w, 300);
    pickle_list_end(&w);
    cr_assert_eq(pickle_end(&w), 0);
    close_buf(&b);
    char *got = hex_of((unsigned char *)b.data + 2, b.len - 3);
    cr_expect_str_eq(got, "5d28"
                          "5d2865"
                          "7103"
                          "6803"
                          "6a2c010000"
                          "65");
    free(got);
    free(b.data);
}

Test(viz_pickle, fragment_copies_between_list_marks)
{
    FILE *tmp = tmpfile();
    cr_assert_not_null(tmp);
    struct pickle_writer frag;
    pickle_fragment_begin(&frag, tmp);
    pickle_uint(&frag, 1);
    pickle_uint(&frag, 2);
    cr_assert_eq(pickle_fragment_end(&frag), 0);

    struct buf b;
    open_buf(&b);
    struct pickle_writer w;
    pickle_begin(&w, b.f);
    pickle_list_begin(&w);
    cr_assert_eq(pickle_copy(&w, tmp), 0);
    pickle_list_end(&w);
    cr_assert_eq(pickle_end(&w), 0);
    close_buf(&b);
    fclose(tmp);
    char *got = hex_of((unsigned char *)b.data + 2, b.len - 3);
    cr_expect_str_eq(got, "5d28"
                          "4b01"
                          "4b02"
                          "65");
    free(got);
    free(b.data);
}

Test(viz_pickle, unbalanced_containers_fail)
{
    struct buf b;
    open_buf(&b);
    struct pickle_writer w;
    pickle_begin(&w, b.f);
    pickle_list_begin(&w);
    cr_expect_eq(pickle_end(&w), -1);

    pickle_begin(&w, b.f);
    pickle_dict_end(&w);
    cr_expect_eq(pickle_end(&w), -1);

    pickle_begin(&w, b.f);
    pickle_dict_begin(&w);
    pickle_list_end(&w); /* closes the wrong kind */
    cr_expect_eq(pickle_end(&w), -1);

    pickle_begin(&w, b.f);
    for (int i = 0; i <= PICKLE_MAX_DEPTH; i++)
        pickle_list_begin(&w);
    cr_expect_eq(pickle_end(&w), -1);
    close_buf(&b);
    free(b.data);
}
