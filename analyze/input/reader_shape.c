/* reader_shape: OP_DEFINE and OP_REPEAT (trace_format.h), undone as the trace is read: the
 * reader keeps each defined shape (an OP and its ACCESS records) and hands out a repeat as that
 * OP, at the repeat's time, and its ACCESS records, so that no caller can tell a compacted
 * trace from one written in full. */
#include "reader_struct.h"

#include <stdlib.h>
#include <string.h>

struct reader_shape {
    int valid;     /* its ACCESS records all came */
    uint32_t have; /* ACCESS records so far */
    uint64_t last_ns;
    struct mst_rec_op op;
    struct mst_rec_access acc[MST_SHAPE_MAX_ACCESS];
};

/* Shapes by id in blocks of SHAPE_BLOCK ids: a writer's ids are a thread's index above its
 * slot (trace_format.h), so the blocks in use are few whatever the ids, and the block table
 * stays small (MST_SHAPE_ID_MAX / SHAPE_BLOCK entries at most) even for a hostile file. */
#define SHAPE_BLOCK_BITS 9
#define SHAPE_BLOCK      (1u << SHAPE_BLOCK_BITS)

void shape_free(struct reader *r)
{
    for (uint32_t b = 0; b < r->shapes.cap; b++) {
        for (uint32_t i = 0; r->shapes.blocks[b] && i < SHAPE_BLOCK; i++)
            free(r->shapes.blocks[b][i]);
        free(r->shapes.blocks[b]);
    }
    free(r->shapes.blocks);
}

static struct reader_shape *shape_get(const struct reader *r, uint32_t id)
{
    uint32_t b = id >> SHAPE_BLOCK_BITS;
    return b < r->shapes.cap && r->shapes.blocks[b] ? r->shapes.blocks[b][id % SHAPE_BLOCK] : NULL;
}

/* The shape `id` (id < MST_SHAPE_ID_MAX), made on first use; NULL when out of memory. */
static struct reader_shape *shape_slot(struct reader *r, uint32_t id)
{
    struct shape_state *s = &r->shapes;
    uint32_t b = id >> SHAPE_BLOCK_BITS;
    if (b >= s->cap) {
        uint32_t cap = s->cap ? s->cap : 16;
        while (cap <= b)
            cap *= 2;
        struct reader_shape ***blocks = realloc(s->blocks, (size_t)cap * sizeof *blocks);
        if (!blocks)
            return NULL;
        memset(blocks + s->cap, 0, (size_t)(cap - s->cap) * sizeof *blocks);
        s->blocks = blocks;
        s->cap = cap;
    }
    if (!s->blocks[b] && !(s->blocks[b] = calloc(SHAPE_BLOCK, sizeof *s->blocks[b])))
        return NULL;
    struct reader_shape **sh = &s->blocks[b][id % SHAPE_BLOCK];
    if (!*sh)
        *sh = malloc(sizeof **sh);
    return *sh;
}

/* An OP_DEFINE or OP_REPEAT record at `off`. A repeat starts handing out its records
 * (shape_emit). */
int shape_record(struct reader *r, uint64_t off, uint16_t kind, const char *payload, uint32_t len)
{
    struct shape_state *s = &r->shapes;
    s->filling = NULL;
    if (len < sizeof(struct mst_rec_op_repeat)) { /* both payloads are 8 bytes */
        set_error(r, READER_CORRUPT, off, "%s record of %u payload bytes, needs 8",
                  kind == MST_REC_OP_DEFINE ? "op-define" : "op-repeat", len);
        return -1;
    }
    uint32_t id;
    memcpy(&id, payload, sizeof id);
    if (id >= MST_SHAPE_ID_MAX) {
        set_error(r, READER_CORRUPT, off, "shape id %u (ids are below %u)", id, MST_SHAPE_ID_MAX);
        return -1;
    }
    if (kind == MST_REC_OP_DEFINE) {
        s->pending = 1;
        s->pending_id = id;
        s->pending_off = off;
        return 0;
    }
    struct mst_rec_op_repeat_long rep = {.delta_ns = 0};
    memcpy(&rep, payload, len < sizeof rep ? sizeof rep.op_repeat : sizeof rep);
    struct reader_shape *sh = shape_get(r, id);
    if (s->pending || !sh || !sh->valid) {
        set_error(r, READER_CORRUPT, off,
                  s->pending ? "op-define followed by an op-repeat"
                             : "op-repeat of shape %u, "
                               "which no op-define gave",
                  id);
        return -1;
    }
    sh->last_ns += rep.op_repeat.delta_ns + rep.delta_ns;
    s->emitting = sh;
    s->emit_next = 0;
    s->emit_off = off;
    return 0;
}

/* The next record of the repeat being handed out: 1 when rec holds it, 0 when none is left,
 * -1 when it is invalid (its OP's thread clock ran backwards). */
int shape_emit(struct reader *r, struct reader_record *rec)
{
    struct shape_state *s = &r->shapes;
    struct reader_shape *sh = s->emitting;
    if (!sh)
        return 0;
    rec->offset = s->emit_off;
    rec->tail = "";
    rec->tail_len = 0;
    if (s->emit_next == 0) {
        rec->kind = MST_REC_OP;
        rec->length = sizeof rec->u.op;
        rec->u.op = sh->op;
        rec->u.op.time_ns = sh->last_ns;
        if (validate(r, rec) != 0)
            return -1;
    } else {
        rec->kind = MST_REC_ACCESS;
        rec->length = sizeof rec->u.access;
        rec->u.access = sh->acc[s->emit_next - 1];
    }
    if (++s->emit_next > sh->op.naccess)
        s->emitting = NULL;
    return 1;
}

/* A record just read and validated, while a definition is pending or filling: the OP a define
 * announced, or one of that OP's ACCESS records. */
int shape_note(struct reader *r, const struct reader_record *rec)
{
    struct shape_state *s = &r->shapes;
    if (s->pending) {
        s->pending = 0;
        if (rec->kind != MST_REC_OP) {
            set_error(r, READER_CORRUPT, s->pending_off, "op-define not followed by an op");
            return -1;
        }
        if (rec->u.op.naccess > MST_SHAPE_MAX_ACCESS) {
            set_error(r, READER_CORRUPT, s->pending_off,
                      "op-define of an op with %u accesses (at most %u)", rec->u.op.naccess,
                      MST_SHAPE_MAX_ACCESS);
            return -1;
        }
        struct reader_shape *sh = shape_slot(r, s->pending_id);
        if (!sh) {
            set_error(r, READER_IO_ERROR, s->pending_off, "out of memory");
            return -1;
        }
        *sh = (struct reader_shape){.op = rec->u.op, .last_ns = rec->u.op.time_ns};
        sh->valid = sh->op.naccess == 0;
        s->filling = sh->valid ? NULL : sh;
        return 0;
    }
    struct reader_shape *sh = s->filling;
    if (rec->kind != MST_REC_ACCESS) {
        s->filling = NULL; /* cut short: the shape stays undefined */
        return 0;
    }
    sh->acc[sh->have++] = rec->u.access;
    if (sh->have == sh->op.naccess) {
        sh->valid = 1;
        s->filling = NULL;
    }
    return 0;
}
