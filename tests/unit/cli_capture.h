/* cli_capture: run an analyzer command function as the CLI would, with stdout and stderr
 * captured, for unit tests of the commands. */
#ifndef MEMSHIM_CLI_CAPTURE_H
#define MEMSHIM_CLI_CAPTURE_H

struct cli_output {
    int rc;
    char out[1 << 20];
    char err[4096];
};

typedef int (*cli_command_fn)(int argc, char **argv);

/* Runs fn(argc, argv) with argv = {name, the NULL-terminated arguments...} (at most 63). */
void cli_capture(struct cli_output *o, cli_command_fn fn, const char *name, ...);

#endif /* MEMSHIM_CLI_CAPTURE_H */
