/* strtab: interned strings of the trace (symbol names, phase names). Each distinct string gets
 * an id (from 1) and is written once as MST_REC_STRING when interned. Entries live in the
 * arena and never move, so callers may keep the returned pointer. */
#ifndef MEMSHIM_STRTAB_H
#define MEMSHIM_STRTAB_H

#include <stddef.h>
#include <stdint.h>

struct strtab_entry {
    uint32_t id;
    int16_t phase_category; /* classify_phase_from of this name: -2 not computed, -1 none */
    uint16_t len;
    const char *str; /* NUL-terminated copy */
};

/* Intern `len` bytes (longer strings are cut at STRTAB_MAX_LEN). NULL when out of memory. */
const struct strtab_entry *strtab_intern(const char *s, size_t len);
/* The category of a phase name (classify_phase_from), computed once per name. */
int strtab_phase_category(const struct strtab_entry *e);
/* Forget every string (fork child: the new trace starts its ids again). */
void strtab_reset(void);
/* pthread_atfork helpers. */
void strtab_lock(void);
void strtab_unlock(void);

#define STRTAB_MAX_LEN 4096

#endif /* MEMSHIM_STRTAB_H */
