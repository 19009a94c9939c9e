/* `dump`: every record of a trace, one line each, for people and for tests. */
#ifndef ANALYZE_DUMP_H
#define ANALYZE_DUMP_H

#include <stdio.h>

#include "reader.h"

/* Writes one line for the record: its kind name, then key=value fields. */
void dump_record(FILE *out, const struct reader *r, const struct reader_record *rec);

/* memshim-analyze dump [--offsets] TRACE... */
int dump_command(int argc, char **argv);

#endif /* ANALYZE_DUMP_H */
