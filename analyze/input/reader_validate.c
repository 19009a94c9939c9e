/* reader_validate: each record checked before it is handed out (ids defined, clocks forward,
 * values in range, sizes plausible), and the definitions (strings, frames, modules, threads,
 * devices) stored in the reader's id tables. */
#include "reader_struct.h"

#include <stdlib.h>
#include <string.h>

/* ---- validation ---------------------------------------------------------------------------- */

/* The thread a record names is defined. */
static int check_thread(struct reader *r, uint64_t off, uint32_t thread)
{
    if (!table_get(&r->threads, thread)) {
        set_error(r, READER_CORRUPT, off, "thread id %u not defined", thread);
        return -1;
    }
    return 0;
}

/* Checks shared by records that carry a thread and a time: the thread is defined and its
 * clock does not run backwards. */
static int check_thread_time(struct reader *r, uint64_t off, uint32_t thread, uint64_t time_ns)
{
    if (check_thread(r, off, thread) != 0)
        return -1;
    uint64_t *last = &r->thread_last[thread];
    if (time_ns < *last) {
        set_error(r, READER_CORRUPT, off, "time %llu ns before the previous %llu ns on thread %u",
                  (unsigned long long)time_ns, (unsigned long long)*last, thread);
        return -1;
    }
    *last = time_ns;
    return 0;
}

static int check_ref(struct reader *r, uint64_t off, const struct id_table *t, uint32_t id,
                     const char *what)
{
    if (id == 0 || table_get(t, id))
        return 0;
    set_error(r, READER_CORRUPT, off, "%s id %u not defined", what, id);
    return -1;
}

static int check_range(struct reader *r, uint64_t off, unsigned v, unsigned lo, unsigned hi,
                       const char *what)
{
    if (v >= lo && v <= hi)
        return 0;
    set_error(r, READER_CORRUPT, off, "%s %u out of range", what, v);
    return -1;
}

static int check_size(struct reader *r, uint64_t off, uint64_t size)
{
    if (size <= SIZE_MAX_PLAUSIBLE)
        return 0;
    set_error(r, READER_CORRUPT, off, "implausible size %llu bytes", (unsigned long long)size);
    return -1;
}

static char *copy_name(const char *s, uint32_t len)
{
    char *c = malloc((size_t)len + 1);
    if (c) {
        memcpy(c, s, len);
        c[len] = '\0';
    }
    return c;
}

/* The table a definition record fills, and the id it defines. */
static struct id_table *definition_table(struct reader *r, const struct reader_record *rec,
                                         uint32_t *id)
{
    switch (rec->kind) {
    case MST_REC_STRING:
        *id = rec->u.string.id;
        return &r->strings;
    case MST_REC_MODULE:
        *id = rec->u.module.id;
        return &r->modules;
    case MST_REC_FRAME:
        *id = rec->u.frame.id;
        return &r->frames;
    case MST_REC_THREAD:
        *id = rec->u.thread.id;
        return &r->threads;
    default:
        *id = rec->u.device.ordinal;
        return &r->devices;
    }
}

/* Id ranges and, for frames, the ids a frame refers to. */
static int check_definition(struct reader *r, const struct reader_record *rec, uint32_t id)
{
    uint64_t off = rec->offset;
    if (rec->kind != MST_REC_THREAD && rec->kind != MST_REC_DEVICE && id == 0) {
        set_error(r, READER_CORRUPT, off, "%s id 0", reader_record_kind_name(rec->kind));
        return -1;
    }
    if (rec->kind == MST_REC_DEVICE && id > 255) {
        set_error(r, READER_CORRUPT, off, "device ordinal %u out of range", id);
        return -1;
    }
    if (rec->kind != MST_REC_FRAME)
        return 0;
    const struct mst_rec_frame *f = &rec->u.frame;
    return check_ref(r, off, &r->frames, f->parent, "parent frame") ||
           check_ref(r, off, &r->modules, f->module_id, "module") ||
           check_ref(r, off, &r->strings, f->symbol_id, "symbol string");
}

/* Fills a fresh table slot from the record; `name` (the record's tail) is taken over. */
static void store_definition(void *slot, const struct reader_record *rec, uint32_t id, char *name)
{
    switch (rec->kind) {
    case MST_REC_STRING:
        *(char **)slot = name;
        return;
    case MST_REC_MODULE:
        *(struct reader_module *)slot = (struct reader_module){.base = rec->u.module.base,
                                                               .size = rec->u.module.size,
                                                               .path = name,
                                                               .flags = rec->u.module.flags};
        return;
    case MST_REC_FRAME:
        free(name);
        *(struct reader_frame *)slot = (struct reader_frame){
            .parent = rec->u.frame.parent,
            .module_id = rec->u.frame.module_id,
            .symbol_id = rec->u.frame.symbol_id,
            .ip = rec->u.frame.ip,
            .module_offset = rec->u.frame.module_offset,
        };
        return;
    case MST_REC_THREAD:
        ((struct thread_slot *)slot)->t = (struct reader_thread){rec->u.thread.os_tid, name};
        return;
    default:
        *(struct reader_device *)slot = (struct reader_device){
            .ordinal = id,
            .cc_major = rec->u.device.cc_major,
            .cc_minor = rec->u.device.cc_minor,
            .total_bytes = rec->u.device.total_bytes,
            .ceiling_bytes = rec->u.device.ceiling_bytes,
            .name = name,
        };
        return;
    }
}

/* Stores a definition. A second definition of the same id is ignored: the first one is what
 * earlier records referred to. */
static int define(struct reader *r, struct reader_record *rec)
{
    uint32_t id;
    struct id_table *t = definition_table(r, rec, &id);
    if (check_definition(r, rec, id) != 0)
        return -1;
    if (table_get(t, id))
        return 0;
    void *slot = table_define(t, id);
    if (!slot) {
        set_error(r, READER_CORRUPT, rec->offset, "%s id %u implausible (highest so far %u)",
                  reader_record_kind_name(rec->kind), id, t->high);
        return -1;
    }
    char *name = copy_name(rec->tail, rec->tail_len);
    if (!name || (t == &r->threads && thread_clock_define(r, id) != 0)) {
        free(name);
        t->known[id] = 0;
        set_error(r, READER_IO_ERROR, rec->offset, "out of memory");
        return -1;
    }
    store_definition(slot, rec, id, name);
    table_settle_dense(t);
    return 0;
}

/* The short ALLOC's requested bytes are its size less what the charge rounds up: more than
 * the size wrapped below zero. */
static int check_short_alloc(struct reader *r, const struct reader_record *rec)
{
    const struct mst_rec_alloc *a = &rec->u.alloc;
    if (!mst_alloc_is_short(rec->length) || a->requested <= a->size)
        return 0;
    set_error(r, READER_CORRUPT, rec->offset,
              "short ALLOC record of %llu bytes with %llu unrequested, more than its size",
              (unsigned long long)a->size, (unsigned long long)(a->size - a->requested));
    return -1;
}

static int validate_alloc(struct reader *r, const struct reader_record *rec)
{
    const struct mst_rec_alloc *a = &rec->u.alloc;
    uint64_t off = rec->offset;
    return check_thread_time(r, off, a->thread, a->time_ns) ||
           check_ref(r, off, &r->frames, a->site, "site frame") ||
           check_ref(r, off, &r->strings, a->phase, "phase string") ||
           check_range(r, off, a->kind, 1, MST_KIND_MAX - 1, "allocation kind") ||
           check_range(r, off, a->category, 0, MST_CATEGORY_MAX - 1, "category") ||
           check_size(r, off, a->size) || check_short_alloc(r, rec);
}

static int validate_free(struct reader *r, const struct reader_record *rec)
{
    const struct mst_rec_free *f = &rec->u.free;
    uint64_t off = rec->offset;
    return check_thread_time(r, off, f->thread, f->time_ns) ||
           check_ref(r, off, &r->frames, f->site, "site frame") ||
           check_range(r, off, f->kind, 0, MST_KIND_MAX - 1, "allocation kind") ||
           check_size(r, off, f->size);
}

static int validate_oom(struct reader *r, const struct reader_record *rec)
{
    const struct mst_rec_oom *o = &rec->u.oom;
    uint64_t off = rec->offset;
    return check_thread_time(r, off, o->thread, o->time_ns) ||
           check_ref(r, off, &r->frames, o->site, "site frame") ||
           check_ref(r, off, &r->strings, o->phase, "phase string") ||
           check_range(r, off, o->kind, 0, MST_KIND_MAX - 1, "allocation kind");
}

int validate(struct reader *r, struct reader_record *rec)
{
    const uint64_t off = rec->offset;
    switch (rec->kind) {
    case MST_REC_ALLOC:
        return validate_alloc(r, rec);
    case MST_REC_FREE:
        return validate_free(r, rec);
    case MST_REC_STRING:
    case MST_REC_MODULE:
    case MST_REC_FRAME:
    case MST_REC_THREAD:
    case MST_REC_DEVICE:
        return define(r, rec);
    case MST_REC_MAP:
    case MST_REC_UNMAP:
        return check_thread_time(r, off, rec->u.map.thread, rec->u.map.time_ns) ||
               check_size(r, off, rec->u.map.size);
    case MST_REC_PHASE_PUSH:
    case MST_REC_PHASE_POP:
        return check_thread_time(r, off, rec->u.phase.thread, rec->u.phase.time_ns) ||
               check_ref(r, off, &r->strings, rec->u.phase.name_id, "phase string");
    case MST_REC_STEP:
        return check_thread_time(r, off, rec->u.step.thread, rec->u.step.time_ns);
    case MST_REC_CEILING:
        return check_range(r, off, rec->u.ceiling.policy, 0, MST_POLICY_AUTO, "policy");
    case MST_REC_OOM:
        return validate_oom(r, rec);
    case MST_REC_RETAG:
        return check_range(r, off, rec->u.retag.category, 0, MST_CATEGORY_MAX - 1, "category");
    case MST_REC_OP:
        return check_thread_time(r, off, rec->u.op.thread, rec->u.op.time_ns) ||
               check_ref(r, off, &r->strings, rec->u.op.name_id, "op name string") ||
               check_range(r, off, rec->u.op.kind, MST_OP_GEMM, MST_OP_KERNEL, "op kind");
    case MST_REC_ACCESS:
        return check_range(r, off, rec->u.access.mode, 0, 7, "access mode");
    case MST_REC_RESIDENCY:
        return check_thread_time(r, off, rec->u.residency.thread, rec->u.residency.time_ns) ||
               check_range(r, off, rec->u.residency.event, MST_RES_SPILL, MST_RES_LAST,
                           "residency event") ||
               check_size(r, off, rec->u.residency.bytes);
    case MST_REC_TENSOR_ALLOC:
        return check_thread_time(r, off, rec->u.tensor.thread, rec->u.tensor.time_ns) ||
               check_ref(r, off, &r->frames, rec->u.tensor.site, "site frame") ||
               check_ref(r, off, &r->strings, rec->u.tensor.phase, "phase string") ||
               check_range(r, off, rec->u.tensor.category, 0, MST_CATEGORY_MAX - 1, "category") ||
               check_size(r, off, rec->u.tensor.size);
    case MST_REC_TENSOR_FREE:
        return check_thread_time(r, off, rec->u.tensor_free.thread, rec->u.tensor_free.time_ns);
    case MST_REC_AUTOGRAD:
        return check_thread(r, off, rec->u.autograd.thread) ||
               check_range(r, off, rec->u.autograd.kind, MST_AUTOGRAD_FORWARD,
                           MST_AUTOGRAD_BACKWARD, "autograd kind");
    case MST_REC_SUMMARY:
        r->summary = rec->u.summary;
        r->have_summary = 1;
        return 0;
    default:
        return 0;
    }
}
