/* The cost model's pure parts: MEMSHIM_COSTS / whatif --costs syntax (costs_parse), its
 * arithmetic (costs_ns_at, costs_spill_ns, measure_rate), and the option's message for a bad
 * value. */
#include <criterion/criterion.h>

#include "core_util.h"
#include "costs_parse.h"
#include "measure.h"
#include "options.h"

#include <string.h>

Test(costs, full_and_partial)
{
    struct costs_rates r;
    cr_assert_eq(costs_parse("h2d=12g,d2h=12g,gemm=50t", &r), 0);
    cr_assert_eq(r.h2d_bytes_per_s, 12000000000ull);
    cr_assert_eq(r.d2h_bytes_per_s, 12000000000ull);
    cr_assert_eq(r.gemm_flops_per_s, 50000000000000ull);
    cr_assert_eq(costs_parse("gemm=1.5T", &r), 0);
    cr_assert_eq(r.gemm_flops_per_s, 1500000000000ull);
    cr_assert_eq(r.h2d_bytes_per_s, 0, "left out: measured");
    cr_assert_eq(r.d2h_bytes_per_s, 0);
    cr_assert_eq(costs_parse("d2h=800000,h2d=2.25k", &r), 0, "any order, no suffix");
    cr_assert_eq(r.d2h_bytes_per_s, 800000);
    cr_assert_eq(r.h2d_bytes_per_s, 2250);
    cr_assert_eq(costs_parse("", &r), 0, "empty: nothing forced");
    cr_assert_eq(r.h2d_bytes_per_s + r.d2h_bytes_per_s + r.gemm_flops_per_s, 0);
    cr_assert_eq(costs_parse("h2d=18446744073709551615", &r), 0);
    cr_assert_eq(r.h2d_bytes_per_s, UINT64_MAX);
    cr_assert_eq(costs_parse("h2d=0.0000000000015t", &r), 0, "fraction digits beyond 12 ignored");
    cr_assert_eq(r.h2d_bytes_per_s, 1);
}

Test(costs, malformed)
{
    static const char *const bad[] = {
        "h2d",
        "h2d=",
        "=12g",
        "h2d=12x",
        "h2d=12gb",
        "h2d=-1",
        "h2d=0",
        "h2d=0.0g",
        "h2d=1.",
        "h2d=.5g",
        "link=5g",
        "H2D=5g",
        "h2d=1g,",
        ",h2d=1g",
        "h2d=1g,,",
        "h2d=1g,h2d=2g",
        "h2d= 1g",
        "h2d=1g ",
        "gemm=18446744073709551616",
        "gemm=18446744073709552t",
        "h2d=1e9",
        "h2d=1g=2g",
    };
    struct costs_rates r = {7, 8, 9};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_eq(costs_parse(bad[i], &r), -1, "'%s' accepted", bad[i]);
        cr_expect_eq(r.h2d_bytes_per_s, 7, "'%s': output changed", bad[i]);
    }
    cr_assert_eq(costs_parse(NULL, &r), -1);
    uint64_t v = 0;
    cr_assert_eq(costs_parse_rate("3k", 1, &v), 0, "len bounds the read");
    cr_assert_eq(v, 3);
}

Test(costs, arithmetic)
{
    cr_assert_eq(costs_ns_at(12000000000ull, 12000000000ull), 1000000000ull);
    cr_assert_eq(costs_ns_at(1, 3), 333333334, "rounded up");
    cr_assert_eq(costs_ns_at(0, 5), 0);
    cr_assert_eq(costs_ns_at(5, 0), COSTS_UNKNOWN_NS, "unknown rate");
    cr_assert_eq(costs_ns_at(UINT64_MAX, 1), COSTS_UNKNOWN_NS - 1, "saturates below unknown");
    /* 8 MiB out at 4 GB/s, back at 8 GB/s */
    cr_assert_eq(costs_spill_ns(8000000, 4000000000ull, 8000000000ull), 2000000 + 1000000);
    cr_assert_eq(costs_spill_ns(8, 0, 8), COSTS_UNKNOWN_NS);
    cr_assert_eq(costs_spill_ns(8, 8, 0), COSTS_UNKNOWN_NS);
    cr_assert_eq(costs_spill_ns(UINT64_MAX, 1, 1), COSTS_UNKNOWN_NS - 1);
    cr_assert_eq(measure_rate(8 << 20, 1000000), (uint64_t)(8 << 20) * 1000);
    cr_assert_eq(measure_rate(5, 0), 0);
    cr_assert_eq(measure_rate(UINT64_MAX, 1), UINT64_MAX, "saturates");
}

Test(costs, option_reports_bad_value)
{
    options_reset();
    cr_assert_str_eq(options_str(OPT_COSTS), "", "unset by default: everything measured");
    cr_assert_eq(options_set(OPT_COSTS, 0, "h2d=12g,gemm=50t"), 0);
    cr_assert_str_eq(options_str(OPT_COSTS), "h2d=12g,gemm=50t");
    core_stderr_begin();
    int r = options_set(OPT_COSTS, 0, "h2d=fast");
    const char *out = core_stderr_end();
    cr_assert_eq(r, -1);
    cr_assert_str_eq(out, "memshim: MEMSHIM_COSTS=h2d=fast: expected " COSTS_FORMS
                          "; using the default (unset)\n");
    cr_assert_str_eq(options_str(OPT_COSTS), "h2d=12g,gemm=50t", "previous value kept");
}
