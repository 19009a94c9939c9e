/* Options: every type's parser, sizes and percentages, and the one-line message of every bad
 * value (which names the variable and the accepted forms, and keeps the default). */
#include <criterion/criterion.h>

#include "core_util.h"
#include "options.h"

#include <stdlib.h>

static void reset(void)
{
    options_reset();
}

TestSuite(options, .init = reset);

Test(options, defaults)
{
    cr_assert_str_eq(options_str(OPT_TRACE), "");
    cr_assert_eq(options_uint(OPT_STACK_DEPTH), 24);
    cr_assert_eq(options_uint(OPT_FLUSH_MS), 200);
    cr_assert_str_eq(options_str(OPT_STEP_RANGE), "step*");
    cr_assert_eq(options_uint(OPT_POLICY), OPT_POLICY_FAIL);
    cr_assert_eq(options_uint(OPT_LOG), OPT_LOG_QUIET);
    cr_assert_eq(options_uint(OPT_ACCESS), OPT_ACCESS_ALL);
    cr_assert_eq(options_uint(OPT_SPILL_MIN), 2u << 20);
    cr_assert_eq(options_limit(0, 1000), 0, "no ceiling by default");
}

Test(options, sizes)
{
    struct opt_size s;
    cr_assert_eq(options_parse_size("0", 1, &s), 0);
    cr_assert_eq(s.bytes, 0);
    cr_assert_eq(options_parse_size("123", 1, &s), 0);
    cr_assert_eq(s.bytes, 123);
    cr_assert_eq(options_parse_size("4k", 1, &s), 0);
    cr_assert_eq(s.bytes, 4096);
    cr_assert_eq(options_parse_size("3M", 1, &s), 0);
    cr_assert_eq(s.bytes, 3ull << 20);
    cr_assert_eq(options_parse_size("12g", 1, &s), 0);
    cr_assert_eq(s.bytes, 12ull << 30);
    cr_assert_eq(options_parse_size("2TiB", 1, &s), 0);
    cr_assert_eq(s.bytes, 2ull << 40);
    cr_assert_eq(options_parse_size("5GB", 1, &s), 0);
    cr_assert_eq(s.bytes, 5ull << 30);
    cr_assert_eq(s.ppm, 0);
    const char *bad[] = {"",     "g",  "-1", "1x", "1 g",  "1gg",  "99999999999t",
                         "1.5g", "k1", "%",  "0%", "101%", "50%x", "1e9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(options_parse_size(bad[i], 1, &s), -1, "accepted '%s'", bad[i]);
}

Test(options, percentages)
{
    struct opt_size s;
    cr_assert_eq(options_parse_size("50%", 1, &s), 0);
    cr_assert_eq(s.ppm, 500000);
    cr_assert_eq(options_parse_size("12.5%", 1, &s), 0);
    cr_assert_eq(s.ppm, 125000);
    cr_assert_eq(options_parse_size("100%", 1, &s), 0);
    cr_assert_eq(s.ppm, 1000000);
    cr_assert_eq(options_parse_size("50%", 0, &s), -1, "percent where not allowed");

    cr_assert_eq(options_set(OPT_LIMIT, 0, "25%"), 0);
    cr_assert(options_limit_is_percent(0));
    cr_assert_eq(options_limit(0, 16ull << 30), 4ull << 30);
    cr_assert_eq(options_limit(3, 0), 0, "unresolved while the total is unknown");
}

Test(options, per_device_limit_overrides)
{
    cr_assert_eq(options_set(OPT_LIMIT, 0, "8g"), 0);
    cr_assert_eq(options_set(OPT_LIMIT_DEVICE, 1, "2g"), 0);
    cr_assert_eq(options_limit(0, 0), 8ull << 30);
    cr_assert_eq(options_limit(1, 0), 2ull << 30);
    cr_assert_eq(options_limit(2, 0), 8ull << 30);
}

Test(options, load_reads_environment)
{
    setenv("MEMSHIM_LIMIT", "1g", 1);
    setenv("MEMSHIM_LIMIT_3", "10%", 1);
    setenv("MEMSHIM_STACK_DEPTH", "0", 1);
    setenv("MEMSHIM_POLICY", "Spill", 1);
    setenv("MEMSHIM_TRACE", "/tmp/x-%p.mst", 1);
    options_load();
    cr_assert_eq(options_limit(0, 0), 1ull << 30);
    cr_assert_eq(options_limit(3, 1000), 100);
    cr_assert_eq(options_uint(OPT_STACK_DEPTH), 0);
    cr_assert_eq(options_uint(OPT_POLICY), OPT_POLICY_SPILL);
    cr_assert_str_eq(options_str(OPT_TRACE), "/tmp/x-%p.mst");
}

struct bad_case {
    enum options_id id;
    const char *value;
    const char *message;
};

Test(options, every_bad_value_message)
{
    static const struct bad_case cases[] = {
        {OPT_LIMIT, "12x",
         "memshim: MEMSHIM_LIMIT=12x: expected bytes with an optional k/m/g/t suffix (base 1024) "
         "or N% of device memory; using the default (0)\n"},
        {OPT_LIMIT_DEVICE, "lots",
         "memshim: MEMSHIM_LIMIT_2=lots: expected bytes with an optional k/m/g/t suffix (base "
         "1024) or N% of device memory; using the default (unset)\n"},
        {OPT_POLICY, "swap",
         "memshim: MEMSHIM_POLICY=swap: expected fail, spill, recompute or auto; using the "
         "default (fail)\n"},
        {OPT_HOST_LIMIT, "-5",
         "memshim: MEMSHIM_HOST_LIMIT=-5: expected bytes with an optional k/m/g/t suffix (base "
         "1024) or N% of host memory; using the default (50%)\n"},
        {OPT_STACK_DEPTH, "65",
         "memshim: MEMSHIM_STACK_DEPTH=65: expected an integer from 0 to 64; using the default "
         "(24)\n"},
        {OPT_FLUSH_MS, "0",
         "memshim: MEMSHIM_FLUSH_MS=0: expected milliseconds from 1 to 60000; using the default "
         "(200)\n"},
        {OPT_LOG, "loud",
         "memshim: MEMSHIM_LOG=loud: expected quiet, info or debug; using the default (quiet)\n"},
        {OPT_ACCESS, "some",
         "memshim: MEMSHIM_ACCESS=some: expected off, gemm or all; using the default (all)\n"},
        {OPT_SPILL_MIN, "5%",
         "memshim: MEMSHIM_SPILL_MIN=5%: expected bytes with an optional k/m/g/t suffix (base "
         "1024), at most 1t; using the default (2m)\n"},
        {OPT_SPILL_MIN, "8388609t",
         "memshim: MEMSHIM_SPILL_MIN=8388609t: expected bytes with an optional k/m/g/t suffix "
         "(base 1024), at most 1t; using the default (2m)\n"},
        {OPT_POLICY, "spill\nmemshim: forged",
         "memshim: MEMSHIM_POLICY=spill?memshim: forged: expected fail, spill, recompute or auto; "
         "using the default (fail)\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        options_reset();
        core_stderr_begin();
        int r = options_set(cases[i].id, 2, cases[i].value);
        const char *out = core_stderr_end();
        cr_expect_eq(r, -1, "%s accepted", cases[i].value);
        cr_expect_str_eq(out, cases[i].message);
    }
    cr_assert_eq(options_uint(OPT_SPILL_MIN), 2u << 20, "default kept");
}

Test(options, bad_environment_keeps_default)
{
    setenv("MEMSHIM_FLUSH_MS", "soon", 1);
    setenv("MEMSHIM_STACK_DEPTH", "12", 1);
    core_stderr_begin();
    options_load();
    const char *out = core_stderr_end();
    cr_assert_str_eq(out, "memshim: MEMSHIM_FLUSH_MS=soon: expected milliseconds from 1 to 60000; "
                          "using the default (200)\n");
    cr_assert_eq(options_uint(OPT_FLUSH_MS), 200);
    cr_assert_eq(options_uint(OPT_STACK_DEPTH), 12, "good values beside a bad one still apply");
}

Test(options, strings_too_long_are_rejected)
{
    char big[2048];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    core_stderr_begin();
    cr_assert_eq(options_set(OPT_TRACE, 0, big), -1);
    const char *out = core_stderr_end();
    cr_assert(strstr(out, "MEMSHIM_TRACE=") && strstr(out, "longer than 1023 characters"), "%s",
              out);
}

/* Not privileged here: the file-naming variables are read like the others. */
Test(options, file_variables_read_when_not_privileged)
{
    setenv("MEMSHIM_RULES", "/some/rules", 1);
    core_stderr_begin();
    options_load();
    const char *out = core_stderr_end();
    cr_assert_str_eq(out, "");
    cr_assert_str_eq(options_str(OPT_RULES), "/some/rules");
    unsetenv("MEMSHIM_RULES");
}
