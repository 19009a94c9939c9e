/* `memshim-analyze estimate` as users call it: flags, messages, JSON, a measured trace. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_capture.h"
#include "estimate.h"
#include "tracegen.h"

#define run(out, ...) cli_capture((out), estimate_command, "estimate", __VA_ARGS__)

static struct cli_output o;

Test(estimate_command, unknown_flag)
{
    run(&o, "--params", "1B", "--batch", "4", NULL);
    cr_expect_eq(o.rc, 2);
    cr_expect_str_eq(o.err, "estimate: unknown option '--batch' (did you mean --micro-batch, "
                            "--kv-batch? see --help)\n");
    run(&o, "--params", "1B", "--xyz", NULL);
    cr_expect_str_eq(o.err, "estimate: unknown option '--xyz' (see --help)\n");
}

Test(estimate_command, bad_value_names_flag_and_forms)
{
    run(&o, "--params", "1B", "--micro-batch", "four", NULL);
    cr_expect_eq(o.rc, 2);
    cr_expect(strstr(o.err, "estimate: --micro-batch: bad value 'four' (accepted: a whole "
                            "number 1..") == o.err,
              "%s", o.err);
    run(&o, "--params", "1B", "--recompute=some", NULL);
    cr_expect_eq(o.rc, 2);
    cr_expect_str_eq(o.err, "estimate: --recompute: bad value 'some' (accepted: none, off, "
                            "selective, full)\n");
    run(&o, "--params", "1B", "--gpu", NULL);
    cr_expect_str_eq(o.err, "estimate: --gpu needs a value\n");
    run(&o, "--params", "1B", "run.mst", NULL);
    cr_expect_eq(o.rc, 2);
    cr_expect(strstr(o.err, "unexpected argument 'run.mst'"), "%s", o.err);
    run(&o, NULL);
    cr_expect_eq(o.rc, 2);
    cr_expect(strstr(o.err, "give the model"), "%s", o.err);
}

Test(estimate_command, help_lists_every_key)
{
    run(&o, "--help", NULL);
    cr_expect_eq(o.rc, 0);
    for (size_t i = 0; estimate_config_key(i); i++) {
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", estimate_config_key(i));
        for (char *p = flag; *p; p++)
            *p = *p == '_' ? '-' : *p;
        cr_expect(strstr(o.out, flag), "help lacks %s", flag);
    }
}

/* The ZeRO Figure 1 case, as a user types it: the table and the JSON agree on 31.4 GB. */
Test(estimate_command, zero_stage1_text_and_json)
{
    run(&o, "--params", "7.5B", "--dp", "64", "--zero", "1", "--precision", "fp16", NULL);
    cr_assert_eq(o.rc, 0, "%s", o.err);
    cr_expect(strstr(o.out, "optimizer_state"), "%s", o.out);
    cr_expect(strstr(o.out, "31406250000"), "31.4 GB: %s", o.out);
    cr_expect(strstr(o.out, "1406250000"), "%s", o.out);
    run(&o, "--params", "7.5B", "--dp", "64", "--zero", "1", "--precision", "fp16", "--json", NULL);
    cr_assert_eq(o.rc, 0, "%s", o.err);
    cr_expect(strstr(o.out, "\"total_bytes\":31406250000"), "%s", o.out);
    cr_expect(strstr(o.out, "\"optimizer_state\":1406250000"), "%s", o.out);
    cr_expect(strstr(o.out, "\"zero\":1"), "%s", o.out);
    cr_expect(o.out[0] == '{' && strchr(o.out, '\n') == o.out + strlen(o.out) - 1);
}

/* --gpu decides the exit status; a yes/no flag may stand alone. */
Test(estimate_command, fits_and_bool_flags)
{
    run(&o, "--params", "7.5B", "--gpu", "80g", NULL);
    cr_expect_eq(o.rc, 1, "120 GB does not fit in 80 GiB");
    cr_expect(strstr(o.out, "fits        in 80.0 GiB: no"), "%s", o.out);
    run(&o, "--layers", "12", "--hidden", "768", "--heads", "12", "--seq-len", "1024", "--flash",
        "--sp", "no", "--gpu", "80g", NULL);
    cr_expect_eq(o.rc, 0, "%s", o.err);
    cr_expect(strstr(o.out, "flash on"), "%s", o.out);
    cr_expect(strstr(o.out, "fits        in 80.0 GiB: yes"), "%s", o.out);
}

/* A config file, overridden by a flag; the token budget adds the micro-batch sweep. */
Test(estimate_command, config_file_and_sweep)
{
    char path[] = "/tmp/estimate-test-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    const char *text = "layers = 12\nhidden = 768\nheads = 12\nvocab = 50257\n"
                       "positions = 1024\nseq_len = 1024\nmicro_batch = 8\n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    run(&o, "--config", path, "--micro-batch", "4", "--tokens", "1e9", "--json", NULL);
    cr_assert_eq(o.rc, 0, "%s", o.err);
    cr_expect(strstr(o.out, "\"micro_batch\":4"), "%s", o.out);
    cr_expect(strstr(o.out, "\"params_total\":124439808"), "%s", o.out);
    cr_expect(strstr(o.out, "\"tokens_per_step\":4096"), "%s", o.out);
    cr_expect(strstr(o.out, "\"optimizer_updates\":244141"), "%s", o.out);
    cr_expect(strstr(o.out, "\"sweep\":[{\"micro_batch\":1,"), "%s", o.out);
    run(&o, "--config", path, "--tokens", "1e9", NULL);
    cr_expect(strstr(o.out, "<- chosen"), "%s", o.out);

    FILE *f = fopen(path, "a");
    fputs("precision = fp64\n", f);
    fclose(f);
    run(&o, "--config", path, NULL);
    cr_expect_eq(o.rc, 2);
    char expect[256];
    snprintf(expect, sizeof expect, "estimate: %s:8: precision: bad value 'fp64'", path);
    cr_expect(strstr(o.err, expect) == o.err, "%s", o.err);
    unlink(path);
}

/* Beside a measurement: a synthetic run whose parameters are 4 layers x 1 MiB. */
Test(estimate_command, trace_side_by_side)
{
    char path[] = "/tmp/estimate-trace-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    struct tracegen_header h = {.pid = 1, .rank = MST_NO_RANK, .host = "test"};
    struct tracegen *g = tracegen_new_file(path, &h);
    struct tracegen_training t = {
        .steps = 3, .layers = 4, .layer_bytes = 1 << 20, .activation_bytes = 1 << 20};
    tracegen_training_run(g, &t);
    cr_assert_eq(tracegen_finish(g), 0);
    tracegen_free(g);
    run(&o, "--params", "1M", "--precision", "fp32", "--trace", path, "--json", NULL);
    cr_assert_eq(o.rc, 0, "%s", o.err);
    cr_expect(strstr(o.out, "\"trace\":{\"path\":"), "%s", o.out);
    cr_expect(strstr(o.out, "\"parameter\":{\"estimate\":4000000,\"measured\":4194304,"
                            "\"ratio\":1.048576"),
              "%s", o.out);
    run(&o, "--params", "1M", "--precision", "fp32", "--trace", path, NULL);
    cr_expect(strstr(o.out, "measured / estimate"), "%s", o.out);
    run(&o, "--params", "1M", "--trace", "/nonexistent.mst", NULL);
    cr_expect_eq(o.rc, 1);
    unlink(path);
}
