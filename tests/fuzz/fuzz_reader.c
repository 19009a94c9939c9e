/* libFuzzer target: the trace reader, the replay model (both passes) and every report over
 * arbitrary bytes, and the in-place reading the replay uses against one record at a time.
 * Inputs that do not start with the trace magic get a valid file header in front, so most of
 * the effort goes into the records rather than the magic. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"
#include "model.h"
#include "summary.h"

static FILE *sink(void)
{
    static FILE *null;
    if (!null)
        null = fopen("/dev/null", "w");
    return null;
}

static int on_event(void *ctx, const struct model *m, const struct model_state *st,
                    const struct model_event *ev)
{
    (void)m;
    uint64_t *sum = ctx;
    *sum += st->resident + (ev->alloc ? ev->alloc->size : 0);
    return 0;
}

static void replay(const uint8_t *data, size_t size)
{
    char err[512];
    uint64_t sum = 0;
    struct model_callbacks cb = {.ctx = &sum, .on_event = on_event};
    struct model_options o = {.refine = 1, .max_ooms = 4};
    struct model *m = model_replay_memory(data, size, "fuzz", &o, &cb, err, sizeof err);
    if (!m)
        return;
    struct summary_options so = {.refine = 1, .top = 5, .frames = 8};
    summary_print_text(sink(), m, &so);
    struct json j;
    json_init(&j, sink(), 0);
    json_begin_object(&j, NULL);
    summary_write_json(&j, m, &so);
    json_end_object(&j);
    model_free(m);
}

/* Every record one at a time; how many, and the reader's state at the end in *state. */
static uint64_t dump(const uint8_t *data, size_t size, enum reader_state *state)
{
    char err[512];
    struct reader *r = reader_open_memory(data, size, "fuzz", err, sizeof err);
    if (!r)
        return 0;
    struct reader_record rec;
    uint64_t n = 0;
    for (; reader_next(r, &rec) == READER_RECORD; n++)
        dump_record(sink(), r, &rec);
    *state = reader_status(r);
    reader_close(r);
    return n;
}

/* As the replay reads (ALLOC and FREE in place, a write-out's sum carried on meanwhile): the
 * same records and the same end as one at a time, a damaged write-out refused the same way. */
static void in_place(const uint8_t *data, size_t size, uint64_t copied, enum reader_state state)
{
    char err[512];
    struct reader *r = reader_open_memory(data, size, "fuzz", err, sizeof err);
    if (!r)
        return;
    const struct mst_record_header *refs[16];
    struct reader_record rec;
    uint64_t n = 0;
    for (;;) {
        size_t k = reader_next_refs(r, refs, 16);
        n += k;
        if (k < 16 && reader_next(r, &rec) != READER_RECORD)
            break;
        n += k < 16;
    }
    if (n != copied || reader_status(r) != state)
        abort();
    reader_close(r);
}

static void read_all(const uint8_t *data, size_t size)
{
    enum reader_state state = READER_OK;
    replay(data, size);
    uint64_t n = dump(data, size, &state);
    /* in place by both checks of the usual ALLOC: the vector's and a CPU's without one */
    reader_vector_checks(0);
    in_place(data, size, n, state);
    reader_vector_checks(1);
    in_place(data, size, n, state);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size >= MST_MAGIC_LEN && memcmp(data, MST_MAGIC, MST_MAGIC_LEN) == 0) {
        read_all(data, size);
        return 0;
    }
    struct mst_file_header h = {.version = MST_VERSION,
                                .header_size = sizeof h,
                                .pid = 1,
                                .rank = MST_NO_RANK,
                                .flags = MST_FILE_F_STACKS};
    memcpy(h.magic, MST_MAGIC, MST_MAGIC_LEN);
    uint8_t *buf = malloc(sizeof h + size);
    if (!buf)
        return 0;
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, data, size);
    read_all(buf, sizeof h + size);
    free(buf);
    return 0;
}
