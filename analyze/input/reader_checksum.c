/* reader_checksum: a CHECKSUM record's CRC-32C checked against the bytes it covers, and what
 * those bytes show when they differ (two writers interleaved).
 *
 * A write-out (the bytes after its CHECKSUM record) is checked when its CHECKSUM record is
 * read, before any of its records is handed out, so a damaged one is refused whole. The sum
 * itself mostly runs earlier: while the write-out before it is handed out, a share at a time
 * (checksum_ahead), over lines the caller has just fetched (reader_fetch_ahead), instead of
 * waiting on memory for the whole write-out at once; the check then sums what is left. The bytes
 * are read where the records will be parsed from: the window is moved to start at them when
 * they are not in it yet (a write-out is at most one buffer of the shim's ring, far less than a
 * window). Only a write-out larger than the window (or the read buffer) is read apart from it. */
#include "reader_struct.h"

#include "memshim/crc32c.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHECKSUM_MAX_BYTES (64u << 20) /* a write-out is one buffer of the shim's ring */
#define CHECKSUM_CHUNK     (1u << 20)

/* What the bytes a checksum covers show of how two writers mixed (see interleave_hint); only
 * looked at when the CRC differs. */
struct crc_scan {
    uint32_t crc;
    int cause; /* also scan for the cause below */
    int second_header;
    size_t zero_run, longest_zeros;
};

static void crc_scan_add(struct crc_scan *c, const uint8_t *p, size_t n)
{
    c->crc = mst_crc32c(c->crc, p, n);
    for (size_t i = 0; c->cause && i < n; i++) {
        c->zero_run = p[i] ? 0 : c->zero_run + 1;
        if (c->zero_run > c->longest_zeros)
            c->longest_zeros = c->zero_run;
        if (p[i] == (uint8_t)MST_MAGIC[0] && n - i >= MST_MAGIC_LEN &&
            memcmp(p + i, MST_MAGIC, MST_MAGIC_LEN) == 0)
            c->second_header = 1;
    }
}

/* The `n` bytes at file offset `start` when they lie in the reader's buffer, else NULL. */
static const uint8_t *in_buffer(const struct reader *r, uint64_t start, uint64_t n)
{
    if (!r->buf || start < r->buf_offset || start - r->buf_offset > r->buf_len ||
        n > r->buf_len - (start - r->buf_offset))
        return NULL;
    return r->buf + (start - r->buf_offset);
}

/* The bytes at `start` (the read position) in the buffer, refilled or moved to begin at them
 * when they fit; NULL when they do not, or the file ends before them. */
static const uint8_t *bring_in(struct reader *r, uint64_t start, uint64_t n)
{
    const uint8_t *p = in_buffer(r, start, n);
    if (p || r->fd < 0 || start != r->buf_offset + r->buf_pos)
        return p;
    if (!r->mapped && n > READ_BUFFER)
        return NULL;
    reader_fill(r, (size_t)n);
    return r->state == READER_OK ? in_buffer(r, start, n) : NULL;
}

/* The `n` bytes at file offset `start`, read apart from the buffer; -1 when the file ends
 * before them (a tail cut short: not this check's to judge). */
static int file_crc(const struct reader *r, uint64_t start, uint64_t n, struct crc_scan *c)
{
    struct stat st;
    if (r->fd < 0 || fstat(r->fd, &st) != 0 || start > (uint64_t)st.st_size ||
        n > (uint64_t)st.st_size - start)
        return -1;
    uint8_t *chunk = malloc(CHECKSUM_CHUNK);
    if (!chunk)
        return -1;
    for (uint64_t done = 0; done < n;) {
        size_t want = n - done < CHECKSUM_CHUNK ? (size_t)(n - done) : CHECKSUM_CHUNK;
        ssize_t got = pread(r->fd, chunk, want, (off_t)(start + done));
        if (got <= 0) {
            free(chunk);
            return -1;
        }
        crc_scan_add(c, chunk, (size_t)got);
        done += (uint64_t)got;
    }
    free(chunk);
    return 0;
}

/* The CRC of the covered bytes past the first `skip` (summed ahead into c->crc; with c->cause,
 * what they show); -1 when they are not all in the file. Bytes of a mapped window past a file
 * that shrank read as zeros (see reader_bus.c): a mismatch there is a tail cut short, not a
 * damaged write-out. */
static int covered_crc(struct reader *r, uint64_t start, uint64_t n, uint64_t skip,
                       struct crc_scan *c)
{
    const uint8_t *p = bring_in(r, start, n);
    if (!p)
        return file_crc(r, start + skip, n - skip, c);
    crc_scan_add(c, p + skip, (size_t)(n - skip));
    uint64_t size;
    return bus_faulted(r) && file_shrank(r, &size) && start + n > size ? -1 : 0;
}

/* After the write-out at `start` of `bytes` passed its check: the sum of the next one starts
 * when its CHECKSUM record lies in the buffer. Read ahead of the records, that record is only
 * trusted for where the sum goes; check_checksum uses the sum only for the write-out the record
 * it reads in turn names. */
static void plan_ahead(struct reader *r, uint64_t start, uint64_t bytes)
{
    struct mst_record_header h;
    struct mst_rec_checksum c;
    const uint8_t *p = in_buffer(r, start + bytes, sizeof h + sizeof c);
    if (!p)
        return;
    memcpy(&h, p, sizeof h);
    memcpy(&c, p + sizeof h, sizeof c);
    if (h.kind != MST_REC_CHECKSUM || h.length < sizeof c || c.bytes == 0 ||
        c.bytes > CHECKSUM_MAX_BYTES)
        return;
    r->ahead = (struct crc_ahead){.from = start,
                                  .span = bytes,
                                  .start = start + bytes + sizeof h + h.length,
                                  .bytes = c.bytes};
}

/* The sum of the next write-out carried on to the share of it that matches the share of this
 * one handed out so far, as far as the buffer holds it. In steps of 96 KiB (a whole number of
 * the three-stream rounds): shorter ones measured slower, each ending the CRC's streams and its
 * own fetching ahead. */
void checksum_ahead(struct reader *r)
{
    enum { STEP = 8 * 3 * MST_CRC32C_BLOCK };
    struct crc_ahead *a = &r->ahead;
    const uint64_t at = a->start + a->done, buf_end = r->buf_offset + r->buf_len;
    if (at < r->buf_offset || at >= buf_end)
        return; /* moved past, or not in yet: the check sums the rest */
    uint64_t read = r->buf_offset + r->buf_pos - a->from;
    uint64_t goal = read >= a->span ? a->bytes : a->bytes * read / a->span;
    if (goal > buf_end - a->start)
        goal = buf_end - a->start;
    if (goal < a->bytes)
        goal = a->done + (goal - a->done) / STEP * STEP;
    if (goal <= a->done)
        return;
    a->crc = mst_crc32c(a->crc, r->buf + (at - r->buf_offset), (size_t)(goal - a->done));
    a->done = goal;
}

/* A CHECKSUM record: the bytes after it are the ones the writer wrote, or the trace is corrupt
 * (a bit flipped on disk or in a copy, a file edited, two processes writing it). */
int check_checksum(struct reader *r, uint64_t start, const struct mst_rec_checksum *c)
{
    if (c->bytes > CHECKSUM_MAX_BYTES) {
        set_error(r, READER_CORRUPT, start, "checksum record covering %llu bytes, more than %u",
                  (unsigned long long)c->bytes, CHECKSUM_MAX_BYTES);
        return -1;
    }
    struct crc_scan scan = {0};
    uint64_t skip = 0;
    if (r->ahead.bytes && r->ahead.start == start && r->ahead.bytes == c->bytes) {
        scan.crc = r->ahead.crc;
        skip = r->ahead.done;
    }
    r->ahead.bytes = 0;
    r->last_checked = c->bytes;
    if (covered_crc(r, start, c->bytes, skip, &scan) != 0)
        return 0;
    if (scan.crc == c->crc32c) {
        plan_ahead(r, start, c->bytes);
        return 0;
    }
    scan = (struct crc_scan){.cause = 1};
    if (covered_crc(r, start, c->bytes, 0, &scan) != 0)
        return 0;
    const char *cause = scan.second_header ? "a second trace header among them: two processes "
                                             "wrote this file; give MEMSHIM_TRACE a %p"
                        : scan.longest_zeros >= 32
                            ? "zeros among them: another process truncated this file while "
                              "this one wrote it; give MEMSHIM_TRACE a %p"
                            : "the file was changed after it was written";
    set_error(r, READER_CORRUPT, start,
              "the %llu bytes from here do not match their checksum (CRC-32C %08x, written "
              "%08x): %s",
              (unsigned long long)c->bytes, scan.crc, c->crc32c, cause);
    return -1;
}
