/* pycaller: see pycaller.h. */
#include "pycaller.h"

#include "reader.h"
#include "symbolize.h"

#include <string.h>

#define PC_MAX_DEPTH 256 /* a bound on a parent chain that went bad */

static const struct reader_module *pc_python_module(const struct reader *r,
                                                    const struct reader_frame *f)
{
    const struct reader_module *m = reader_module(r, f->module_id);
    return m && m->path && (m->flags & MST_MODULE_F_PYTHON) ? m : NULL;
}

static int pc_installed(const char *path)
{
    return strstr(path, "/site-packages/") != NULL || strstr(path, "/dist-packages/") != NULL;
}

/* The next Python frame of a site's chain, from *id outwards (updated past it), with its
 * module; NULL at the chain's end. */
static const struct reader_frame *pc_next_python(const struct reader *r, uint32_t *id, int *depth,
                                                 const struct reader_module **module)
{
    for (; *id && *depth < PC_MAX_DEPTH; ++*depth) {
        const struct reader_frame *f = reader_frame(r, *id);
        if (!f)
            return NULL;
        *id = f->parent;
        if ((*module = pc_python_module(r, f)) != NULL) {
            ++*depth;
            return f;
        }
    }
    return NULL;
}

static const char *pc_name(const struct reader *r, const struct reader_frame *f, char *buf,
                           size_t size)
{
    return symbolize_python_frame(reader_module(r, f->module_id)->path, f->module_offset,
                                  reader_string(r, f->symbol_id), buf, size);
}

const char *pycaller_describe(const struct reader *r, uint32_t site, char *buf, size_t size)
{
    const struct reader_frame *first = NULL, *caller = NULL, *f;
    const struct reader_module *m;
    int in_package = 0, depth = 0;
    for (uint32_t id = site; (f = pc_next_python(r, &id, &depth, &m)) != NULL;) {
        first = first ? first : f;
        int pkg = pc_installed(m->path);
        if (!pkg && in_package)
            caller = f;
        in_package = pkg;
    }
    f = caller ? caller : first;
    return f ? pc_name(r, f, buf, size) : NULL;
}

const char *pycaller_innermost(const struct reader *r, uint32_t site, char *buf, size_t size)
{
    const struct reader_frame *f;
    const struct reader_module *m;
    int depth = 0;
    for (uint32_t id = site; (f = pc_next_python(r, &id, &depth, &m)) != NULL;)
        if (!pc_installed(m->path))
            return pc_name(r, f, buf, size);
    return NULL;
}
