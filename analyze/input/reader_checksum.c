/* reader_checksum: a CHECKSUM record's CRC-32C checked against the bytes it covers, and what
 * those bytes show when they differ (two writers interleaved). */
#include "reader_struct.h"

#include "memshim/crc32c.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHECKSUM_MAX_BYTES (64u << 20) /* a write-out is one buffer of the shim's ring */
#define CHECKSUM_CHUNK     (1u << 20)

/* What the bytes a checksum covers show of how two writers mixed (see interleave_hint). */
struct crc_scan {
    uint32_t crc;
    int second_header;
    size_t zero_run, longest_zeros;
};

static void crc_scan_add(struct crc_scan *c, const uint8_t *p, size_t n)
{
    c->crc = mst_crc32c(c->crc, p, n);
    for (size_t i = 0; i < n; i++) {
        c->zero_run = p[i] ? 0 : c->zero_run + 1;
        if (c->zero_run > c->longest_zeros)
            c->longest_zeros = c->zero_run;
        if (p[i] == (uint8_t)MST_MAGIC[0] && n - i >= MST_MAGIC_LEN &&
            memcmp(p + i, MST_MAGIC, MST_MAGIC_LEN) == 0)
            c->second_header = 1;
    }
}

/* The `n` bytes at file offset `start`, read apart from the window; -1 when the file ends
 * before them (a tail cut short: not this check's to judge). */
static int file_crc(const struct reader *r, uint64_t start, uint64_t n, struct crc_scan *c)
{
    if (r->fd < 0) {
        if (start > r->buf_len || n > r->buf_len - start)
            return -1;
        crc_scan_add(c, r->buf + start, (size_t)n);
        return 0;
    }
    struct stat st;
    if (fstat(r->fd, &st) != 0 || start > (uint64_t)st.st_size || n > (uint64_t)st.st_size - start)
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
    if (file_crc(r, start, c->bytes, &scan) != 0 || scan.crc == c->crc32c)
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
