/* Text reports: byte counts in binary units, percentages, and aligned tables. */
#ifndef ANALYZE_TABLE_H
#define ANALYZE_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* "512 B", "1.50 KiB", "12.3 GiB": three significant digits. Returns buf. */
const char *table_bytes(uint64_t bytes, char *buf, size_t len);
/* "37.5%" of part in whole ("-" when whole is 0). Returns buf. */
const char *table_percent(uint64_t part, uint64_t whole, char *buf, size_t len);
/* "1.234 s", "12.0 ms", "850 ns". Returns buf. */
const char *table_duration(uint64_t ns, char *buf, size_t len);

/* A table of text cells printed with aligned columns; numeric-looking cells align right. */
struct table;

struct table *table_new(size_t columns);
void table_free(struct table *t);
/* Appends a cell to the current row (printf-style); a row ends after `columns` cells. */
void table_cell(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints with `indent` leading spaces, the first row as a header underlined with dashes. */
void table_print(const struct table *t, FILE *out, int indent);

#endif /* ANALYZE_TABLE_H */
