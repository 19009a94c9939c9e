/* rules: the parser of rules files (MEMSHIM_RULES and the built-in shim/builtin_rules.txt).
 * One rule a line, `category pattern`; blank lines and lines starting with `#` are ignored.
 * The pattern is an fnmatch glob over the rest of the line, matched against a frame's symbol
 * or module path, or with a prefix against one of them only: `symbol:GLOB`, `module:GLOB`,
 * `phase:GLOB` (the name of an open NVTX range or phase, case-insensitive). A second form,
 * `readonly KERNEL_GLOB INDEX[,INDEX...]`, declares parameters (0-based) of the kernels whose
 * symbol matches the glob that the kernels only read: the glob is everything between the word
 * `readonly` and the last word, the index list. Errors are printed as `memshim: FILE:LINE: ...`
 * and the line is skipped. */
#ifndef MEMSHIM_RULES_H
#define MEMSHIM_RULES_H

#include <stddef.h>
#include <stdint.h>

enum rule_target {
    RULE_FRAME,  /* symbol or module of any frame */
    RULE_SYMBOL, /* symbol of any frame */
    RULE_MODULE, /* module path of any frame */
    RULE_PHASE,  /* name of an open phase */
};

struct rule {
    uint8_t category; /* enum mst_category */
    uint8_t target;   /* enum rule_target */
    uint32_t line;    /* in its file, for messages */
    uint32_t hits;    /* times it decided a category (atomic; classify counts) */
    const char *pattern;
};

/* Kernel parameters past this index cannot be declared read-only. */
#define RULES_READONLY_PARAMS 256
#define RULES_READONLY_WORDS  (RULES_READONLY_PARAMS / 64)

struct rule_readonly {
    const char *pattern;                   /* glob over the kernel's symbol */
    uint64_t params[RULES_READONLY_WORDS]; /* bit i: parameter i is only read */
};

struct rule_set {
    struct rule *rules;
    size_t count;
    struct rule_readonly *readonly;
    size_t nreadonly;
    char *text; /* owned copy of the source; patterns point into it */
};

/* Parse `len` bytes of rules text named `source` (for messages) into an empty set. Returns the
 * number of lines rejected; -1 only when out of memory. */
int rules_parse(struct rule_set *set, const char *text, size_t len, const char *source);
/* Read and parse a file; -1 (after one message) when it cannot be read. */
int rules_load_file(struct rule_set *set, const char *path);
void rules_free(struct rule_set *set);

/* Category index of a name (`parameter`, ...), -1 when unknown. */
int rules_category(const char *name, size_t len);
const char *rules_category_name(int category);

#endif /* MEMSHIM_RULES_H */
