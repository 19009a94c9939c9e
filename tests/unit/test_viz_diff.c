/* diff on two hand-made traces (viz_scenario.h) whose numbers are worked out by hand:
 *   A (activations 8 MiB each): peak 48 MiB at t=13000 = parameter 32 + activation 16.
 *   B (activations 4 MiB each): activations reach only 40; the peak is 44 MiB at t=31000 =
 *     parameter 32 + optimizer_state 8 + unknown 4 (scratch). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diff.h"
#include "viz_scenario.h"

#define MIB VIZ_MIB

static char a[64], b[64];
static struct diff_result r;

static void write_trace(char *path, uint64_t activation_mib)
{
    strcpy(path, "/tmp/viz_diff_XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    struct viz_scenario s = {.activation_mib = activation_mib};
    cr_assert_gt(viz_scenario_write(path, &s), 0);
}

static void setup(void)
{
    write_trace(a, 8);
    write_trace(b, 4);
    char err[256];
    cr_assert_eq(diff_traces(a, b, &r, err, sizeof err), 0, "%s", err);
}

static void teardown(void)
{
    diff_result_free(&r);
    unlink(a);
    unlink(b);
}

TestSuite(viz_diff, .init = setup, .fini = teardown);

Test(viz_diff, peaks)
{
    cr_expect_eq(r.peak[0], 48 * MIB);
    cr_expect_eq(r.peak[1], 44 * MIB);
    cr_expect_eq(r.peak_time_ns[0], 13000);
    cr_expect_eq(r.peak_time_ns[1], 31000);
    cr_expect_eq(r.peak_step[0], 0);
    cr_expect_eq(r.peak_step[1], 1);
}

Test(viz_diff, categories_at_peak_and_most_at_once)
{
    const struct diff_row *c = r.categories;
    cr_expect_eq(c[MST_CAT_PARAMETER].at_peak[0], 32 * MIB);
    cr_expect_eq(c[MST_CAT_PARAMETER].at_peak[1], 32 * MIB);
    cr_expect_eq(c[MST_CAT_ACTIVATION].at_peak[0], 16 * MIB);
    cr_expect_eq(c[MST_CAT_ACTIVATION].at_peak[1], 0);
    cr_expect_eq(c[MST_CAT_ACTIVATION].max[1], 8 * MIB);
    cr_expect_eq(c[MST_CAT_OPTIMIZER_STATE].at_peak[0], 0);
    cr_expect_eq(c[MST_CAT_OPTIMIZER_STATE].at_peak[1], 8 * MIB);
    cr_expect_eq(c[MST_CAT_UNKNOWN].at_peak[1], 4 * MIB);
    cr_expect_eq(c[MST_CAT_UNKNOWN].max[0], 4 * MIB);
    /* the categories at each peak add up to the peak */
    uint64_t sum[2] = {0, 0};
    for (int i = 0; i < MST_CATEGORY_MAX; i++)
        sum[0] += c[i].at_peak[0], sum[1] += c[i].at_peak[1];
    cr_expect_eq(sum[0], r.peak[0]);
    cr_expect_eq(sum[1], r.peak[1]);
}

static const struct diff_row *site(const char *name)
{
    for (size_t i = 0; i < r.nsites; i++)
        if (strncmp(r.sites[i].name, name, strlen(name)) == 0)
            return &r.sites[i];
    return NULL;
}

Test(viz_diff, sites_matched_by_stack_and_sorted_by_change)
{
    cr_assert_eq(r.nsites, 4);
    const struct diff_row *fwd = site("forward"), *params = site("init_params"),
                          *adam = site("adam_step"), *scratch = site("scratch");
    cr_assert(fwd && params && adam && scratch);
    cr_expect_eq(fwd->at_peak[0], 16 * MIB);
    cr_expect_eq(fwd->at_peak[1], 0);
    cr_expect_eq(fwd->max[0], 16 * MIB);
    cr_expect_eq(fwd->max[1], 8 * MIB);
    cr_expect_eq(params->at_peak[0], 32 * MIB);
    cr_expect_eq(params->at_peak[1], 32 * MIB);
    cr_expect_eq(adam->at_peak[1], 8 * MIB);
    cr_expect_eq(scratch->at_peak[1], 4 * MIB);
    /* |delta|: forward 16, adam 8, scratch 4, init_params 0 */
    cr_expect_eq(&r.sites[0], fwd);
    cr_expect_eq(&r.sites[1], adam);
    cr_expect_eq(&r.sites[2], scratch);
    cr_expect_eq(&r.sites[3], params);
    cr_expect(strstr(fwd->stack, "\nmain"), "stack: %s", fwd->stack);
}

static char *print(void (*fn)(FILE *, const struct diff_result *, size_t))
{
    char *data = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&data, &len);
    fn(f, &r, 20);
    fclose(f);
    return data;
}

Test(viz_diff, text_and_json)
{
    char *text = print(diff_print_text);
    cr_expect(strstr(text, "peak                   48 MiB       44 MiB        -4 MiB    0.92"),
              "%s", text);
    cr_expect(strstr(text, "activation             16 MiB          0 B       -16 MiB    0.00"));
    cr_expect(strstr(text, "optimizer_state           0 B        8 MiB        +8 MiB     new"));
    free(text);
    char *json = print(diff_print_json);
    cr_expect(strstr(json, "\"peak\":{\"a\":50331648,\"b\":46137344,\"delta\":-4194304,"
                           "\"ratio\":0.916667}"),
              "%s", json);
    cr_expect(strstr(json, "{\"category\":\"optimizer_state\",\"a\":0,\"b\":8388608,"
                           "\"delta\":8388608,\"ratio\":null,\"max_a\":8388608,"
                           "\"max_b\":8388608}"));
    cr_expect(strstr(json, "\"sites_total\":4}"));
    free(json);
}
