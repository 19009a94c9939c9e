#include "export_csv.h"

#include <inttypes.h>
#include <string.h>

#include "model.h"

typedef unsigned long long ull;

struct csv_ctx {
    FILE *out;
    int64_t rows;
};

/* RFC 4180: quote a field holding a comma, quote or line break; double inner quotes. */
static void field(FILE *out, const char *s)
{
    fputc(',', out);
    if (!s || !*s)
        return;
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static void number(FILE *out, uint64_t v)
{
    fprintf(out, ",%llu", (ull)v);
}

static void hex(FILE *out, uint64_t v)
{
    fprintf(out, ",0x%llx", (ull)v);
}

/* Frame names are resolved lazily by the model; asking during the replay is what it is for. */
static const char *site_name(const struct model *m, uint32_t site)
{
    return site ? model_frame_name((struct model *)m, site) : "";
}

static const char *event_name(const struct reader_record *rec)
{
    static const char *const names[] = {
        [MST_REC_ALLOC] = "alloc",
        [MST_REC_FREE] = "free",
        [MST_REC_MAP] = "map",
        [MST_REC_UNMAP] = "unmap",
        [MST_REC_PHASE_PUSH] = "phase_push",
        [MST_REC_PHASE_POP] = "phase_pop",
        [MST_REC_STEP] = "step",
        [MST_REC_CEILING] = "ceiling",
        [MST_REC_OOM] = "oom",
        [MST_REC_RETAG] = "retag",
        [MST_REC_OP] = "op",
        [MST_REC_ACCESS] = "access",
        [MST_REC_MEASURE] = "measure",
        [MST_REC_SUMMARY] = "summary",
    };
    if (rec->kind == MST_REC_RESIDENCY)
        return reader_residency_name(rec->u.residency.event);
    return rec->kind < sizeof names / sizeof names[0] && names[rec->kind] ? names[rec->kind] : NULL;
}

static const char *op_kind_name(unsigned kind)
{
    static const char *const names[] = {"", "gemm", "memcpy", "memset", "kernel"};
    return kind < sizeof names / sizeof names[0] ? names[kind] : "";
}

/* The columns after `event`: addr,size,category,kind,step,phase,site. */
static void columns(FILE *out, const struct model *m, const struct model_state *st,
                    const struct model_event *ev)
{
    const struct reader_record *rec = ev->rec;
    const struct reader *r = model_reader(m);
    const struct model_alloc *a = ev->alloc;
    const char *category = a ? reader_category_name(a->category) : "";
    const char *phase = st->phase_name;
    uint64_t addr = 0, size = 0;
    const char *kind = "", *site = "";
    int has_addr = 1, has_size = 1;

    switch (rec->kind) {
    case MST_REC_ALLOC:
        addr = rec->u.alloc.addr, size = rec->u.alloc.size;
        kind = reader_kind_name(rec->u.alloc.kind);
        category = reader_category_name(rec->u.alloc.category);
        site = site_name(m, rec->u.alloc.site);
        phase = reader_string(r, rec->u.alloc.phase);
        break;
    case MST_REC_FREE:
        addr = rec->u.free.addr, size = rec->u.free.size;
        kind = reader_kind_name(rec->u.free.kind);
        site = site_name(m, rec->u.free.site);
        break;
    case MST_REC_MAP:
    case MST_REC_UNMAP:
        addr = rec->u.map.addr, size = rec->u.map.size;
        break;
    case MST_REC_PHASE_PUSH:
    case MST_REC_PHASE_POP:
        has_addr = has_size = 0;
        phase = reader_string(r, rec->u.phase.name_id);
        break;
    case MST_REC_CEILING:
        has_addr = 0;
        size = rec->u.ceiling.ceiling_bytes;
        kind = reader_policy_name(rec->u.ceiling.policy);
        break;
    case MST_REC_OOM:
        has_addr = 0;
        size = rec->u.oom.request;
        kind = reader_kind_name(rec->u.oom.kind);
        site = site_name(m, rec->u.oom.site);
        phase = reader_string(r, rec->u.oom.phase);
        break;
    case MST_REC_RETAG:
        addr = rec->u.retag.addr;
        size = a ? a->size : 0, has_size = a != NULL;
        category = reader_category_name(rec->u.retag.category);
        break;
    case MST_REC_OP:
        has_addr = has_size = 0;
        site = reader_string(r, rec->u.op.name_id);
        kind = op_kind_name(rec->u.op.kind);
        break;
    case MST_REC_ACCESS:
        addr = rec->u.access.addr, size = rec->u.access.size;
        break;
    case MST_REC_RESIDENCY:
        addr = rec->u.residency.addr, size = rec->u.residency.bytes;
        break;
    case MST_REC_SUMMARY:
        has_addr = 0;
        size = rec->u.summary.peak_resident;
        break;
    default: /* STEP, MEASURE */
        has_addr = has_size = 0;
    }
    if (has_addr)
        hex(out, addr);
    else
        field(out, NULL);
    if (has_size)
        number(out, size);
    else
        field(out, NULL);
    field(out, category);
    field(out, kind);
    if (rec->kind == MST_REC_STEP)
        number(out, rec->u.step.step);
    else if (st->step == MODEL_NO_STEP)
        field(out, NULL);
    else
        fprintf(out, ",%lld", (long long)st->step);
    field(out, phase);
    field(out, site);
}

static const char *access_mode(unsigned mode)
{
    if (mode & MST_ACCESS_MAYBE)
        return "maybe"; /* found in kernel parameters: direction unknown */
    if ((mode & MST_ACCESS_READ) && (mode & MST_ACCESS_WRITE))
        return "read+write";
    return mode & MST_ACCESS_WRITE ? "write" : mode & MST_ACCESS_READ ? "read" : NULL;
}

/* mode,shape,flops: what an access did, and the size and work of an operation. */
static void op_columns(FILE *out, const struct reader_record *rec)
{
    field(out, rec->kind == MST_REC_ACCESS ? access_mode(rec->u.access.mode) : NULL);
    if (rec->kind != MST_REC_OP) {
        fputs(",,", out);
        return;
    }
    const struct mst_rec_op *op = &rec->u.op;
    if (op->batch > 1)
        fprintf(out, ",%llux%llux%llux%llu", (ull)op->m, (ull)op->n, (ull)op->k, (ull)op->batch);
    else if (op->m | op->n | op->k)
        fprintf(out, ",%llux%llux%llu", (ull)op->m, (ull)op->n, (ull)op->k);
    else
        fputc(',', out);
    number(out, op->flops);
}

static int on_event(void *ctx, const struct model *m, const struct model_state *st,
                    const struct model_event *ev)
{
    struct csv_ctx *c = ctx;
    const char *event = event_name(ev->rec);
    if (!event)
        return 0; /* a definition */
    fprintf(c->out, "%llu", (ull)st->time_ns);
    field(c->out, event);
    columns(c->out, m, st, ev);
    op_columns(c->out, ev->rec);
    fputc('\n', c->out);
    c->rows++;
    return 0;
}

int64_t export_csv(const char *trace, FILE *out, int header, char *err, size_t errlen)
{
    struct csv_ctx c = {.out = out};
    struct model_callbacks cb = {.ctx = &c, .on_event = on_event};
    struct model_options opt = {0};
    if (header)
        fputs("time_ns,event,addr,size,category,kind,step,phase,site,mode,shape,flops\n", out);
    struct model *m = model_replay(trace, &opt, &cb, err, errlen);
    if (!m)
        return -1;
    if (model_reader_status(m) != READER_OK)
        fprintf(stderr, "memshim-analyze: warning: %s\n", model_reader_error(m));
    model_free(m);
    return c.rows;
}
