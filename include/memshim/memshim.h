/* Optional application API of libmemshim. Every function is declared weak, so a program
 * that calls them runs unchanged without the shim: test the pointer first, or use the
 * MEMSHIM_* macros below, which do it for you.
 *
 *     MEMSHIM_TAG_PUSH("optimizer_state");
 *     cudaMalloc(&m, bytes);            // recorded as optimizer_state
 *     MEMSHIM_TAG_POP();
 *     MEMSHIM_STEP_BEGIN(step);
 */
#ifndef MEMSHIM_H
#define MEMSHIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Tag allocations made by this thread with a category name (see trace_format.h:
 * "parameter", "gradient", "optimizer_state", "activation", "kv_cache", "workspace",
 * "temporary", "communication", "input"). Tags nest. Returns 0, or -1 for an unknown name. */
int memshim_tag_push(const char *category) __attribute__((weak));
void memshim_tag_pop(void) __attribute__((weak));

/* Mark the start of training step n (a step boundary in the trace). */
void memshim_step_begin(uint64_t n) __attribute__((weak));

/* Write buffered trace records to the file now. */
void memshim_flush(void) __attribute__((weak));

#define MEMSHIM_TAG_PUSH(c) ((memshim_tag_push) ? memshim_tag_push(c) : 0)
#define MEMSHIM_TAG_POP()                                                                          \
    do {                                                                                           \
        if (memshim_tag_pop)                                                                       \
            memshim_tag_pop();                                                                     \
    } while (0)
#define MEMSHIM_STEP_BEGIN(n)                                                                      \
    do {                                                                                           \
        if (memshim_step_begin)                                                                    \
            memshim_step_begin(n);                                                                 \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif /* MEMSHIM_H */
