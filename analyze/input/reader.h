/* Streaming reader of memshim trace files (include/memshim/trace_format.h).
 *
 * The reader validates every record as it goes: lengths, the fixed payload size of each kind,
 * ids that must refer to earlier definitions (strings, modules, frames, threads), enum ranges
 * and per-thread monotonic times. It keeps the definition tables (they are small) and hands
 * every record to the caller once; it never holds more of the file than one read buffer.
 *
 *     struct reader *r = reader_open(path, err, sizeof err);
 *     struct reader_record rec;
 *     while (reader_next(r, &rec) == READER_RECORD) { ... }
 *     if (reader_status(r) == READER_CORRUPT) fprintf(stderr, "%s\n", reader_error(r));
 *     reader_close(r);
 *
 * Definition records (STRING, MODULE, FRAME, THREAD, DEVICE) are also returned, after the
 * reader has stored them, so a caller sees the whole file in order.
 */
#ifndef ANALYZE_READER_H
#define ANALYZE_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <memshim/trace_format.h>

enum reader_result {
    READER_RECORD = 1, /* rec holds the next record */
    READER_END = 0,    /* no more records: see reader_status() for why */
};

enum reader_state {
    READER_OK = 0,        /* clean end of file (with or without a SUMMARY record) */
    READER_TRUNCATED = 1, /* the file ends inside a record: everything before it was used */
    READER_CORRUPT = 2,   /* an invalid record: reader_error() says what and where */
    READER_IO_ERROR = 3,
};

/* One record, its fixed payload copied out (aligned) and any variable tail by pointer. */
struct reader_record {
    uint16_t kind;    /* enum mst_record_kind; only known kinds are returned */
    uint32_t length;  /* payload bytes */
    uint64_t offset;  /* byte offset of the record header in the file */
    const char *tail; /* bytes after the fixed payload (names, paths); valid until next call */
    uint32_t tail_len;
    union {
        struct mst_rec_string string;
        struct mst_rec_module module;
        struct mst_rec_frame frame;
        struct mst_rec_thread thread;
        struct mst_rec_device device;
        struct mst_rec_alloc alloc;
        struct mst_rec_free free;
        struct mst_rec_map map;
        struct mst_rec_phase phase;
        struct mst_rec_step step;
        struct mst_rec_ceiling ceiling;
        struct mst_rec_oom oom;
        struct mst_rec_retag retag;
        struct mst_rec_op op;
        struct mst_rec_access access;
        struct mst_rec_residency residency;
        struct mst_rec_measure measure;
        struct mst_rec_summary summary;
        struct mst_rec_tensor_alloc tensor;
        struct mst_rec_tensor_free tensor_free;
        struct mst_rec_autograd autograd;
    } u;
};

struct reader_frame {
    uint32_t parent;
    uint32_t module_id;
    uint32_t symbol_id;
    uint64_t ip;
    uint64_t module_offset;
};

struct reader_module {
    uint64_t base;
    uint64_t size;
    const char *path;
    uint32_t flags; /* MST_MODULE_F_* */
};

struct reader_thread {
    uint32_t os_tid;
    const char *name;
};

struct reader_device {
    uint32_t ordinal;
    uint32_t cc_major, cc_minor;
    uint64_t total_bytes;
    uint64_t ceiling_bytes;
    const char *name;
};

struct reader;

/* Opens `path` and reads its file header. NULL on failure, with a message in err. */
struct reader *reader_open(const char *path, char *err, size_t errlen);
/* Same on an in-memory buffer (not copied; must outlive the reader). For tests and fuzzing. */
struct reader *reader_open_memory(const void *data, size_t size, const char *name, char *err,
                                  size_t errlen);
void reader_close(struct reader *r);

/* READER_RECORD with the next valid record of a known kind, or READER_END. Records of unknown
 * kinds are skipped (and counted). After READER_END, reader_status() says why it ended. */
int reader_next(struct reader *r, struct reader_record *rec);

/* The next records, up to `max`, while they are ALLOC or FREE records lying whole in the
 * reader's buffer: validated like any other, counted, but not copied. refs[i] points at a record
 * header in place, its payload (the packed struct of its kind, unaligned) right after it, valid
 * until the next call into the reader. Returns how many; fewer than max (0 included) when the
 * next record is of another kind, crosses the buffer's end, is invalid or the trace ended: read
 * it with reader_next(), which also says when the trace ended. For the replay's hot loop. */
size_t reader_next_refs(struct reader *r, const struct mst_record_header **refs, size_t max);

/* Whether reader_next_refs() may check the usual ALLOC by a vector of its fields, where the CPU
 * has one (on by default; process-wide). Off, it takes the scalar checks of a CPU without: for
 * the tests and the fuzz target, which read every trace both ways. What either path accepts is
 * the same. */
void reader_vector_checks(int on);

/* How far past a record reader_next_refs() handed out the caller should fetch the trace (a
 * prefetch of the address that many bytes on), so that the bytes the reader reads after these
 * are in the cache when it comes to them: the next checksummed write-out, which it sums while
 * handing out this one, or, without checksums, far enough ahead of the records read in place.
 * Valid for the records of the last call: the address lies in the reader's buffer. */
size_t reader_fetch_ahead(const struct reader *r);

enum reader_state reader_status(const struct reader *r);
/* Human-readable reason for TRUNCATED/CORRUPT/IO_ERROR, with the byte offset; "" when OK. */
const char *reader_error(const struct reader *r);
const char *reader_path(const struct reader *r);

const struct mst_file_header *reader_header(const struct reader *r);
/* MEMSHIM_LABEL as the trace recorded it; "" when unset or written before labels existed. */
const char *reader_label(const struct reader *r);
/* The SUMMARY record if one was read (the trace ended cleanly), else NULL. */
const struct mst_rec_summary *reader_summary(const struct reader *r);
uint64_t reader_records(const struct reader *r); /* records returned so far */
uint64_t reader_skipped(const struct reader *r); /* records of unknown kinds skipped */
uint64_t reader_bytes(const struct reader *r);   /* bytes consumed so far */

/* Definition tables, filled as the definitions are read. NULL (or "" for strings) for id 0
 * or an id not defined yet. Returned pointers stay valid until reader_close(). */
const char *reader_string(const struct reader *r, uint32_t id);
const struct reader_frame *reader_frame(const struct reader *r, uint32_t id);
const struct reader_module *reader_module(const struct reader *r, uint32_t id);
const struct reader_thread *reader_thread(const struct reader *r, uint32_t id);
/* Devices by ordinal; NULL when no DEVICE record named it. */
const struct reader_device *reader_device(const struct reader *r, uint32_t ordinal);
uint32_t reader_device_count(const struct reader *r); /* 1 + highest ordinal seen, or 0 */

/* Name tables shared by all reports. Out-of-range values give "?". */
const char *reader_category_name(unsigned category);
const char *reader_kind_name(unsigned kind);
const char *reader_record_kind_name(unsigned kind);
const char *reader_residency_name(unsigned event);
const char *reader_policy_name(unsigned policy);
/* Category from its name as users write it; -1 if none matches. */
int reader_category_from_name(const char *name);

#endif /* ANALYZE_READER_H */
