/* Small helpers to write SVG by hand: elements with escaped text, paths built point by point,
 * and the number formatting an axis needs. `attrs` arguments are extra attribute text written
 * verbatim (e.g. `fill="#4e79a7" stroke-width="2"`): callers pass literals, never user data;
 * text content goes through svg_escape. */
#ifndef MEMSHIM_ANALYZE_SVG_H
#define MEMSHIM_ANALYZE_SVG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Writes s with the five XML special characters escaped and control bytes dropped. */
void svg_escape(FILE *out, const char *s);

/* `standalone` adds the XML declaration (a .svg file); leave it out when embedding in HTML. */
void svg_open(FILE *out, double width, double height, int standalone);
void svg_close(FILE *out);

void svg_rect(FILE *out, double x, double y, double w, double h, const char *attrs);
void svg_line(FILE *out, double x1, double y1, double x2, double y2, const char *attrs);
/* printf-style text, escaped. */
void svg_text(FILE *out, double x, double y, const char *attrs, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* A <path>: svg_path_begin, then move/line calls, then svg_path_end. */
void svg_path_begin(FILE *out, const char *attrs);
void svg_path_move(FILE *out, double x, double y);
void svg_path_line(FILE *out, double x, double y);
void svg_path_close(FILE *out); /* "Z": close the current subpath */
void svg_path_end(FILE *out);

/* A tooltip for the element opened before: <title>text</title>, for elements written with
 * svg_group_begin/... or any element the caller leaves open. */
void svg_title(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void svg_group_begin(FILE *out, const char *attrs);
void svg_group_end(FILE *out);

/* The "nice" tick step (1, 2 or 5 times a power of ten of `unit`) that splits [0, range]
 * into at most `max_ticks` intervals. unit = 1 for decimal axes, 1024^k for bytes. */
double svg_nice_step(double range, int max_ticks, double unit);

/* The unit an axis whose values reach `max` is labelled in: the largest power of 1024 not above
 * max (B, KiB, MiB, GiB, TiB), or for times in seconds one of ns, µs, ms, s, min, h. Returns
 * the unit's size (bytes, seconds) and sets *name. */
double svg_byte_unit(double max, const char **name);
double svg_time_unit(double max_seconds, const char **name);

/* "512 B", "1.5 KiB", "24 MiB", "1.25 GiB": binary units, at most 3 significant digits. */
void svg_format_bytes(char *buf, size_t len, double bytes);
/* A tick value without trailing zeros: 0.25, 1.5, 200. */
void svg_format_number(char *buf, size_t len, double v);

#endif /* MEMSHIM_ANALYZE_SVG_H */
