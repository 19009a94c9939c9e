/* classify: the category of an allocation from what is known about it. Sources, first match
 * wins: the thread's tag stack (track_tag_push; done by track), open phases (NVTX ranges)
 * matched against `phase:` rules, frame rules of the user's MEMSHIM_RULES file, then the
 * built-in rules (shim/builtin_rules.txt, compiled in). Callers cache the results: a phase's
 * category per name, a site's category per site, so rules run once per name or site. */
#ifndef MEMSHIM_CLASSIFY_H
#define MEMSHIM_CLASSIFY_H

#include <stdint.h>

/* One frame of a call site, as the rules see it. */
struct classify_frame {
    const char *symbol; /* NULL when unknown */
    const char *module; /* NULL when unknown */
};

/* Load the built-in rules and, when `user_path` is non-empty, the user's file. */
void classify_init(const char *user_path);
void classify_fini(void);

/* Category for a phase name, or -1 when no rule names it. */
int classify_phase(const char *name);
/* Category for a call site (frames innermost first), or -1 when no rule matches. */
int classify_site(const struct classify_frame *frames, int nframes);

/* As classify_phase and classify_site, with CLASSIFY_FROM_USER or'ed into a category that a
 * rule of the user's file decided: a user's frame rule beats a built-in phase rule. */
#define CLASSIFY_FROM_USER 0x100
int classify_phase_from(const char *name);
int classify_site_from(const struct classify_frame *frames, int nframes);

/* Calls `fn` (when not NULL) for every rule of the user's file that has decided no category so
 * far; returns their number. */
struct rule;
unsigned classify_unused(void (*fn)(const char *file, const struct rule *r));

/* The parameters `readonly` rules declare read-only for the kernel named `kernel`, as a mask
 * of RULES_READONLY_WORDS words (bit i: parameter i); every matching rule adds its indices.
 * Returns 1 when any rule matched. Callers cache the result per kernel function. */
int classify_readonly(const char *kernel, uint64_t *mask);

#endif /* MEMSHIM_CLASSIFY_H */
