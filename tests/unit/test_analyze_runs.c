/* `summary` of a folder of labelled runs: a table by label, not ranks; the estimate beside each
 * row from --config and the label's key=value pairs. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_capture.h"
#include "estimate.h"
#include "summary.h"
#include "tracegen.h"

static struct cli_output o;
static char dir[64];

static void write_run(const char *name, const char *label, uint32_t rank, uint64_t activation)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct tracegen_header h = {
        .pid = 7, .rank = rank, .host = "h", .stack_depth = 24, .label = label};
    struct tracegen *g = tracegen_new_file(path, &h);
    cr_assert_not_null(g);
    uint32_t th = tracegen_thread(g, 1, "main");
    tracegen_malloc(g, 10, th, 0xa000, 4096, MST_CAT_PARAMETER, 0, 0);
    tracegen_malloc(g, 20, th, 0x100000, activation, MST_CAT_ACTIVATION, 0, 0);
    cr_assert_eq(tracegen_finish(g), 0);
    tracegen_free(g);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/memshim-runs-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(runs, .init = setup, .fini = teardown);

/* Very different peaks, which as ranks would be an imbalance: as runs they are the answer. */
Test(runs, table_by_label)
{
    write_run("x.mst", "micro_batch=16", MST_NO_RANK, 16 << 20);
    write_run("y.mst", "micro_batch=2", MST_NO_RANK, 2 << 20);
    write_run("z.mst", "micro_batch=8", MST_NO_RANK, 8 << 20);
    cli_capture(&o, summary_command, "summary", dir, NULL);
    cr_assert_eq(o.rc, 0, "%s", o.err);
    cr_expect(strstr(o.out, "Runs: 3 traces") == o.out, "%s", o.out);
    cr_expect(!strstr(o.out, "IMBALANCE") && !strstr(o.out, "rank "), "%s", o.out);
    const char *a = strstr(o.out, "micro_batch=2 "), *b = strstr(o.out, "micro_batch=8 "),
               *c = strstr(o.out, "micro_batch=16 ");
    cr_expect(a && b && c && a < b && b < c, "rows in the labels' numeric order: %s", o.out);
    cr_expect(strstr(c, "16.0 MiB"), "activation at the peak: %s", c);

    cli_capture(&o, summary_command, "summary", "--json", dir, NULL);
    cr_assert_eq(o.rc, 0, "%s", o.err);
    cr_expect(strstr(o.out, "\"label\": \"micro_batch=2\""), "%s", o.out);
    cr_expect(!strstr(o.out, "imbalanced"), "%s", o.out);
}

/* Ranks of one job keep the job table. */
Test(runs, ranks_stay_a_job)
{
    write_run("r0.mst", NULL, 0, 1 << 20);
    write_run("r1.mst", NULL, 1, 4 << 20);
    cli_capture(&o, summary_command, "summary", dir, NULL);
    cr_expect(strstr(o.out, "Job of 2 traces") == o.out, "%s", o.out);
    cr_expect(strstr(o.out, "IMBALANCE"), "%s", o.out);
}

/* With --config each row's label keys set the estimate: the same numbers as `estimate` with
 * the file and those flags. */
Test(runs, estimate_beside)
{
    char conf[128];
    snprintf(conf, sizeof conf, "%s/model.conf", dir);
    FILE *f = fopen(conf, "w");
    fputs("layers = 2\nhidden = 256\nheads = 4\nseq_len = 128\nprecision = fp32\n", f);
    fclose(f);
    write_run("a.mst", "micro_batch=1", MST_NO_RANK, 1 << 20);
    write_run("b.mst", "micro_batch=4", MST_NO_RANK, 4 << 20);
    write_run("c.mst", "speed=fast", MST_NO_RANK, 1 << 20);
    cli_capture(&o, summary_command, "summary", "--json", "--config", conf, dir, NULL);
    cr_assert_eq(o.rc, 0, "%s", o.err);
    for (unsigned mb = 1; mb <= 4; mb += 3) {
        struct estimate_config c;
        char err[256], want[64], mbs[8];
        estimate_config_defaults(&c);
        cr_assert_eq(estimate_config_load(&c, conf, err, sizeof err), 0, "%s", err);
        snprintf(mbs, sizeof mbs, "%u", mb);
        estimate_config_set(&c, "micro_batch", mbs, err, sizeof err);
        struct estimate_result r;
        estimate_compute(&c, &r);
        snprintf(want, sizeof want, "\"total_bytes\": %llu", (unsigned long long)r.total);
        cr_expect(strstr(o.out, want), "micro_batch %u: %s in %s", mb, want, o.out);
    }
    cli_capture(&o, summary_command, "summary", "--config", conf, dir, NULL);
    cr_expect(strstr(o.out, "peak/est"), "%s", o.out);
    cr_expect(strstr(o.out, "no estimate for 'speed=fast': speed: unknown key"), "%s", o.out);

    char one[128];
    snprintf(one, sizeof one, "%s/a.mst", dir);
    cli_capture(&o, summary_command, "summary", "--config", conf, one, NULL);
    cr_expect_eq(o.rc, 2);
    cr_expect(strstr(o.err, "--config goes with a folder of labelled runs"), "%s", o.err);
}
