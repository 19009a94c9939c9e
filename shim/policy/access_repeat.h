/* access_repeat: operations a thread repeats, written in a few bytes.
 *
 * A training step launches the same kernels on the same buffers step after step. Each thread
 * keeps the shapes of its recent operations (an OP record but its time, and its ACCESS
 * records) in a small table of its own; an operation equal to one there is written as an
 * OP_REPEAT of 16 bytes that names it, any other as OP_DEFINE, OP and ACCESS records, which
 * puts it in the table (trace_format.h). MEMSHIM_TRACE_COMPACT=off writes every one in full. */
#ifndef MEMSHIM_ACCESS_REPEAT_H
#define MEMSHIM_ACCESS_REPEAT_H

#include <stddef.h>
#include <stdint.h>

#include "memshim/trace_format.h"

/* An OP and its ACCESS records as framed for the trace, with room for an OP_DEFINE before
 * them; the `naccess` ACCESS records (each a header and its payload) follow it in memory. */
struct access_repeat_group {
    struct mst_record_header define_h;
    struct mst_rec_op_define define;
    struct mst_record_header op_h;
    struct mst_rec_op op;
} __attribute__((packed));

/* A shape as this thread's table holds it: one definition in one slot (slot 0: none). */
struct access_shape {
    uint32_t slot; /* index + 1 */
    uint32_t gen;  /* the slot's definitions so far, this one included (1 or more) */
    uint32_t id;   /* the shape id its OP_DEFINE gave it */
};

/* Read MEMSHIM_TRACE_COMPACT (access_init). */
void access_repeat_init(void);
/* Log the group: an OP_REPEAT when this thread's table holds its shape, else in full. `out`
 * (may be NULL): the shape it is held under now, slot 0 when the table does not keep it. */
void access_repeat_write(struct access_repeat_group *g, size_t naccess, struct access_shape *out);
/* Log an OP_REPEAT at `now` of a shape access_repeat_write named on this thread, if the table
 * still holds that definition for the current trace: 1 when written, 0 when the caller must
 * describe the operation again. */
int access_repeat_again(const struct access_shape *shape, uint64_t now);
/* Start fetching the state a repeat of the shape in `slot` (access_shape.slot) will read. */
void access_repeat_prefetch(uint32_t slot);

#endif /* MEMSHIM_ACCESS_REPEAT_H */
