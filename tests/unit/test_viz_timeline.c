/* The timeline chart of the hand-made scenario (viz_scenario.h): what is drawn, and the
 * ceiling line only when a ceiling exists. XML well-formedness and the rendering itself are
 * checked by tests/e2e/viz_check.py (xml.etree) and by eye (see README). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "timeline.h"
#include "tracegen.h"
#include "viz_scenario.h"

static char *chart(const struct viz_scenario *s, const struct timeline_options *opt, size_t *len)
{
    char path[64] = "/tmp/viz_timeline_XXXXXX";
    char *paths[] = {path};
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_gt(viz_scenario_write(path, s), 0);
    char *data = NULL;
    FILE *f = open_memstream(&data, len);
    char err[256];
    cr_assert_eq(timeline_write(paths, 1, f, opt, err, sizeof err), 0, "%s", err);
    fclose(f);
    unlink(path);
    return data;
}

static size_t count(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

Test(viz_timeline, everything_drawn)
{
    struct viz_scenario s = {
        .with_ceiling = 1, .with_spill = 1, .with_oom = 1, .activation_mib = 8};
    struct timeline_options opt = {0};
    size_t len;
    char *svg = chart(&s, &opt, &len);
    cr_expect(strncmp(svg, "<?xml", 5) == 0);
    cr_expect(strstr(svg, "</svg>\n"));
    /* one band per category that held memory, each named in the legend */
    static const char *const present[] = {"parameter", "activation", "optimizer_state", "unknown"};
    for (size_t i = 0; i < 4; i++) {
        char band[64], legend[64];
        snprintf(band, sizeof band, "data-category=\"%s\"", present[i]);
        snprintf(legend, sizeof legend, ">%s</text>", present[i]);
        cr_expect_eq(count(svg, band), 1, "%s", band);
        cr_expect_eq(count(svg, legend), 1, "%s", legend);
    }
    cr_expect_eq(count(svg, "data-category=\"gradient\""), 0);
    cr_expect_eq(count(svg, "class=\"ceiling\""), 1);
    cr_expect(strstr(svg, "ceiling 64 MiB"));
    cr_expect_eq(count(svg, "class=\"oom\""), 1);
    cr_expect_eq(count(svg, "class=\"spill\""), 1);
    cr_expect_eq(count(svg, "class=\"restore\""), 1);
    cr_expect_eq(count(svg, "class=\"held\""), 1); /* the spilled band */
    cr_expect_eq(count(svg, "class=\"step\""), 2);
    cr_expect(strstr(svg, "peak 48 MiB at 12 µs, step 0, phase forward"), "%.600s", svg);
    free(svg);
}

Test(viz_timeline, no_ceiling_no_line)
{
    struct viz_scenario s = {.activation_mib = 8};
    struct timeline_options opt = {0};
    size_t len;
    char *svg = chart(&s, &opt, &len);
    cr_expect_eq(count(svg, "class=\"ceiling\""), 0);
    cr_expect_eq(count(svg, "class=\"oom\""), 0);
    cr_expect_eq(count(svg, "class=\"spill\""), 0);
    cr_expect_eq(count(svg, "class=\"held\""), 0);
    free(svg);
}

Test(viz_timeline, step_axis)
{
    struct viz_scenario s = {.activation_mib = 8};
    struct timeline_options opt = {.by_step = 1};
    size_t len;
    char *svg = chart(&s, &opt, &len);
    cr_expect(strstr(svg, ">training step</text>"));
    cr_expect(strstr(svg, ">setup</text>"));
    free(svg);
}

Test(viz_timeline, html_has_svg_and_sortable_sites)
{
    struct viz_scenario s = {.activation_mib = 8};
    struct timeline_options opt = {.format = TIMELINE_HTML};
    size_t len;
    char *html = chart(&s, &opt, &len);
    cr_expect(strncmp(html, "<!DOCTYPE html>", 15) == 0);
    cr_expect(!strstr(html, "<?xml"));
    cr_expect_eq(count(html, "<svg "), 1);
    cr_expect_eq(count(html, "<tr><td"), 4); /* four call sites */
    cr_expect(strstr(html, "<script>"));
    /* biggest at the peak first: init_params holds 32 MiB there */
    char *first = strstr(html, "<tr><td");
    cr_assert(first);
    cr_expect(strstr(first, "init_params") < strstr(first, "forward"));
    free(html);
}

Test(viz_timeline, trace_without_events)
{
    char path[64] = "/tmp/viz_timeline_XXXXXX";
    char *paths[] = {path};
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    struct tracegen *g = tracegen_new_file(path, NULL);
    cr_assert_not_null(g);
    tracegen_device(g, 0, "Sim GPU", 1ull << 30, 0);
    cr_assert_eq(tracegen_finish(g), 0);
    tracegen_free(g);
    for (int html = 0; html < 2; html++) {
        struct timeline_options opt = {.format = html ? TIMELINE_HTML : TIMELINE_SVG, .by_step = 1};
        char *data = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&data, &len);
        char err[256];
        cr_assert_eq(timeline_write(paths, 1, f, &opt, err, sizeof err), 0, "%s", err);
        fclose(f);
        cr_expect(strstr(data, "</svg>"));
        cr_expect_eq(count(data, "class=\"layer\""), 0);
        free(data);
    }
    unlink(path);
}

Test(viz_timeline, ranks_stacked_on_one_scale)
{
    char a[64] = "/tmp/viz_timeline_XXXXXX", b[64] = "/tmp/viz_timeline_XXXXXX";
    char *paths[] = {a, b};
    struct viz_scenario big = {.with_ceiling = 1, .activation_mib = 8};
    struct viz_scenario small = {.activation_mib = 2};
    for (int i = 0; i < 2; i++) {
        int fd = mkstemp(paths[i]);
        cr_assert_geq(fd, 0);
        close(fd);
        cr_assert_gt(viz_scenario_write(paths[i], i ? &small : &big), 0);
    }
    char *data = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&data, &len);
    struct timeline_options opt = {.format = TIMELINE_HTML};
    char err[256];
    cr_assert_eq(timeline_write(paths, 2, f, &opt, err, sizeof err), 0, "%s", err);
    fclose(f);
    cr_expect_eq(count(data, "<svg "), 1);
    cr_expect(strstr(data, "height=\"1280\""));
    cr_expect_eq(count(data, "class=\"chart\""), 2);
    cr_expect_eq(count(data, "<table class=\"sites\">"), 2);
    /* one scale: the 64 MiB ceiling of the first sets the top label of both y axes (70) */
    cr_expect_eq(count(data, ">70</text>"), 2);
    free(data);
    unlink(a);
    unlink(b);
}
