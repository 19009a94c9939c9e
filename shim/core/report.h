/* report: what the user reads. The out-of-memory screen, printed once per ceiling OOM (the
 * request, the ceiling, what is resident by category, the top call sites by resident bytes),
 * and the exit summary of MEMSHIM_REPORT. Text is formatted into a stack buffer and written
 * with write(2): no allocation while a CUDA call is in flight. */
#ifndef MEMSHIM_REPORT_H
#define MEMSHIM_REPORT_H

#include <stddef.h>
#include <stdint.h>

struct report_oom {
    uint64_t request; /* bytes asked for */
    int device;
    uint8_t kind; /* enum mst_alloc_kind */
    uint8_t category;
    uint32_t site;
    const char *phase; /* innermost open phase, NULL if none */
    int by_driver;     /* the driver refused it (below the ceiling, or with none set) */
    int access;        /* not an allocation: a call needing `request` bytes back on the device */
};

struct report_totals {
    uint64_t allocations, frees, failed, ooms_at_ceiling;
    uint64_t access_ooms;               /* calls refused: what they use could not be brought back */
    uint64_t host_uses, host_use_bytes; /* spilled ranges calls used in host memory */
    uint64_t events_lost;
    uint32_t unused_rules; /* rules of the user's file that decided no allocation */
};

#define REPORT_TOP_SITES 5
#define REPORT_OOM_MAX   8 /* full screens per process; later OOMs get one line */

/* Format the OOM screen into buf (snprintf semantics). */
size_t report_format_oom(char *buf, size_t size, const struct report_oom *o);
/* Print it (or one line once REPORT_OOM_MAX screens were shown). */
void report_oom(const struct report_oom *o);

/* Format the exit summary over every device with activity. */
size_t report_format_summary(char *buf, size_t size, const struct report_totals *t);
/* Write it to `dest`: "stderr", or a file path with %p/%r (rank). */
void report_exit(const char *dest, uint32_t rank, const struct report_totals *t);

/* "1.50 GiB" style, for messages. */
const char *report_bytes(char *buf, size_t size, uint64_t bytes);

#endif /* MEMSHIM_REPORT_H */
