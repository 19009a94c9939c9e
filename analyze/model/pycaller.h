/* pycaller: the Python frame of a call site that names the program's own line.
 *
 * A call site's Python frames run from the framework's code (an installed package: a path
 * with a site-packages or dist-packages directory) out to the program's. The first frame
 * outside an installed package, innermost first, is the program's line that led to the
 * allocation: for a tensor of PyTorch's backward, made on an autograd thread whose Python
 * frames are those of the thread waiting in it, the line that called backward(). */
#ifndef ANALYZE_PYCALLER_H
#define ANALYZE_PYCALLER_H

#include <stddef.h>
#include <stdint.h>

struct reader;

/* The frame of `site` (a FRAME id, innermost) as `file:line in function` into buf: the first
 * Python frame outside an installed package, else the innermost Python frame. NULL when the
 * site has no Python frame. */
const char *pycaller_describe(const struct reader *r, uint32_t site, char *buf, size_t size);

#endif /* ANALYZE_PYCALLER_H */
