/* victim: the spill policy's choice of victims (rule in victim.h). Heapsort rather than qsort:
 * glibc's qsort may call malloc, and this runs inside a CUDA call. */
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
static int before(const struct victim_candidate *a, const struct victim_candidate *b)
{
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

static void sift_down(struct victim_candidate *c, size_t root, size_t n)
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && before(&c[child], &c[child + 1]))
            child++;
        if (!before(&c[root], &c[child]))
            return;
        swap(&c[root], &c[child]);
        root = child;
    }
}

static void sort(struct victim_candidate *c, size_t n)
{
    if (n < 2)
        return;
    for (size_t i = n / 2; i-- > 0;)
        sift_down(c, i, n);
    for (size_t end = n - 1; end > 0; end--) {
        swap(&c[0], &c[end]);
        sift_down(c, 0, end);
    }
}

static int eligible(const struct victim_candidate *a)
{
    return a->in_use == 0 && a->bytes > 0;
}

size_t victim_choose(struct victim_candidate *c, size_t n, uint64_t need, uint64_t *chosen_bytes)
{
    uint64_t taken = 0;
    size_t k = 0;
    if (c == NULL || n == 0 || need == 0) {
        if (chosen_bytes)
            *chosen_bytes = 0;
        return 0;
    }
    /* Normalise marks the caller may have set to any non-zero value: only 0 is eligible. */
    for (size_t i = 0; i < n; i++)
        if (c[i].in_use != 0)
            c[i].in_use = 1;
    sort(c, n);
    for (size_t i = 0; i < n && taken < need; i++) {
        uint64_t remaining = need - taken;
        if (eligible(&c[i]) && c[i].bytes >= remaining / VICTIM_LARGE_DIVISOR) {
            c[i].in_use = PICK_FIRST;
            taken += c[i].bytes > UINT64_MAX - taken ? UINT64_MAX - taken : c[i].bytes;
            k++;
        }
    }
    for (size_t i = 0; i < n && taken < need; i++) {
        if (eligible(&c[i])) {
            c[i].in_use = PICK_SECOND;
            taken += c[i].bytes > UINT64_MAX - taken ? UINT64_MAX - taken : c[i].bytes;
            k++;
        }
    }
    if (k > 0)
        sort(c, n);
    for (size_t i = 0; i < k; i++)
        c[i].in_use = 0;
    if (chosen_bytes)
        *chosen_bytes = taken;
    return k;
}
