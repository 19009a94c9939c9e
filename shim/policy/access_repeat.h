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

#include "memshim/trace_format.h"

/* An OP and its ACCESS records as framed for the trace, with room for an OP_DEFINE before
 * them; the `naccess` ACCESS records (each a header and its payload) follow it in memory. */
struct access_repeat_group {
    struct mst_record_header define_h;
    struct mst_rec_op_define define;
    struct mst_record_header op_h;
    struct mst_rec_op op;
} __attribute__((packed));

/* Read MEMSHIM_TRACE_COMPACT (access_init). */
void access_repeat_init(void);
/* Log the group: an OP_REPEAT when this thread's table holds its shape, else in full. */
void access_repeat_write(struct access_repeat_group *g, size_t naccess);

#endif /* MEMSHIM_ACCESS_REPEAT_H */
