/* nextuse: forecasts from the previous step (the position in the step, the next step's first
 * use, counterparts of ranges born anew by size and ordinal, ranges the step never used), and
 * the Belady victim order built on them (victim_choose_next). */
#include <criterion/criterion.h>

#include "nextuse.h"
#include "victim.h"

#include <stdlib.h>

static void *mem_alloc(size_t bytes)
{
    return malloc(bytes);
}

static void mem_release(void *p, size_t bytes)
{
    (void)bytes;
    free(p);
}

static const struct nextuse_mem mem = {mem_alloc, mem_release};

Test(nextuse, nothing_before_a_whole_step)
{
    struct nextuse u;
    nextuse_init(&u, &mem);
    uint64_t pred, k = nextuse_born(&u, 64, &pred);
    cr_assert_eq(pred, k, "no previous step: its own key");
    nextuse_touch(&u, k);
    cr_assert_eq(nextuse_predict(&u, k, pred, 1), NEXTUSE_UNKNOWN);
    nextuse_step(&u);
    cr_assert_eq(nextuse_predict(&u, k, pred, 2), NEXTUSE_UNKNOWN, "the log before any step");
    nextuse_step(&u);
    cr_assert(nextuse_ready(&u));
    nextuse_fini(&u);
}

Test(nextuse, the_previous_step_repeats)
{
    struct nextuse u;
    nextuse_init(&u, &mem);
    uint64_t pa, pb, a = nextuse_born(&u, 64, &pa), b = nextuse_born(&u, 64, &pb);
    nextuse_step(&u);
    /* a step of three uses: a, b, a */
    nextuse_touch(&u, a);
    nextuse_touch(&u, b);
    nextuse_touch(&u, a);
    nextuse_step(&u);
    cr_assert_eq(nextuse_predict(&u, a, pa, 200), 201, "the first use, at the same position");
    nextuse_touch(&u, a);
    cr_assert_eq(nextuse_predict(&u, a, pa, 300), 302, "then the next one, one use later");
    cr_assert_eq(nextuse_predict(&u, b, pb, 300), 301);
    nextuse_touch(&u, b);
    nextuse_touch(&u, a);
    cr_assert_eq(nextuse_predict(&u, a, pa, 400), 401, "then the next step's first");
    uint64_t pc, c = nextuse_born(&u, 64, &pc);
    cr_assert_eq(nextuse_predict(&u, c, pc, 400), 400,
                 "born now, like nothing of the previous step: presumed about to be used");
    nextuse_step(&u);
    cr_assert_eq(nextuse_predict(&u, c, pc, 500), 500 + 2 * 3 + 1,
                 "never used in the previous step: behind everything that was");
    nextuse_fini(&u);
}

Test(nextuse, counterparts_by_size_and_ordinal)
{
    struct nextuse u;
    nextuse_init(&u, &mem);
    nextuse_step(&u);
    uint64_t p, x1 = nextuse_born(&u, 4096, &p), extra = nextuse_born(&u, 512, &p);
    uint64_t x2 = nextuse_born(&u, 4096, &p);
    nextuse_touch(&u, x1);
    nextuse_touch(&u, x2);
    nextuse_touch(&u, extra);
    nextuse_step(&u);
    /* This step allocates no 512-byte range: the 4096-byte ones still find their twins. */
    uint64_t py1, y1 = nextuse_born(&u, 4096, &py1);
    uint64_t py2, y2 = nextuse_born(&u, 4096, &py2);
    cr_assert_eq(py1, x1);
    cr_assert_eq(py2, x2);
    cr_assert_eq(nextuse_predict(&u, y1, py1, 10), 11);
    cr_assert_eq(nextuse_predict(&u, y2, py2, 10), 12);
    nextuse_touch(&u, y2);
    nextuse_step(&u);
    cr_assert_eq(nextuse_predict(&u, y1, py1, 20), 20 + 2 * 1 + 1,
                 "born in an earlier step: its own uses (none), not its twin's");
    cr_assert_eq(nextuse_predict(&u, y2, py2, 20), 21);
    nextuse_fini(&u);
}

Test(nextuse, a_free_is_the_next_event)
{
    struct nextuse u;
    nextuse_init(&u, &mem);
    nextuse_step(&u);
    /* a step: x is used, then y twice, then x is freed (no use left), then y once more */
    uint64_t p, x = nextuse_born(&u, 4096, &p), y = nextuse_born(&u, 8192, &p);
    nextuse_touch(&u, x);
    nextuse_touch(&u, y);
    nextuse_touch(&u, y);
    nextuse_end(&u, x);
    nextuse_touch(&u, y);
    nextuse_step(&u);
    uint64_t px, x2 = nextuse_born(&u, 4096, &px);
    uint64_t py, y2 = nextuse_born(&u, 8192, &py);
    nextuse_touch(&u, x2);
    nextuse_touch(&u, y2);
    cr_assert_eq(nextuse_predict(&u, x2, px, 100), 102,
                 "its twin was freed after one more use: its room comes back then");
    cr_assert_eq(nextuse_predict(&u, y2, py, 100), 101);
    nextuse_touch(&u, y2);
    nextuse_end(&u, x2);
    cr_assert_eq(nextuse_predict(&u, y2, py, 200), 201, "a free takes no place in the step");
    /* A range its step only allocated and freed is forecast at its free, not behind
     * everything that was used. */
    uint64_t pz, z = nextuse_born(&u, 256, &pz);
    nextuse_end(&u, z);
    nextuse_touch(&u, y2);
    nextuse_step(&u);
    uint64_t pz2, z2 = nextuse_born(&u, 256, &pz2);
    cr_assert_eq(pz2, z);
    cr_assert_eq(nextuse_predict(&u, z2, pz2, 300), 300 + 3 + 1);
    nextuse_fini(&u);
}

Test(nextuse, farthest_forecast_goes_first)
{
    struct victim_candidate c[] = {
        {.id = 1, .bytes = 8, .last_access = 1, .next_use = 50},
        {.id = 2, .bytes = 8, .last_access = 9, .next_use = 90},
        {.id = 3, .bytes = 8, .last_access = 2, .next_use = 20},
        {.id = 4, .bytes = 8, .last_access = 3, .next_use = 95, .in_use = 1},
        {.id = 5, .bytes = 8, .last_access = 0, .next_use = 50},
    };
    uint64_t got = 0;
    size_t k = victim_choose_next(c, 5, 20, &got);
    cr_assert_eq(k, 3);
    cr_assert_eq(got, 24);
    cr_assert_eq(c[0].id, 2, "farthest next use, although the most recently used");
    cr_assert_eq(c[1].id, 5, "a tie goes to the least recently used");
    cr_assert_eq(c[2].id, 1);
    for (size_t i = 0; i < k; i++)
        cr_assert_eq(c[i].in_use, 0);
    k = victim_choose_next(c, 5, 100, &got);
    cr_assert_eq(k, 4, "never the one in use; all others when they do not cover need");
    cr_assert_eq(got, 32);
}

/* The counterpart rule by a plain scan of the previous step's births: the reference the tables
 * of nextuse_born must agree with. */
struct ref_birth {
    uint64_t key, bytes;
};

static uint64_t ref_twin(const struct ref_birth *prev, size_t nprev, const struct ref_birth *cur,
                         size_t ncur, uint64_t bytes)
{
    size_t ord = 0;
    for (size_t i = 0; i < ncur; i++)
        ord += cur[i].bytes == bytes;
    for (size_t i = 0; i < nprev; i++)
        if (prev[i].bytes == bytes && ord-- == 0)
            return prev[i].key;
    return 0;
}

/* An allocator that fails every `fail_every`-th request for a power-of-two size (0: never):
 * the hash tables (count, births, log index) have such sizes, the lists of 24-byte births and
 * uses never do, so every birth is still listed and only the tables are missing. */
static unsigned fail_every, calls;

static void *flaky_alloc(size_t bytes)
{
    int table = (bytes & (bytes - 1)) == 0;
    return table && fail_every && ++calls % fail_every == 0 ? NULL : malloc(bytes);
}

static const struct nextuse_mem flaky = {flaky_alloc, mem_release};

static void births_match_the_scan(unsigned every)
{
    enum { STEPS = 6, PER_STEP = 3000 };
    static struct ref_birth log[2][PER_STEP + 500];
    size_t n[2] = {0, 0};
    int cur = 0;
    struct nextuse u;
    fail_every = every;
    calls = 0;
    nextuse_init(&u, &flaky);
    srand(7);
    for (int step = 0; step < STEPS; step++) {
        /* Steps alike but not identical: a few extra births, sizes from a small set so that
         * ordinals run high, and some sizes seen only once. */
        int births = PER_STEP + (step == 0 ? 400 : rand() % 50);
        for (int i = 0; i < births; i++) {
            uint64_t bytes = rand() % 8 ? 256u << (rand() % 6) : 1000003u + (uint64_t)(rand() % 97);
            uint64_t want = ref_twin(log[!cur], n[!cur], log[cur], n[cur], bytes);
            uint64_t pred, key = nextuse_born(&u, bytes, &pred);
            cr_assert_eq(pred, want ? want : key, "step %d birth %d (%llu bytes)", step, i,
                         (unsigned long long)bytes);
            log[cur][n[cur]++] = (struct ref_birth){key, bytes};
        }
        nextuse_step(&u);
        cur = !cur;
        n[cur] = 0;
    }
    nextuse_fini(&u);
    fail_every = 0;
}

Test(nextuse, counterparts_in_constant_time_match_the_scan)
{
    births_match_the_scan(0);
}

Test(nextuse, counterparts_match_the_scan_when_memory_fails)
{
    /* Every other table fails to grow or to be made: the counts and the previous births are
     * then found by scanning the lists, with the same answers. */
    births_match_the_scan(2);
}
