/* rules: see rules.h. Loaded at startup, so the parser may use the C heap. */
#include "rules.h"

#include "log.h"
#include "memshim/trace_format.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RULES_MAX_FILE (1u << 20)

static const char *const rules_categories[MST_CATEGORY_MAX] = MST_CATEGORY_NAMES;

static const struct {
    const char *prefix;
    enum rule_target target;
} rules_prefixes[] = {
    {"symbol:", RULE_SYMBOL},
    {"module:", RULE_MODULE},
    {"phase:", RULE_PHASE},
};

int rules_category(const char *name, size_t len)
{
    for (int i = 0; i < MST_CATEGORY_MAX; i++) {
        if (strlen(rules_categories[i]) == len && memcmp(rules_categories[i], name, len) == 0)
            return i;
    }
    return -1;
}

const char *rules_category_name(int category)
{
    if (category < 0 || category >= MST_CATEGORY_MAX)
        return "unknown";
    return rules_categories[category];
}

static char *rules_trim(char *s, char *end)
{
    while (s < end && isspace((unsigned char)*s))
        s++;
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

#define RULES_READONLY_FORM "expected `readonly KERNEL_GLOB INDEX[,INDEX...]`"

/* The rest of a `readonly` line (trimmed, non-empty or not): the glob, then the index list as
 * its last word. 1: parsed, -1: error printed. */
static int rules_readonly(struct rule_readonly *r, char *rest, const char *source, unsigned lineno)
{
    char *end = rest + strlen(rest);
    char *list = end;
    while (list > rest && !isspace((unsigned char)list[-1]))
        list--;
    if (list == rest) {
        log_error("%s:%u: " RULES_READONLY_FORM, source, lineno);
        return -1;
    }
    char *glob = rules_trim(rest, list);
    /* `k 0, 1` would otherwise read as the glob `k 0,` with the list `1`. */
    if (glob[strlen(glob) - 1] == ',') {
        log_error("%s:%u: no spaces in the parameter index list (`0,2`, not `0, 2`)", source,
                  lineno);
        return -1;
    }
    *r = (struct rule_readonly){.pattern = glob};
    for (char *p = list;;) {
        unsigned v = 0;
        char *digits = p;
        while (isdigit((unsigned char)*p) && v < RULES_READONLY_PARAMS)
            v = v * 10 + (unsigned)(*p++ - '0');
        if (p == digits || v >= RULES_READONLY_PARAMS || (*p != ',' && *p != '\0')) {
            log_error("%s:%u: bad parameter index list '%.*s' (comma-separated indices 0..%d)",
                      source, lineno, (int)(end - list > 64 ? 64 : end - list), list,
                      RULES_READONLY_PARAMS - 1);
            return -1;
        }
        r->params[v / 64] |= 1ull << (v % 64);
        if (*p++ == '\0')
            return 1;
    }
}

/* One line (NUL-terminated, modifiable). 1: a category rule, 2: a readonly rule, 0: nothing,
 * -1: error printed. */
/* A `#` at the start or after white space starts a comment: cut it off. A glob never needs a
 * `#` after a space (frame names have none). */
static void rules_cut_comment(char *line)
{
    for (char *p = line; *p; p++) {
        if (*p == '#' && (p == line || isspace((unsigned char)p[-1]))) {
            *p = '\0';
            return;
        }
    }
}

static int rules_line(struct rule *r, struct rule_readonly *ro, char *line, const char *source,
                      unsigned lineno)
{
    rules_cut_comment(line);
    char *s = rules_trim(line, line + strlen(line));
    if (*s == '\0' || *s == '#')
        return 0;
    char *word_end = s;
    while (*word_end && !isspace((unsigned char)*word_end))
        word_end++;
    if (word_end - s == 8 && memcmp(s, "readonly", 8) == 0) {
        int rc =
            rules_readonly(ro, rules_trim(word_end, word_end + strlen(word_end)), source, lineno);
        return rc < 0 ? -1 : 2;
    }
    int cat = rules_category(s, (size_t)(word_end - s));
    if (cat < 0) {
        log_error("%s:%u: unknown category '%.*s' (expected parameter, gradient, optimizer_state, "
                  "activation, kv_cache, workspace, temporary, communication, input or unknown)",
                  source, lineno, (int)(word_end - s > 64 ? 64 : word_end - s), s);
        return -1;
    }
    char *pat = rules_trim(word_end, word_end + strlen(word_end));
    r->category = (uint8_t)cat;
    r->target = RULE_FRAME;
    for (size_t i = 0; i < sizeof rules_prefixes / sizeof rules_prefixes[0]; i++) {
        size_t n = strlen(rules_prefixes[i].prefix);
        if (strncmp(pat, rules_prefixes[i].prefix, n) == 0) {
            r->target = (uint8_t)rules_prefixes[i].target;
            pat += n;
            break;
        }
    }
    if (*pat == '\0') {
        log_error("%s:%u: expected `category pattern` (a glob after the category)", source, lineno);
        return -1;
    }
    r->pattern = pat;
    r->line = lineno;
    return 1;
}

int rules_parse(struct rule_set *set, const char *text, size_t len, const char *source)
{
    size_t lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    *set = (struct rule_set){0};
    set->text = malloc(len + 1);
    set->rules = calloc(lines, sizeof *set->rules);
    set->readonly = calloc(lines, sizeof *set->readonly);
    if (!set->text || !set->rules || !set->readonly) {
        rules_free(set);
        return -1;
    }
    memcpy(set->text, text, len);
    set->text[len] = '\0';
    int errors = 0;
    unsigned lineno = 0;
    char *p = set->text, *end = set->text + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *line_end = nl ? nl : end;
        *line_end = '\0';
        lineno++;
        if (memchr(p, '\0', (size_t)(line_end - p))) {
            log_error("%s:%u: unexpected NUL byte", source, lineno);
            errors++;
        } else {
            int r = rules_line(&set->rules[set->count], &set->readonly[set->nreadonly], p, source,
                               lineno);
            set->count += r == 1;
            set->nreadonly += r == 2;
            errors += r < 0;
        }
        p = line_end + 1;
    }
    return errors;
}

/* Why a rules file was not read, or NULL. */
static const char *rules_refusal(int fd, struct stat *st)
{
    static char why[96];
    if (fd < 0 || fstat(fd, st) < 0)
        return NULL; /* errno says */
    if (!S_ISREG(st->st_mode))
        return "not a regular file";
    if (st->st_size > RULES_MAX_FILE) {
        snprintf(why, sizeof why, "%lld bytes, more than the %u accepted", (long long)st->st_size,
                 RULES_MAX_FILE);
        return why;
    }
    return "";
}

static char *rules_read(const char *path, size_t *len)
{
    /* O_NONBLOCK: a FIFO must be refused, not waited on for a writer. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    const char *why = rules_refusal(fd, &st);
    if (!why || *why) {
        log_error("%s: cannot read the rules file (MEMSHIM_RULES): %s; using the built-in rules "
                  "only",
                  path, why ? why : strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    size_t n = 0;
    while (buf && n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    *len = n;
    return buf;
}

int rules_load_file(struct rule_set *set, const char *path)
{
    size_t len = 0;
    char *buf = rules_read(path, &len);
    if (!buf) {
        *set = (struct rule_set){0};
        return -1;
    }
    int errors = rules_parse(set, buf, len, path);
    free(buf);
    return errors;
}

void rules_free(struct rule_set *set)
{
    free(set->rules);
    free(set->readonly);
    free(set->text);
    *set = (struct rule_set){0};
}
