/* whatif_chart: the sweep of ceilings as an SVG chart. */
#include "whatif_report.h"

#include <math.h>

#include "svg.h"
#include "table.h"
#include "whatif_svg_marks.h"

typedef unsigned long long ull;

/* ---- the sweep chart ----------------------------------------------------------------------- */

void whatif_chart_svg(FILE *out, const struct whatif_result *pts, size_t n,
                      const struct whatif_info *in)
{
    const double W = 900, H = 480, left = 90, right = 170, top = 40, bottom = 60;
    double pw = W - left - right, ph = H - top - bottom;
    uint64_t xmin = pts[n - 1].limit, xmax = pts[0].limit, ymax = 1;
    for (size_t i = 0; i < n; i++)
        for (int p = 0; p < WHATIF_POLICIES; p++)
            if (whatif_bytes(&pts[i].t[p]) > ymax)
                ymax = whatif_bytes(&pts[i].t[p]);
    if (whatif_svg_marks_max(pts, n) > ymax)
        ymax = whatif_svg_marks_max(pts, n);
    if (xmax == xmin)
        xmax = xmin + 1;
    const char *xu, *yu;
    double xunit = svg_byte_unit((double)xmax, &xu), yunit = svg_byte_unit((double)ymax, &yu);
    double ystep = svg_nice_step((double)ymax, 6, yunit);
    double ytop = ceil((double)ymax / ystep) * ystep;
    svg_open(out, W, H, 1);
    svg_rect(out, 0, 0, W, H, "fill=\"white\"");
    svg_text(out, left, 24, "font-size=\"15\" font-weight=\"bold\"",
             "Bytes moved against ceiling, device %d (%s)", in->device, in->path);
    char lb[32];
    for (double y = 0; y <= ytop + ystep / 2; y += ystep) {
        double py = top + ph - ph * y / ytop;
        svg_line(out, left, py, left + pw, py, "stroke=\"#ddd\"");
        svg_format_number(lb, sizeof lb, y / yunit);
        svg_text(out, left - 6, py + 4, "text-anchor=\"end\"", "%s %s", lb, yu);
    }
    for (int i = 0; i <= 5; i++) {
        double xv = (double)xmin + (double)(xmax - xmin) * i / 5.0;
        double px = left + pw * i / 5.0;
        svg_line(out, px, top + ph, px, top + ph + 5, "stroke=\"#333\"");
        svg_format_number(lb, sizeof lb, round(xv / xunit * 100) / 100);
        svg_text(out, px, top + ph + 20, "text-anchor=\"middle\"", "%s %s", lb, xu);
    }
    svg_line(out, left, top + ph, left + pw, top + ph, "stroke=\"#333\"");
    svg_line(out, left, top, left, top + ph, "stroke=\"#333\"");
    svg_text(out, left + pw / 2, H - 14, "text-anchor=\"middle\"",
             "ceiling (peak %s at the right, smallest workable at the left)",
             table_bytes(in->peak, lb, sizeof lb));
    static const char *const color[] = {"#59a14f", "#4e79a7", "#e15759"};
    static const char *const name[] = {"MIN (lower bound)", "LRU", "shim policy"};
    for (int p = 0; p < WHATIF_POLICIES; p++) {
        if (p == WHATIF_SHIM && !pts[0].have_shim)
            continue;
        char attrs[96];
        snprintf(attrs, sizeof attrs, "fill=\"none\" stroke=\"%s\" stroke-width=\"2\"", color[p]);
        svg_path_begin(out, attrs);
        for (size_t i = n; i-- > 0;) {
            double px = left + pw * (double)(pts[i].limit - xmin) / (double)(xmax - xmin);
            double py = top + ph - ph * (double)whatif_bytes(&pts[i].t[p]) / ytop;
            if (i == n - 1)
                svg_path_move(out, px, py);
            else
                svg_path_line(out, px, py);
        }
        svg_path_end(out);
        double ly = top + 10 + 20 * p;
        snprintf(attrs, sizeof attrs, "stroke=\"%s\" stroke-width=\"3\"", color[p]);
        svg_line(out, left + pw + 12, ly, left + pw + 32, ly, attrs);
        svg_text(out, left + pw + 38, ly + 4, "", "%s", name[p]);
    }
    struct whatif_svg_frame frame = {
        left, top, pw, ph, xmin, xmax, ytop, left + pw + 12, top + 10 + 20 * WHATIF_POLICIES};
    whatif_svg_marks(out, pts, n, &frame);
    svg_close(out);
}
