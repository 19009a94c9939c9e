/* pystack in a process without Python: every entry point degrades to "no Python frames", and
 * MEMSHIM_PY_STACKS parses its five words. (With Python: tests/e2e/pystack_check.py.) */
#include <criterion/criterion.h>

#include "callsite.h"
#include "log.h"
#include "options.h"
#include "pystack.h"

Test(pystack, option_words)
{
    options_reset();
    cr_assert_eq(options_uint(OPT_PY_STACKS), PYSTACK_AUTO);
    const char *words[] = {"auto", "on", "off", "1", "0"};
    for (unsigned i = 0; i < 5; i++) {
        cr_assert_eq(options_set(OPT_PY_STACKS, 0, words[i]), 0);
        cr_assert_eq(options_uint(OPT_PY_STACKS), i);
    }
    log_mute(1);
    cr_assert_eq(options_set(OPT_PY_STACKS, 0, "yes"), -1);
    log_mute(0);
    cr_assert_eq(options_uint(OPT_PY_STACKS), PYSTACK_OFF_0, "a bad value keeps the previous");
}

Test(pystack, without_python_nothing_is_captured)
{
    log_mute(1); /* `on` says once that no interpreter was found */
    pystack_init(PYSTACK_ON_1);
    uint64_t keys[8];
    cr_assert_eq(pystack_capture(keys, 8), 0);
    cr_assert_eq(pystack_available(), 0);
    log_mute(0);
    const char *file, *fn;
    uint32_t fid, line;
    cr_assert_eq(pystack_describe(PYSTACK_KEY_BIT | 1ull << 32 | 7, &file, &fid, &fn, &line), -1);
    cr_assert(pystack_is_key(PYSTACK_KEY_BIT | 5));
    cr_assert(!pystack_is_key((uint64_t)(uintptr_t)&keys));
    cr_assert(!pystack_in_interpreter((uint64_t)(uintptr_t)&pystack_capture));
    /* Call sites are still captured, native frames only. */
    callsite_init(8, 2);
    cr_assert_neq(callsite_capture(), 0);
}
