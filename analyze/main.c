/* memshim-analyze COMMAND [options] TRACE...: dispatch to the command table (commands.c). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: memshim-analyze COMMAND [options] TRACE|DIR...\n\n"
                 "A directory stands for every *.mst trace in it. Commands:\n");
    for (const struct command *c = commands; c->name; c++)
        fprintf(out, "  %-9s %s\n  %-9s   %s\n", c->name, c->usage, "", c->help);
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const struct command *c = commands_find(argv[1]);
    if (!c) {
        fprintf(stderr, "memshim-analyze: unknown command '%s'\n", argv[1]);
        usage(stderr);
        return 2;
    }
    optind = 1;
    int rc = commands_run(argc - 1, argv + 1);
    if (rc == 2)
        fprintf(stderr, "usage: memshim-analyze %s %s\n", c->name, c->usage);
    return rc;
}
