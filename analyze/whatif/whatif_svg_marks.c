/* recompute and auto curves, out-of-memory crosses, the unworkable range. See whatif_svg_marks.h.
 */
#include "whatif_svg_marks.h"

#include "svg.h"

#define COLOR_RECOMPUTE "#b07aa1"
#define COLOR_AUTO      "#f28e2b"
#define COLOR_OOM       "#d62728"

static uint64_t recompute_bytes(const struct whatif_result *p)
{
    return p->r.moved_bytes;
}

static uint64_t auto_bytes(const struct whatif_result *p)
{
    return whatif_bytes(&p->a.t);
}

uint64_t whatif_svg_marks_max(const struct whatif_result *pts, size_t n)
{
    uint64_t hi = 0;
    for (size_t i = 0; i < n; i++) {
        if (!pts[i].feasible)
            continue;
        hi = recompute_bytes(&pts[i]) > hi ? recompute_bytes(&pts[i]) : hi;
        if (pts[i].have_shim && auto_bytes(&pts[i]) > hi)
            hi = auto_bytes(&pts[i]);
    }
    return hi;
}

static double x_of(const struct whatif_svg_frame *f, uint64_t limit)
{
    return f->left + f->pw * (double)(limit - f->xmin) / (double)(f->xmax - f->xmin);
}

static double y_of(const struct whatif_svg_frame *f, uint64_t bytes)
{
    return f->top + f->ph - f->ph * (double)bytes / f->ytop;
}

static void curve(FILE *out, const struct whatif_result *pts, size_t n,
                  const struct whatif_svg_frame *f, uint64_t (*bytes)(const struct whatif_result *),
                  const char *color)
{
    char attrs[128];
    snprintf(attrs, sizeof attrs,
             "fill=\"none\" stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"6 3\"", color);
    svg_path_begin(out, attrs);
    int started = 0;
    for (size_t i = n; i-- > 0;) {
        if (!pts[i].feasible)
            continue;
        double x = x_of(f, pts[i].limit), y = y_of(f, bytes(&pts[i]));
        if (started++)
            svg_path_line(out, x, y);
        else
            svg_path_move(out, x, y);
    }
    svg_path_end(out);
}

static void cross(FILE *out, double x, double y, const char *what, uint64_t limit,
                  uint64_t failures)
{
    char ceiling[32];
    svg_format_bytes(ceiling, sizeof ceiling, (double)limit);
    svg_group_begin(out, "class=\"oom\"");
    svg_title(out, "%s at a %s ceiling: %llu allocation%s fail with out-of-memory", what, ceiling,
              (unsigned long long)failures, failures == 1 ? "" : "s");
    svg_line(out, x - 5, y - 5, x + 5, y + 5, "stroke=\"" COLOR_OOM "\" stroke-width=\"2.5\"");
    svg_line(out, x - 5, y + 5, x + 5, y - 5, "stroke=\"" COLOR_OOM "\" stroke-width=\"2.5\"");
    svg_group_end(out);
}

/* Points with hover text: recompute's FLOPs and auto's drops, and the OOM crosses. */
static void points(FILE *out, const struct whatif_result *pts, size_t n,
                   const struct whatif_svg_frame *f)
{
    char b[32];
    for (size_t i = 0; i < n; i++) {
        const struct whatif_result *p = &pts[i];
        if (!p->feasible)
            continue;
        double x = x_of(f, p->limit);
        svg_format_bytes(b, sizeof b, (double)p->limit);
        svg_group_begin(out, "class=\"recompute\"");
        svg_title(out, "recompute at %s: %llu replays, %.3g GFLOP, %llu bytes still moved", b,
                  (unsigned long long)p->r.recomputes, (double)p->r.flops / 1e9,
                  (unsigned long long)p->r.moved_bytes);
        fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"" COLOR_RECOMPUTE "\"/>\n", x,
                y_of(f, recompute_bytes(p)));
        svg_group_end(out);
        if (!p->have_shim)
            continue;
        svg_group_begin(out, "class=\"auto\"");
        svg_title(out, "auto at %s: %llu spilled, %llu dropped (%.3g GFLOP recomputed)", b,
                  (unsigned long long)p->a.t.evictions, (unsigned long long)p->a.drops,
                  (double)p->a.flops / 1e9);
        fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"" COLOR_AUTO "\"/>\n", x,
                y_of(f, auto_bytes(p)));
        svg_group_end(out);
        if (p->t[WHATIF_SHIM].failures)
            cross(out, x, y_of(f, whatif_bytes(&p->t[WHATIF_SHIM])), "shim policy", p->limit,
                  p->t[WHATIF_SHIM].failures);
        if (p->a.t.failures)
            cross(out, x, y_of(f, auto_bytes(p)), "auto", p->limit, p->a.t.failures);
    }
}

/* Ceilings below the smallest workable one: shaded, and a cross on the axis for each point. */
static void unworkable(FILE *out, const struct whatif_result *pts, size_t n,
                       const struct whatif_svg_frame *f)
{
    size_t first = n;
    for (size_t i = 0; i < n; i++)
        if (!pts[i].feasible && first == n)
            first = i;
    if (first == n)
        return;
    double x0 = f->left, x1 = x_of(f, pts[first].limit);
    if (first > 0) /* up to halfway to the lowest workable point */
        x1 = (x1 + x_of(f, pts[first - 1].limit)) / 2;
    svg_group_begin(out, "class=\"unworkable\"");
    svg_title(out, "below the smallest workable ceiling: no policy can run (out of memory)");
    svg_rect(out, x0, f->top, x1 - x0, f->ph, "fill=\"#888\" fill-opacity=\"0.18\"");
    svg_group_end(out);
    for (size_t i = first; i < n; i++)
        if (!pts[i].feasible)
            cross(out, x_of(f, pts[i].limit), f->top + f->ph, "every policy", pts[i].limit, 1);
}

static double legend(FILE *out, const struct whatif_svg_frame *f, double y, const char *color,
                     const char *dash, const char *name)
{
    char attrs[128];
    snprintf(attrs, sizeof attrs, "stroke=\"%s\" stroke-width=\"3\"%s", color, dash);
    svg_line(out, f->legend_x, y, f->legend_x + 20, y, attrs);
    svg_text(out, f->legend_x + 26, y + 4, "", "%s", name);
    return y + 20;
}

void whatif_svg_marks(FILE *out, const struct whatif_result *pts, size_t n,
                      const struct whatif_svg_frame *f)
{
    if (n == 0 || f->xmax <= f->xmin || !(f->ytop > 0))
        return;
    unworkable(out, pts, n, f);
    curve(out, pts, n, f, recompute_bytes, COLOR_RECOMPUTE);
    if (pts[0].have_shim)
        curve(out, pts, n, f, auto_bytes, COLOR_AUTO);
    points(out, pts, n, f);
    double y = legend(out, f, f->legend_y, COLOR_RECOMPUTE, " stroke-dasharray=\"6 3\"",
                      "recompute (moved)");
    if (pts[0].have_shim)
        y = legend(out, f, y, COLOR_AUTO, " stroke-dasharray=\"6 3\"", "auto (spilled)");
    svg_line(out, f->legend_x + 5, y - 5, f->legend_x + 15, y + 5,
             "stroke=\"" COLOR_OOM "\" stroke-width=\"2.5\"");
    svg_line(out, f->legend_x + 5, y + 5, f->legend_x + 15, y - 5,
             "stroke=\"" COLOR_OOM "\" stroke-width=\"2.5\"");
    svg_text(out, f->legend_x + 26, y + 4, "", "out of memory");
}
