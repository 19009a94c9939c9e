/* callsite: interning gives one id per distinct stack, whichever way it is reached (a thread's
 * remembered stacks, the lock-free table, the tree), and none from before a reset. */
#include <criterion/criterion.h>

#include "callsite.h"

#include <stdint.h>

static void setup(void)
{
    callsite_init(48, 2);
    callsite_reset();
}

TestSuite(callsite, .init = setup);

/* Innermost first; a fake stack whose frames are not code (symbolized as unknown). */
static uint32_t intern(uint64_t outer, uint64_t inner, int n)
{
    void *ips[48];
    for (int i = 0; i < n; i++)
        ips[i] = (void *)(uintptr_t)(outer + (uint64_t)(n - 1 - i) * 0x10);
    ips[0] = (void *)(uintptr_t)inner;
    return callsite_intern(ips, n);
}

Test(callsite, one_id_per_stack)
{
    uint32_t a = intern(0x100000, 0x1000, 3);
    uint32_t b = intern(0x100000, 0x2000, 3); /* same callers, another innermost frame */
    uint32_t c = intern(0x200000, 0x1000, 3); /* same innermost frame, other callers */
    uint32_t d = intern(0x100000, 0x1000, 2); /* a prefix */
    cr_assert(a && b && c && d);
    cr_assert(a != b && a != c && a != d && b != c && b != d && c != d);
    for (int round = 0; round < 3; round++) { /* more stacks than a thread remembers */
        cr_assert_eq(intern(0x100000, 0x1000, 3), a);
        cr_assert_eq(intern(0x100000, 0x2000, 3), b);
        cr_assert_eq(intern(0x200000, 0x1000, 3), c);
        cr_assert_eq(intern(0x100000, 0x1000, 2), d);
    }
    uint32_t deep = intern(0x300000, 0x1000, 40); /* deeper than a remembered stack holds */
    cr_assert_neq(deep, 0);
    cr_assert_eq(intern(0x300000, 0x1000, 40), deep);
    cr_assert_neq(intern(0x300000, 0x2000, 40), deep);
}

Test(callsite, nothing_survives_a_reset)
{
    intern(0x100000, 0x2000, 3); /* ids 1..3 */
    uint32_t a = intern(0x200000, 0x1000, 3);
    cr_assert_eq(a, 6);
    cr_assert_eq(intern(0x200000, 0x1000, 3), a);
    callsite_reset(); /* a fork child: ids start again */
    cr_assert_eq(callsite_count(), 1);
    cr_assert_eq(intern(0x200000, 0x1000, 3), 3, "the stack is new to the fresh table");
    cr_assert_eq(callsite_count(), 4);
}
