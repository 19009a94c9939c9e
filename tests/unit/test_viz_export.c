/* The exports on the hand-made scenario (viz_scenario.h): one CSV row per event, the
 * Perfetto counters and instants, the memory_viz actions. The full structural checks with
 * Python's json and pickle are in tests/e2e/viz_check.py. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export_csv.h"
#include "export_memviz.h"
#include "export_perfetto.h"
#include "viz_scenario.h"

static char trace[64];
static int events;

static void make_trace(void)
{
    strcpy(trace, "/tmp/viz_export_XXXXXX");
    int fd = mkstemp(trace);
    cr_assert_geq(fd, 0);
    close(fd);
    struct viz_scenario s = {
        .with_ceiling = 1, .with_spill = 1, .with_oom = 1, .activation_mib = 8};
    events = viz_scenario_write(trace, &s);
    cr_assert_gt(events, 0);
}

static void remove_trace(void)
{
    unlink(trace);
}

static char *capture(int (*fn)(FILE *), size_t *len)
{
    char *data = NULL;
    FILE *f = open_memstream(&data, len);
    cr_assert_not_null(f);
    cr_assert_eq(fn(f), 0);
    fclose(f);
    return data;
}

static size_t count(const char *hay, size_t len, const char *needle)
{
    size_t n = 0, k = strlen(needle);
    for (const char *p = hay; (p = memmem(p, len - (size_t)(p - hay), needle, k)); p += k)
        n++;
    return n;
}

static int csv(FILE *f)
{
    char err[256];
    return export_csv(trace, f, 1, err, sizeof err) == events ? 0 : -1;
}

TestSuite(viz_export, .init = make_trace, .fini = remove_trace);

Test(viz_export, csv_has_one_row_per_event)
{
    size_t len;
    char *out = capture(csv, &len);
    cr_expect_eq(count(out, len, "\n"), (size_t)events + 1); /* and the header */
    static const char header[] =
        "time_ns,event,addr,size,category,kind,step,phase,site,mode,shape,flops\n";
    cr_expect(strncmp(out, header, sizeof header - 1) == 0);
    /* P1: no step yet, no phase; A1: step 0, phase forward */
    cr_expect(
        strstr(out, "\n2000,alloc,0x10000000000,16777216,parameter,cudaMalloc,,,init_params"));
    cr_expect(strstr(out, "\n12000,alloc,0x10020000000,8388608,activation,cudaMalloc,0,forward,"
                          "forward"));
    cr_expect(strstr(out, "\n14000,spill,0x10020000000,8388608,activation,"));
    cr_expect(strstr(out, "\n16000,oom,,134217728,"));
    cr_expect(strstr(out, "\n30000,step,,,,,1,"));
    free(out);
}

static int perfetto(FILE *f)
{
    char err[256];
    char *paths[] = {trace};
    return export_perfetto(paths, 1, 0, f, err, sizeof err);
}

/* Every sample names every category, zeros included: Chrome's viewer draws only the series
 * of the first sample. */
#define RESIDENT_13US                                                                              \
    "\"args\":{\"unknown\":0,\"parameter\":33554432,\"gradient\":0,\"optimizer_state\":0,"         \
    "\"activation\":16777216,\"kv_cache\":0,\"workspace\":0,\"temporary\":0,\"communication\":0,"  \
    "\"input\":0}}"

Test(viz_export, perfetto_counters_instants_and_slices)
{
    size_t len;
    char *out = capture(perfetto, &len);
    cr_expect(strncmp(out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 39) == 0);
    cr_expect_eq(count(out, len, "\"name\":\"resident\""), 11);
    cr_expect(strstr(
        out,
        "\"ph\":\"C\",\"pid\":777,\"tid\":0,\"name\":\"resident\",\"ts\":13.000," RESIDENT_13US));
    cr_expect(strstr(out, "\"name\":\"ceiling\",\"ts\":"));
    cr_expect(strstr(out, "\"args\":{\"bytes\":67108864}"));
    cr_expect_eq(count(out, len, "\"name\":\"OOM\""), 1);
    cr_expect_eq(count(out, len, "\"name\":\"spill\""), 1);
    cr_expect_eq(count(out, len, "\"name\":\"restore\""), 1);
    cr_expect_eq(count(out, len, "\"ph\":\"B\""), 3);
    cr_expect_eq(count(out, len, "\"ph\":\"E\""), 3);
    /* step 0 runs from 10 µs to step 1 at 30 µs, step 1 to the last event at 32 µs */
    cr_expect(strstr(out, "\"name\":\"step 0\",\"ts\":10.000,\"dur\":20.000}"));
    cr_expect(strstr(out, "\"name\":\"step 1\",\"ts\":30.000,\"dur\":2.000}"));
    cr_expect(strstr(out, "\"name\":\"thread_name\",\"args\":{\"name\":\"main\"}"));
    free(out);
}

static int perfetto_5us(FILE *f)
{
    char err[256];
    char *paths[] = {trace};
    return export_perfetto(paths, 1, 5000, f, err, sizeof err);
}

/* Windows of 5 µs: [0,5) gives its highest state (t=3000); [10,15) the peak at 13000 and its
 * end at 14000; [15,20) 15000 and 19000; [20,25) only 23000 (highest and last); [30,35)
 * 31000 and 32000: 8 counter events instead of 11. */
Test(viz_export, perfetto_resolution_keeps_the_peak)
{
    size_t len;
    char *out = capture(perfetto_5us, &len);
    cr_expect_eq(count(out, len, "\"name\":\"resident\""), 8);
    cr_expect(strstr(out, "\"name\":\"resident\",\"ts\":13.000," RESIDENT_13US));
    cr_expect(!strstr(out, "\"name\":\"resident\",\"ts\":12.000,"));
    free(out);
}

static int memviz(FILE *f)
{
    char err[256];
    return export_memviz(trace, f, err, sizeof err);
}

Test(viz_export, memviz_actions)
{
    size_t len;
    char *out = capture(memviz, &len);
    cr_assert_gt(len, 3);
    cr_expect_eq((unsigned char)out[0], 0x80);
    cr_expect_eq(out[1], 2);
    cr_expect_eq(out[len - 1], '.');
    /* repeated strings are written once and then fetched from the memo; the counts of each
     * action are checked by tests/e2e/viz_check.py, which unpickles the file */
    static const char *const words[] = {"\x0dsegment_alloc",
                                        "\x05"
                                        "alloc",
                                        "\x0e"
                                        "free_requested",
                                        "\x0e"
                                        "free_completed",
                                        "\x0csegment_free",
                                        "\x03oom",
                                        "\x06"
                                        "action",
                                        "\x0a"
                                        "activation"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        cr_expect_eq(count(out, len, words[i]), 1, "%s", words[i] + 1);
    /* the unknown allocation gives the viewer its 'unknown' category: no extra entry */
    cr_expect_eq(count(out, len, "\x08snapshot"), 0);
    cr_expect_eq(count(out, len, "\x07unknown"), 1);
    free(out);
}
