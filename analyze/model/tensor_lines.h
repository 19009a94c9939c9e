/* tensor_lines: tensors counted by a line of the program that led to them.
 *
 * The tensor view counts tensors under a Python frame of their call site, named by a function
 * of pycaller.h (a site maps to one line): the backward() call of a tensor born on an
 * autograd thread, the program's innermost line for the others. A site is named once; the
 * lines are kept in the order they were first met until tensor_lines_take sorts them. */
#ifndef ANALYZE_TENSOR_LINES_H
#define ANALYZE_TENSOR_LINES_H

#include <stddef.h>
#include <stdint.h>

struct reader;

/* One line: `file:line in function`, NULL for the sites without a Python frame. */
struct tensor_line {
    char *frame;
    uint64_t tensors, bytes;
};

/* Names the line of `site` into buf (pycaller_describe, pycaller_innermost); NULL: none. */
typedef const char *(*tensor_lines_namer)(const struct reader *r, uint32_t site, char *buf,
                                          size_t size);

struct tensor_lines {
    struct tensor_line *rows;
    size_t n, cap;
    uint32_t *by_site; /* row + 1 of each site named so far; 0: not yet */
    size_t nsites;
};

/* Counts one tensor of `bytes` under the line of `site`; *frame (when not NULL) gets the line's
 * name, which lives as long as the rows (through tensor_lines_take too). -1 when out of
 * memory. */
int tensor_lines_add(struct tensor_lines *t, const struct reader *r, uint32_t site, uint64_t bytes,
                     tensor_lines_namer name, const char **frame);

/* The name of `site`'s line (NULL: none), its row added with no tensors when new; the name
 * lives as long as the rows. *failed is set when out of memory. */
const char *tensor_lines_name(struct tensor_lines *t, const struct reader *r, uint32_t site,
                              tensor_lines_namer name, int *failed);

/* Moves the lines to *rows, most bytes first (tensor_lines_free_rows), leaving t empty. */
void tensor_lines_take(struct tensor_lines *t, struct tensor_line **rows, size_t *n);

void tensor_lines_free(struct tensor_lines *t);

/* Frees rows from tensor_lines_take. */
void tensor_lines_free_rows(struct tensor_line *rows, size_t n);

#endif /* ANALYZE_TENSOR_LINES_H */
