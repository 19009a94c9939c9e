/* The commands of memshim-analyze, one table entry each (commands.c).
 *
 * A command is a function taking the arguments after the program name (argv[0] is the
 * command's own name) and returning the process exit status: 0 success, 1 a finding the
 * command reports as failure (e.g. corrupt trace), 2 a usage error. Parse options with
 * getopt_long (optind is reset before each command) and expand the trace arguments with
 * cli_traces() (cli.h), which turns a directory into every *.mst in it.
 */
#ifndef ANALYZE_COMMANDS_H
#define ANALYZE_COMMANDS_H

#include <stddef.h>

typedef int (*command_fn)(int argc, char **argv);

struct command {
    const char *name;  /* as typed: memshim-analyze NAME ... */
    const char *usage; /* options and operands, e.g. "[--json] TRACE..." */
    const char *help;  /* one line */
    command_fn run;
};

/* The table, terminated by an entry whose name is NULL. */
extern const struct command commands[];

/* `NAME --help`: prints the entry's usage and help line to stdout; returns 0 (the exit
 * status). */
int commands_help(const char *name);

/* Runs the command named by argv[0] (the arguments after the program name): its exit status,
 * with a command's CLI_EXIT_HELP answered by commands_help. 2 for an unknown name. */
int commands_run(int argc, char **argv);

/* The entry named `name`, or NULL. */
const struct command *commands_find(const char *name);

#endif /* ANALYZE_COMMANDS_H */
