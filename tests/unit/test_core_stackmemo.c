/* stackmemo: a remembered stack is exactly what libunwind's unw_backtrace reports, the first
 * time and every time after, whichever way the same stack depth is reached and on any thread. */
#define UNW_LOCAL_ONLY
#include <criterion/criterion.h>
#include <libunwind.h>

#include "stackmemo.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#define WANT 40

static void setup(void)
{
    stackmemo_init(WANT);
}

TestSuite(stackmemo, .init = setup);

/* The guess probe passes (per thread: threads call it too), and the frames it got. */
static __thread void *const *probe_hint;
static __thread void *const *probe_got;

/* Both unwinds from one frame; frame 0 is where each was called, so only it may differ. 1 when
 * they agree (no assertion here: threads call it too). */
__attribute__((noinline)) static int probe(int want, uintptr_t *out, uint64_t *chain_out)
{
    void *memo[WANT], *ref[WANT];
    uint64_t chain;
    void *const *frames;
    int nm = stackmemo_backtrace(memo, want, &chain, &frames, probe_hint);
    probe_got = frames != memo ? frames : NULL;
    int nr = unw_backtrace(ref, want);
    int where = frames == memo || chain; /* only a remembered stack is left in the table */
    if (frames != memo)
        memcpy(memo, frames, (size_t)nm * sizeof *memo);
    int same = where && nm == nr && nm >= 3 &&
               memcmp(memo + 1, ref + 1, (size_t)(nm - 1) * sizeof *memo) == 0;
    if (out)
        memcpy(out, memo + 1, 2 * sizeof *out);
    if (chain_out)
        *chain_out = chain;
    __asm__ volatile("" ::: "memory");
    return same;
}

__attribute__((noinline)) static int mid(int want, uintptr_t *out, uint64_t *chain)
{
    int same = probe(want, out, chain);
    __asm__ volatile("" ::: "memory");
    return same;
}

/* Same body, so the same frame size: probe runs at the same stack depth under either (noipa:
 * not folded into one function). */
__attribute__((noipa)) static int caller_a(int want, uintptr_t *out, uint64_t *chain)
{
    int same = mid(want, out, chain);
    __asm__ volatile("" ::: "memory");
    return same;
}

__attribute__((noipa)) static int caller_b(int want, uintptr_t *out, uint64_t *chain)
{
    int same = mid(want, out, chain);
    __asm__ volatile("" ::: "memory");
    return same;
}

Test(stackmemo, same_frames_as_libunwind_again_and_again)
{
    for (int i = 0; i < 5; i++) {
        cr_assert(probe(WANT / 2, NULL, NULL), "round %d", i);
        cr_assert(mid(WANT / 2, NULL, NULL), "round %d", i);
    }
}

Test(stackmemo, two_callers_at_one_depth_stay_apart)
{
    uintptr_t a[2], b[2];
    uint64_t ca[10], cb[10];
    for (int i = 0; i < 10; i++) {
        cr_assert(caller_a(WANT / 2, a, &ca[i]) && caller_b(WANT / 2, b, &cb[i]), "round %d", i);
        cr_assert_eq(a[0], b[0], "both reach probe through mid");
        cr_assert_neq(a[1], b[1], "mid's caller: a and b are different functions");
    }
    /* Each stack keeps one number once remembered, and the two never share one. */
    cr_assert(ca[9] && cb[9] && ca[9] != cb[9]);
    cr_assert(ca[8] == ca[9] && cb[8] == cb[9]);
}

/* `d` more frames between mid and the caller, all alike: the stacks under deep_a and deep_b
 * differ only in the return address into them, frame d + 3 (probe, mid, d + 1 of these). */
__attribute__((noipa)) static int nest(int d, int want)
{
    int same = d ? nest(d - 1, want) : mid(want, NULL, NULL);
    __asm__ volatile("" ::: "memory");
    return same;
}

__attribute__((noipa)) static int deep_a(int d, int want)
{
    int same = nest(d, want);
    __asm__ volatile("" ::: "memory");
    return same;
}

__attribute__((noipa)) static int deep_b(int d, int want)
{
    int same = nest(d, want);
    __asm__ volatile("" ::: "memory");
    return same;
}

/* `e` frames further out, the same for both: the stack is deep enough for all `want` frames
 * wherever the changed one lies. */
__attribute__((noipa)) static int outer(int e, int b, int d, int want)
{
    int same = e ? outer(e - 1, b, d, want) : b ? deep_b(d, want) : deep_a(d, want);
    __asm__ volatile("" ::: "memory");
    return same;
}

/* Wherever in a remembered stack its one changed frame lies, and however many frames it has,
 * the check finds it: each slot position against each way of grouping the slots. */
Test(stackmemo, a_change_at_any_depth_is_seen)
{
    static const int wants[] = {3, 8, 9, 10, 12, 16, 17, 18, 20, 24, 25, 28, 33, WANT};
    for (size_t w = 0; w < sizeof wants / sizeof *wants; w++)
        for (int d = 0; d + 4 <= wants[w]; d++)
            for (int i = 0; i < 2; i++)
                cr_assert(outer(wants[w], 0, d, wants[w]) && outer(wants[w], 1, d, wants[w]),
                          "want %d, frame %d", wants[w], d + 3);
}

Test(stackmemo, a_stack_shorter_than_asked)
{
    for (int i = 0; i < 3; i++)
        cr_assert(mid(WANT, NULL, NULL)); /* Criterion's thread is far less than 40 frames deep */
}

Test(stackmemo, asking_for_more_than_remembered)
{
    void *memo[WANT + 8], *ref[WANT + 8];
    uint64_t chain;
    void *const *frames;
    int nm = stackmemo_backtrace(memo, WANT + 8, &chain, &frames, NULL);
    cr_assert(frames == memo);
    cr_assert_eq(chain, 0, "more frames than an entry holds are not remembered");
    int nr = unw_backtrace(ref, WANT + 8);
    cr_assert_eq(nm, nr);
    cr_assert(memcmp(memo + 1, ref + 1, (size_t)(nm - 1) * sizeof *memo) == 0);
}

static void *thread_main(void *arg)
{
    int *same = arg;
    for (int i = 0; i < 3; i++)
        *same &= caller_a(WANT / 2, NULL, NULL) & caller_b(WANT / 2, NULL, NULL);
    return NULL;
}

/* More threads over time than tables at once: an exited thread's table serves the next. */
Test(stackmemo, threads_one_after_another)
{
    for (int i = 0; i < 40; i++) {
        pthread_t t;
        int same = 1;
        cr_assert_eq(pthread_create(&t, NULL, thread_main, &same), 0);
        cr_assert_eq(pthread_join(t, NULL), 0);
        cr_assert(same, "thread %d", i);
    }
}

/* A stack of the program's own (a fiber's): unwound every time, never remembered, since the
 * program may free it and map a smaller one in its place. */
static ucontext_t fiber_ctx, main_ctx;
static int fiber_same;
static uint64_t fiber_chain[2];

static void fiber_main(void)
{
    fiber_same = probe(WANT / 2, NULL, &fiber_chain[0]) & probe(WANT / 2, NULL, &fiber_chain[1]);
}
/* A guess is only a guess: the other stack with the same key, or a pointer that is no entry,
 * gives the frames libunwind gives, and the right one the same stack under the same number. */
/* caller_a's or caller_b's probe, under a guess, from one place: the same stack each time. */
__attribute__((noinline)) static uint64_t guessed(int b, void *const *hint, void *const **got)
{
    uint64_t chain = 0;
    probe_hint = hint;
    int same = b ? caller_b(WANT / 2, NULL, &chain) : caller_a(WANT / 2, NULL, &chain);
    probe_hint = NULL;
    *got = probe_got;
    return same ? chain : 0;
}

/* Round i's guess: rounds 0-5 none (both stacks are learnt), then each stack guessed as the
 * other, as no entry, and right. Not inlined: the loop below must keep one call of `guessed`. */
__attribute__((noipa)) static void *const *round_hint(int i, void *const *const *frames)
{
    static void *junk[2];
    int b = i % 2, kind = i < 6 ? 0 : 1 + i / 2 % 3;
    return kind == 0 ? NULL : kind == 1 ? frames[!b] : kind == 2 ? (void *const *)junk : frames[b];
}

Test(stackmemo, a_wrong_guess_never_gives_its_frames)
{
    uint64_t chain[2] = {0, 0};
    void *const *frames[2] = {NULL, NULL};
    for (int i = 0; i < 18; i++) {
        void *const *got;
        uint64_t c = guessed(i % 2, round_hint(i, frames), &got);
        if (i < 6) {
            chain[i % 2] = c;
            frames[i % 2] = got;
        } else {
            cr_assert(frames[0] && frames[1] && frames[0] != frames[1], "both remembered");
            cr_assert(chain[0] && chain[1] && chain[0] != chain[1]);
            cr_assert_eq(c, chain[i % 2], "round %d", i);
            cr_assert_eq(got, frames[i % 2], "round %d", i);
        }
    }
}

Test(stackmemo, a_fiber_stack_is_not_remembered)
{
    size_t size = 256 * 1024;
    void *stack = malloc(size);
    cr_assert(stack);
    cr_assert_eq(getcontext(&fiber_ctx), 0);
    fiber_ctx.uc_stack.ss_sp = stack;
    fiber_ctx.uc_stack.ss_size = size;
    fiber_ctx.uc_link = &main_ctx;
    makecontext(&fiber_ctx, fiber_main, 0);
    cr_assert_eq(swapcontext(&main_ctx, &fiber_ctx), 0);
    free(stack);
    cr_assert(fiber_same, "on the fiber, the frames are unw_backtrace's");
    cr_assert(fiber_chain[0] == 0 && fiber_chain[1] == 0, "nothing remembered on the fiber");
    uint64_t chain[2];
    cr_assert(probe(WANT / 2, NULL, &chain[0]) && probe(WANT / 2, NULL, &chain[1]));
    cr_assert(chain[1] != 0, "the thread's own stack still is");
}
