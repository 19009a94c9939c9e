/* libFuzzer target: the trace reader, the replay model (both passes) and every report over
 * arbitrary bytes. Inputs that do not start with the trace magic get a valid file header in
 * front, so most of the effort goes into the records rather than the magic. */
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

static void dump(const uint8_t *data, size_t size)
{
    char err[512];
    struct reader *r = reader_open_memory(data, size, "fuzz", err, sizeof err);
    if (!r)
        return;
    struct reader_record rec;
    while (reader_next(r, &rec) == READER_RECORD)
        dump_record(sink(), r, &rec);
    reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size >= MST_MAGIC_LEN && memcmp(data, MST_MAGIC, MST_MAGIC_LEN) == 0) {
        replay(data, size);
        dump(data, size);
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
    replay(buf, sizeof h + size);
    dump(buf, sizeof h + size);
    free(buf);
    return 0;
}
