/* `dump --refined`: the dump with the categories the analyzer settles on. Every ALLOC line
 * also carries `refined=CATEGORY` (the category after lifetime inference, as the summary counts
 * it) and `inferred=0|1`, so tests can compare two runs allocation by allocation. */
#ifndef ANALYZE_DUMP_REFINED_H
#define ANALYZE_DUMP_REFINED_H

#include <stdio.h>

/* Dumps one trace; 0 when it was read to its end (or truncated), 1 otherwise. */
int dump_refined_one(FILE *out, const char *path, int offsets);

#endif /* ANALYZE_DUMP_REFINED_H */
