/* classify: rule matching; see classify.h. */
#include "classify.h"

#include "builtin_rules.h"
#include "rules.h"

#include <fnmatch.h>
#include <string.h>

static struct rule_set classify_user;
static struct rule_set classify_builtin;
static const char *classify_user_path;

void classify_init(const char *user_path)
{
    rules_parse(&classify_builtin, memshim_builtin_rules, sizeof memshim_builtin_rules - 1,
                "builtin_rules.txt");
    if (user_path && *user_path)
        rules_load_file(&classify_user, user_path);
    classify_user_path = user_path;
}

void classify_fini(void)
{
    rules_free(&classify_user);
    rules_free(&classify_builtin);
}

/* The rule decided a category: counted, so that rules that never do can be named at exit. */
static int classify_hit(struct rule *r, int user)
{
    __atomic_add_fetch(&r->hits, 1, __ATOMIC_RELAXED);
    return r->category | (user ? CLASSIFY_FROM_USER : 0);
}

static int classify_phase_in(const struct rule_set *set, const char *name, int user)
{
    for (size_t i = 0; i < set->count; i++) {
        struct rule *r = &set->rules[i];
        if (r->target == RULE_PHASE && fnmatch(r->pattern, name, FNM_CASEFOLD) == 0)
            return classify_hit(r, user);
    }
    return -1;
}

int classify_phase_from(const char *name)
{
    int c = classify_phase_in(&classify_user, name, 1);
    return c >= 0 ? c : classify_phase_in(&classify_builtin, name, 0);
}

int classify_phase(const char *name)
{
    int c = classify_phase_from(name);
    return c >= 0 ? c & ~CLASSIFY_FROM_USER : c;
}

static int classify_frame_matches(const struct rule *r, const struct classify_frame *f)
{
    if (r->target != RULE_MODULE && f->symbol && fnmatch(r->pattern, f->symbol, 0) == 0)
        return 1;
    return r->target != RULE_SYMBOL && f->module && fnmatch(r->pattern, f->module, 0) == 0;
}

static int classify_site_in(const struct rule_set *set, const struct classify_frame *frames,
                            int nframes, int user)
{
    for (size_t i = 0; i < set->count; i++) {
        struct rule *r = &set->rules[i];
        if (r->target == RULE_PHASE)
            continue;
        for (int f = 0; f < nframes; f++) {
            if (classify_frame_matches(r, &frames[f]))
                return classify_hit(r, user);
        }
    }
    return -1;
}

int classify_site_from(const struct classify_frame *frames, int nframes)
{
    int c = classify_site_in(&classify_user, frames, nframes, 1);
    return c >= 0 ? c : classify_site_in(&classify_builtin, frames, nframes, 0);
}

int classify_site(const struct classify_frame *frames, int nframes)
{
    int c = classify_site_from(frames, nframes);
    return c >= 0 ? c & ~CLASSIFY_FROM_USER : c;
}

unsigned classify_unused(void (*fn)(const char *file, const struct rule *r))
{
    unsigned n = 0;
    for (size_t i = 0; i < classify_user.count; i++) {
        const struct rule *r = &classify_user.rules[i];
        if (__atomic_load_n(&r->hits, __ATOMIC_RELAXED) == 0) {
            n++;
            if (fn)
                fn(classify_user_path, r);
        }
    }
    return n;
}

static int classify_readonly_in(const struct rule_set *set, const char *kernel, uint64_t *mask)
{
    int hit = 0;
    for (size_t i = 0; i < set->nreadonly; i++) {
        const struct rule_readonly *r = &set->readonly[i];
        if (fnmatch(r->pattern, kernel, 0) != 0)
            continue;
        for (int w = 0; w < RULES_READONLY_WORDS; w++)
            mask[w] |= r->params[w];
        hit = 1;
    }
    return hit;
}

int classify_readonly(const char *kernel, uint64_t *mask)
{
    memset(mask, 0, RULES_READONLY_WORDS * sizeof *mask);
    if (!kernel)
        return 0;
    int hit = classify_readonly_in(&classify_user, kernel, mask);
    return classify_readonly_in(&classify_builtin, kernel, mask) | hit;
}
