/* cli_capture: stdout and stderr go to temporary files for the call, then into the buffers. */
#include "cli_capture.h"

#include <criterion/criterion.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static void slurp(FILE *f, char *buf, size_t len)
{
    rewind(f);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

void cli_capture(struct cli_output *o, cli_command_fn fn, const char *name, ...)
{
    char *argv[64] = {(char *)name};
    int argc = 1;
    va_list ap;
    va_start(ap, name);
    for (const char *a; (a = va_arg(ap, const char *)) != NULL && argc < 63;)
        argv[argc++] = (char *)a;
    va_end(ap);
    FILE *out = tmpfile(), *err = tmpfile();
    cr_assert(out && err);
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    dup2(fileno(out), 1);
    dup2(fileno(err), 2);
    optind = 0; /* a fresh getopt scan for every call */
    o->rc = fn(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    slurp(out, o->out, sizeof o->out);
    slurp(err, o->err, sizeof o->err);
}
