/* Site names that skip shared wrapper frames. See site_label.h. */
#include "site_label.h"

#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

struct prefix {
    uint64_t hash; /* of the site's frames 0..depth */
    uint32_t site;
    uint32_t depth;
};

struct label {
    uint32_t site;
    uint32_t depth;
};

struct site_labels {
    struct label *labels; /* by site */
    size_t n;
};

static uint64_t mix(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return (h ^ 0xff) * 0x100000001b3ull; /* frame boundary */
}

static int by_hash(const void *a, const void *b)
{
    const struct prefix *x = a, *y = b;
    return x->hash < y->hash ? -1 : x->hash > y->hash;
}

static int by_site(const void *a, const void *b)
{
    const struct label *x = a, *y = b;
    return x->site < y->site ? -1 : x->site > y->site;
}

/* Every prefix of every site's stack; returns how many, or (size_t)-1 when out of memory. */
static size_t prefixes(struct model *m, const struct model_site *sites, size_t n,
                       struct prefix **out, struct label *labels)
{
    size_t cap = n * MAX_DEPTH + 1, k = 0;
    struct prefix *p = malloc(cap * sizeof *p);
    if (!p)
        return (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        const char *frames[MAX_DEPTH];
        size_t nf = model_site_frames(m, sites[i].site, frames, MAX_DEPTH);
        uint64_t h = 0xcbf29ce484222325ull;
        labels[i] = (struct label){.site = sites[i].site, .depth = nf ? (uint32_t)nf - 1 : 0};
        for (size_t d = 0; d < nf; d++) {
            h = mix(h, frames[d]);
            p[k++] = (struct prefix){.hash = h, .site = (uint32_t)i, .depth = (uint32_t)d};
        }
    }
    *out = p;
    return k;
}

/* A prefix no other site shares names its site; the shallowest such prefix wins. */
static void choose(struct prefix *p, size_t k, struct label *labels)
{
    if (k == 0)
        return; /* no site, or none with a stack: p may be NULL */
    qsort(p, k, sizeof *p, by_hash);
    for (size_t i = 0; i < k;) {
        size_t j = i + 1;
        while (j < k && p[j].hash == p[i].hash)
            j++;
        if (j == i + 1 && p[i].depth < labels[p[i].site].depth)
            labels[p[i].site].depth = p[i].depth;
        i = j;
    }
}

struct site_labels *site_labels_new(struct model *m)
{
    size_t n;
    const struct model_site *sites = model_sites(m, &n);
    struct site_labels *l = calloc(1, sizeof *l);
    if (!l || (n && !(l->labels = malloc(n * sizeof *l->labels)))) {
        free(l);
        return NULL;
    }
    l->n = n;
    struct prefix *p = NULL;
    size_t k = n ? prefixes(m, sites, n, &p, l->labels) : 0;
    if (k == (size_t)-1) {
        site_labels_free(l);
        return NULL;
    }
    choose(p, k, l->labels);
    free(p);
    if (n)
        qsort(l->labels, n, sizeof *l->labels, by_site);
    return l;
}

void site_labels_free(struct site_labels *l)
{
    if (!l)
        return;
    free(l->labels);
    free(l);
}

size_t site_labels_depth(const struct site_labels *l, uint32_t site)
{
    if (!l || !l->n)
        return 0;
    struct label key = {.site = site};
    const struct label *found = bsearch(&key, l->labels, l->n, sizeof key, by_site);
    return found ? found->depth : 0;
}

const char *site_labels_name(const struct site_labels *l, struct model *m, uint32_t site)
{
    const char *frames[MAX_DEPTH];
    size_t nf = site ? model_site_frames(m, site, frames, MAX_DEPTH) : 0;
    if (nf == 0)
        return "(no stack recorded)";
    size_t d = site_labels_depth(l, site);
    return frames[d < nf ? d : nf - 1];
}
