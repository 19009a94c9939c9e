/* core_util: helpers shared by the test_core_* unit tests: capture of stderr written with
 * write(2), and a reader of trace files built on include/memshim/trace_format.h alone. */
#ifndef MEMSHIM_TEST_CORE_UTIL_H
#define MEMSHIM_TEST_CORE_UTIL_H

#include "memshim/crc32c.h"
#include "memshim/trace_format.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Redirect fd 2 to a temporary file until core_stderr_end, which returns what was written
 * (a static buffer). */
static int core_saved_stderr = -1;
static FILE *core_capture;

static inline void core_stderr_begin(void)
{
    fflush(stderr);
    core_capture = tmpfile();
    core_saved_stderr = dup(2);
    dup2(fileno(core_capture), 2);
}

static inline const char *core_stderr_end(void)
{
    static char text[16384];
    fflush(stderr);
    dup2(core_saved_stderr, 2);
    close(core_saved_stderr);
    rewind(core_capture);
    size_t n = fread(text, 1, sizeof text - 1, core_capture);
    text[n] = '\0';
    fclose(core_capture);
    return text;
}

/* A whole file in memory (malloc'd, caller frees); NULL when unreadable. */
static inline char *core_read_file(const char *path, size_t *len)
{
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)size + 1);
    *len = fread(buf, 1, (size_t)size, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

struct core_record {
    uint16_t kind;
    uint32_t length;
    const char *payload;
};

/* Iterate records after the header, past the writer's CHECKSUM records (checked here: a
 * mismatch is a corrupt tail). Returns 1 with the next record, 0 at a clean end, -1 at a
 * truncated or corrupt tail. */
static inline int core_next_record(const char *buf, size_t len, size_t *off, struct core_record *r)
{
    struct mst_record_header c;
    while (len - *off >= sizeof c + sizeof(struct mst_rec_checksum) &&
           (memcpy(&c, buf + *off, sizeof c), c.kind == MST_REC_CHECKSUM)) {
        struct mst_rec_checksum ck;
        memcpy(&ck, buf + *off + sizeof c, sizeof ck);
        *off += sizeof c + c.length;
        /* Covering more than is left: a tail cut short, read as far as it goes. */
        if (ck.bytes <= len - *off && mst_crc32c(0, buf + *off, (size_t)ck.bytes) != ck.crc32c)
            return -1;
    }
    if (*off == len)
        return 0;
    if (len - *off < sizeof(struct mst_record_header))
        return -1;
    struct mst_record_header h;
    memcpy(&h, buf + *off, sizeof h);
    if (h.length > MST_MAX_RECORD || len - *off - sizeof h < h.length)
        return -1;
    r->kind = h.kind;
    r->length = h.length;
    r->payload = buf + *off + sizeof h;
    *off += sizeof h + h.length;
    return 1;
}

/* An ALLOC record in either form as the long one: the short form (a synchronous allocation)
 * with stream 0 and its requested bytes whole. */
static inline struct mst_rec_alloc core_alloc_record(const struct core_record *r)
{
    struct mst_rec_alloc a;
    if (r->length >= sizeof a) {
        memcpy(&a, r->payload, sizeof a);
        return a;
    }
    struct mst_rec_alloc_short s;
    memcpy(&s, r->payload, sizeof s);
    return mst_alloc_from_short(&s);
}

/* Bytes of the CHECKSUM records (header and payload) among the whole records in buf[off,len). */
static inline size_t core_checksum_bytes(const char *buf, size_t len, size_t off)
{
    size_t sum = 0;
    struct mst_record_header h;
    while (len - off >= sizeof h) {
        memcpy(&h, buf + off, sizeof h);
        if (len - off - sizeof h < h.length)
            break;
        if (h.kind == MST_REC_CHECKSUM)
            sum += sizeof h + h.length;
        off += sizeof h + h.length;
    }
    return sum;
}

static inline size_t core_header_size(const char *buf, size_t len)
{
    const struct mst_file_header *h = (const void *)buf;
    if (len < sizeof *h || memcmp(h->magic, MST_MAGIC, MST_MAGIC_LEN) != 0)
        return 0;
    return h->header_size;
}

static inline int core_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* Remove a test's temporary directory and everything in it. */
static inline void core_rm_tree(const char *dir)
{
    nftw(dir, core_rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

#endif /* MEMSHIM_TEST_CORE_UTIL_H */
