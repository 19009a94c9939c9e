/* Several ranks: per-rank numbers, job-wide maximum, imbalance flag, directory operands. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "merge.h"
#include "tracegen.h"

static char dir[64];

static void write_rank(uint32_t rank, uint32_t layers)
{
    char path[128];
    snprintf(path, sizeof path, "%s/rank%u.mst", dir, rank);
    struct tracegen_header h = {.pid = 100 + rank, .rank = rank, .host = "node", .stack_depth = 8};
    struct tracegen *g = tracegen_new_file(path, &h);
    cr_assert_not_null(g);
    struct tracegen_training t = {.steps = 2,
                                  .layers = layers,
                                  .layer_bytes = 1000,
                                  .activation_bytes = 400,
                                  .temporaries = 1};
    tracegen_training_run(g, &t);
    cr_assert_eq(tracegen_finish(g), 0);
    tracegen_free(g);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/memshim-merge-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(merge, .init = setup, .fini = teardown);

static void collect(struct merge_job *job)
{
    char *argv[] = {"summary", dir};
    struct cli_traces traces;
    cr_assert_eq(cli_traces(2, argv, 1, &traces), 0);
    struct merge_options o = {.refine = 1};
    cr_assert_eq(merge_collect((const char *const *)traces.paths, traces.count, &o, job), 0);
    cli_traces_free(&traces);
}

Test(merge, balanced_ranks)
{
    for (uint32_t r = 0; r < 4; r++)
        write_rank(3 - r, 2);
    struct merge_job job;
    collect(&job);
    cr_assert_eq(job.n, 4);
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(job.ranks[i].rank, i); /* sorted by rank */
    cr_assert_eq(job.max_peak, job.min_peak);
    cr_assert_not(job.imbalanced);
    merge_free(&job);
}

Test(merge, imbalance_flagged)
{
    write_rank(0, 2);
    write_rank(1, 3); /* one more layer: about 1.5x the memory */
    write_rank(2, 2);
    struct merge_job job;
    collect(&job);
    cr_assert_eq(job.ranks[job.max_index].rank, 1);
    cr_assert(job.imbalanced);
    cr_assert_gt(job.spread, 0.2);
    /* peaks as the tracegen schedule gives them: 8P + A + T per rank of two layers */
    cr_assert_eq(job.ranks[0].peak_bytes, job.ranks[2].peak_bytes);
    cr_assert_eq(job.max_peak, job.ranks[1].peak_bytes);
    merge_free(&job);
}

Test(merge, unreadable_trace_is_reported)
{
    write_rank(0, 2);
    char bad[128];
    snprintf(bad, sizeof bad, "%s/zz.mst", dir);
    FILE *f = fopen(bad, "w");
    fputs("not a trace", f);
    fclose(f);
    struct merge_job job;
    collect(&job);
    cr_assert_eq(job.n, 2);
    int unreadable = 0;
    for (size_t i = 0; i < job.n; i++)
        unreadable += !job.ranks[i].readable;
    cr_assert_eq(unreadable, 1);
    cr_assert_not(job.imbalanced);
    merge_free(&job);
}

Test(merge, empty_directory_is_an_error)
{
    char *argv[] = {"summary", dir};
    struct cli_traces traces;
    cr_assert_eq(cli_traces(2, argv, 1, &traces), -1);
}
