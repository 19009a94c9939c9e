/* trace: the writer of the trace file (format: include/memshim/trace_format.h).
 *
 * Records go into a ring of shared buffers by atomic reservation: a thread reserves its bytes
 * with a fetch_add on the current buffer's write offset, copies the record in, and commits it
 * by storing its kind last (a plain store: buffers are zeroed before reuse, and the writer-out
 * waits at the first record whose kind is still 0). The thread whose reservation crosses the end of
 * the buffer seals it (its size and generation), makes the next buffer of the ring current and
 * kicks the flusher thread, which writes sealed buffers out in generation order, each once all
 * its reservations are committed; so file order is logging order, and loggers make no
 * write(2). Only when the whole ring is sealed and unwritten does the crosser write it out
 * itself (back pressure: records are never dropped for speed). The flusher (started with the
 * file, signals blocked) also swaps and writes at least every MEMSHIM_FLUSH_MS; exit and fatal
 * signals flush too (write(2) only). A record never spans two write-outs, so a file cut by
 * SIGKILL ends at a record boundary of the last flush, or in a tail the reader rejects.
 *
 * The file is created lazily, at the first CUDA event (trace_touch), so helper processes that
 * never use CUDA leave no file; records logged before that wait in the ring. */
#ifndef MEMSHIM_TRACE_H
#define MEMSHIM_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "memshim/trace_format.h"

struct trace_config {
    const char *path_template; /* MEMSHIM_TRACE; NULL or "" disables the trace */
    uint32_t rank;             /* MST_NO_RANK when none */
    uint32_t stack_depth;
    uint32_t flush_ms;
    uint32_t flags;    /* MST_FILE_F_* */
    const char *label; /* MEMSHIM_LABEL; NULL or "" when unset */
};

/* Once at load. Allocates the buffers (mmap); no file yet. */
void trace_init(const struct trace_config *cfg);
int trace_enabled(void);

/* A CUDA event happened: make sure the file exists (created once, header first). */
void trace_touch(void);

/* Log one record: header, `len` bytes of payload and `tail_len` bytes of tail (names).
 * Dropped (and counted as lost) when the trace is off, broken or finished. */
void trace_record(uint16_t kind, const void *payload, size_t len, const void *tail,
                  size_t tail_len);

/* The same in two steps, for hot paths: trace_reserve frames a record of `kind` with `len`
 * bytes of payload and returns where to write the payload (memcpy: no alignment is
 * promised), or NULL when the record is dropped; trace_commit publishes it. Nothing else may
 * be logged by this thread in between (a swap may wait for the commit). */
struct trace_slot {
    char *head; /* the record's header */
    uint16_t kind;
};
void *trace_reserve(uint16_t kind, uint32_t len, struct trace_slot *slot);
void trace_commit(const struct trace_slot *slot);

/* trace_record without a tail, for a payload whose size the caller knows at compile time:
 * inlined, its copy is a few moves rather than a copy loop of any length. */
static inline void trace_record_fixed(uint16_t kind, const void *payload, uint32_t len)
{
    struct trace_slot slot;
    void *p = trace_reserve(kind, len, &slot);
    if (!p)
        return;
    memcpy(p, payload, len);
    trace_commit(&slot);
}

/* Two records whose payloads the caller writes, in one reservation: `kind` with `len` bytes,
 * then `kind2` with `len2` (a record and the one that completes it, which no other thread's may
 * separate). Returns where the first payload goes, the second's `len` + 8 bytes further on; one
 * trace_commit publishes both. NULL when dropped. */
void *trace_reserve_pair(uint16_t kind, uint32_t len, uint16_t kind2, uint32_t len2,
                         struct trace_slot *slot);

static inline void trace_record_fixed_pair(uint16_t kind, const void *payload, uint32_t len,
                                           uint16_t kind2, const void *payload2, uint32_t len2)
{
    struct trace_slot slot;
    char *p = trace_reserve_pair(kind, len, kind2, len2, &slot);
    if (!p)
        return;
    memcpy(p, payload, len);
    memcpy(p + len + sizeof(struct mst_record_header), payload2, len2);
    trace_commit(&slot);
}

/* Log records framed by the caller (each an mst_record_header and its payload, `len` bytes in
 * all, at most TRACE_MAX_GROUP) in one reservation, so that no other thread's record can land
 * between them: an OP and its ACCESS records. Dropped like trace_record's. */
#define TRACE_MAX_GROUP (64u * 1024u)
void trace_record_group(const void *records, size_t len);

/* Per-thread index used in records; logs MST_REC_THREAD the first time a thread asks. */
uint32_t trace_thread_id(void);
/* Changes when a fork child starts its own trace: state kept per thread about records already
 * written (thread ids, shapes of repeated operations) is stale once it differs. */
uint32_t trace_epoch_now(void);

/* Write everything committed so far. trace_flush_signal is the async-signal-safe variant
 * (bounded waits, write(2) only). */
void trace_flush(void);
void trace_flush_signal(void);
/* The async-signal-safe flush, only in the process that created the file: not in a vfork
 * child, which shares the parent's memory until it execs or exits. */
void trace_flush_own(void);

/* Write MST_REC_SUMMARY, flush, and stop logging (records after it are dropped). */
void trace_finish(const struct mst_rec_summary *summary);

uint64_t trace_events_lost(void);
/* The file name in use ("" before creation). */
const char *trace_path(void);

/* Expand %p (pid), %r (rank; 0 when none) and %% in `tmpl`. -1 when it does not fit. */
int trace_expand_path(char *out, size_t size, const char *tmpl, int pid, uint32_t rank);

/* Open `path` for writing the way traces and reports are: O_NOFOLLOW|O_CLOEXEC, mode 0600,
 * only a regular file owned by this user, truncated. -1 (after one message) otherwise. */
int trace_open_private(const char *path);

/* fork(): the parent keeps its file; the child starts a fresh trace (new pid in the name,
 * created lazily, new ids). Called by track's pthread_atfork handlers. */
void trace_atfork_prepare(void);
void trace_atfork_parent(void);
void trace_atfork_child(void);

#endif /* MEMSHIM_TRACE_H */
