/* `dump --refined`: see dump_refined.h. The lines come from the model's second pass, which
 * sees every record in order with the inferred categories applied. */
#include "dump_refined.h"

#include "dump.h"
#include "model.h"

typedef unsigned long long ull;

struct dump_refined_ctx {
    FILE *out;
    int offsets, started;
};

static int dump_refined_event(void *ctx, const struct model *m, const struct model_state *st,
                              const struct model_event *ev)
{
    (void)st;
    struct dump_refined_ctx *c = ctx;
    if (!c->started++)
        dump_file_header(c->out, reader_header(model_reader(m)), reader_label(model_reader(m)));
    dump_record(c->out, model_reader(m), ev->rec);
    if (ev->rec->kind == MST_REC_ALLOC && ev->alloc)
        fprintf(c->out, " refined=%s inferred=%d", reader_category_name(ev->alloc->category),
                (ev->alloc->model_flags & MODEL_ALLOC_INFERRED) != 0);
    if (c->offsets)
        fprintf(c->out, " @%llu", (ull)ev->rec->offset);
    fputc('\n', c->out);
    return 0;
}

int dump_refined_one(FILE *out, const char *path, int offsets)
{
    struct dump_refined_ctx ctx = {out, offsets, 0};
    struct model_callbacks cb = {.ctx = &ctx, .on_event = dump_refined_event};
    struct model_options opt = {.refine = 1};
    char err[512];
    struct model *m = model_replay(path, &opt, &cb, err, sizeof err);
    if (!m) {
        fprintf(stderr, "memshim-analyze: %s\n", err);
        return 1;
    }
    enum reader_state st = model_reader_status(m);
    const struct reader *r = model_reader(m);
    fprintf(out, "end status=%s records=%llu skipped=%llu clean=%s\n", dump_state_name(st),
            (ull)reader_records(r), (ull)reader_skipped(r), reader_summary(r) ? "yes" : "no");
    if (st != READER_OK)
        fprintf(stderr, "memshim-analyze: %s\n", model_reader_error(m));
    model_free(m);
    return st == READER_OK || st == READER_TRUNCATED ? 0 : 1;
}
