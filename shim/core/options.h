/* options: every environment variable of the shim, in one table (options.c) with its name,
 * type, default and help. Read once, at load (options_load is the only caller of getenv);
 * afterwards every lookup is an array read. A bad value prints one line naming the variable
 * and the accepted forms, and the default is used. */
#ifndef MEMSHIM_OPTIONS_H
#define MEMSHIM_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

enum options_id {
    OPT_TRACE,
    OPT_LIMIT,
    OPT_LIMIT_DEVICE, /* MEMSHIM_LIMIT_<ordinal>: one row, read for every ordinal */
    OPT_POLICY,
    OPT_HOST_LIMIT,
    OPT_STACK_DEPTH,
    OPT_RULES,
    OPT_STEP_RANGE,
    OPT_FLUSH_MS,
    OPT_LOG,
    OPT_REPORT,
    OPT_ACCESS,
    OPT_SPILL_MIN,
    OPT_HOST_USE,
    OPT_PY_STACKS,
    OPT_COSTS,
    OPT_LABEL,
    OPT_TENSORS,
    OPT_TRACE_COMPACT,
    OPT_COUNT,
};

/* Values of the choice options, in the order of their accepted words. */
enum { OPT_POLICY_FAIL, OPT_POLICY_SPILL, OPT_POLICY_RECOMPUTE, OPT_POLICY_AUTO };
enum { OPT_LOG_QUIET, OPT_LOG_INFO, OPT_LOG_DEBUG };
enum { OPT_ACCESS_OFF, OPT_ACCESS_GEMM, OPT_ACCESS_ALL };
enum { OPT_TENSORS_AUTO, OPT_TENSORS_ON, OPT_TENSORS_OFF };
enum { OPT_ON, OPT_OFF }; /* an on|off option's values (MEMSHIM_TRACE_COMPACT, MEMSHIM_HOST_USE) */

#define OPT_MAX_STACK_DEPTH 64

/* A size as written: absolute bytes, or a fraction of a total known later. */
struct opt_size {
    uint64_t bytes;
    uint32_t ppm; /* parts per million of the total when given as N%; 0 = absolute */
};

/* Reset every option to its default, then read the environment. */
void options_load(void);
/* Reset every option to its default (tests). */
void options_reset(void);
/* Parse `value` for option `id` (device: the ordinal for OPT_LIMIT_DEVICE); on a bad value
 * print the one-line message, keep the previous value and return -1. */
int options_set(enum options_id id, int device, const char *value);

/* Parsers, exposed for tests and fuzzing. 0 on success. `allow_percent` admits `N%`. */
int options_parse_size(const char *s, int allow_percent, struct opt_size *out);
int options_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

const char *options_name(enum options_id id);
const char *options_str(enum options_id id); /* "" when unset */
uint64_t options_uint(enum options_id id);   /* numbers, choices, absolute sizes */
struct opt_size options_size(enum options_id id);

/* The ceiling for a device: MEMSHIM_LIMIT_<device> if set, else MEMSHIM_LIMIT. Returns 0 for
 * no ceiling; a percentage is resolved against `total` (0 while the total is unknown). */
uint64_t options_limit(int device, uint64_t total);
/* Whether the ceiling of `device` is a percentage (needs the device's total). */
int options_limit_is_percent(int device);

/* The README's environment section, generated from the table. Returns the length written
 * (snprintf semantics: may exceed `size`). */
size_t options_format_env_table(char *buf, size_t size);

#endif /* MEMSHIM_OPTIONS_H */
