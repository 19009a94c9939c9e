/* `timeline`: resident device memory by category over time, as a self-contained SVG, or as
 * an HTML page holding the SVG and a sortable table of the top call sites.
 *
 *     memshim-analyze timeline [--x time|step] [--width PX] [--height PX] TRACE|DIR... -o out.svg
 *
 * The chart stacks the resident bytes of each category; it draws the ceiling in force, step
 * boundaries, out-of-memory events and the shim's spills/restores/drops/recomputes. The trace
 * is streamed once into a bounded number of time buckets; each bucket keeps the state at its
 * highest total, so downsampling never hides the peak. */
#ifndef ANALYZE_TIMELINE_H
#define ANALYZE_TIMELINE_H

#include <stddef.h>
#include <stdio.h>

enum timeline_format { TIMELINE_SVG, TIMELINE_HTML };

struct timeline_options {
    enum timeline_format format;
    int by_step;   /* x axis in training steps instead of seconds */
    int width;     /* pixels; 0 = 1200 */
    int height;    /* pixels; 0 = 640 */
    int top_sites; /* rows of the HTML table; 0 = 30 */
};

#define TIMELINE_MAX_TRACES 64

/* Writes the chart of each of `n` traces (1 to TIMELINE_MAX_TRACES; the ranks of a job are
 * stacked in one document, on one byte scale). Returns 0, or -1 when a trace cannot be read at
 * all (message in err). A damaged trace is drawn up to the damage, with a warning on stderr. */
int timeline_write(char *const *traces, size_t n, FILE *out, const struct timeline_options *opt,
                   char *err, size_t errlen);

/* The `timeline` command (commands.h). */
int timeline_command(int argc, char **argv);

#endif /* ANALYZE_TIMELINE_H */
