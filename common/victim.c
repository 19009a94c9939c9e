/* victim: the choice of victims of the spill policy and of the auto policy (DTR), rules in
 * victim.h. Heapsort rather than qsort: glibc's qsort may call malloc, and this runs inside a
 * CUDA call; the order's comparison is a parameter (the DTR one needs `now`). */
#include "victim.h"

/* Marks kept in in_use while choosing; reset to 0 before returning. */
enum { PICK_FIRST = 2, PICK_SECOND = 3 };

static int group(const struct victim_candidate *a)
{
    if (a->in_use == PICK_FIRST)
        return 0;
    if (a->in_use == PICK_SECOND)
        return 1;
    return 2;
}

/* 1 when a sorts before b: picks first (by pass), then least recently used, larger, lower id. */
static int before(const struct victim_candidate *a, const struct victim_candidate *b, uint64_t now)
{
    (void)now;
    int ga = group(a), gb = group(b);
    if (ga != gb)
        return ga < gb;
    if (a->last_access != b->last_access)
        return a->last_access < b->last_access;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes;
    return a->id < b->id;
}

static void swap(struct victim_candidate *a, struct victim_candidate *b)
{
    struct victim_candidate t = *a;
    *a = *b;
    *b = t;
}

typedef int (*before_fn)(const struct victim_candidate *, const struct victim_candidate *,
                         uint64_t);

static void sift_down(struct victim_candidate *c, size_t root, size_t n, before_fn before,
                      uint64_t now)
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && before(&c[child], &c[child + 1], now))
            child++;
        if (!before(&c[root], &c[child], now))
            return;
        swap(&c[root], &c[child]);
        root = child;
    }
}

static void sort(struct victim_candidate *c, size_t n, before_fn before, uint64_t now)
{
    if (n < 2)
        return;
    for (size_t i = n / 2; i-- > 0;)
        sift_down(c, i, n, before, now);
    for (size_t end = n - 1; end > 0; end--) {
        swap(&c[0], &c[end]);
        sift_down(c, 0, end, before, now);
    }
}

static int eligible(const struct victim_candidate *a)
{
    return a->in_use == 0 && a->bytes > 0;
}

/* What both choosers do first: nothing to choose (0, *chosen_bytes = 0), or 1 with the
 * in_use marks the caller may have set to any non-zero value normalised (only 0 is eligible). */
static int start(struct victim_candidate *c, size_t n, uint64_t need, uint64_t *chosen_bytes)
{
    if (c == NULL || n == 0 || need == 0) {
        if (chosen_bytes)
            *chosen_bytes = 0;
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        if (c[i].in_use != 0)
            c[i].in_use = 1;
    return 1;
}

static uint64_t add_sat(uint64_t taken, uint64_t bytes)
{
    return taken + (bytes > UINT64_MAX - taken ? UINT64_MAX - taken : bytes);
}

size_t victim_choose(struct victim_candidate *c, size_t n, uint64_t need, uint64_t *chosen_bytes)
{
    uint64_t taken = 0;
    size_t k = 0;
    if (!start(c, n, need, chosen_bytes))
        return 0;
    sort(c, n, before, 0);
    for (size_t i = 0; i < n && taken < need; i++) {
        uint64_t remaining = need - taken;
        if (eligible(&c[i]) && c[i].bytes >= remaining / VICTIM_LARGE_DIVISOR) {
            c[i].in_use = PICK_FIRST;
            taken = add_sat(taken, c[i].bytes);
            k++;
        }
    }
    for (size_t i = 0; i < n && taken < need; i++) {
        if (eligible(&c[i])) {
            c[i].in_use = PICK_SECOND;
            taken = add_sat(taken, c[i].bytes);
            k++;
        }
    }
    if (k > 0)
        sort(c, n, before, 0);
    for (size_t i = 0; i < k; i++)
        c[i].in_use = 0;
    if (chosen_bytes)
        *chosen_bytes = taken;
    return k;
}

/* ---- Belady on forecasts ---- */

/* 1 when a sorts before b: eligible first, then the farther forecast, the older, larger, lower
 * id. */
static int before_next(const struct victim_candidate *a, const struct victim_candidate *b,
                       uint64_t now)
{
    (void)now;
    int ea = eligible(a), eb = eligible(b);
    if (ea != eb)
        return ea;
    if (a->next_use != b->next_use)
        return a->next_use > b->next_use;
    if (a->last_access != b->last_access)
        return a->last_access < b->last_access;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes;
    return a->id < b->id;
}

/* Eligible candidates sorted first by `order`: the prefix that reaches need. */
static size_t take_prefix(struct victim_candidate *c, size_t n, uint64_t need, before_fn order,
                          uint64_t now, uint64_t *chosen_bytes)
{
    uint64_t taken = 0;
    size_t k = 0;
    if (!start(c, n, need, chosen_bytes))
        return 0;
    sort(c, n, order, now);
    for (; k < n && taken < need && eligible(&c[k]); k++)
        taken = add_sat(taken, c[k].bytes);
    if (chosen_bytes)
        *chosen_bytes = taken;
    return k;
}

size_t victim_choose_next(struct victim_candidate *c, size_t n, uint64_t need,
                          uint64_t *chosen_bytes)
{
    return take_prefix(c, n, need, before_next, 0, chosen_bytes);
}

/* ---- DTR ---- */

/* x * y * z as a 192-bit number, least significant word first. */
static void mul3(uint64_t x, uint64_t y, uint64_t z, uint64_t out[3])
{
    unsigned __int128 p = (unsigned __int128)x * y;
    unsigned __int128 lo = (unsigned __int128)(uint64_t)p * z;
    unsigned __int128 hi = (unsigned __int128)(uint64_t)(p >> 64) * z + (lo >> 64);
    out[0] = (uint64_t)lo;
    out[1] = (uint64_t)hi;
    out[2] = (uint64_t)(hi >> 64);
}

static uint64_t age(const struct victim_candidate *a, uint64_t now)
{
    /* A forecast next use says how long the bytes are not needed better than staleness does. */
    if (a->next_use != 0 && a->next_use != UINT64_MAX)
        return a->next_use > now ? a->next_use - now + 1 : 1;
    if (a->last_access >= now)
        return 1;
    uint64_t d = now - a->last_access;
    return d == UINT64_MAX ? d : d + 1;
}

/* 1 when a sorts before b: eligible first, then the lower score, larger, lower id. Scores
 * cost / (bytes * age) are compared by cross-multiplying (bytes, age >= 1 when eligible), so
 * no rounding can make the order depend on the input order. */
static int before_dtr(const struct victim_candidate *a, const struct victim_candidate *b,
                      uint64_t now)
{
    int ea = eligible(a), eb = eligible(b);
    if (ea != eb)
        return ea;
    if (ea) {
        uint64_t l[3], r[3];
        mul3(a->cost, b->bytes, age(b, now), l);
        mul3(b->cost, a->bytes, age(a, now), r);
        for (int w = 2; w >= 0; w--)
            if (l[w] != r[w])
                return l[w] < r[w];
    }
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes;
    return a->id < b->id;
}

size_t victim_choose_dtr(struct victim_candidate *c, size_t n, uint64_t need, uint64_t now,
                         uint64_t *chosen_bytes)
{
    return take_prefix(c, n, need, before_dtr, now, chosen_bytes);
}
