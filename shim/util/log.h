/* log: one-line `memshim: ...` messages to stderr, written with write(2) from a stack buffer
 * so logging never allocates and is safe while a CUDA call is in flight. */
#ifndef MEMSHIM_LOG_H
#define MEMSHIM_LOG_H

#include "compat.h"

enum log_level {
    LOG_QUIET = 0, /* only problems the user must act on (bad options, OOM screens) */
    LOG_INFO = 1,
    LOG_DEBUG = 2,
};

void log_set_level(enum log_level level);
/* Drop every message (fuzzers, which feed millions of bad inputs). */
void log_mute(int mute);
enum log_level log_get_level(void);

/* Printed at every level: bad options, internal failures that degrade the shim. */
void log_error(const char *fmt, ...) MS_PRINTF(1, 2) MS_COLD;
void log_info(const char *fmt, ...) MS_PRINTF(1, 2) MS_COLD;
void log_debug(const char *fmt, ...) MS_PRINTF(1, 2) MS_COLD;

/* Write raw text to stderr (for multi-line screens), retrying on EINTR. */
void log_write(const char *text, unsigned long len);

#endif /* MEMSHIM_LOG_H */
