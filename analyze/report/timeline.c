#include "timeline.h"

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "model.h"
#include "site_label.h"
#include "svg.h"
#include "timeline_zoom.h"
#include "timeline_chart.h"

/* ---- layout ----------------------------------------------------------------------------- */

static const char *const category_color[MST_CATEGORY_MAX] = {
    [MST_CAT_UNKNOWN] = "#bab0ac",       [MST_CAT_PARAMETER] = "#4e79a7",
    [MST_CAT_GRADIENT] = "#59a14f",      [MST_CAT_OPTIMIZER_STATE] = "#b07aa1",
    [MST_CAT_ACTIVATION] = "#f28e2b",    [MST_CAT_KV_CACHE] = "#76b7b2",
    [MST_CAT_WORKSPACE] = "#edc948",     [MST_CAT_TEMPORARY] = "#ff9da7",
    [MST_CAT_COMMUNICATION] = "#9c755f", [MST_CAT_INPUT] = "#86bcb6",
};

/* Bottom to top: what lives longest lies lowest, so the churn shows on top. */
static const uint8_t stack_order[MST_CATEGORY_MAX] = {
    MST_CAT_PARAMETER, MST_CAT_OPTIMIZER_STATE, MST_CAT_GRADIENT,  MST_CAT_KV_CACHE,
    MST_CAT_INPUT,     MST_CAT_COMMUNICATION,   MST_CAT_WORKSPACE, MST_CAT_ACTIVATION,
    MST_CAT_TEMPORARY, MST_CAT_UNKNOWN,
};

const char *timeline_color(int category)
{
    return category_color[category >= 0 && category < MST_CATEGORY_MAX ? category : 0];
}

#define COLOR_CEILING "#b2182b"
#define COLOR_OOM     "#d62728"
#define COLOR_OUT     "#6a3d9a" /* memory leaving the device: spill, drop */
#define COLOR_IN      "#1b7837" /* memory coming back: restore, prefetch, recompute */
#define COLOR_HOST    "#e08214" /* a range an operation used in host memory, no room for it */

/* Step mode: time -> position in step units, linear inside each step. */
static double step_units(const struct chart *ch, uint64_t t)
{
    size_t lo = 0, hi = ch->nsteps;
    while (lo < hi) { /* first step starting after t */
        size_t mid = (lo + hi) / 2;
        if (ch->steps[mid].start_ns <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    double base = ch->setup ? 1 : 0;
    uint64_t start, end;
    if (lo == 0) {
        start = ch->t0, end = ch->steps[0].start_ns;
        base = 0;
    } else {
        start = ch->steps[lo - 1].start_ns;
        end = lo < ch->nsteps ? ch->steps[lo].start_ns : ch->t1;
        base += (double)(lo - 1);
    }
    double frac = end > start ? (double)(t - start) / (double)(end - start) : 0;
    return base + (frac > 1 ? 1 : frac);
}

static double step_domain(const struct chart *ch)
{
    return (double)ch->nsteps + (ch->setup ? 1 : 0);
}

static double chart_x(const struct chart *ch, uint64_t t)
{
    if (t < ch->t0)
        t = ch->t0;
    double u;
    if (ch->by_step)
        u = step_units(ch, t) / step_domain(ch);
    else
        u = ch->t1 > ch->t0 ? (double)(t - ch->t0) / (double)(ch->t1 - ch->t0) : 0;
    return ch->left + u * ch->pw;
}

static double chart_y(const struct chart *ch, double bytes)
{
    return ch->top + ch->ph - bytes / ch->ymax * ch->ph;
}

/* Buckets into one column per pixel; a column no bucket falls in keeps the state before it. */
static int build_columns(struct chart *ch)
{
    ch->ncol = (int)ch->pw;
    ch->col = calloc((size_t)ch->ncol, sizeof *ch->col);
    if (!ch->col)
        return -1;
    const struct collect *c = ch->c;
    for (size_t i = 0; i < BUCKETS; i++) {
        if (!c->b[i].used)
            continue;
        int j = (int)(chart_x(ch, c->t0 + i * c->width_ns) - ch->left);
        j = j < 0 ? 0 : j >= ch->ncol ? ch->ncol - 1 : j;
        timeline_combine(&ch->col[j], &c->b[i]);
    }
    const uint64_t *prev = NULL;
    uint64_t prev_held = 0;
    static const uint64_t zero[MST_CATEGORY_MAX];
    for (int j = 0; j < ch->ncol; j++) {
        struct bucket *b = &ch->col[j];
        if (!b->used) {
            memcpy(b->top, prev ? prev : zero, sizeof b->top);
            memcpy(b->end, b->top, sizeof b->end);
            b->top_total = timeline_sum(b->top);
            b->held_max = b->held_end = prev_held;
        }
        prev_held = b->held_end;
        for (int k = 0; k < MST_CATEGORY_MAX; k++)
            if (b->top[k] > ch->cat_max[k])
                ch->cat_max[k] = b->top[k];
        prev = b->end;
    }
    return 0;
}

static void scale_y(struct chart *ch)
{
    uint64_t hi = 1;
    for (int j = 0; j < ch->ncol; j++) {
        hi = ch->col[j].top_total > hi ? ch->col[j].top_total : hi;
        hi = ch->col[j].held_max > hi ? ch->col[j].held_max : hi;
    }
    for (size_t i = 0; i < ch->c->nceil; i++)
        hi = ch->c->ceil[i].bytes > hi ? ch->c->ceil[i].bytes : hi;
    const char *name;
    double raw = (double)hi * 1.06;
    double step = svg_nice_step(raw, (int)(ch->ph / 45), svg_byte_unit(raw, &name));
    ch->ymax = ceil(raw / step) * step;
}

/* ---- drawing ---------------------------------------------------------------------------- */

/* One category's band as a step function: top edge left to right, bottom edge back. Points
 * are written only where a value changes. */
static void draw_band(struct chart *ch, const uint64_t *lo, const uint64_t *hi)
{
    FILE *o = ch->out;
    int n = ch->ncol;
    svg_path_move(o, ch->left, chart_y(ch, (double)hi[0]));
    for (int j = 1; j < n; j++) {
        if (hi[j] != hi[j - 1]) {
            svg_path_line(o, ch->left + j, chart_y(ch, (double)hi[j - 1]));
            svg_path_line(o, ch->left + j, chart_y(ch, (double)hi[j]));
        }
    }
    svg_path_line(o, ch->left + n, chart_y(ch, (double)hi[n - 1]));
    svg_path_line(o, ch->left + n, chart_y(ch, (double)lo[n - 1]));
    for (int j = n - 1; j > 0; j--) {
        if (lo[j] != lo[j - 1]) {
            svg_path_line(o, ch->left + j, chart_y(ch, (double)lo[j]));
            svg_path_line(o, ch->left + j, chart_y(ch, (double)lo[j - 1]));
        }
    }
    svg_path_line(o, ch->left, chart_y(ch, (double)lo[0]));
    svg_path_close(o);
}

static void draw_layer(struct chart *ch, int k, const uint64_t *lo, const uint64_t *hi)
{
    FILE *o = ch->out;
    char attrs[96], peak[32];
    snprintf(attrs, sizeof attrs, "class=\"layer\" data-category=\"%s\" fill=\"%s\"",
             reader_category_name((unsigned)k), category_color[k]);
    svg_group_begin(o, attrs);
    svg_format_bytes(peak, sizeof peak, (double)ch->cat_max[k]);
    svg_title(o, "%s (up to %s)", reader_category_name((unsigned)k), peak);
    svg_path_begin(o, "stroke=\"none\"");
    draw_band(ch, lo, hi);
    svg_path_end(o);
    svg_group_end(o);
}

static int draw_layers(struct chart *ch)
{
    uint64_t *lo = calloc((size_t)ch->ncol, sizeof *lo);
    uint64_t *hi = calloc((size_t)ch->ncol, sizeof *hi);
    int rc = lo && hi ? 0 : -1;
    svg_group_begin(ch->out, "class=\"layers\"");
    for (int i = 0; rc == 0 && i < MST_CATEGORY_MAX; i++) {
        int k = stack_order[i];
        if (!ch->cat_max[k])
            continue;
        for (int j = 0; j < ch->ncol; j++)
            hi[j] = lo[j] + ch->col[j].top[k];
        draw_layer(ch, k, lo, hi);
        memcpy(lo, hi, (size_t)ch->ncol * sizeof *lo);
    }
    svg_group_end(ch->out);
    free(lo);
    free(hi);
    return rc;
}

/* With spill or recompute on, the program holds more than is resident: a translucent band
 * above the stack shows what the shim kept off the device. */
static int draw_held(struct chart *ch)
{
    if (!ch->c->offloaded)
        return 0;
    uint64_t *lo = malloc((size_t)ch->ncol * sizeof *lo);
    uint64_t *hi = malloc((size_t)ch->ncol * sizeof *hi);
    if (!lo || !hi) {
        free(lo);
        free(hi);
        return -1;
    }
    for (int j = 0; j < ch->ncol; j++) {
        lo[j] = ch->col[j].top_total;
        hi[j] = ch->col[j].held_max > lo[j] ? ch->col[j].held_max : lo[j];
    }
    svg_group_begin(ch->out, "class=\"held\" fill=\"" COLOR_OUT "\" fill-opacity=\"0.3\"");
    svg_title(ch->out, "spilled to host or dropped for recompute");
    svg_path_begin(ch->out, "stroke=\"none\"");
    draw_band(ch, lo, hi);
    svg_path_end(ch->out);
    svg_group_end(ch->out);
    free(lo);
    free(hi);
    return 0;
}

static void draw_y_axis(struct chart *ch)
{
    FILE *o = ch->out;
    const char *unit_name;
    double unit = svg_byte_unit(ch->ymax, &unit_name);
    double step = svg_nice_step(ch->ymax, (int)(ch->ph / 45), unit);
    svg_group_begin(o, "class=\"y-axis\" font-size=\"11\" fill=\"#444\"");
    for (double v = 0; v <= ch->ymax * 1.0001; v += step) {
        double y = chart_y(ch, v);
        char label[32];
        svg_format_number(label, sizeof label, v / unit);
        svg_line(o, ch->left, y, ch->left + ch->pw, y, "stroke=\"#e4e4e4\"");
        svg_text(o, ch->left - 6, y + 4, "text-anchor=\"end\"", "%s", label);
    }
    double cx = ch->left - 52, cy = ch->top + ch->ph / 2;
    fprintf(o,
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\" "
            "transform=\"rotate(-90 %.1f %.1f)\">",
            cx, cy, cx, cy);
    svg_escape(o, "resident on device (");
    svg_escape(o, unit_name);
    svg_escape(o, ")");
    fputs("</text>\n", o);
    svg_group_end(o);
}

static void draw_time_axis(struct chart *ch)
{
    FILE *o = ch->out;
    double span = (double)(ch->t1 - ch->t0) / 1e9;
    const char *unit_name;
    double unit = svg_time_unit(span, &unit_name);
    double step = svg_nice_step(span, (int)(ch->pw / 90), unit);
    double base = ch->top + ch->ph;
    for (double s = 0; span > 0 && s <= span * 1.0001; s += step) {
        double x = ch->left + s / span * ch->pw;
        char label[32];
        svg_format_number(label, sizeof label, s / unit);
        svg_line(o, x, base, x, base + 5, "stroke=\"#444\"");
        svg_text(o, x, base + 18, "text-anchor=\"middle\"", "%s", label);
    }
    svg_text(o, ch->left + ch->pw / 2, base + 38, "text-anchor=\"middle\" font-size=\"12\"",
             "time since the first event (%s)", unit_name);
}

/* Every how many steps to draw a line or label so that they are min_px apart: 1, 2, 5, 10,
 * 20, 50... so the labelled steps are round numbers. */
static size_t every_nice(double px_per_item, double min_px)
{
    static const size_t mult[] = {1, 2, 5};
    for (size_t scale = 1;; scale *= 10)
        for (size_t i = 0; i < 3; i++)
            if (px_per_item * (double)(mult[i] * scale) >= min_px || scale > SIZE_MAX / 100)
                return mult[i] * scale;
}

static void draw_step_axis(struct chart *ch)
{
    FILE *o = ch->out;
    double base = ch->top + ch->ph;
    double unit_px = ch->pw / step_domain(ch);
    size_t every = every_nice(unit_px, 40);
    /* wide steps are labelled in their middle, narrow ones at their start, with a tick */
    double shift = every == 1 ? unit_px / 2 : 0;
    if (ch->setup && unit_px >= 40)
        svg_text(o, ch->left + unit_px / 2, base + 18,
                 "text-anchor=\"middle\" font-style=\"italic\"", "setup");
    for (size_t i = 0; i < ch->nsteps; i += every) {
        double x = chart_x(ch, ch->steps[i].start_ns);
        if (!shift)
            svg_line(o, x, base, x, base + 5, "stroke=\"#444\"");
        svg_text(o, x + shift, base + 18, "text-anchor=\"middle\"", "%lld",
                 (long long)ch->steps[i].step);
    }
    svg_text(o, ch->left + ch->pw / 2, base + 38, "text-anchor=\"middle\" font-size=\"12\"",
             "training step");
}

static void draw_step_lines(struct chart *ch)
{
    FILE *o = ch->out;
    if (!ch->nsteps)
        return;
    double px = ch->pw / (double)ch->nsteps;
    size_t every = every_nice(px, 12);
    size_t label = every_nice(px, 60);
    label = label < every ? every : label;
    svg_group_begin(o, "class=\"steps\" font-size=\"10\" fill=\"#777\"");
    for (size_t i = 0; i < ch->nsteps; i += every) {
        double x = chart_x(ch, ch->steps[i].start_ns);
        svg_line(o, x, ch->top, x, ch->top + ch->ph,
                 "class=\"step\" stroke=\"#777\" stroke-opacity=\"0.6\" stroke-dasharray=\"3 3\" "
                 "stroke-width=\"0.8\"");
        if (!ch->by_step && i % label == 0)
            svg_text(o, x + 3, ch->top + 11, "", "step %lld", (long long)ch->steps[i].step);
    }
    svg_group_end(o);
}

static void draw_ceiling(struct chart *ch)
{
    FILE *o = ch->out;
    const struct collect *c = ch->c;
    if (!c->nceil)
        return;
    svg_group_begin(o, "class=\"ceilings\"");
    uint64_t last = 0;
    for (size_t i = 0; i < c->nceil; i++) {
        uint64_t bytes = c->ceil[i].bytes;
        double x0 = chart_x(ch, c->ceil[i].time_ns);
        double x1 = i + 1 < c->nceil ? chart_x(ch, c->ceil[i + 1].time_ns) : ch->left + ch->pw;
        if (i == 0)
            x0 = ch->left; /* the ceiling is in force from the start */
        if (!bytes || x1 <= x0)
            continue;
        double y = chart_y(ch, (double)bytes);
        svg_line(o, x0, y, x1, y,
                 "class=\"ceiling\" stroke=\"" COLOR_CEILING "\" stroke-width=\"2\" "
                 "stroke-dasharray=\"8 4\"");
        last = bytes;
    }
    if (last) {
        char text[32];
        svg_format_bytes(text, sizeof text, (double)last);
        svg_text(o, ch->left + ch->pw - 4, chart_y(ch, (double)last) - 5,
                 "text-anchor=\"end\" font-size=\"11\" fill=\"" COLOR_CEILING "\"", "ceiling %s",
                 text);
    }
    svg_group_end(o);
}

static void oom_marker(struct chart *ch, int j, const struct bucket *b)
{
    FILE *o = ch->out;
    double x = ch->left + j + 0.5;
    char req[32];
    svg_format_bytes(req, sizeof req, (double)b->oom_request);
    svg_group_begin(o, "class=\"oom\"");
    svg_title(o, "%u out-of-memory event%s (largest request %s)", b->ooms, b->ooms > 1 ? "s" : "",
              req);
    /* the triangle sits in the margin above the plot, clear of the step labels */
    svg_line(o, x, ch->top, x, ch->top + ch->ph, "stroke=\"" COLOR_OOM "\" stroke-width=\"1.2\"");
    fprintf(o, "<path d=\"M%.1f %.1fl-6 -10h12z\" fill=\"" COLOR_OOM "\"/>\n", x, ch->top - 1);
    svg_group_end(o);
}

static void move_marker(struct chart *ch, int j, const struct bucket *b, bool out)
{
    static const int out_events[] = {MST_RES_SPILL, MST_RES_DROP};
    static const int in_events[] = {MST_RES_RESTORE, MST_RES_PREFETCH, MST_RES_RECOMPUTE};
    const int *ev = out ? out_events : in_events;
    int nev = out ? 2 : 3;
    uint32_t n = 0;
    uint64_t bytes = 0;
    for (int i = 0; i < nev; i++)
        n += b->moves[ev[i]], bytes += b->moved_bytes[ev[i]];
    if (!n)
        return;
    FILE *o = ch->out;
    char text[32];
    svg_format_bytes(text, sizeof text, (double)bytes);
    svg_group_begin(o, out ? "class=\"spill\"" : "class=\"restore\"");
    svg_title(o, "%u %s (%s)", n, out ? "spill/drop" : "restore/prefetch/recompute", text);
    double x = ch->left + j + 0.5, y = ch->top + ch->ph - (out ? 14 : 5);
    if (out)
        fprintf(o, "<path d=\"M%.1f %.1fl-4 -6h8z\" fill=\"" COLOR_OUT "\"/>\n", x, y + 6);
    else
        fprintf(o, "<path d=\"M%.1f %.1fl-4 6h8z\" fill=\"" COLOR_IN "\"/>\n", x, y - 6);
    svg_group_end(o);
}

/* Ranges used in host memory in this column: a dot above the spill marks. */
static void host_marker(struct chart *ch, int j, const struct bucket *b)
{
    uint32_t n = b->moves[MST_RES_HOST_USE];
    if (!n)
        return;
    FILE *o = ch->out;
    char text[32];
    svg_format_bytes(text, sizeof text, (double)b->moved_bytes[MST_RES_HOST_USE]);
    svg_group_begin(o, "class=\"host-use\"");
    svg_title(o, "%u range%s used in host memory, no room on the device (%s)", n, n == 1 ? "" : "s",
              text);
    fprintf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"" COLOR_HOST "\"/>\n",
            ch->left + j + 0.5, ch->top + ch->ph - 22);
    svg_group_end(o);
}

static void draw_markers(struct chart *ch)
{
    svg_group_begin(ch->out, "class=\"markers\"");
    int last_oom = -100;
    for (int j = 0; j < ch->ncol; j++) {
        const struct bucket *b = &ch->col[j];
        move_marker(ch, j, b, true);
        move_marker(ch, j, b, false);
        host_marker(ch, j, b);
        if (b->ooms && j - last_oom >= 3) {
            oom_marker(ch, j, b);
            last_oom = j;
        }
    }
    svg_group_end(ch->out);
}

enum swatch {
    SWATCH_AREA,
    SWATCH_LINE,
    SWATCH_HELD,
    SWATCH_OOM,
    SWATCH_OUT,
    SWATCH_IN,
    SWATCH_HOST,
    SWATCH_STEP
};

static void swatch(FILE *o, enum swatch kind, const char *color, double x, double y)
{
    switch (kind) {
    case SWATCH_AREA:
        fprintf(o,
                "<rect class=\"legend-swatch\" x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"11\" "
                "fill=\"%s\"/>\n",
                x, y, color);
        break;
    case SWATCH_LINE:
        svg_line(o, x - 2, y + 5.5, x + 16, y + 5.5,
                 "stroke=\"" COLOR_CEILING "\" stroke-width=\"2\" stroke-dasharray=\"8 4\"");
        break;
    case SWATCH_HELD:
        fprintf(o,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"11\" fill=\"" COLOR_OUT "\" "
                "fill-opacity=\"0.3\"/>\n",
                x, y);
        break;
    case SWATCH_STEP:
        svg_line(o, x + 7, y - 1, x + 7, y + 12, "stroke=\"#888\" stroke-dasharray=\"3 3\"");
        break;
    case SWATCH_OOM:
        fprintf(o, "<path d=\"M%.1f %.1fl-6 -10h12z\" fill=\"" COLOR_OOM "\"/>\n", x + 7, y + 11);
        break;
    case SWATCH_OUT:
        fprintf(o, "<path d=\"M%.1f %.1fl-4 -6h8z\" fill=\"" COLOR_OUT "\"/>\n", x + 7, y + 9);
        break;
    case SWATCH_IN:
        fprintf(o, "<path d=\"M%.1f %.1fl-4 6h8z\" fill=\"" COLOR_IN "\"/>\n", x + 7, y + 3);
        break;
    case SWATCH_HOST:
        fprintf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"" COLOR_HOST "\"/>\n", x + 7,
                y + 5.5);
        break;
    }
}

static double legend_item(struct chart *ch, double y, enum swatch kind, const char *color,
                          const char *label, const char *value)
{
    double x = ch->left + ch->pw + 24;
    swatch(ch->out, kind, color, x, y);
    svg_text(ch->out, x + 22, y + 10, "", "%s", label);
    if (value)
        svg_text(ch->out, ch->width - 12, y + 10, "text-anchor=\"end\" fill=\"#555\"", "%s", value);
    return y + 20;
}

static double legend_categories(struct chart *ch, double y)
{
    const struct model_peak *peak = model_peak(ch->m);
    svg_text(ch->out, ch->left + ch->pw + 24, y + 10, "font-weight=\"bold\"", "category");
    svg_text(ch->out, ch->width - 12, y + 10, "text-anchor=\"end\" font-weight=\"bold\"",
             "at peak");
    y += 22;
    for (int i = MST_CATEGORY_MAX - 1; i >= 0; i--) { /* top layer first, as stacked */
        int k = stack_order[i];
        if (!ch->cat_max[k])
            continue;
        char value[32];
        svg_format_bytes(value, sizeof value, (double)peak->by_category[k]);
        y = legend_item(ch, y, SWATCH_AREA, category_color[k], reader_category_name((unsigned)k),
                        value);
    }
    return y;
}

static void draw_legend(struct chart *ch)
{
    const struct model_totals *t = model_totals(ch->m);
    svg_group_begin(ch->out, "class=\"legend\" font-size=\"12\"");
    double y = legend_categories(ch, ch->top) + 12;
    char n[32];
    if (ch->c->nceil && ch->c->ceil[ch->c->nceil - 1].bytes)
        y = legend_item(ch, y, SWATCH_LINE, NULL, "ceiling", NULL);
    if (ch->c->offloaded)
        y = legend_item(ch, y, SWATCH_HELD, NULL, "spilled / dropped", NULL);
    if (ch->nsteps && !ch->by_step)
        y = legend_item(ch, y, SWATCH_STEP, NULL, "step start", NULL);
    if (t->ooms) {
        snprintf(n, sizeof n, "%llu", (unsigned long long)t->ooms);
        y = legend_item(ch, y, SWATCH_OOM, NULL, "out of memory", n);
    }
    uint64_t out = t->residency_count[MST_RES_SPILL] + t->residency_count[MST_RES_DROP];
    uint64_t in = t->residency_count[MST_RES_RESTORE] + t->residency_count[MST_RES_PREFETCH] +
                  t->residency_count[MST_RES_RECOMPUTE];
    if (out) {
        snprintf(n, sizeof n, "%llu", (unsigned long long)out);
        y = legend_item(ch, y, SWATCH_OUT, NULL, "spill / drop", n);
    }
    if (in) {
        snprintf(n, sizeof n, "%llu", (unsigned long long)in);
        y = legend_item(ch, y, SWATCH_IN, NULL, "restore / recompute", n);
    }
    if (t->residency_count[MST_RES_HOST_USE]) {
        snprintf(n, sizeof n, "%llu", (unsigned long long)t->residency_count[MST_RES_HOST_USE]);
        legend_item(ch, y, SWATCH_HOST, NULL, "used in host memory", n);
    }
    svg_group_end(ch->out);
}

const char *timeline_base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static void draw_title(struct chart *ch)
{
    FILE *o = ch->out;
    const struct mst_file_header *h = reader_header(model_reader(ch->m));
    const struct model_peak *peak = model_peak(ch->m);
    char who[96], bytes[32];
    if (h->rank != MST_NO_RANK)
        snprintf(who, sizeof who, "rank %u, pid %u", h->rank, h->pid);
    else
        snprintf(who, sizeof who, "pid %u", h->pid);
    svg_text(o, ch->left, 24, "font-size=\"16\" font-weight=\"bold\"",
             "Device memory by category — %s (%s)", timeline_base_name(ch->trace), who);
    svg_format_bytes(bytes, sizeof bytes, (double)peak->bytes);
    const char *unit_name;
    double at_s = (double)(peak->time_ns > ch->t0 ? peak->time_ns - ch->t0 : 0) / 1e9;
    double unit = svg_time_unit(at_s, &unit_name);
    char at[32];
    svg_format_number(at, sizeof at, at_s / unit);
    const char *phase = reader_string(model_reader(ch->m), peak->phase);
    char where[96] = "";
    if (peak->step != MODEL_NO_STEP)
        snprintf(where, sizeof where, ", step %lld", (long long)peak->step);
    if (phase && *phase)
        snprintf(where + strlen(where), sizeof where - strlen(where), ", phase %s", phase);
    svg_text(o, ch->left, 44, "font-size=\"12\" fill=\"#444\"",
             "peak %s at %s %s%s · resident bytes stacked; each pixel column shows its "
             "highest moment",
             bytes, at, unit_name, where);
}

static void draw_frame(struct chart *ch)
{
    double base = ch->top + ch->ph;
    svg_line(ch->out, ch->left, base, ch->left + ch->pw, base, "stroke=\"#444\"");
    svg_line(ch->out, ch->left, ch->top, ch->left, base, "stroke=\"#444\"");
}

/* The highest total of the trace: a ring on the stack's top edge and its size. */
static void draw_peak(struct chart *ch)
{
    const struct model_peak *peak = model_peak(ch->m);
    if (!peak->bytes)
        return;
    double x = chart_x(ch, peak->time_ns), y = chart_y(ch, (double)peak->bytes);
    char text[32];
    svg_format_bytes(text, sizeof text, (double)peak->bytes);
    svg_group_begin(ch->out, "class=\"peak\"");
    svg_title(ch->out, "peak %s", text);
    fprintf(ch->out,
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"none\" stroke=\"#000\" "
            "stroke-width=\"1.5\"/>\n",
            x, y);
    int right = x > ch->left + ch->pw * 0.8; /* keep the label inside the plot */
    svg_text(ch->out, x + (right ? -7 : 7), y - 6,
             right ? "text-anchor=\"end\" font-size=\"11\"" : "font-size=\"11\"", "peak %s", text);
    svg_group_end(ch->out);
}

/* What the HTML's readout needs to turn a pointer position into time and bytes. */
static void chart_data(const struct chart *ch)
{
    fprintf(ch->out, " data-left=\"%.1f\" data-top=\"%.1f\" data-pw=\"%.1f\" data-ph=\"%.1f\"",
            ch->left, ch->top, ch->pw, ch->ph);
    fprintf(ch->out, " data-ymax=\"%.0f\" data-t0=\"0\" data-t1=\"%llu\"", ch->ymax,
            (unsigned long long)(ch->t1 - ch->t0));
    if (ch->by_step)
        fprintf(ch->out, " data-steps=\"%.0f\"", step_domain(ch));
    fputs(" data-cols=\"", ch->out);
    for (int j = 0; j < ch->ncol; j++)
        fprintf(ch->out, "%s%llu", j ? "," : "", (unsigned long long)ch->col[j].top_total);
    fputc('"', ch->out);
}

/* One chart, its top-left corner at (0, y) of the document. */
static int draw_chart(struct chart *ch, double y)
{
    fprintf(ch->out, "<g class=\"chart\" transform=\"translate(0 %.0f)\"", y);
    chart_data(ch);
    fputs(">\n", ch->out);
    svg_rect(ch->out, 0, 0, ch->width, ch->height, "fill=\"white\"");
    draw_title(ch);
    draw_y_axis(ch);
    if (draw_layers(ch) != 0 || draw_held(ch) != 0)
        return -1;
    draw_step_lines(ch);
    draw_ceiling(ch);
    draw_markers(ch);
    draw_peak(ch);
    draw_frame(ch);
    if (ch->by_step)
        draw_step_axis(ch);
    else
        draw_time_axis(ch);
    draw_legend(ch);
    svg_group_end(ch->out);
    return 0;
}

/* Charts of several traces (the ranks of a job) are stacked, on one byte scale. */
int timeline_svg(struct chart *charts, size_t n, bool standalone)
{
    FILE *o = charts[0].out;
    svg_open(o, charts[0].width, charts[0].height * (double)n, standalone);
    for (size_t i = 0; i < n; i++)
        if (draw_chart(&charts[i], charts[0].height * (double)i) != 0)
            return -1;
    svg_close(o);
    return 0;
}

/* ---- entry points ----------------------------------------------------------------------- */

static void layout(struct chart *ch, const struct timeline_options *opt)
{
    ch->width = opt->width > 0 ? opt->width : 1200;
    ch->height = opt->height > 0 ? opt->height : 640;
    ch->left = 84;
    ch->top = 64;
    ch->pw = ch->width - ch->left - 230;
    ch->ph = ch->height - ch->top - 56;
    if (ch->pw < 100)
        ch->pw = 100, ch->width = ch->left + ch->pw + 230;
    if (ch->ph < 100)
        ch->ph = 100, ch->height = ch->top + ch->ph + 56;
    ch->t0 = ch->c->t0;
    ch->t1 = ch->c->t1;
    ch->steps = model_steps(ch->m, &ch->nsteps);
    ch->by_step = opt->by_step && ch->nsteps > 0;
    ch->setup = ch->nsteps && ch->steps[0].start_ns > ch->t0;
}

static int prepare(struct chart *ch, const struct timeline_options *opt, char *err, size_t errlen)
{
    ch->c = calloc(1, sizeof *ch->c);
    if (!ch->c) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (timeline_collect(ch->trace, ch->c, &ch->m, err, errlen) != 0)
        return -1;
    layout(ch, opt);
    if (build_columns(ch) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    scale_y(ch);
    return 0;
}

static void release(struct chart *ch)
{
    if (ch->m)
        model_free(ch->m);
    free(ch->col);
    if (ch->c) {
        free(ch->c->b);
        free(ch->c->ceil);
        free(ch->c);
    }
}

int timeline_write(char *const *traces, size_t n, FILE *out, const struct timeline_options *opt,
                   char *err, size_t errlen)
{
    if (n == 0 || n > TIMELINE_MAX_TRACES) {
        snprintf(err, errlen, "%zu traces: one chart takes 1 to %d", n, TIMELINE_MAX_TRACES);
        return -1;
    }
    struct chart *charts = calloc(n, sizeof *charts);
    if (!charts) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    double ymax = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        charts[i] = (struct chart){.out = out, .trace = traces[i]};
        rc = prepare(&charts[i], opt, err, errlen);
        ymax = rc == 0 && charts[i].ymax > ymax ? charts[i].ymax : ymax;
    }
    for (size_t i = 0; rc == 0 && i < n; i++)
        charts[i].ymax = ymax; /* ranks side by side read on one scale */
    if (rc == 0) {
        rc = opt->format == TIMELINE_HTML
                 ? timeline_html(charts, n, opt->top_sites > 0 ? opt->top_sites : 30)
                 : timeline_svg(charts, n, true);
        if (rc != 0)
            snprintf(err, errlen, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        release(&charts[i]);
    free(charts);
    return rc;
}

static int usage(void)
{
    fprintf(stderr, "usage: memshim-analyze timeline [--x time|step] [--width PX] "
                    "[--height PX] [--top N] TRACE|DIR... -o FILE.svg|FILE.html\n");
    return 2;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

int timeline_command(int argc, char **argv)
{
    static const struct option options[] = {
        {"output", required_argument, NULL, 'o'},
        {"x", required_argument, NULL, 'x'},
        {"width", required_argument, NULL, 'w'},
        {"height", required_argument, NULL, 'h'},
        {"top", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'H'},
        {0, 0, 0, 0},
    };
    struct timeline_options opt = {0};
    const char *output = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "o:", options, NULL)) != -1) {
        if (c == 'H')
            return CLI_EXIT_HELP;
        if (c == 'o')
            output = optarg;
        else if (c == 'x' && (strcmp(optarg, "time") == 0 || strcmp(optarg, "step") == 0))
            opt.by_step = strcmp(optarg, "step") == 0;
        else if (c == 'w')
            opt.width = atoi(optarg);
        else if (c == 'h')
            opt.height = atoi(optarg);
        else if (c == 't')
            opt.top_sites = atoi(optarg);
        else
            return usage();
    }
    if (!output || optind >= argc)
        return usage();
    opt.format =
        ends_with(output, ".html") || ends_with(output, ".htm") ? TIMELINE_HTML : TIMELINE_SVG;
    struct cli_traces traces;
    if (cli_traces(argc, argv, optind, &traces) != 0)
        return 2;
    FILE *out = cli_output(output);
    char err[256] = "";
    int rc = out ? timeline_write(traces.paths, traces.count, out, &opt, err, sizeof err) : -1;
    if (out && cli_output_close(out, output) != 0)
        rc = -1;
    if (rc != 0 && *err)
        fprintf(stderr, "memshim-analyze timeline: %s\n", err);
    if (rc != 0 && out)
        cli_output_discard(output);
    cli_traces_free(&traces);
    return rc == 0 ? 0 : 1;
}
