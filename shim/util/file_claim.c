/* file_claim: see file_claim.h. */
#include "file_claim.h"

#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_CLAIM_TRIES 16

enum { CLAIM_OK, CLAIM_TAKEN, CLAIM_REFUSED };

int file_claim_alt_name(char *out, size_t size, const char *path, int pid, int n)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    if (!dot || dot == (slash ? slash + 1 : path))
        dot = path + strlen(path); /* no extension (or a dot file): append */
    char tag[32];
    if (n <= 1)
        snprintf(tag, sizeof tag, ".%d", pid);
    else
        snprintf(tag, sizeof tag, ".%d-%d", pid, n);
    int m = snprintf(out, size, "%.*s%s%s", (int)(dot - path), path, tag, dot);
    return m < 0 || (size_t)m >= size ? -1 : 0;
}

static int claim_alive(int pid)
{
    return pid > 0 && (pid == getpid() || kill(pid, 0) == 0 || errno == EPERM);
}

/* Open `path` without truncating it and decide whether it is ours to write. */
static int claim_try(const char *path, file_claim_owner_fn owner, int *fd_out)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
    if (fd < 0) {
        log_error("%s: cannot open for writing: %s", path,
                  errno == ELOOP ? "it is a symbolic link" : strerror(errno));
        return CLAIM_REFUSED;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        log_error("%s: refusing to write: not a regular file owned by this user", path);
        close(fd);
        return CLAIM_REFUSED;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        close(fd);
        return errno == EWOULDBLOCK ? CLAIM_TAKEN : CLAIM_REFUSED;
    }
    /* Opened for writing only: the owner is read through a second, read-only descriptor. */
    int rfd = owner ? open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) : -1;
    int taken = rfd >= 0 && claim_alive(owner(rfd));
    if (rfd >= 0)
        close(rfd);
    if (taken) {
        close(fd);
        return CLAIM_TAKEN;
    }
    if (fcntl(fd, F_SETFL, 0) < 0 || ftruncate(fd, 0) < 0) {
        log_error("%s: cannot truncate: %s", path, strerror(errno));
        close(fd);
        return CLAIM_REFUSED;
    }
    *fd_out = fd;
    return CLAIM_OK;
}

int file_claim_open(const char *path, file_claim_owner_fn owner, char *used, size_t size)
{
    char name[1024];
    snprintf(name, sizeof name, "%s", path);
    for (int n = 1; n <= FILE_CLAIM_TRIES; n++) {
        int fd = -1;
        int r = claim_try(name, owner, &fd);
        if (r == CLAIM_REFUSED)
            return -1;
        if (r == CLAIM_OK) {
            if (n > 1)
                log_info("%s is written by another live process; writing %s", path, name);
            snprintf(used, size, "%s", name);
            return fd;
        }
        if (file_claim_alt_name(name, sizeof name, path, (int)getpid(), n) < 0)
            break;
    }
    log_error("%s: taken by other live processes, and so are the names tried in its place", path);
    return -1;
}
