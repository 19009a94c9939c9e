/* handle_maps: a handle released while mapped is freed at its last unmap, never before, and
 * the table keeps its answers across growth and deletions. */
#include <criterion/criterion.h>

#include "handle_maps.h"

static void reset(void)
{
    handle_maps_reset();
}

TestSuite(handle_maps, .init = reset);

Test(handle_maps, unmapped_handle_frees_at_release)
{
    cr_assert_eq(handle_maps_release(0x1000), 0);
    handle_maps_add(0x2000);
    cr_assert_eq(handle_maps_remove(0x2000), 0, "not released: nothing to free at the unmap");
    cr_assert_eq(handle_maps_release(0x2000), 0, "no mapping left: freed at the release");
}

Test(handle_maps, released_while_mapped_frees_at_last_unmap)
{
    handle_maps_add(0x3000);
    handle_maps_add(0x3000);
    cr_assert_eq(handle_maps_release(0x3000), 1);
    cr_assert_eq(handle_maps_remove(0x3000), 0, "one mapping still holds it");
    cr_assert_eq(handle_maps_remove(0x3000), 1, "the last unmap frees it");
    cr_assert_eq(handle_maps_remove(0x3000), 0, "forgotten after that");
}

Test(handle_maps, many_handles_survive_growth_and_deletion)
{
    enum { N = 5000 };
    for (uint64_t i = 1; i <= N; i++)
        handle_maps_add(i * 0x200000);
    for (uint64_t i = 1; i <= N; i += 2) /* odd ones: released while mapped */
        cr_assert_eq(handle_maps_release(i * 0x200000), 1, "handle %llu", (unsigned long long)i);
    for (uint64_t i = 1; i <= N; i++)
        cr_assert_eq(handle_maps_remove(i * 0x200000), (int)(i & 1), "handle %llu",
                     (unsigned long long)i);
    for (uint64_t i = 2; i <= N; i += 2) /* even ones: no mapping left */
        cr_assert_eq(handle_maps_release(i * 0x200000), 0, "handle %llu", (unsigned long long)i);
}
