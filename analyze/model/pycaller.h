/* pycaller: the program's line that called into the framework, for a call site.
 *
 * A call site's Python frames alternate between the framework's code (an installed package:
 * a path with a site-packages or dist-packages directory) and the program's. The outermost
 * program frame that called into a package is the program's own request: for a tensor of
 * PyTorch's backward, made on an autograd thread whose Python frames continue with those of
 * the thread waiting in backward(), the line that called backward(), even when the thread
 * ran the program's forward code again on the way (activation checkpointing). */
#ifndef ANALYZE_PYCALLER_H
#define ANALYZE_PYCALLER_H

#include <stddef.h>
#include <stdint.h>

struct reader;

/* That frame of `site` (a FRAME id, innermost) as `file:line in function` into buf; without
 * one, the innermost Python frame. NULL when the site has no Python frame. */
const char *pycaller_describe(const struct reader *r, uint32_t site, char *buf, size_t size);

/* The innermost Python frame of `site` outside an installed package, `file:line in function`:
 * the program's own line nearest to the allocation (its model's forward, its loop), past the
 * framework's modules. NULL when the site has none. */
const char *pycaller_innermost(const struct reader *r, uint32_t site, char *buf, size_t size);

#endif /* ANALYZE_PYCALLER_H */
