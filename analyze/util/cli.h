/* Helpers shared by the commands: trace arguments and output files. */
#ifndef ANALYZE_CLI_H
#define ANALYZE_CLI_H

#include <stddef.h>
#include <stdio.h>

/* What a command returns when asked for --help: the command table (commands.c), which holds
 * every command's usage line, prints it and exits 0. Stages below the table cannot reach it. */
#define CLI_EXIT_HELP (-1)

struct cli_traces {
    char **paths; /* owned */
    size_t count;
};

/* Expands the operands argv[first..argc) into trace paths: a directory becomes every *.mst
 * file in it, sorted by name. Prints a message and returns -1 when an operand does not exist
 * or no trace is named at all. */
int cli_traces(int argc, char **argv, int first, struct cli_traces *out);
void cli_traces_free(struct cli_traces *t);

/* Opens `path` for writing ("-" or NULL: stdout). Prints a message and returns NULL on error. */
FILE *cli_output(const char *path);
/* Closes what cli_output opened (not stdout); returns -1 and prints if the write failed. */
int cli_output_close(FILE *f, const char *path);
/* Removes the file a failed command wrote (nothing for stdout): no empty or partial output. */
void cli_output_discard(const char *path);

#endif /* ANALYZE_CLI_H */
