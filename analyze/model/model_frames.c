/* model_frames: a stack frame's printable name (Python frame, file:line from DWARF, symbol
 * from the ELF tables, or module+offset), made on first use and kept per frame id. See model.h. */
#include "model_struct.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf_lines.h"
#include "symbolize.h"

static const char *basename_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static char *format_frame(struct model *m, const struct reader_frame *f)
{
    const struct reader_module *mod = reader_module(m->reader, f->module_id);
    const char *mname = mod ? basename_of(mod->path) : "";
    const char *sym = reader_string(m->reader, f->symbol_id);
    char py[1400];
    if (mod && (mod->flags & MST_MODULE_F_PYTHON))
        return strdup(symbolize_python_frame(mod->path, f->module_offset, sym, py, sizeof py));
    uint64_t within = 0;
    if (!*sym && mod) {
        if (!m->sym)
            m->sym = symbolizer_new();
        /* a return address may lie just past the end of a function that ends in a call
         * (noreturn callees): look up the call instruction's last byte instead */
        uint64_t at = f->module_offset ? f->module_offset - 1 : 0;
        const char *found = m->sym ? symbolizer_lookup(m->sym, mod->path, at, &within) : NULL;
        within += found != NULL && f->module_offset != 0;
        sym = found ? found : "";
    }
    char demangled[1024], out[1400];
    if (mod && f->module_offset && !m->lines_tried) {
        m->lines_tried = 1;
        m->lines = dwarf_lines_new();
    }
    /* return addresses: the call instruction ends one byte before */
    if (mod && f->module_offset &&
        dwarf_lines_describe(m->lines, mod->path, f->module_offset - 1, sym, mname, out,
                             sizeof out))
        return strdup(out);
    if (*sym) {
        symbolize_demangle(sym, demangled, sizeof demangled);
        if (within)
            snprintf(out, sizeof out, "%s+0x%llx (%s)", demangled, (unsigned long long)within,
                     mname);
        else
            snprintf(out, sizeof out, "%s (%s)", demangled, mname);
    } else if (mod) {
        snprintf(out, sizeof out, "%s+0x%llx", mname, (unsigned long long)f->module_offset);
    } else {
        snprintf(out, sizeof out, "0x%llx", (unsigned long long)f->ip);
    }
    return strdup(out);
}

const char *model_frame_name(struct model *m, uint32_t frame_id)
{
    const struct reader_frame *f = reader_frame(m->reader, frame_id);
    if (!f)
        return "?";
    if (ensure((void **)&m->frame_names, &m->cap_frame_names, sizeof(char *), frame_id) != 0)
        return "?";
    if (!m->frame_names[frame_id])
        m->frame_names[frame_id] = format_frame(m, f);
    return m->frame_names[frame_id] ? m->frame_names[frame_id] : "?";
}

size_t model_site_frames(struct model *m, uint32_t site, const char **out, size_t max)
{
    size_t n = 0;
    /* parents are defined before children, so the walk ends; the bound is for safety only */
    for (uint32_t id = site; id && n < max; n++) {
        const struct reader_frame *f = reader_frame(m->reader, id);
        if (!f)
            break;
        out[n] = model_frame_name(m, id);
        id = f->parent;
    }
    return n;
}
