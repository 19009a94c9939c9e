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

const char *pycaller_describe(const struct reader *r, uint32_t site, char *buf, size_t size)
{
    const struct reader_frame *first = NULL, *caller = NULL;
    int in_package = 0;
    uint32_t id = site;
    for (int d = 0; id && d < PC_MAX_DEPTH; d++) {
        const struct reader_frame *f = reader_frame(r, id);
        if (!f)
            break;
        const struct reader_module *m = pc_python_module(r, f);
        if (m) {
            first = first ? first : f;
            int pkg = pc_installed(m->path);
            if (!pkg && in_package)
                caller = f;
            in_package = pkg;
        }
        id = f->parent;
    }
    const struct reader_frame *f = caller ? caller : first;
    if (!f)
        return NULL;
    return symbolize_python_frame(reader_module(r, f->module_id)->path, f->module_offset,
                                  reader_string(r, f->symbol_id), buf, size);
}

const char *pycaller_innermost(const struct reader *r, uint32_t site, char *buf, size_t size)
{
    uint32_t id = site;
    for (int d = 0; id && d < PC_MAX_DEPTH; d++) {
        const struct reader_frame *f = reader_frame(r, id);
        if (!f)
            break;
        const struct reader_module *m = pc_python_module(r, f);
        if (m && !pc_installed(m->path))
            return symbolize_python_frame(m->path, f->module_offset, reader_string(r, f->symbol_id),
                                          buf, size);
        id = f->parent;
    }
    return NULL;
}
