/* `export --format perfetto`: Chrome trace-event JSON, which ui.perfetto.dev and
 * chrome://tracing open.
 *
 * Per traced process (pid from the trace header; several traces give several processes on one
 * time axis, aligned by their wall-clock bases):
 *   - counter "resident" with one argument per category ever seen (Perfetto shows the tracks
 *     "resident parameter", "resident activation", ...; Chrome stacks them), written only
 *     when a value changes, plus counters "spilled", "dropped" and "ceiling" when they occur;
 *   - instant events "OOM" (process scope) and "spill"/"restore"/"prefetch"/"drop"/
 *     "recompute" (on the thread that moved the memory);
 *   - phases as B/E slices on their thread (tid = the OS thread id), steps as X slices on a
 *     thread named "steps".
 * Timestamps are microseconds (fractional, so nanoseconds survive) since the earliest trace
 * start. */
#ifndef ANALYZE_EXPORT_PERFETTO_H
#define ANALYZE_EXPORT_PERFETTO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Writes the JSON document for `n` traces. With resolution_ns > 0 the resident counter is
 * written at most twice per window of that length (at the window's highest total and at its
 * end), which bounds the file for long traces; 0 writes every change. Returns 0, or -1 when a
 * trace cannot be read at all (message in err). Damaged traces contribute the events before
 * the damage, with a warning on stderr. */
int export_perfetto(char *const *traces, size_t n, uint64_t resolution_ns, FILE *out, char *err,
                    size_t errlen);

#endif /* ANALYZE_EXPORT_PERFETTO_H */
