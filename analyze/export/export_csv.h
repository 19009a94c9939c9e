/* `export --format csv`: one row per event of a trace, for spreadsheets and pandas.
 *
 * Columns: time_ns,event,addr,size,category,kind,step,phase,site,mode,shape,flops. Every record
 * except the definitions (string, module, frame, thread, device) is an event; `event` is the
 * record kind, or for residency records the move itself (spill, restore, prefetch, drop,
 * recompute). README "export" documents each event and column. Fields that do not apply are
 * empty; text fields are quoted as RFC 4180 says. */
#ifndef ANALYZE_EXPORT_CSV_H
#define ANALYZE_EXPORT_CSV_H

#include <stdint.h>
#include <stdio.h>

/* Writes the rows of one trace (with a header line when `header` is set). Returns the number of
 * rows written, or -1 when the trace cannot be read at all (message in err). A corrupt or
 * truncated trace gives the rows before the damage and a warning on stderr. */
int64_t export_csv(const char *trace, FILE *out, int header, char *err, size_t errlen);

#endif /* ANALYZE_EXPORT_CSV_H */
