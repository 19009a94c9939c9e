/* Every command answers --help, and an export that cannot be made leaves no file behind. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_capture.h"
#include "commands.h"
#include "export.h"
#include "tracegen.h"

static struct cli_output o;

Test(cli, help_on_every_command)
{
    for (const struct command *c = commands; c->name; c++) {
        cli_capture(&o, commands_run, c->name, "--help", NULL);
        cr_expect_eq(o.rc, 0, "%s --help: %d %s", c->name, o.rc, o.err);
        char want[64];
        snprintf(want, sizeof want, "usage: memshim-analyze %s", c->name);
        cr_expect(strstr(o.out, want) == o.out, "%s --help printed: %s", c->name, o.out);
        cr_expect_str_empty(o.err, "%s --help: %s", c->name, o.err);
    }
}

static void write_trace(const char *path)
{
    struct tracegen *g = tracegen_new_file(path, NULL);
    cr_assert_not_null(g);
    uint32_t th = tracegen_thread(g, 1, "main");
    tracegen_malloc(g, 10, th, 0xa000, 100, MST_CAT_PARAMETER, 0, 0);
    cr_assert_eq(tracegen_finish(g), 0);
    tracegen_free(g);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

Test(cli, export_of_a_folder_is_refused_before_writing)
{
    char dir[] = "/tmp/memshim-cli-XXXXXX", a[256], b[256], out[256];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(a, sizeof a, "%s/a.mst", dir);
    snprintf(b, sizeof b, "%s/b.mst", dir);
    snprintf(out, sizeof out, "%s.csv", dir);
    write_trace(a);
    write_trace(b);
    for (int i = 0; i < 2; i++) {
        const char *format = i ? "memory-viz" : "csv";
        cli_capture(&o, export_command, "export", "--format", format, "-o", out, dir, NULL);
        cr_expect_eq(o.rc, 2, "%s: %d", format, o.rc);
        cr_expect(strstr(o.err, "takes one trace (2 given)"), "%s", o.err);
        cr_expect(!exists(out), "%s left %s behind", format, out);
    }
    /* One trace in the folder: accepted. */
    unlink(b);
    cli_capture(&o, export_command, "export", "--format", "csv", "-o", out, dir, NULL);
    cr_expect_eq(o.rc, 0, "%s", o.err);
    cr_expect(exists(out));
    /* A trace that cannot be read: the output it opened is removed. */
    unlink(out);
    FILE *f = fopen(a, "w");
    fputs("not a trace", f);
    fclose(f);
    cli_capture(&o, export_command, "export", "--format", "csv", "-o", out, a, NULL);
    cr_expect_neq(o.rc, 0);
    cr_expect(!exists(out), "a failed export left %s", out);
    unlink(a);
    unlink(out);
    rmdir(dir);
}
