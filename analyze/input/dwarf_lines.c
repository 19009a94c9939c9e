/* Offline file:line through libdwfl. See dwarf_lines.h. */
#include "dwarf_lines.h"

#include <stdio.h>
#include <string.h>

#include "symbolize.h"

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

const char *dwarf_lines_describe(struct dwarf_lines *d, const char *path, uint64_t offset,
                                 const char *symbol, const char *module, char *buf, size_t len)
{
    struct dwarf_location loc[16];
    size_t n = dwarf_lines_lookup(d, path, offset, loc, sizeof loc / sizeof loc[0]);
    if (n == 0)
        return NULL;
    size_t used = 0;
    for (size_t i = 0; i < n && used < len; i++) {
        char name[1024];
        const char *fn = loc[i].function[0] ? loc[i].function : i + 1 == n ? symbol : "";
        symbolize_demangle(fn ? fn : "", name, sizeof name);
        used += (size_t)snprintf(buf + used, len - used, "%s%s at %s:%u", i ? " inlined in " : "",
                                 name[0] ? name : "??", base_name(loc[i].file), loc[i].line);
    }
    if (used < len)
        snprintf(buf + used, len - used, " (%s)", module);
    return buf;
}

#ifdef MEMSHIM_HAVE_LIBDW

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILES 1024 /* distinct modules kept open; later ones are not read */

struct dwarf_file {
    char *path;
    Dwfl *dwfl; /* NULL: not ELF or unreadable */
    Dwfl_Module *module;
};

struct dwarf_lines {
    struct dwarf_file files[MAX_FILES];
    size_t nfiles;
};

static char *debuginfo_path;

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

int dwarf_lines_available(void)
{
    return 1;
}

struct dwarf_lines *dwarf_lines_new(void)
{
    return calloc(1, sizeof(struct dwarf_lines));
}

void dwarf_lines_free(struct dwarf_lines *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->nfiles; i++) {
        if (d->files[i].dwfl)
            dwfl_end(d->files[i].dwfl);
        free(d->files[i].path);
    }
    free(d);
}

static struct dwarf_file *open_file(struct dwarf_lines *d, const char *path)
{
    for (size_t i = 0; i < d->nfiles; i++)
        if (!strcmp(d->files[i].path, path))
            return &d->files[i];
    if (d->nfiles == MAX_FILES)
        return NULL;
    struct dwarf_file *f = &d->files[d->nfiles];
    f->path = strdup(path);
    if (!f->path)
        return NULL;
    d->nfiles++;
    f->dwfl = dwfl_begin(&callbacks);
    if (!f->dwfl)
        return f;
    f->module = dwfl_report_offline(f->dwfl, path, path, -1);
    dwfl_report_end(f->dwfl, NULL, NULL);
    if (!f->module) {
        dwfl_end(f->dwfl);
        f->dwfl = NULL;
    }
    return f;
}

static const char *die_function(Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    const char *name = NULL;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
        dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
        name = dwarf_formstring(&attr);
    if (!name)
        name = dwarf_diename(die);
    return name ? name : "";
}

/* The file an inlined call's DW_AT_call_file names, through the CU's file table. */
static const char *call_file(Dwarf_Die *cu, Dwarf_Die *inlined)
{
    Dwarf_Attribute attr;
    Dwarf_Word index;
    Dwarf_Files *files;
    size_t nfiles;
    if (!dwarf_attr(inlined, DW_AT_call_file, &attr) || dwarf_formudata(&attr, &index) != 0 ||
        dwarf_getsrcfiles(cu, &files, &nfiles) != 0 || index >= nfiles)
        return NULL;
    return dwarf_filesrc(files, index, NULL, NULL);
}

static unsigned call_line(Dwarf_Die *inlined)
{
    Dwarf_Attribute attr;
    Dwarf_Word line = 0;
    if (dwarf_attr(inlined, DW_AT_call_line, &attr))
        dwarf_formudata(&attr, &line);
    return (unsigned)line;
}

static int is_function(Dwarf_Die *die)
{
    int tag = dwarf_tag(die);
    return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

/* The DIEs physically around the innermost scope at `addr`, innermost first. dwarf_getscopes
 * follows an inlined instance into its abstract definition; the call chain needs the concrete
 * nesting instead (eu-addr2line -i does the same). */
static int physical_scopes(Dwarf_Die *cu, Dwarf_Addr addr, Dwarf_Die **out)
{
    Dwarf_Die *scopes = NULL, innermost;
    int n = dwarf_getscopes(cu, addr, &scopes);
    if (n <= 0) {
        free(scopes);
        return 0;
    }
    Dwarf_Die *got =
        dwarf_offdie(dwarf_cu_getdwarf(cu->cu), dwarf_dieoffset(&scopes[0]), &innermost);
    free(scopes);
    return got ? dwarf_getscopes_die(&innermost, out) : 0;
}

/* The line table's location, then for each inlined scope the call site in the scope around
 * it. */
static size_t walk_scopes(Dwarf_Die *cu, Dwarf_Addr addr, const char *file, unsigned line,
                          struct dwarf_location *out, size_t max)
{
    Dwarf_Die *scopes = NULL;
    int n = physical_scopes(cu, addr, &scopes);
    size_t k = 0;
    out[k++] = (struct dwarf_location){.function = "", .file = file, .line = line};
    for (int i = 0; i < n; i++) {
        if (!is_function(&scopes[i]))
            continue;
        out[k - 1].function = die_function(&scopes[i]);
        if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine || k == max)
            break;
        const char *cf = call_file(cu, &scopes[i]);
        out[k++] = (struct dwarf_location){
            .function = "", .file = cf ? cf : "", .line = call_line(&scopes[i])};
    }
    free(scopes);
    return k;
}

size_t dwarf_lines_lookup(struct dwarf_lines *d, const char *path, uint64_t offset,
                          struct dwarf_location *out, size_t max)
{
    if (!d || !path || !*path || max == 0)
        return 0;
    struct dwarf_file *f = open_file(d, path);
    if (!f || !f->dwfl)
        return 0;
    Dwarf_Addr elf_bias = 0, cu_bias = 0;
    if (!dwfl_module_getelf(f->module, &elf_bias))
        return 0;
    Dwarf_Addr addr = offset + elf_bias; /* the trace's offset is the link-time address */
    Dwfl_Line *line = dwfl_module_getsrc(f->module, addr);
    Dwarf_Die *cu = dwfl_module_addrdie(f->module, addr, &cu_bias);
    int lineno = 0;
    const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
    if (!file || !cu || lineno <= 0)
        return 0;
    return walk_scopes(cu, addr - cu_bias, file, (unsigned)lineno, out, max);
}

#else /* no libdw: nothing to read */

int dwarf_lines_available(void)
{
    return 0;
}

struct dwarf_lines *dwarf_lines_new(void)
{
    return NULL;
}

void dwarf_lines_free(struct dwarf_lines *d)
{
    (void)d;
}

size_t dwarf_lines_lookup(struct dwarf_lines *d, const char *path, uint64_t offset,
                          struct dwarf_location *out, size_t max)
{
    (void)d, (void)path, (void)offset, (void)out, (void)max;
    return 0;
}

#endif
