/* Source file and line of a native frame, read offline from the module's DWARF with elfutils'
 * libdw (separate debug files found as gdb does: build-id under /usr/lib/debug, debuglink),
 * inline frames included. Built only when libdw is found; without it every lookup finds
 * nothing and frames keep their symbol+offset names. */
#ifndef ANALYZE_DWARF_LINES_H
#define ANALYZE_DWARF_LINES_H

#include <stddef.h>
#include <stdint.h>

/* One source location: the function and where in it. For an inlined call the function is the
 * inlined one and the next location (outward) is the call site in its caller. */
struct dwarf_location {
    const char *function; /* linkage (mangled) name when known, else the plain name; may be "" */
    const char *file;     /* as the compiler recorded it, usually absolute */
    unsigned line;
};

struct dwarf_lines;

/* NULL when the analyzer was built without libdw. */
struct dwarf_lines *dwarf_lines_new(void);
void dwarf_lines_free(struct dwarf_lines *d);

/* Locations of the instruction at `offset` (relative to the module's load base, as the trace
 * records it) in the ELF file at `path`, innermost first: the line-table location and then one
 * call site per enclosing inlined call. Returns how many were written to out (at most max),
 * 0 when the file has no line information for it. The strings live until dwarf_lines_free. */
size_t dwarf_lines_lookup(struct dwarf_lines *d, const char *path, uint64_t offset,
                          struct dwarf_location *out, size_t max);

/* A frame's name from its locations: "fn at file.c:12 (module)", and for inlined calls
 * "inner at a.h:3 inlined in outer at b.c:40 (module)"; file names without their directory,
 * functions demangled, `symbol` (the ELF one) where DWARF names no function. NULL when
 * there is no line information, and the caller keeps symbol+offset. */
const char *dwarf_lines_describe(struct dwarf_lines *d, const char *path, uint64_t offset,
                                 const char *symbol, const char *module, char *buf, size_t len);

/* Whether this build reads DWARF. */
int dwarf_lines_available(void);

#endif /* ANALYZE_DWARF_LINES_H */
