/* reader_struct: the trace reader's record (private to analyze/input/), shared by its parts:
 * opening, mapping and iterating (reader.c), validating records (reader_validate.c), the SIGBUS
 * watch over a mapped window (reader_bus.c) and checking CHECKSUM records (reader_checksum.c). */
#ifndef ANALYZE_READER_STRUCT_H
#define ANALYZE_READER_STRUCT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "reader.h"

/* Ids are dense and defined in order, give or take records reordered between threads; an id
 * far above every id seen so far is corruption, and this bound keeps a hostile file from
 * making the tables grow without limit. */
#define ID_SLACK           4096u
#define ID_MAX             (1u << 28)
#define SIZE_MAX_PLAUSIBLE (1ull << 52) /* 4 PiB: no device comes near it */
#define READ_BUFFER        (2u << 20)   /* of a file that is read, not mapped */

struct id_table {
    void *items;    /* array of entries of `width` bytes, indexed by id */
    uint8_t *known; /* 1 where an id was defined */
    uint32_t cap;
    /* Every id in 1..dense is defined: a reference at most `dense` (0, "none", included) is
     * valid with one comparison. Ids come nearly in order, so dense trails the highest id only
     * while a definition is late; references above it are checked in known[]. */
    uint32_t dense;
    uint32_t high; /* highest id defined */
    size_t width;
};

struct thread_slot {
    struct reader_thread t;
};

/* OP_DEFINE / OP_REPEAT (reader_shape.c). */
struct reader_shape;
struct shape_state {
    struct reader_shape ***blocks; /* blocks of shapes by id (reader_shape.c) */
    uint32_t cap;                  /* blocks */
    int pending;                   /* an OP_DEFINE was read: the next record is its OP */
    uint32_t pending_id;
    uint64_t pending_off;
    struct reader_shape *filling;  /* its OP read, its ACCESS records still coming */
    struct reader_shape *emitting; /* a repeat being handed out */
    uint32_t emit_next;            /* 0: its OP next, then ACCESS emit_next - 1 */
    uint64_t emit_off;
};

/* The next write-out's CRC, summed while the write-out before it is handed out (see
 * checksum_ahead); bytes 0 when none is under way. */
struct crc_ahead {
    uint64_t from, span;   /* the write-out being handed out: first byte, length */
    uint64_t start, bytes; /* the next one, as its CHECKSUM record says */
    uint64_t done;         /* its first `done` bytes are summed, into crc */
    uint32_t crc;
};

struct reader {
    char *path;
    int fd; /* -1 for a memory source */
    const uint8_t *mem;
    size_t mem_size;
    uint8_t *buf; /* file source: the mapped window, or READ_BUFFER bytes owned */
    int owns_buf;
    int mapped;         /* buf is a window of the file mapped at buf_offset */
    size_t faulted_in;  /* of a mapped window, the bytes read ahead to map them (map_ahead) */
    uint64_t file_size; /* of a mapped file, as of the last look */
    size_t buf_len;
    size_t buf_pos;
    uint64_t buf_offset; /* file offset of buf[0] */
    int eof;
    enum reader_state state;
    char error[640];
    struct mst_file_header header;
    char label[MST_LABEL_LEN]; /* from the header's extension; "" when absent */
    struct mst_rec_summary summary;
    int have_summary;
    uint64_t records, skipped; /* bytes consumed: buf_offset + buf_pos */
    struct id_table strings, frames, modules, threads, devices;
    uint64_t *thread_last; /* nthread_last + 1 entries (see no_thread_last) */
    uint32_t nthread_last;
    struct bus_slot *bus; /* a mapped file's window, for the SIGBUS handler */
    struct shape_state shapes;
    uint64_t last_checked; /* bytes of the last write-out whose CHECKSUM was checked */
    struct crc_ahead ahead;
};

struct bus_slot {
    volatile uintptr_t start, end; /* the window; end 0 while none is mapped */
    volatile sig_atomic_t faulted; /* the handler zero-filled part of the window */
    int used;
};

/* ---- reader.c ---- */

void *table_get(const struct id_table *t, uint32_t id);
void *table_define(struct id_table *t, uint32_t id);
void table_settle_dense(struct id_table *t);
int thread_clock_define(struct reader *r, uint32_t id);
void set_error(struct reader *r, enum reader_state state, uint64_t offset, const char *fmt, ...);
/* Bytes available at the read position: at least `want` (at most READ_BUFFER) unless the file
 * ends first; a mapped file's window moves to start at the read position's page when it runs
 * short. */
size_t reader_fill(struct reader *r, size_t want);

/* ---- reader_bus.c ---- */

struct bus_slot *bus_acquire(void);
void bus_release(struct bus_slot *slot);
void bus_watch(struct bus_slot *slot, const void *p, size_t len);
int file_shrank(const struct reader *r, uint64_t *size);

/* On the hot path (each batch of records): inline. */
static inline int bus_faulted(const struct reader *r)
{
    /* orders the flag's load after the reads of the window that may have set it */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return r->bus && r->bus->faulted;
}

/* ---- reader_validate.c ---- */

int validate(struct reader *r, struct reader_record *rec);

/* ---- reader_shape.c ---- */

int shape_record(struct reader *r, uint64_t off, uint16_t kind, const char *payload, uint32_t len);
int shape_emit(struct reader *r, struct reader_record *rec);
int shape_note(struct reader *r, const struct reader_record *rec);
void shape_free(struct reader *r);

/* ---- reader_checksum.c ---- */

int check_checksum(struct reader *r, uint64_t start, const struct mst_rec_checksum *c);
void checksum_ahead(struct reader *r); /* after a batch of records read in place */

#endif /* ANALYZE_READER_STRUCT_H */
