/* Reader edge cases: empty, truncated, corrupt (with offset), unknown kinds, huge sizes. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reader.h"
#include "tracegen.h"

static struct tracegen *g;
static uint32_t thread;

static void setup(void)
{
    struct tracegen_header h = {.pid = 7, .rank = MST_NO_RANK, .host = "h", .stack_depth = 8};
    g = tracegen_new_memory(&h);
    thread = tracegen_thread(g, 100, "main");
}

static void teardown(void)
{
    tracegen_free(g);
}

TestSuite(reader, .init = setup, .fini = teardown);

static struct reader *open_g(void)
{
    size_t size;
    const void *data = tracegen_data(g, &size);
    char err[256] = "";
    struct reader *r = reader_open_memory(data, size, "t.mst", err, sizeof err);
    cr_assert_not_null(r, "open failed: %s", err);
    return r;
}

/* Reads to the end; returns the number of records. */
static uint64_t drain(struct reader *r)
{
    struct reader_record rec;
    uint64_t n = 0;
    while (reader_next(r, &rec) == READER_RECORD)
        n++;
    return n;
}

Test(reader, header_fields_and_thread)
{
    struct reader *r = open_g();
    cr_assert_eq(reader_header(r)->pid, 7);
    cr_assert_str_eq(reader_header(r)->host, "h");
    cr_assert_eq(drain(r), 1);
    cr_assert_eq(reader_status(r), READER_OK);
    cr_assert_str_eq(reader_thread(r, thread)->name, "main");
    cr_assert_null(reader_summary(r));
    reader_close(r);
}

Test(reader, empty_trace_is_ok)
{
    struct tracegen *e = tracegen_new_memory(NULL);
    size_t size;
    const void *data = tracegen_data(e, &size);
    char err[256];
    struct reader *r = reader_open_memory(data, size, "e.mst", err, sizeof err);
    cr_assert_not_null(r);
    cr_assert_eq(drain(r), 0);
    cr_assert_eq(reader_status(r), READER_OK);
    reader_close(r);
    tracegen_free(e);
}

Test(reader, rejects_non_traces)
{
    char err[256] = "";
    cr_assert_null(reader_open_memory("", 0, "zero", err, sizeof err));
    cr_assert(strstr(err, "not a memshim trace"), "%s", err);
    char junk[200];
    memset(junk, 'x', sizeof junk);
    cr_assert_null(reader_open_memory(junk, sizeof junk, "junk", err, sizeof err));
    cr_assert(strstr(err, "bad magic"), "%s", err);
    size_t size;
    unsigned char *copy = malloc(sizeof(struct mst_file_header));
    memcpy(copy, tracegen_data(g, &size), sizeof(struct mst_file_header));
    copy[8] = 99; /* version */
    cr_assert_null(reader_open_memory(copy, sizeof(struct mst_file_header), "v", err, sizeof err));
    cr_assert(strstr(err, "version 99"), "%s", err);
    free(copy);
}

Test(reader, truncated_tail_keeps_what_came_before)
{
    tracegen_malloc(g, 10, thread, 0x1000, 64, MST_CAT_ACTIVATION, 0, 0);
    tracegen_malloc(g, 20, thread, 0x2000, 64, MST_CAT_ACTIVATION, 0, 0);
    size_t size;
    const unsigned char *data = tracegen_data(g, &size);
    char err[256];
    struct reader *r = reader_open_memory(data, size - 5, "cut.mst", err, sizeof err);
    cr_assert_eq(drain(r), 2); /* thread + first alloc */
    cr_assert_eq(reader_status(r), READER_TRUNCATED);
    cr_assert(strstr(reader_error(r), "truncated"), "%s", reader_error(r));
    reader_close(r);
}

Test(reader, every_prefix_ends_cleanly)
{
    uint32_t s = tracegen_string(g, "forward");
    tracegen_phase(g, 5, thread, s, 1);
    tracegen_malloc(g, 10, thread, 0x1000, 64, MST_CAT_ACTIVATION, 0, s);
    tracegen_dealloc(g, 20, thread, 0x1000);
    tracegen_phase(g, 25, thread, s, 0);
    size_t size;
    const unsigned char *data = tracegen_data(g, &size);
    for (size_t cut = sizeof(struct mst_file_header); cut <= size; cut++) {
        char err[256];
        struct reader *r = reader_open_memory(data, cut, "p", err, sizeof err);
        cr_assert_not_null(r);
        drain(r);
        cr_assert(reader_status(r) == READER_OK || reader_status(r) == READER_TRUNCATED);
        cr_assert_eq(reader_status(r) == READER_OK, reader_bytes(r) == cut);
        reader_close(r);
    }
}

Test(reader, corrupt_length_reports_offset)
{
    size_t before;
    tracegen_data(g, &before);
    struct mst_record_header h = {.kind = MST_REC_ALLOC, .length = MST_MAX_RECORD + 1};
    tracegen_bytes(g, &h, sizeof h);
    struct reader *r = open_g();
    cr_assert_eq(drain(r), 1);
    cr_assert_eq(reader_status(r), READER_CORRUPT);
    char want[64];
    snprintf(want, sizeof want, "byte offset %zu", before);
    cr_assert(strstr(reader_error(r), want), "%s", reader_error(r));
    reader_close(r);
}

Test(reader, unknown_kinds_are_skipped)
{
    char payload[13] = "future stuff";
    tracegen_raw(g, 200, payload, sizeof payload);
    tracegen_malloc(g, 10, thread, 0x1000, 64, MST_CAT_ACTIVATION, 0, 0);
    struct reader *r = open_g();
    cr_assert_eq(drain(r), 2);
    cr_assert_eq(reader_status(r), READER_OK);
    cr_assert_eq(reader_skipped(r), 1);
    reader_close(r);
}

Test(reader, short_payload_is_corrupt)
{
    struct mst_rec_alloc_short a = {.time_ns = 1, .thread = thread, .kind = 1};
    tracegen_raw(g, MST_REC_ALLOC, &a, sizeof a - 1); /* shorter than the short form */
    struct reader *r = open_g();
    drain(r);
    cr_assert_eq(reader_status(r), READER_CORRUPT);
    cr_assert(strstr(reader_error(r), "needs"), "%s", reader_error(r));
    reader_close(r);
}

Test(reader, longer_payload_is_accepted)
{
    unsigned char buf[sizeof(struct mst_rec_alloc) + 16] = {0};
    struct mst_rec_alloc a = {.time_ns = 1, .thread = thread, .kind = 1, .size = 5};
    memcpy(buf, &a, sizeof a);
    tracegen_raw(g, MST_REC_ALLOC, buf, sizeof buf);
    struct reader *r = open_g();
    struct reader_record rec;
    cr_assert_eq(reader_next(r, &rec), READER_RECORD);
    cr_assert_eq(reader_next(r, &rec), READER_RECORD);
    cr_assert_eq(rec.u.alloc.size, 5);
    cr_assert_eq(rec.tail_len, 16);
    reader_close(r);
}

/* A synchronous free in the short FREE, one with a newer writer's bytes after it, and one on a
 * stream in the long form; the last short one at the end of the data, where the general path
 * reads it. The short form comes back as the long one, with stream, size and site 0. */
Test(reader, frees_short_and_long)
{
    struct mst_rec_free_short s = {.time_ns = 2, .addr = 0x1000, .thread = thread, .kind = 1};
    unsigned char longer[sizeof s + 8] = {0};
    struct mst_rec_free f = {
        .time_ns = 4, .addr = 0x3000, .size = 77, .stream = 9, .thread = thread, .kind = 5};
    tracegen_raw(g, MST_REC_FREE, &s, sizeof s);
    s.time_ns = 3, s.addr = 0x2000, s.device = 1, s.flags = MST_ALLOC_F_HANDLE;
    memcpy(longer, &s, sizeof s);
    tracegen_raw(g, MST_REC_FREE, longer, sizeof longer);
    tracegen_raw(g, MST_REC_FREE, &f, sizeof f);
    s.time_ns = 5, s.addr = 0x4000, s.device = 0, s.flags = 0;
    tracegen_raw(g, MST_REC_FREE, &s, sizeof s);
    struct reader *r = open_g();
    struct reader_record rec;
    const uint64_t addr[] = {0x1000, 0x2000, 0x3000, 0x4000}, size[] = {0, 0, 77, 0};
    const uint64_t stream[] = {0, 0, 9, 0};
    const uint32_t tail[] = {0, 8, 0, 0};
    cr_assert_eq(reader_next(r, &rec), READER_RECORD); /* the thread */
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(reader_next(r, &rec), READER_RECORD, "%s", reader_error(r));
        cr_assert_eq(rec.kind, MST_REC_FREE);
        cr_assert_eq(rec.u.free.addr, addr[i]);
        cr_assert_eq(rec.u.free.time_ns, (uint64_t)i + 2);
        cr_assert_eq(rec.u.free.thread, thread);
        cr_assert_eq(rec.u.free.size, size[i]);
        cr_assert_eq(rec.u.free.stream, stream[i]);
        cr_assert_eq(rec.tail_len, tail[i]);
    }
    cr_assert_eq(rec.u.free.kind, 1);
    cr_assert_eq(reader_next(r, &rec), READER_END);
    cr_assert_eq(reader_status(r), READER_OK, "%s", reader_error(r));
    reader_close(r);
}

/* An op defined once and repeated twice: a short repeat, then one in the long form (more than
 * 4.3 s later); both come back as the defined OP at their own times. */
Test(reader, repeats_short_and_long)
{
    struct mst_rec_op_define def = {.shape = 3};
    tracegen_raw(g, MST_REC_OP_DEFINE, &def, sizeof def);
    tracegen_op(g, &(struct mst_rec_op){.time_ns = 100, .thread = thread, .kind = MST_OP_KERNEL});
    struct mst_rec_op_repeat_long rep = {.op_repeat = {.shape = 3, .delta_ns = 5}};
    tracegen_raw(g, MST_REC_OP_REPEAT, &rep.op_repeat, sizeof rep.op_repeat);
    rep.op_repeat.delta_ns = 0;
    rep.delta_ns = 7000000000ull;
    tracegen_raw(g, MST_REC_OP_REPEAT, &rep, sizeof rep);
    struct reader *r = open_g();
    struct reader_record rec;
    const uint64_t want[] = {100, 105, 7000000105ull};
    cr_assert_eq(reader_next(r, &rec), READER_RECORD); /* the thread */
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(reader_next(r, &rec), READER_RECORD);
        cr_assert_eq(rec.kind, MST_REC_OP);
        cr_assert_eq(rec.u.op.time_ns, want[i], "op %d at %llu", i,
                     (unsigned long long)rec.u.op.time_ns);
    }
    cr_assert_eq(reader_next(r, &rec), READER_END);
    cr_assert_eq(reader_status(r), READER_OK, "%s", reader_error(r));
    reader_close(r);
}

static void expect_corrupt(const char *needle)
{
    struct reader *r = open_g();
    drain(r);
    cr_assert_eq(reader_status(r), READER_CORRUPT);
    cr_assert(strstr(reader_error(r), needle), "'%s' not in: %s", needle, reader_error(r));
    reader_close(r);
}

/* An allocation in the short ALLOC, one with a newer writer's bytes after it, and one on a
 * stream in the long form; the last short one at the end of the data (the general path). The
 * short form comes back as the long one, its requested bytes whole and stream 0. */
Test(reader, allocs_short_and_long)
{
    struct mst_rec_alloc_short s = {
        .time_ns = 2, .addr = 0x1000, .size = 512, .unrequested = 12, .thread = thread, .kind = 1};
    unsigned char longer[sizeof s + 8] = {0};
    struct mst_rec_alloc a = {.time_ns = 4,
                              .addr = 0x3000,
                              .size = 77,
                              .requested = 77,
                              .stream = 9,
                              .thread = thread,
                              .kind = MST_KIND_CUDA_MALLOC_ASYNC};
    tracegen_raw(g, MST_REC_ALLOC, &s, sizeof s);
    s.time_ns = 3, s.addr = 0x2000, s.unrequested = 0, s.category = MST_CAT_PARAMETER;
    memcpy(longer, &s, sizeof s);
    tracegen_raw(g, MST_REC_ALLOC, longer, sizeof longer);
    tracegen_raw(g, MST_REC_ALLOC, &a, sizeof a);
    s.time_ns = 5, s.addr = 0x4000, s.unrequested = 512, s.category = 0;
    tracegen_raw(g, MST_REC_ALLOC, &s, sizeof s);
    struct reader *r = open_g();
    struct reader_record rec;
    const uint64_t addr[] = {0x1000, 0x2000, 0x3000, 0x4000}, requested[] = {500, 512, 77, 0};
    const uint64_t stream[] = {0, 0, 9, 0};
    const uint32_t tail[] = {0, 8, 0, 0};
    cr_assert_eq(reader_next(r, &rec), READER_RECORD); /* the thread */
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(reader_next(r, &rec), READER_RECORD, "%s", reader_error(r));
        cr_assert_eq(rec.kind, MST_REC_ALLOC);
        cr_assert_eq(rec.u.alloc.addr, addr[i]);
        cr_assert_eq(rec.u.alloc.time_ns, (uint64_t)i + 2);
        cr_assert_eq(rec.u.alloc.thread, thread);
        cr_assert_eq(rec.u.alloc.requested, requested[i]);
        cr_assert_eq(rec.u.alloc.stream, stream[i]);
        cr_assert_eq(rec.tail_len, tail[i]);
    }
    cr_assert_eq(rec.u.alloc.size, 512);
    cr_assert_eq(reader_next(r, &rec), READER_END);
    cr_assert_eq(reader_status(r), READER_OK, "%s", reader_error(r));
    reader_close(r);
}

Test(reader, short_alloc_asking_more_than_its_size_is_corrupt)
{
    struct mst_rec_alloc_short s = {
        .time_ns = 2, .addr = 0x1000, .size = 512, .unrequested = 513, .thread = thread, .kind = 1};
    tracegen_raw(g, MST_REC_ALLOC, &s, sizeof s);
    expect_corrupt("513 unrequested");
}

/* A short ALLOC with each field at its bound (valid) and past it (corrupt), among others in
 * place: the records read in place stop where the records one at a time stop, with the same
 * state. The in-place reader checks the usual ALLOC by a vector of its fields where the CPU has
 * one (and leaves what that refuses to the checks of every other record): this is each bound,
 * by the vector and by the scalar checks of a CPU without one. */
static void short_alloc_in_place_by(struct mst_rec_alloc_short bad, int valid);

static void short_alloc_in_place(struct mst_rec_alloc_short bad, int valid)
{
    reader_vector_checks(0);
    short_alloc_in_place_by(bad, valid);
    reader_vector_checks(1);
    short_alloc_in_place_by(bad, valid);
}

static void short_alloc_in_place_by(struct mst_rec_alloc_short bad, int valid)
{
    struct tracegen_header h = {.pid = 7, .rank = MST_NO_RANK, .stack_depth = 8};
    struct tracegen *t = tracegen_new_memory(&h);
    uint32_t th = tracegen_thread(t, 100, "main");
    uint32_t site = tracegen_frame(t, 0, 0, NULL, 0x10, 0);
    uint32_t phase = tracegen_string(t, "fwd");
    cr_assert_eq(th, 1);
    cr_assert_eq(site, 1);
    cr_assert_eq(phase, 1);
    struct mst_rec_alloc_short s = {.size = 512, .thread = th, .site = site, .kind = 1};
    for (int i = 0; i < 40; i++) {
        s.time_ns = (uint64_t)(i < 20 ? 10 + i : 1000 + i), s.addr = 0x1000 + 0x1000 * (uint64_t)i;
        if (i == 20) {
            bad.addr = 0x100000;
            tracegen_raw(t, MST_REC_ALLOC, &bad, sizeof bad);
        }
        tracegen_raw(t, MST_REC_ALLOC, &s, sizeof s);
    }
    size_t size;
    const void *data = tracegen_data(t, &size);
    char err[256] = "";
    struct reader *one = reader_open_memory(data, size, "t.mst", err, sizeof err);
    struct reader *in_place = reader_open_memory(data, size, "t.mst", err, sizeof err);
    cr_assert(one && in_place, "%s", err);
    uint64_t n = drain(one), m = 0;
    const struct mst_record_header *refs[64];
    struct reader_record rec;
    for (;;) {
        size_t k = reader_next_refs(in_place, refs, 64);
        m += k;
        if (k < 64 && reader_next(in_place, &rec) != READER_RECORD)
            break;
        m += k < 64;
    }
    cr_assert_eq(n, valid ? 44 : 23, "%s", reader_error(one)); /* 3 definitions */
    cr_assert_eq(m, n, "%s", reader_error(in_place));
    cr_assert_eq(reader_status(one), valid ? READER_OK : READER_CORRUPT);
    cr_assert_eq(reader_status(in_place), reader_status(one));
    cr_assert_str_eq(reader_error(in_place), reader_error(one));
    reader_close(one);
    reader_close(in_place);
    tracegen_free(t);
}

Test(reader, short_alloc_bounds_in_place)
{
    const struct mst_rec_alloc_short s = {
        .time_ns = 30, .size = 512, .thread = 1, .site = 1, .phase = 1, .kind = 1};
    struct mst_rec_alloc_short b = s;
    short_alloc_in_place(b, 1);
    b.time_ns = 29; /* the time of the record before it, which is still in order */
    short_alloc_in_place(b, 1);
    b.time_ns = 28;
    short_alloc_in_place(b, 0);
    b = s, b.size = 1ull << 52;
    short_alloc_in_place(b, 1);
    b.size++;
    short_alloc_in_place(b, 0);
    b = s, b.size = (1ull << 32) + 5, b.unrequested = 100; /* more than the size's low half */
    short_alloc_in_place(b, 1);
    b = s, b.unrequested = 512;
    short_alloc_in_place(b, 1);
    b.unrequested = 513;
    short_alloc_in_place(b, 0);
    b = s, b.kind = MST_KIND_MAX - 1;
    short_alloc_in_place(b, 1);
    b.kind = MST_KIND_MAX;
    short_alloc_in_place(b, 0);
    b.kind = 0;
    short_alloc_in_place(b, 0);
    b = s, b.category = MST_CATEGORY_MAX - 1;
    short_alloc_in_place(b, 1);
    b.category = MST_CATEGORY_MAX;
    short_alloc_in_place(b, 0);
    b = s, b.thread = 2;
    short_alloc_in_place(b, 0);
    b.thread = UINT32_MAX;
    short_alloc_in_place(b, 0);
    b = s, b.site = 0, b.phase = 0;
    short_alloc_in_place(b, 1);
    b.site = 2;
    short_alloc_in_place(b, 0);
    b.site = 1u << 31;
    short_alloc_in_place(b, 0);
    b = s, b.phase = 2;
    short_alloc_in_place(b, 0);
    b = s, b.device = 0xff, b.flags = 0xff;
    short_alloc_in_place(b, 1);
}

Test(reader, free_shorter_than_the_short_form_is_corrupt)
{
    struct mst_rec_free_short s = {.time_ns = 2, .addr = 0x1000, .thread = thread, .kind = 1};
    tracegen_raw(g, MST_REC_FREE, &s, sizeof s - 1);
    expect_corrupt("needs 24");
}

Test(reader, undefined_thread)
{
    tracegen_malloc(g, 10, thread + 5, 0x1000, 64, 0, 0, 0);
    expect_corrupt("thread id");
}

Test(reader, undefined_site_and_phase)
{
    tracegen_malloc(g, 10, thread, 0x1000, 64, 0, 42, 0);
    expect_corrupt("site frame id 42");
}

Test(reader, undefined_phase_string)
{
    tracegen_malloc(g, 10, thread, 0x1000, 64, 0, 0, 9);
    expect_corrupt("phase string id 9");
}

/* Ids defined out of order (threads of the writer racing): a reference to a defined id above
 * the ones defined without a gap is valid, one to the gap is not. */
Test(reader, ids_defined_out_of_order)
{
    struct mst_rec_frame f = {.id = 5};
    tracegen_raw(g, MST_REC_FRAME, &f, sizeof f);
    unsigned char s[sizeof(struct mst_rec_string) + 2] = {0};
    uint32_t sid = 9;
    memcpy(s, &sid, sizeof sid);
    memcpy(s + sizeof sid, "ph", 2);
    tracegen_raw(g, MST_REC_STRING, s, sizeof s);
    tracegen_malloc(g, 10, thread, 0x1000, 64, 0, 5, 9);
    tracegen_dealloc(g, 11, thread, 0x1000);
    struct reader *r = open_g();
    cr_assert_eq(drain(r), 5);
    cr_assert_eq(reader_status(r), READER_OK, "%s", reader_error(r));
    reader_close(r);
    tracegen_malloc(g, 12, thread, 0x2000, 64, 0, 4, 0);
    expect_corrupt("site frame id 4");
}

Test(reader, category_out_of_range)
{
    tracegen_malloc(g, 10, thread, 0x1000, 64, MST_CATEGORY_MAX, 0, 0);
    expect_corrupt("category");
}

Test(reader, huge_size)
{
    tracegen_malloc(g, 10, thread, 0x1000, UINT64_MAX, 0, 0, 0);
    expect_corrupt("implausible size");
}

Test(reader, time_runs_backwards_on_a_thread)
{
    tracegen_malloc(g, 100, thread, 0x1000, 64, 0, 0, 0);
    tracegen_malloc(g, 50, thread, 0x2000, 64, 0, 0, 0);
    expect_corrupt("before the previous");
}

Test(reader, time_is_per_thread)
{
    uint32_t other = tracegen_thread(g, 101, "other");
    tracegen_malloc(g, 100, thread, 0x1000, 64, 0, 0, 0);
    tracegen_malloc(g, 50, other, 0x2000, 64, 0, 0, 0);
    struct reader *r = open_g();
    cr_assert_eq(drain(r), 4);
    cr_assert_eq(reader_status(r), READER_OK);
    reader_close(r);
}

Test(reader, implausible_id)
{
    struct mst_rec_string s = {.id = 1u << 30};
    tracegen_raw(g, MST_REC_STRING, &s, sizeof s);
    expect_corrupt("implausible");
}

Test(reader, kind_zero_is_corrupt)
{
    struct mst_record_header h = {0};
    tracegen_bytes(g, &h, sizeof h);
    expect_corrupt("kind 0");
}

Test(reader, implausible_kind_is_corrupt_not_truncated)
{
    struct mst_record_header h = {.kind = 0xffff, .length = 1000};
    tracegen_bytes(g, &h, sizeof h);
    expect_corrupt("kind 65535");
}

/* A second file header where records should continue: the error names the likely cause,
 * whether the header starts at the bad record or a little after it. */
Test(reader, second_header_is_named)
{
    for (int i = 0; i < 100; i++)
        tracegen_malloc(g, (uint64_t)i, thread, 0x1000 + (uint64_t)i * 256, 256, 0, 0, 0);
    struct mst_file_header h = {.version = MST_VERSION, .header_size = sizeof h};
    memcpy(h.magic, MST_MAGIC, MST_MAGIC_LEN);
    tracegen_bytes(g, &h, sizeof h);
    expect_corrupt("two processes wrote this file");
}

Test(reader, second_header_after_the_bad_record_is_named)
{
    struct mst_record_header bad = {.kind = 0xffff, .length = 1000};
    tracegen_bytes(g, &bad, sizeof bad);
    char gap[777] = {1};
    tracegen_bytes(g, gap, sizeof gap);
    tracegen_bytes(g, MST_MAGIC "rest of a header", MST_MAGIC_LEN + 16);
    expect_corrupt("two processes wrote this file");
}

Test(reader, no_second_header_no_cause)
{
    struct mst_record_header bad = {.kind = 0xffff, .length = 1000};
    tracegen_bytes(g, &bad, sizeof bad);
    char almost[64];
    memset(almost, MST_MAGIC[0], sizeof almost);
    memcpy(almost + 40, MST_MAGIC, MST_MAGIC_LEN - 1); /* one byte short of the magic */
    tracegen_bytes(g, almost, sizeof almost);
    struct reader *r = open_g();
    drain(r);
    cr_assert_eq(reader_status(r), READER_CORRUPT);
    cr_assert_null(strstr(reader_error(r), "two processes"), "%s", reader_error(r));
    reader_close(r);
}

Test(reader, frames_and_modules)
{
    uint32_t mod = tracegen_module(g, "/lib/x.so", 0x1000, 0x100);
    uint32_t f1 = tracegen_frame(g, 0, mod, "outer", 0x1010, 0x10);
    uint32_t f2 = tracegen_frame(g, f1, mod, NULL, 0x1020, 0x20);
    struct reader *r = open_g();
    drain(r);
    cr_assert_eq(reader_status(r), READER_OK);
    cr_assert_str_eq(reader_module(r, mod)->path, "/lib/x.so");
    cr_assert_eq(reader_frame(r, f2)->parent, f1);
    cr_assert_eq(reader_frame(r, f2)->symbol_id, 0);
    cr_assert_str_eq(reader_string(r, reader_frame(r, f1)->symbol_id), "outer");
    cr_assert_null(reader_frame(r, 99));
    reader_close(r);
}

Test(reader, frame_with_undefined_parent)
{
    struct mst_rec_frame f = {.id = 1, .parent = 7};
    tracegen_raw(g, MST_REC_FRAME, &f, sizeof f);
    expect_corrupt("parent frame id 7");
}

Test(reader, summary_record_marks_clean_end)
{
    struct mst_rec_summary s = {.allocations = 3, .events_lost = 2};
    tracegen_summary(g, &s);
    struct reader *r = open_g();
    drain(r);
    cr_assert_not_null(reader_summary(r));
    cr_assert_eq(reader_summary(r)->events_lost, 2);
    reader_close(r);
}

Test(reader, file_source_matches_memory)
{
    char path[] = "/tmp/memshim-reader-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    struct tracegen *f = tracegen_new_file(path, NULL);
    uint32_t t = tracegen_thread(f, 1, "");
    for (int i = 0; i < 100000; i++)
        tracegen_malloc(f, (uint64_t)i, t, 0x1000 + (uint64_t)i * 256, 256, 0, 0, 0);
    cr_assert_eq(tracegen_finish(f), 0);
    tracegen_free(f);
    char err[256];
    struct reader *r = reader_open(path, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    cr_assert_eq(drain(r), 100001);
    cr_assert_eq(reader_status(r), READER_OK);
    reader_close(r);
    unlink(path);
    cr_assert_null(reader_open(path, err, sizeof err));
}

Test(reader, names)
{
    cr_assert_str_eq(reader_category_name(MST_CAT_OPTIMIZER_STATE), "optimizer_state");
    cr_assert_str_eq(reader_category_name(99), "?");
    cr_assert_eq(reader_category_from_name("kv_cache"), MST_CAT_KV_CACHE);
    cr_assert_eq(reader_category_from_name("nope"), -1);
    cr_assert_str_eq(reader_kind_name(MST_KIND_CU_MEM_CREATE), "cuMemCreate");
}

/* ---- a trace truncated by another process while it is read (mapped windows) ---------------- */

#define SHRINK_PAIRS 140000 /* 12.9 MB of ALLOC/FREE pairs: more than one mapped window */

/* A trace file of SHRINK_PAIRS allocation/free pairs; its path in path[]. */
static void write_shrink_trace(char *path)
{
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    struct tracegen *f = tracegen_new_file(path, NULL);
    uint32_t t = tracegen_thread(f, 1, "main");
    for (uint64_t i = 0; i < SHRINK_PAIRS; i++) {
        uint64_t addr = 0x10000 + (i % 64) * 0x1000;
        tracegen_malloc(f, 2 * i + 1, t, addr, 4096, MST_CAT_ACTIVATION, 0, 0);
        tracegen_dealloc(f, 2 * i + 2, t, addr);
    }
    cr_assert_eq(tracegen_finish(f), 0);
    tracegen_free(f);
}

/* Reads on as the replay does (records in place, others one at a time), checking every record
 * handed out is one the file held (zeros would carry time 0); returns how many. */
static uint64_t drain_refs(struct reader *r)
{
    const struct mst_record_header *refs[64];
    struct reader_record rec;
    uint64_t n = 0;
    for (;;) {
        size_t k = reader_next_refs(r, refs, 64);
        for (size_t i = 0; i < k; i++) {
            struct mst_rec_free f; /* ALLOC and FREE both start with time_ns */
            memcpy(&f, refs[i] + 1, sizeof f.time_ns);
            cr_assert_neq(f.time_ns, 0, "a record past the end was handed out");
        }
        n += k;
        if (k == 64)
            continue;
        if (reader_next(r, &rec) != READER_RECORD)
            return n;
        n++;
    }
}

static void expect_shrunk(struct reader *r, uint64_t read, uint64_t cut)
{
    cr_assert_eq(reader_status(r), READER_TRUNCATED, "status %d: %s", reader_status(r),
                 reader_error(r));
    cr_assert(strstr(reader_error(r), "truncated trace"), "%s", reader_error(r));
    cr_assert(strstr(reader_error(r), "shrank") || strstr(reader_error(r), "in the file"), "%s",
              reader_error(r));
    /* at most what fits before the cut (a short FREE is the shortest record) */
    cr_assert_leq(read,
                  2 + cut / (sizeof(struct mst_record_header) + sizeof(struct mst_rec_free_short)),
                  "read %llu records of a file cut at %llu", (unsigned long long)read,
                  (unsigned long long)cut);
    const char *at = strstr(reader_error(r), "byte offset ");
    cr_assert_not_null(at, "%s", reader_error(r));
    cr_assert_leq(strtoull(at + strlen("byte offset "), NULL, 10), cut, "%s", reader_error(r));
}

/* Opens, reads `first` records, cuts the file to `cut` bytes, reads on. */
static void shrink_while_reading(uint64_t first, uint64_t cut, int in_place)
{
    char path[] = "/tmp/memshim-reader-XXXXXX";
    write_shrink_trace(path);
    char err[256];
    struct reader *r = reader_open(path, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    struct reader_record rec;
    uint64_t n = 0;
    while (n < first && reader_next(r, &rec) == READER_RECORD)
        n++;
    cr_assert_eq(n, first);
    cr_assert_eq(truncate(path, (off_t)cut), 0);
    n += in_place ? drain_refs(r) : drain(r);
    expect_shrunk(r, n, cut);
    reader_close(r);
    unlink(path);
}

TestSuite(reader_shrink);

/* page-aligned, in the window being read: the pages past the end fault (SIGBUS) */
Test(reader_shrink, in_window_page_aligned_in_place)
{
    shrink_while_reading(1000, 4u << 20, 1);
}

Test(reader_shrink, in_window_page_aligned_copied)
{
    shrink_while_reading(1000, 4u << 20, 0);
}

/* mid-page: the rest of that page reads as zeros without a fault */
Test(reader_shrink, in_window_mid_page)
{
    shrink_while_reading(1000, (3u << 20) + 100, 1);
    shrink_while_reading(1000, (3u << 20) + 100, 0);
}

/* past the window being read: the next window is mapped only up to the new end */
Test(reader_shrink, past_the_window)
{
    shrink_while_reading(1000, 10u << 20, 1);
    shrink_while_reading(1000, 10u << 20, 0);
}

/* to nothing but the header, right after opening */
Test(reader_shrink, to_the_header)
{
    shrink_while_reading(0, sizeof(struct mst_file_header), 1);
}

/* The replay reads records in place after the reader checked them: the file is cut behind a
 * batch the caller still holds, whose pages then fault when read. */
Test(reader_shrink, behind_records_handed_out)
{
    char path[] = "/tmp/memshim-reader-XXXXXX";
    write_shrink_trace(path);
    char err[256];
    struct reader *r = reader_open(path, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    struct reader_record rec;
    for (int i = 0; i < 40000; i++)
        cr_assert_eq(reader_next(r, &rec), READER_RECORD);
    const struct mst_record_header *refs[64];
    cr_assert_eq(reader_next_refs(r, refs, 64), 64);
    long page = sysconf(_SC_PAGESIZE);
    uint64_t cut = rec.offset / (uint64_t)page * (uint64_t)page;
    cr_assert_eq(truncate(path, (off_t)cut), 0);
    uint64_t sum = 0;
    for (int i = 0; i < 64; i++) { /* no crash: the pages read as zeros */
        struct mst_rec_alloc a;
        memcpy(&a, refs[i] + 1, sizeof a);
        sum += a.time_ns + refs[i]->length;
    }
    cr_assert_eq(sum, 0, "the records behind the cut should read as zeros");
    drain_refs(r);
    cr_assert_eq(reader_status(r), READER_TRUNCATED, "%s", reader_error(r));
    cr_assert(strstr(reader_error(r), "shrank"), "%s", reader_error(r));
    reader_close(r);
    unlink(path);
}

/* ---- CHECKSUM records ------------------------------------------------------------------------ */

/* A file as the shim writes it: write-outs of 1 MiB, each after its CHECKSUM record; more of
 * them than one mapped window holds, so some cross a window's end. */
static char *checksummed_file(size_t *size)
{
    static char path[] = "/tmp/memshim-reader-ck-XXXXXX";
    strcpy(path + strlen(path) - 6, "XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    struct tracegen_header h = {.pid = 1, .rank = MST_NO_RANK, .checksums = 1};
    struct tracegen *f = tracegen_new_file(path, &h);
    uint32_t t = tracegen_thread(f, 1, "");
    for (int i = 0; i < 300000; i++)
        tracegen_malloc(f, (uint64_t)i, t, 0x1000 + (uint64_t)i * 256, 256, 0, 0, 0);
    cr_assert_eq(tracegen_finish(f), 0);
    tracegen_free(f);
    FILE *in = fopen(path, "rb");
    fseek(in, 0, SEEK_END);
    *size = (size_t)ftell(in);
    fclose(in);
    return path;
}

static void flip_bit(const char *path, size_t at)
{
    FILE *f = fopen(path, "r+b");
    fseek(f, (long)at, SEEK_SET);
    int c = fgetc(f);
    fseek(f, (long)at, SEEK_SET);
    fputc(c ^ 0x10, f);
    fclose(f);
}

static char *read_whole(const char *path, size_t size)
{
    FILE *f = fopen(path, "rb");
    char *data = malloc(size);
    cr_assert_eq(fread(data, 1, size, f), size);
    fclose(f);
    return data;
}

/* Reads to the end as the replay does (records in place, others one at a time); how many. */
static uint64_t drain_in_place(struct reader *r)
{
    const struct mst_record_header *refs[64];
    struct reader_record rec;
    uint64_t n = 0;
    for (;;) {
        size_t k = reader_next_refs(r, refs, 64);
        n += k;
        if (k < 64 && reader_next(r, &rec) != READER_RECORD)
            return n;
        n += k < 64;
    }
}

/* Reads to the end; *end gets the end offset of the last record handed out. */
static uint64_t drain_to(struct reader *r, uint64_t *end)
{
    struct reader_record rec;
    uint64_t n = 0;
    while (reader_next(r, &rec) == READER_RECORD) {
        *end = rec.offset + sizeof(struct mst_record_header) + rec.length;
        n++;
    }
    return n;
}

/* The byte offset an error names. */
static uint64_t error_offset(const struct reader *r)
{
    const char *at = strstr(reader_error(r), "at byte offset ");
    cr_assert_not_null(at, "%s", reader_error(r));
    return strtoull(at + strlen("at byte offset "), NULL, 10);
}

TestSuite(reader_checksum);

Test(reader_checksum, intact_file_reads_whole)
{
    size_t size;
    char *path = checksummed_file(&size);
    char err[256];
    struct reader *r = reader_open(path, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    cr_assert_eq(drain(r), 300001);
    cr_assert_eq(reader_status(r), READER_OK, "%s", reader_error(r));
    reader_close(r);
    unlink(path);
}

/* The replay fetches the next write-out where the reader sums it ahead: a write-out and its
 * CHECKSUM record on (the generator writes 1 MiB ones) plus a short lead; a fixed distance
 * before any was checked; never past the buffer. */
Test(reader_checksum, fetch_ahead_is_a_write_out)
{
    size_t size;
    char *path = checksummed_file(&size);
    char err[256];
    struct reader *r = reader_open(path, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    size_t before = reader_fetch_ahead(r);
    cr_assert_gt(before, 0);
    struct reader_record rec;
    cr_assert_eq(reader_next(r, &rec), READER_RECORD); /* past the first CHECKSUM record */
    size_t far = reader_fetch_ahead(r);
    cr_assert_gt(far, (1u << 20) + sizeof(struct mst_record_header));
    cr_assert_lt(far, (1u << 20) + (64u << 10));
    reader_close(r);
    unlink(path);
}

/* Read in place, as the replay reads (the next write-out summed while this one is handed out),
 * an intact file reads whole, mapped and from memory. */
Test(reader_checksum, intact_file_reads_whole_in_place)
{
    size_t size;
    char *path = checksummed_file(&size);
    char err[256];
    struct reader *r = reader_open(path, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    cr_assert_eq(drain_in_place(r), 300001);
    cr_assert_eq(reader_status(r), READER_OK, "%s", reader_error(r));
    reader_close(r);
    char *data = read_whole(path, size);
    r = reader_open_memory(data, size, path, err, sizeof err);
    cr_assert_eq(drain_in_place(r), 300001);
    cr_assert_eq(reader_status(r), READER_OK, "%s", reader_error(r));
    reader_close(r);
    free(data);
    unlink(path);
}

/* A write-out summed ahead is still refused whole when its bytes differ, with the error of one
 * summed when its CHECKSUM record is read: at every place in a write-out (before, inside and
 * past the share summed ahead), and in one that crosses a window's end. */
Test(reader_checksum, flipped_bit_refused_in_place_as_copied)
{
    size_t size;
    char *path = checksummed_file(&size);
    const size_t places[] = {(3u << 20) + 100, (3u << 20) + (1u << 19), (4u << 20) - 200,
                             (8u << 20) + 4096, size - 5000};
    char *data = read_whole(path, size);
    for (size_t i = 0; i < sizeof places / sizeof *places; i++) {
        flip_bit(path, places[i]);
        char err[256], copied[640];
        struct reader *r = reader_open(path, err, sizeof err);
        cr_assert_not_null(r, "%s", err);
        uint64_t end = 0, n = drain_to(r, &end);
        cr_assert_eq(reader_status(r), READER_CORRUPT);
        snprintf(copied, sizeof copied, "%s", reader_error(r));
        reader_close(r);
        r = reader_open(path, err, sizeof err);
        cr_assert_eq(drain_in_place(r), n, "at %zu", places[i]);
        cr_assert_eq(reader_status(r), READER_CORRUPT);
        cr_assert_str_eq(reader_error(r), copied);
        reader_close(r);
        data[places[i]] ^= 0x10;
        r = reader_open_memory(data, size, path, err, sizeof err);
        cr_assert_eq(drain_in_place(r), n, "at %zu", places[i]);
        cr_assert_str_eq(reader_error(r), copied);
        reader_close(r);
        data[places[i]] ^= 0x10;
        flip_bit(path, places[i]);
    }
    free(data);
    unlink(path);
}

/* A file cut short while the write-out after the one being read is summed ahead: the sum reads
 * zeros past the cut, and that is a truncated tail, not a damaged write-out. */
Test(reader_checksum, shrink_while_summing_ahead_is_truncated)
{
    size_t size;
    char *path = checksummed_file(&size);
    char err[256];
    struct reader *r = reader_open(path, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    const struct mst_record_header *refs[64];
    struct reader_record rec;
    while (reader_bytes(r) < (2u << 20) + (1u << 19))
        if (reader_next_refs(r, refs, 64) < 64)
            cr_assert_eq(reader_next(r, &rec), READER_RECORD, "%s", reader_error(r));
    cr_assert_eq(truncate(path, (off_t)(3u << 20)), 0);
    drain_in_place(r);
    cr_assert_eq(reader_status(r), READER_TRUNCATED, "%s", reader_error(r));
    reader_close(r);
    unlink(path);
}

/* A flipped bit refuses its whole write-out: none of its records is handed out, from a file
 * (mapped a window at a time) as from memory. */
Test(reader_checksum, flipped_bit_refuses_its_write_out)
{
    size_t size;
    char *path = checksummed_file(&size);
    size_t at = size / 2 + 12345;
    flip_bit(path, at);
    char err[256];
    struct reader *r = reader_open(path, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    uint64_t end = 0, n = drain_to(r, &end);
    cr_assert_eq(reader_status(r), READER_CORRUPT);
    cr_assert(strstr(reader_error(r), "do not match their checksum"), "%s", reader_error(r));
    cr_assert(strstr(reader_error(r), "changed after it was written"), "%s", reader_error(r));
    /* the error names the write-out's first byte, right after its CHECKSUM record, which
     * follows the last record handed out; the flipped byte lies in that write-out */
    uint64_t start = error_offset(r);
    cr_assert_eq(end + sizeof(struct mst_record_header) + sizeof(struct mst_rec_checksum), start);
    cr_assert(start <= at && at - start < (2u << 20));
    reader_close(r);
    FILE *f = fopen(path, "rb");
    char *data = malloc(size);
    cr_assert_eq(fread(data, 1, size, f), size);
    fclose(f);
    r = reader_open_memory(data, size, path, err, sizeof err);
    cr_assert_eq(drain(r), n);
    cr_assert_eq(reader_status(r), READER_CORRUPT);
    cr_assert(strstr(reader_error(r), "do not match their checksum"), "%s", reader_error(r));
    reader_close(r);
    free(data);
    unlink(path);
}

/* A file cut inside its last write-out is a truncated tail, not a damaged write-out. */
Test(reader_checksum, cut_write_out_is_truncated)
{
    size_t size;
    char *path = checksummed_file(&size);
    cr_assert_eq(truncate(path, (off_t)(size - 1000)), 0);
    char err[256];
    struct reader *r = reader_open(path, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    cr_assert_gt(drain(r), 290000);
    cr_assert_eq(reader_status(r), READER_TRUNCATED, "%s", reader_error(r));
    reader_close(r);
    unlink(path);
}
