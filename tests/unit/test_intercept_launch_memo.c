/* launch_memo: a launch is found again only under the same function, API, stream, candidate
 * words, read-only marks and registry version; a thread's table is its own. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "launch_memo.h"

static uint64_t cand[3] = {0x7f0000001000, 0x7f0000002040, 0x7f0000009000};

static struct launch_key key(void)
{
    return (struct launch_key){
        .fn = 0x4000, .stream = 7, .version = 42, .reads = 2, .api = 1, .ncand = 3, .cand = cand};
}

static void keep(const struct launch_key *k, uint32_t slot)
{
    struct launch_memo_place at;
    struct access_shape shape;
    cr_assert_eq(launch_memo_find(k, &at, &shape), 0);
    cr_assert_not_null(at.entry);
    launch_memo_keep(&at, k, &(struct access_shape){.slot = slot, .gen = 9});
}

static int found(const struct launch_key *k, uint32_t *slot)
{
    struct launch_memo_place at;
    struct access_shape shape = {0};
    int r = launch_memo_find(k, &at, &shape);
    if (slot)
        *slot = shape.slot;
    return r;
}

Test(launch_memo, found_under_the_same_key_only)
{
    struct launch_key k = key();
    keep(&k, 5);
    uint32_t slot = 0;
    cr_assert(found(&k, &slot));
    cr_assert_eq(slot, 5);

    uint64_t other[3];
    memcpy(other, cand, sizeof other);
    other[2] += 8;
    struct launch_key v[6];
    for (int i = 0; i < 6; i++)
        v[i] = key();
    v[0].version = 44; /* the registry moved */
    v[1].stream = 8;
    v[2].api = 0;
    v[3].reads = 0;
    v[4].ncand = 2;
    v[5].cand = other;
    for (int i = 0; i < 6; i++)
        cr_assert_not(found(&v[i], NULL), "key %d differs in one field", i);
    cr_assert(found(&k, NULL), "the misses changed nothing kept");
}

Test(launch_memo, a_launch_kept_again_replaces_itself)
{
    struct launch_key k = key();
    keep(&k, 5);
    struct launch_memo_place at;
    struct access_shape shape;
    cr_assert(launch_memo_find(&k, &at, &shape));
    launch_memo_keep(&at, &k, &(struct access_shape){.slot = 6, .gen = 1});
    uint32_t slot = 0;
    cr_assert(found(&k, &slot));
    cr_assert_eq(slot, 6);
}

Test(launch_memo, no_candidates_and_too_many)
{
    struct launch_key k = key();
    k.ncand = 0;
    keep(&k, 3);
    cr_assert(found(&k, NULL));
    k.ncand = LAUNCH_CANDS + 1;
    struct launch_memo_place at;
    struct access_shape shape;
    cr_assert_not(launch_memo_find(&k, &at, &shape));
    cr_assert_null(at.entry, "more candidates than an entry holds are never kept");
}

static void *other_thread(void *arg)
{
    return (void *)(intptr_t)found(arg, NULL);
}

Test(launch_memo, each_thread_has_its_own)
{
    struct launch_key k = key();
    keep(&k, 5);
    pthread_t t;
    void *r;
    cr_assert_eq(pthread_create(&t, NULL, other_thread, &k), 0);
    pthread_join(t, &r);
    cr_assert_eq((intptr_t)r, 0, "another thread's shapes are not this one's");
}

/* Find-or-keep k, as a launch does, then follow it with `hint`. */
static void launch(const struct launch_key *k, const void *hint, uint32_t slot)
{
    struct launch_memo_place at;
    struct access_shape shape = {.slot = slot, .gen = 1};
    if (!launch_memo_find(k, &at, &shape))
        launch_memo_keep(&at, k, &shape);
    launch_memo_follow(&at, hint, &shape);
}

Test(launch_memo, predicts_what_came_next_last_time)
{
    static const int fa, fb, fc; /* the hints: any addresses */
    struct launch_key a = key(), b = key(), c = key();
    b.fn = 0x5000;
    c.fn = 0x6000;
    launch(&a, &fa, 1);
    cr_assert_null(launch_memo_predicted(), "nothing came after a yet");
    launch(&b, &fb, 2);
    launch(&a, &fa, 1);
    cr_assert_eq(launch_memo_predicted(), &fb, "b came after a");
    launch(&c, &fc, 3); /* the guess was wrong: c now follows a */
    cr_assert_eq(launch_memo_predicted(), NULL, "nothing came after c yet");
    launch(&a, &fa, 1);
    cr_assert_eq(launch_memo_predicted(), &fc);

    struct launch_memo_place none = {0};
    launch_memo_follow(&none, NULL, NULL); /* a launch not kept: the chain starts over */
    cr_assert_null(launch_memo_predicted());
    launch(&b, &fb, 2); /* not recorded as following a */
    launch(&a, &fa, 1);
    cr_assert_eq(launch_memo_predicted(), &fc);
}

Test(launch_memo, a_replaced_entry_predicts_nothing)
{
    static const int fa, fb;
    struct launch_key a = key(), b = key();
    b.fn = 0x5000;
    launch(&a, &fa, 1);
    launch(&b, &fb, 2);
    struct launch_memo_place at;
    struct access_shape shape;
    cr_assert(launch_memo_find(&a, &at, &shape));
    launch_memo_keep(&at, &a, &(struct access_shape){.slot = 4, .gen = 2}); /* recorded anew */
    launch_memo_follow(&at, &fa, &(struct access_shape){.slot = 4, .gen = 2});
    cr_assert_null(launch_memo_predicted(), "what followed its old record says nothing now");
}

/* The entry that followed last time is looked at first, and found under its own key only. */
Test(launch_memo, the_predicted_entry_under_its_key_only)
{
    static const int fa, fb;
    struct launch_key a = key(), b = key();
    b.fn = 0x5000;
    launch(&a, &fa, 1);
    launch(&b, &fb, 2);
    launch(&a, &fa, 1);
    cr_assert_eq(launch_memo_predicted(), &fb);
    struct launch_key other = b;
    other.stream = 8;
    cr_assert_eq(found(&other, NULL), 0);
    uint64_t moved[3] = {cand[0], cand[1], cand[2] + 8};
    other = b;
    other.cand = moved;
    cr_assert_eq(found(&other, NULL), 0);
    other = b;
    other.version = 43;
    cr_assert_eq(found(&other, NULL), 0);
    uint32_t slot = 0;
    cr_assert(found(&b, &slot));
    cr_assert_eq(slot, 2);
}
