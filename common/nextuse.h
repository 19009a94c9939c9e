/* nextuse: when will a range be used next? A training step repeats the previous one almost
 * exactly, so the previous step's accesses, replayed from the same position in the step, are a
 * forecast of the next ones; victims chosen by the farthest forecast use approximate Belady's
 * MIN. Pure bookkeeping shared by the shim's residency layer and the analyzer's replay of it,
 * so that both forecast the same thing from the same inputs.
 *
 * The position in a step is the number of uses reported since it began (allocations do not
 * count: the first step, which also allocates gradients and the optimizer's state, stays
 * aligned with the next). The caller reports each use (nextuse_touch: the shim, every range
 * an op uses, a chunk once per op) and each step boundary (nextuse_step); a step's log holds,
 * per key, the positions of its uses. Forecasts are on the caller's clock: `now` plus the
 * uses until then. Identity across steps: a range that lives on keeps its key; a range allocated
 * anew every step is the counterpart of the range of the same size born at the same ordinal among
 * that size's births in the previous step (nextuse_born), which is what a deterministic
 * training loop does; counting by size keeps the counterparts aligned when one step allocates
 * more than the others (the first step, which also allocates the optimizer's state).
 *
 * Memory comes from the caller's functions (the shim's must not use the application's heap);
 * when they fail, or a step logs more than NEXTUSE_MAX_LOG uses, the rest of that step is not
 * logged and forecasts for what it missed say NEXTUSE_UNKNOWN. */
#ifndef MEMSHIM_NEXTUSE_H
#define MEMSHIM_NEXTUSE_H

#include <stddef.h>
#include <stdint.h>

#define NEXTUSE_UNKNOWN UINT64_MAX
#define NEXTUSE_MAX_LOG (1u << 20)

struct nextuse_mem {
    void *(*alloc)(size_t bytes); /* zeroed or not; NULL when out of memory */
    void (*release)(void *p, size_t bytes);
};

struct nextuse_entry {
    uint64_t key;
    uint64_t at;   /* position in the step: uses reported before it */
    uint32_t next; /* index of the key's next use in the same log; UINT32_MAX: none */
};

struct nextuse_birth {
    uint64_t key, bytes, ord; /* ord: births of `bytes` recorded before it in its step */
};

struct nextuse_count {
    uint64_t bytes, n; /* n: births of `bytes` recorded in this step; 0: an empty slot */
};

struct nextuse {
    const struct nextuse_mem *mem;
    struct nextuse_entry *log[2]; /* [cur]: this step's, [!cur]: the previous step's */
    size_t n[2], cap[2];
    struct nextuse_birth *born[2]; /* the ranges born in the step, in order */
    size_t nborn[2], capborn[2];
    uint32_t *slot; /* hash of the previous log: key -> index of its first use */
    size_t nslot;   /* a power of two, or 0 */
    /* So that a birth costs O(1), not a pass over the step's births: this step's count per size
     * (the next birth's ordinal), and the previous step's births by (size, ordinal). Where
     * memory fails, the lists are scanned instead, with the same answers. */
    struct nextuse_count *count;
    size_t ncount, count_used; /* ncount: a power of two, or 0 */
    uint32_t *twin;            /* index into the previous step's births; UINT32_MAX: empty */
    size_t ntwin;
    uint8_t count_ok, twin_ok; /* the tables hold this step's counts, the previous births */
    int cur, steps;            /* steps: boundaries seen */
    uint64_t pos, prev_len, first_key, keys; /* pos: uses so far in this step */
};

void nextuse_init(struct nextuse *u, const struct nextuse_mem *mem);
void nextuse_fini(struct nextuse *u);

/* A new range of `bytes`: its key, and in *pred the key whose previous-step uses forecast its
 * own (the range born as the same ordinal birth of that size in the previous step; its own key
 * when there is none). Constant time (hash tables; linear in the step's births only while
 * memory for them fails). */
uint64_t nextuse_born(struct nextuse *u, uint64_t bytes, uint64_t *pred);

/* The range of `key` is used (the next position in the step). */
void nextuse_touch(struct nextuse *u, uint64_t key);

/* The range of `key` is freed (logged at the current position, which it does not advance).
 * Its counterpart in the next step is then forecast to give its room back there, as if it were
 * used then: a range about to be freed is kept (its room comes back soon, and spilling it would
 * copy out bytes nobody reads) rather than taken as the farthest, as one with no further use
 * in the step otherwise is. */
void nextuse_end(struct nextuse *u, uint64_t key);

/* A step begins: this step's log becomes the forecast. */
void nextuse_step(struct nextuse *u);

/* 1 once a whole step has been logged (before that nothing is forecast). */
int nextuse_ready(const struct nextuse *u);

/* When the range of (key, pred) is next used, as `now` + 1 + the uses before it: its first use
 * in the previous step at or past the current position, else its first use there in the next
 * step. A range the previous step never used is forecast two steps on (behind everything that
 * was used); one born in this step with no counterpart, at `now` (a new allocation is about to
 * be used). NEXTUSE_UNKNOWN before nextuse_ready. */
uint64_t nextuse_predict(const struct nextuse *u, uint64_t key, uint64_t pred, uint64_t now);

#endif /* MEMSHIM_NEXTUSE_H */
