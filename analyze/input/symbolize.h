/* Names for call-site frames, offline: demangling (C++ through the C++ runtime found at run
 * time, Rust legacy and the common escapes by hand) and ELF symbol tables of modules whose
 * frames the shim could not name. */
#ifndef ANALYZE_SYMBOLIZE_H
#define ANALYZE_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

/* Demangles a C++ (_Z...) or Rust legacy (_ZN...17h<hash>E) name into buf, dropping the Rust
 * hash. Anything else, or a failed demangle, is copied unchanged. Returns buf. */
const char *symbolize_demangle(const char *name, char *buf, size_t len);

/* A Python frame (a FRAME in a module flagged MST_MODULE_F_PYTHON) as `file:line in function`,
 * the file as the interpreter named it. Returns buf. */
const char *symbolize_python_frame(const char *file, uint64_t line, const char *function, char *buf,
                                   size_t len);

struct symbolizer;

struct symbolizer *symbolizer_new(void);
void symbolizer_free(struct symbolizer *s);

/* The function symbol of the ELF file at `path` containing `offset` (an address relative to
 * the module's load base), from .symtab, else .dynsym. Returns the mangled name and sets
 * *within to the offset into the function, or NULL when the file is missing, not ELF, or has
 * no covering symbol. Each file is read once. */
const char *symbolizer_lookup(struct symbolizer *s, const char *path, uint64_t offset,
                              uint64_t *within);

#endif /* ANALYZE_SYMBOLIZE_H */
