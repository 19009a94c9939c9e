/* `dump`: every record of a trace, one line each, for people and for tests. */
#ifndef ANALYZE_DUMP_H
#define ANALYZE_DUMP_H

#include <stdio.h>

#include "reader.h"

/* Writes one line for the record: its kind name, then key=value fields. */
void dump_record(FILE *out, const struct reader *r, const struct reader_record *rec);

/* The header line, and the name of a reader state as the `end` line prints it. */
void dump_file_header(FILE *out, const struct mst_file_header *h, const char *label);
const char *dump_state_name(enum reader_state s);

/* memshim-analyze dump [--offsets] [--refined] TRACE... */
int dump_command(int argc, char **argv);

#endif /* ANALYZE_DUMP_H */
