/* access_memo: operations a thread repeats, known by the ranges the hook handed in, or by
 * words of the hook's own.
 *
 * access_record finds the allocation of every range (a registry search each) and assembles the
 * OP and ACCESS records before the thread's table of shapes (access_repeat.h) tells it that it
 * wrote the same ones before. A GEMM, copy or set repeated with the same description and the
 * same ranges while the registry has not moved touches the same allocations, so its records are
 * the same: each thread keeps, by description, ranges and the registry's version, the shape it
 * was recorded under, and the next one is written as a repeat of that shape with no search. A
 * hook that can tell calls apart by their arguments (cuBLAS) names them by those instead, and
 * skips working the ranges out as well. */
#ifndef MEMSHIM_ACCESS_MEMO_H
#define MEMSHIM_ACCESS_MEMO_H

#include <stddef.h>
#include <stdint.h>

#include "access_repeat.h"

struct access_op;
struct access_range;

/* Ranges a kept operation may have (a GEMM with device scalars and a workspace has six). */
#define ACCESS_MEMO_RANGES 8
/* The operation's fields but its time, and its ranges' modes, then two words a range. */
#define ACCESS_MEMO_HEAD  9
#define ACCESS_MEMO_WORDS (ACCESS_MEMO_HEAD + 2 * ACCESS_MEMO_RANGES)

/* An operation as the memo knows it. */
struct access_memo_key {
    uint64_t version; /* registry_version() before the ranges were resolved */
    uint64_t hash;
    uint32_t nwords;
    uint64_t w[ACCESS_MEMO_WORDS];
};

/* Read MEMSHIM_TRACE_COMPACT (access_init): without the table of shapes there is nothing to
 * name, and nothing is kept. */
void access_memo_init(void);
/* Describe op and its n ranges as *k. 0 when such a call is not kept: compaction is off, it
 * has too many ranges, or the registry is being updated right now. */
int access_memo_key(struct access_memo_key *k, const struct access_op *op,
                    const struct access_range *r, size_t n);
/* Describe a call by n words its hook chose (its arguments and what it read with them: all
 * that its ranges and OP record follow from) as *k, in a space of its own apart from
 * access_memo_key's. 0 when not kept: as access_memo_key, or no words or more than
 * ACCESS_MEMO_WORDS - 1. */
int access_memo_words(struct access_memo_key *k, const uint64_t *w, size_t n);
/* The shape this thread last recorded k under, if it kept one: 1 and *shape. */
int access_memo_find(const struct access_memo_key *k, struct access_shape *shape);
/* Keep the shape k was just recorded under (a shape with slot 0 is not kept). */
void access_memo_keep(const struct access_memo_key *k, const struct access_shape *shape);

#endif /* MEMSHIM_ACCESS_MEMO_H */
