/* timeline_html: the HTML page: the charts, then the top call sites of each trace. */
#include "timeline_chart.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "site_label.h"
#include "svg.h"
#include "timeline_zoom.h"

/* ---- HTML ------------------------------------------------------------------------------- */

static const char html_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    "<title>memshim timeline</title>\n<style>\n"
    "body{font-family:Helvetica,Arial,sans-serif;margin:16px;color:#222}\n"
    "table{border-collapse:collapse;margin-top:16px;font-size:13px}\n"
    "th,td{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}\n"
    "th{cursor:pointer;background:#f4f4f4;user-select:none}\n"
    "th:first-child,td:first-child,th:nth-child(2),td:nth-child(2){text-align:left}\n"
    "td:first-child{font-family:monospace;max-width:560px;overflow-wrap:anywhere}\n"
    ".sw{display:inline-block;width:10px;height:10px;margin-right:6px}\n"
    "</style>\n</head>\n<body>\n";

/* Click a header to sort by it; numbers sort by their data-v byte counts, biggest first. */
static const char html_script[] =
    "<script>\n"
    "document.querySelectorAll('table.sites th').forEach(function (th) {\n"
    "  th.addEventListener('click', function () {\n"
    "    var col = th.cellIndex, body = th.closest('table').tBodies[0];\n"
    "    var rows = Array.prototype.slice.call(body.rows);\n"
    "    var down = th.dataset.dir !== 'desc';\n"
    "    th.dataset.dir = down ? 'desc' : 'asc';\n"
    "    rows.sort(function (a, b) {\n"
    "      var x = a.cells[col], y = b.cells[col];\n"
    "      var r = 'v' in x.dataset ? Number(y.dataset.v) - Number(x.dataset.v)\n"
    "                               : x.textContent.localeCompare(y.textContent);\n"
    "      return down ? r : -r;\n"
    "    });\n"
    "    rows.forEach(function (row) { body.appendChild(row); });\n"
    "  });\n"
    "});\n"
    "</script>\n";

static int by_bytes_at_peak(const void *pa, const void *pb)
{
    const struct model_site *a = pa, *b = pb;
    if (a->bytes_at_peak != b->bytes_at_peak)
        return a->bytes_at_peak < b->bytes_at_peak ? 1 : -1;
    if (a->max_bytes != b->max_bytes)
        return a->max_bytes < b->max_bytes ? 1 : -1;
    return (a->site > b->site) - (a->site < b->site);
}

static void bytes_cell(FILE *o, uint64_t v)
{
    char text[32];
    svg_format_bytes(text, sizeof text, (double)v);
    fprintf(o, "<td data-v=\"%llu\">%s</td>", (unsigned long long)v, text);
}

static void site_row(FILE *o, struct model *m, const struct site_labels *labels,
                     const struct model_site *s)
{
    const char *frames[64];
    size_t n = s->site ? model_site_frames(m, s->site, frames, 64) : 0;
    fputs("<tr><td title=\"", o);
    for (size_t i = 0; i < n; i++) {
        svg_escape(o, frames[i]);
        fputs(i + 1 < n ? "\n" : "", o);
    }
    fputs("\">", o);
    svg_escape(o, site_labels_name(labels, m, s->site));
    fprintf(o, "</td><td><span class=\"sw\" style=\"background:%s\"></span>%s%s</td>",
            timeline_color(s->category), reader_category_name(s->category),
            s->inferred ? " (inferred)" : "");
    bytes_cell(o, s->bytes_at_peak);
    bytes_cell(o, s->max_bytes);
    fprintf(o, "<td data-v=\"%llu\">%llu</td>", (unsigned long long)s->allocations,
            (unsigned long long)s->allocations);
    bytes_cell(o, s->allocated_bytes);
    bytes_cell(o, s->bytes_at_exit);
    fputs("</tr>\n", o);
}

static int write_sites_table(FILE *o, struct model *m, int top)
{
    size_t n;
    const struct model_site *sites = model_sites(m, &n);
    struct model_site *sorted = malloc((n ? n : 1) * sizeof *sorted);
    if (!sorted)
        return -1;
    if (n) {
        memcpy(sorted, sites, n * sizeof *sorted);
        qsort(sorted, n, sizeof *sorted, by_bytes_at_peak);
    }
    fprintf(o,
            "<p>%zu of %zu sites, by bytes resident at the peak. "
            "Hover a site for its stack; click a column to sort.</p>\n",
            n < (size_t)top ? n : (size_t)top, n);
    fputs("<table class=\"sites\">\n<thead><tr><th>call site</th><th>category</th>"
          "<th>at peak</th><th>most at once</th><th>allocations</th><th>allocated</th>"
          "<th>alive at exit</th></tr></thead>\n<tbody>\n",
          o);
    struct site_labels *labels = site_labels_new(m);
    for (size_t i = 0; i < n && i < (size_t)top; i++)
        site_row(o, m, labels, &sorted[i]);
    site_labels_free(labels);
    fputs("</tbody>\n</table>\n", o);
    free(sorted);
    return 0;
}

int timeline_html(struct chart *charts, size_t n, int top)
{
    FILE *o = charts[0].out;
    fputs(html_head, o);
    fputs(timeline_zoom_open, o);
    if (timeline_svg(charts, n, false) != 0)
        return -1;
    fputs(timeline_zoom_close, o);
    for (size_t i = 0; i < n; i++) {
        const struct mst_file_header *h = reader_header(model_reader(charts[i].m));
        fputs("<h2>Top call sites", o);
        if (n > 1) {
            fputs(" — ", o);
            svg_escape(o, timeline_base_name(charts[i].trace));
            if (h->rank != MST_NO_RANK)
                fprintf(o, " (rank %u)", h->rank);
        }
        fputs("</h2>\n", o);
        if (write_sites_table(o, charts[i].m, top) != 0)
            return -1;
    }
    fputs(html_script, o);
    fputs(timeline_zoom_script, o);
    fputs("</body>\n</html>\n", o);
    return 0;
}
