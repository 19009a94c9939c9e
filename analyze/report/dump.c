/* `dump`: one line per record. The format is line-oriented and stable so tests can grep it:
 *
 *     header version=1 pid=42 rank=none host=h stack_depth=24 flags=0x1 ...
 *     alloc time=120 addr=0x7f0000 size=4096 requested=4000 category=activation ...
 *     end status=ok records=12 skipped=0
 *
 * Names (strings, phases, threads) are printed as their text in double quotes. */
#include "dump.h"

#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "cli.h"
#include "dump_refined.h"

typedef unsigned long long ull;

static void quoted(FILE *out, const char *key, const char *s, size_t len)
{
    fprintf(out, " %s=\"", key);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

static void name(FILE *out, const struct reader *r, const char *key, uint32_t id)
{
    const char *s = reader_string(r, id);
    fprintf(out, " %s=%u", key, id);
    if (id) {
        char k[32];
        snprintf(k, sizeof k, "%s_name", key);
        quoted(out, k, s, strlen(s));
    }
}

static void dump_alloc(FILE *out, const struct reader *r, const struct mst_rec_alloc *a)
{
    fprintf(out,
            " time=%llu addr=0x%llx size=%llu requested=%llu stream=0x%llx thread=%u site=%u"
            " category=%s kind=%s device=%u flags=0x%x",
            (ull)a->time_ns, (ull)a->addr, (ull)a->size, (ull)a->requested, (ull)a->stream,
            a->thread, a->site, reader_category_name(a->category), reader_kind_name(a->kind),
            a->device, a->flags);
    name(out, r, "phase", a->phase);
}

/* The short form (a synchronous free) has no size, stream or site of its own: none is shown. */
static void dump_free(FILE *out, const struct reader_record *rec)
{
    const struct mst_rec_free *f = &rec->u.free;
    fprintf(out, " time=%llu addr=0x%llx", (ull)f->time_ns, (ull)f->addr);
    if (!mst_free_is_short(rec->length))
        fprintf(out, " size=%llu stream=0x%llx", (ull)f->size, (ull)f->stream);
    fprintf(out, " thread=%u", f->thread);
    if (!mst_free_is_short(rec->length))
        fprintf(out, " site=%u", f->site);
    fprintf(out, " kind=%s device=%u flags=0x%x", reader_kind_name(f->kind), f->device, f->flags);
}

static void dump_oom(FILE *out, const struct reader *r, const struct mst_rec_oom *o)
{
    fprintf(out,
            " time=%llu request=%llu ceiling=%llu resident=%llu thread=%u site=%u kind=%s"
            " device=%u",
            (ull)o->time_ns, (ull)o->request, (ull)o->ceiling, (ull)o->resident, o->thread, o->site,
            reader_kind_name(o->kind), o->device);
    name(out, r, "phase", o->phase);
    for (int c = 0; c < MST_CATEGORY_MAX; c++)
        if (o->by_category[c])
            fprintf(out, " %s=%llu", reader_category_name(c), (ull)o->by_category[c]);
}

static void dump_summary(FILE *out, const struct mst_rec_summary *s)
{
    fprintf(out,
            " time=%llu allocations=%llu frees=%llu failed=%llu peak=%llu at_exit=%llu"
            " spills=%llu restores=%llu prefetches=%llu drops=%llu recomputes=%llu"
            " spilled_bytes=%llu restored_bytes=%llu dropped_bytes=%llu recompute_flops=%llu"
            " lost=%llu",
            (ull)s->time_ns, (ull)s->allocations, (ull)s->frees, (ull)s->failed_allocations,
            (ull)s->peak_resident, (ull)s->resident_at_exit, (ull)s->spills, (ull)s->restores,
            (ull)s->prefetches, (ull)s->drops, (ull)s->recomputes, (ull)s->spilled_bytes,
            (ull)s->restored_bytes, (ull)s->dropped_bytes, (ull)s->recompute_flops,
            (ull)s->events_lost);
}

static void dump_definition(FILE *out, const struct reader_record *rec)
{
    const union {
        struct mst_rec_string string;
        struct mst_rec_module module;
        struct mst_rec_frame frame;
        struct mst_rec_thread thread;
        struct mst_rec_device device;
    } *u = (const void *)&rec->u;
    switch (rec->kind) {
    case MST_REC_STRING:
        fprintf(out, " id=%u", u->string.id);
        quoted(out, "text", rec->tail, rec->tail_len);
        break;
    case MST_REC_MODULE:
        fprintf(out, " id=%u base=0x%llx size=%llu", u->module.id, (ull)u->module.base,
                (ull)u->module.size);
        quoted(out, "path", rec->tail, rec->tail_len);
        break;
    case MST_REC_FRAME:
        fprintf(out, " id=%u parent=%u module=%u symbol=%u ip=0x%llx offset=0x%llx", u->frame.id,
                u->frame.parent, u->frame.module_id, u->frame.symbol_id, (ull)u->frame.ip,
                (ull)u->frame.module_offset);
        break;
    case MST_REC_THREAD:
        fprintf(out, " id=%u tid=%u", u->thread.id, u->thread.os_tid);
        quoted(out, "name", rec->tail, rec->tail_len);
        break;
    default:
        fprintf(out, " ordinal=%u cc=%u.%u total=%llu ceiling=%llu", u->device.ordinal,
                u->device.cc_major, u->device.cc_minor, (ull)u->device.total_bytes,
                (ull)u->device.ceiling_bytes);
        quoted(out, "name", rec->tail, rec->tail_len);
        break;
    }
}

static void dump_other(FILE *out, const struct reader *r, const struct reader_record *rec)
{
    switch (rec->kind) {
    case MST_REC_MAP:
    case MST_REC_UNMAP:
        fprintf(out, " time=%llu addr=0x%llx size=%llu handle=0x%llx thread=%u device=%u",
                (ull)rec->u.map.time_ns, (ull)rec->u.map.addr, (ull)rec->u.map.size,
                (ull)rec->u.map.handle, rec->u.map.thread, rec->u.map.device);
        break;
    case MST_REC_PHASE_PUSH:
    case MST_REC_PHASE_POP:
        fprintf(out, " time=%llu thread=%u", (ull)rec->u.phase.time_ns, rec->u.phase.thread);
        name(out, r, "phase", rec->u.phase.name_id);
        break;
    case MST_REC_STEP:
        fprintf(out, " time=%llu step=%llu thread=%u", (ull)rec->u.step.time_ns,
                (ull)rec->u.step.step, rec->u.step.thread);
        break;
    case MST_REC_CEILING:
        fprintf(out, " time=%llu ceiling=%llu device=%u policy=%s", (ull)rec->u.ceiling.time_ns,
                (ull)rec->u.ceiling.ceiling_bytes, rec->u.ceiling.device,
                reader_policy_name(rec->u.ceiling.policy));
        break;
    case MST_REC_RETAG:
        fprintf(out, " time=%llu addr=0x%llx category=%s flags=0x%x device=%u",
                (ull)rec->u.retag.time_ns, (ull)rec->u.retag.addr,
                reader_category_name(rec->u.retag.category), rec->u.retag.flags,
                rec->u.retag.device);
        break;
    case MST_REC_OP:
        fprintf(out,
                " time=%llu kind=%u stream=0x%llx m=%llu n=%llu k=%llu batch=%llu"
                " flops=%llu thread=%u naccess=%u",
                (ull)rec->u.op.time_ns, rec->u.op.kind, (ull)rec->u.op.stream, (ull)rec->u.op.m,
                (ull)rec->u.op.n, (ull)rec->u.op.k, (ull)rec->u.op.batch, (ull)rec->u.op.flops,
                rec->u.op.thread, rec->u.op.naccess);
        name(out, r, "op", rec->u.op.name_id);
        break;
    case MST_REC_ACCESS:
        fprintf(out, " addr=0x%llx size=%llu alloc=0x%llx mode=0x%x", (ull)rec->u.access.addr,
                (ull)rec->u.access.size, (ull)rec->u.access.alloc_addr, rec->u.access.mode);
        break;
    case MST_REC_RESIDENCY:
        fprintf(out,
                " time=%llu event=%s addr=0x%llx bytes=%llu duration=%llu flops=%llu"
                " thread=%u device=%u",
                (ull)rec->u.residency.time_ns, reader_residency_name(rec->u.residency.event),
                (ull)rec->u.residency.addr, (ull)rec->u.residency.bytes,
                (ull)rec->u.residency.duration_ns, (ull)rec->u.residency.flops,
                rec->u.residency.thread, rec->u.residency.device);
        break;
    case MST_REC_TENSOR_ALLOC:
        fprintf(out,
                " time=%llu addr=0x%llx size=%llu requested=%llu thread=%u site=%u category=%s"
                " device=%u flags=0x%x",
                (ull)rec->u.tensor.time_ns, (ull)rec->u.tensor.addr, (ull)rec->u.tensor.size,
                (ull)rec->u.tensor.requested, rec->u.tensor.thread, rec->u.tensor.site,
                reader_category_name(rec->u.tensor.category), rec->u.tensor.device,
                rec->u.tensor.flags);
        name(out, r, "phase", rec->u.tensor.phase);
        break;
    case MST_REC_TENSOR_FREE:
        fprintf(out, " time=%llu addr=0x%llx thread=%u", (ull)rec->u.tensor_free.time_ns,
                (ull)rec->u.tensor_free.addr, rec->u.tensor_free.thread);
        break;
    case MST_REC_AUTOGRAD:
        fprintf(out, " %s addr=0x%llx seq=%llu fwd_thread=%llu thread=%u",
                rec->u.autograd.kind == MST_AUTOGRAD_BACKWARD ? "backward" : "forward",
                (ull)rec->u.autograd.addr, (ull)rec->u.autograd.seq,
                (ull)rec->u.autograd.fwd_thread, rec->u.autograd.thread);
        break;
    case MST_REC_MEASURE:
        fprintf(out, " time=%llu h2d=%llu d2h=%llu gemm_flops=%llu device=%u",
                (ull)rec->u.measure.time_ns, (ull)rec->u.measure.h2d_bytes_per_s,
                (ull)rec->u.measure.d2h_bytes_per_s, (ull)rec->u.measure.gemm_flops_per_s,
                rec->u.measure.device);
        break;
    default:
        break;
    }
}

void dump_record(FILE *out, const struct reader *r, const struct reader_record *rec)
{
    fputs(reader_record_kind_name(rec->kind), out);
    switch (rec->kind) {
    case MST_REC_STRING:
    case MST_REC_MODULE:
    case MST_REC_FRAME:
    case MST_REC_THREAD:
    case MST_REC_DEVICE:
        dump_definition(out, rec);
        break;
    case MST_REC_ALLOC:
        dump_alloc(out, r, &rec->u.alloc);
        break;
    case MST_REC_FREE:
        dump_free(out, rec);
        break;
    case MST_REC_OOM:
        dump_oom(out, r, &rec->u.oom);
        break;
    case MST_REC_SUMMARY:
        dump_summary(out, &rec->u.summary);
        break;
    default:
        dump_other(out, r, rec);
        break;
    }
}

static void dump_header(FILE *out, const struct mst_file_header *h, const char *label)
{
    fprintf(out, "header version=%u pid=%u", h->version, h->pid);
    if (h->rank == MST_NO_RANK)
        fprintf(out, " rank=none");
    else
        fprintf(out, " rank=%u", h->rank);
    fprintf(out, " stack_depth=%u clock_base=%llu wall_base=%llu flags=0x%x", h->stack_depth,
            (ull)h->clock_base_ns, (ull)h->wall_base_ns, h->flags);
    quoted(out, "host", h->host, strnlen(h->host, MST_HOST_LEN));
    if (*label)
        quoted(out, "label", label, strlen(label));
    fputc('\n', out);
}

static const char *state_name(enum reader_state s)
{
    static const char *const names[] = {"ok", "truncated", "corrupt", "io-error"};
    return names[s];
}

const char *dump_state_name(enum reader_state s)
{
    return state_name(s);
}

void dump_file_header(FILE *out, const struct mst_file_header *h, const char *label)
{
    dump_header(out, h, label);
}

static int dump_one(FILE *out, const char *path, int offsets)
{
    char err[512];
    struct reader *r = reader_open(path, err, sizeof err);
    if (!r) {
        fprintf(stderr, "memshim-analyze: %s\n", err);
        return 1;
    }
    dump_header(out, reader_header(r), reader_label(r));
    struct reader_record rec;
    while (reader_next(r, &rec) == READER_RECORD) {
        dump_record(out, r, &rec);
        if (offsets)
            fprintf(out, " @%llu", (ull)rec.offset);
        fputc('\n', out);
    }
    enum reader_state st = reader_status(r);
    fprintf(out, "end status=%s records=%llu skipped=%llu clean=%s\n", state_name(st),
            (ull)reader_records(r), (ull)reader_skipped(r), reader_summary(r) ? "yes" : "no");
    if (st != READER_OK)
        fprintf(stderr, "memshim-analyze: %s\n", reader_error(r));
    reader_close(r);
    return st == READER_OK || st == READER_TRUNCATED ? 0 : 1;
}

int dump_command(int argc, char **argv)
{
    static const struct option options[] = {{"offsets", no_argument, NULL, 'O'},
                                            {"refined", no_argument, NULL, 'R'},
                                            {"help", no_argument, NULL, 'H'},
                                            {0, 0, 0, 0}};
    int offsets = 0, refined = 0, c;
    while ((c = getopt_long(argc, argv, "OR", options, NULL)) != -1) {
        if (c == 'H')
            return CLI_EXIT_HELP;
        if (c != 'O' && c != 'R')
            return 2;
        offsets |= c == 'O';
        refined |= c == 'R';
    }
    struct cli_traces traces;
    if (cli_traces(argc, argv, optind, &traces) != 0)
        return 2;
    int rc = 0;
    for (size_t i = 0; i < traces.count; i++) {
        if (traces.count > 1)
            printf("trace \"%s\"\n", traces.paths[i]);
        rc |= refined ? dump_refined_one(stdout, traces.paths[i], offsets)
                      : dump_one(stdout, traces.paths[i], offsets);
    }
    cli_traces_free(&traces);
    return rc;
}
