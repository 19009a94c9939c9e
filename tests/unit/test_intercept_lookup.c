/* intercept_lookup_wrap: the wrapper a cuGetProcAddress-style lookup hands out. No driver is
 * loaded here, so the real table starts empty and each lookup teaches it the pointer the
 * "driver" returned; C library functions stand in for driver functions (the shim refuses to
 * learn pointers into itself, and this test program is the shim when linked statically). */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <stdlib.h>

#include "intercept_driver.h"
#include "intercept_lookup.h"

#define PTDS CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

Test(intercept_lookup, rule_picks_the_abi_of_the_requested_version)
{
    cr_expect_eq(intercept_lookup_wrap("cuMemAlloc", 13000, 0, (void *)labs),
                 (void *)cuMemAlloc_v2);
    cr_expect_eq(intercept_lookup_wrap("cuMemFree", 2000, 0, (void *)ldiv), (void *)cuMemFree_v1);
    cr_expect_eq(intercept_lookup_wrap("cuGetProcAddress", 11030, 0, (void *)llabs),
                 (void *)cuGetProcAddress);
    cr_expect_eq(intercept_lookup_wrap("cuGetProcAddress", 12000, 0, (void *)lldiv),
                 (void *)cuGetProcAddress_v2);
}

Test(intercept_lookup, rule_keeps_the_stream_flavours_apart)
{
    cr_expect_eq(intercept_lookup_wrap("cuMemAllocAsync", 12000, PTDS, (void *)imaxabs),
                 (void *)cuMemAllocAsync_ptsz);
    cr_expect_eq(intercept_lookup_wrap("cuMemAllocAsync", 12000, 0, (void *)imaxdiv),
                 (void *)cuMemAllocAsync);
    /* A name without a per-thread flavour ignores the flag. */
    cr_expect_eq(intercept_lookup_wrap("cuMemCreate", 12000, PTDS, (void *)atoi),
                 (void *)cuMemCreate);
}

Test(intercept_lookup, identity_wins_over_the_rule)
{
    cr_assert_eq(intercept_lookup_wrap("cuMemGetInfo", 13000, 0, (void *)atol),
                 (void *)cuMemGetInfo_v2);
    /* The driver answered a v1 request with the function we know as _v2: trust the pointer. */
    cr_expect_eq(intercept_lookup_wrap("cuMemGetInfo", 2000, 0, (void *)atol),
                 (void *)cuMemGetInfo_v2);
}

Test(intercept_lookup, other_names_and_failures_pass_through)
{
    cr_expect_eq(intercept_lookup_wrap("cuStreamSynchronize", 13000, 0, (void *)atoll),
                 (void *)atoll);
    cr_expect_eq(intercept_lookup_wrap("cuMemAlloc", 13000, 0, NULL), NULL);
    cr_expect_eq(intercept_lookup_wrap(NULL, 13000, 0, (void *)atoll), (void *)atoll);
    cr_expect_eq(intercept_lookup_wrap("cuMemAllocPitch", 1000, 0, (void *)strtol),
                 (void *)strtol); /* older than any ABI we wrap */
    /* Our own wrapper handed back (the runtime's lookup over our cuGetProcAddress) stays. */
    cr_expect_eq(intercept_lookup_wrap("cuMemFree", 13000, 0, (void *)cuMemFree_v2),
                 (void *)cuMemFree_v2);
    cr_expect(intercept_lookup_is_wrapper((void *)cuMemAllocManaged));
    cr_expect(!intercept_lookup_is_wrapper((void *)atoll));
}
