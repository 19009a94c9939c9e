/* file_claim: opening the trace and report files so that two processes never write one file.
 * A file is taken while another open file description holds its flock (a live writer) or
 * while the process whose pid it records is alive (that includes this pid: the image before
 * an exec in place). A taken name gets `.PID` inserted before its extension (`run.mst` ->
 * `run.4242.mst`), then `.PID-2`, `.PID-3`...; a free one is truncated and reused. The file
 * is created 0600 with O_NOFOLLOW, refused unless it is a regular file owned by this user, and
 * never waited on (O_NONBLOCK: a FIFO planted there is refused, not blocked on). */
#ifndef MEMSHIM_FILE_CLAIM_H
#define MEMSHIM_FILE_CLAIM_H

#include <stddef.h>

/* The pid a file's contents name as its writer (read from fd at offset 0), or 0. */
typedef int (*file_claim_owner_fn)(int fd);

/* Open (create, or truncate) `path` for writing, holding an exclusive flock on it. `owner` may
 * be NULL (only the flock counts). The name actually used goes to `used` (`size` bytes). A
 * descriptor, or -1 after one line on stderr. */
int file_claim_open(const char *path, file_claim_owner_fn owner, char *used, size_t size);
/* The alternative name number `n` (1, 2, ...) of `path` for `pid`; -1 when it does not fit. */
int file_claim_alt_name(char *out, size_t size, const char *path, int pid, int n);

#endif /* MEMSHIM_FILE_CLAIM_H */
