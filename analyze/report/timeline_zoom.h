/* The timeline HTML's zoom and readout, with no network: a toolbar above the chart, and a
 * script that scales the embedded SVG (buttons, Ctrl+wheel, double-click to reset) and shows
 * the time, the resident bytes of the column under the pointer and the bytes at the pointer's
 * height. It reads what timeline.c writes on each `g.chart`: data-left, data-top, data-pw,
 * data-ph (the plot area), data-ymax (bytes at the top), data-t0/data-t1 (ns, time axis) or
 * data-steps (step axis), and data-cols (resident bytes per pixel column). */
#ifndef ANALYZE_TIMELINE_ZOOM_H
#define ANALYZE_TIMELINE_ZOOM_H

/* Written before the SVG: the toolbar and the opening of the scrolling box. */
extern const char timeline_zoom_open[];
/* Written after the SVG: the box's end and the readout line. */
extern const char timeline_zoom_close[];
/* Written before </body>. */
extern const char timeline_zoom_script[];

#endif /* ANALYZE_TIMELINE_ZOOM_H */
