#include "svg.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

void svg_escape(FILE *out, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '&':
            fputs("&amp;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        case '\'':
            fputs("&apos;", out);
            break;
        default:
            /* XML 1.0 forbids most control characters even when escaped */
            if (c >= 0x20 || c == '\t' || c == '\n')
                fputc(c, out);
        }
    }
}

static void vescape(FILE *out, const char *fmt, va_list ap)
{
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    svg_escape(out, buf);
}

void svg_open(FILE *out, double width, double height, int standalone)
{
    if (standalone)
        fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"Helvetica, Arial, sans-serif\" "
            "font-size=\"12\">\n",
            width, height, width, height);
}

void svg_close(FILE *out)
{
    fputs("</svg>\n", out);
}

void svg_rect(FILE *out, double x, double y, double w, double h, const char *attrs)
{
    fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" %s/>\n", x, y, w, h,
            attrs);
}

void svg_line(FILE *out, double x1, double y1, double x2, double y2, const char *attrs)
{
    fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" %s/>\n", x1, y1, x2, y2,
            attrs);
}

void svg_text(FILE *out, double x, double y, const char *attrs, const char *fmt, ...)
{
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" %s>", x, y, attrs);
    va_list ap;
    va_start(ap, fmt);
    vescape(out, fmt, ap);
    va_end(ap);
    fputs("</text>\n", out);
}

void svg_path_begin(FILE *out, const char *attrs)
{
    fprintf(out, "<path %s d=\"", attrs);
}

void svg_path_move(FILE *out, double x, double y)
{
    fprintf(out, "M%.1f %.1f", x, y);
}

void svg_path_line(FILE *out, double x, double y)
{
    fprintf(out, "L%.1f %.1f", x, y);
}

void svg_path_close(FILE *out)
{
    fputc('Z', out);
}

void svg_path_end(FILE *out)
{
    fputs("\"/>\n", out);
}

void svg_title(FILE *out, const char *fmt, ...)
{
    fputs("<title>", out);
    va_list ap;
    va_start(ap, fmt);
    vescape(out, fmt, ap);
    va_end(ap);
    fputs("</title>\n", out);
}

void svg_group_begin(FILE *out, const char *attrs)
{
    fprintf(out, "<g %s>\n", attrs);
}

void svg_group_end(FILE *out)
{
    fputs("</g>\n", out);
}

double svg_nice_step(double range, int max_ticks, double unit)
{
    if (!(range > 0) || max_ticks < 1)
        return unit;
    double raw = range / unit / max_ticks;
    double pow10 = pow(10, floor(log10(raw)));
    static const double mult[] = {1, 2, 5, 10};
    for (size_t i = 0; i < sizeof mult / sizeof mult[0]; i++)
        if (mult[i] * pow10 >= raw)
            return mult[i] * pow10 * unit;
    return 10 * pow10 * unit;
}

double svg_byte_unit(double max, const char **name)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double unit = 1;
    size_t i = 0;
    while (i + 1 < sizeof names / sizeof names[0] && max >= unit * 1024) {
        unit *= 1024;
        i++;
    }
    *name = names[i];
    return unit;
}

double svg_time_unit(double max_seconds, const char **name)
{
    /* a unit is used from `from` seconds on: an axis to 1.5 s reads 0..1500 ms */
    static const struct {
        double seconds, from;
        const char *name;
    } units[] = {{1e-9, 0, "ns"}, {1e-6, 2e-6, "µs"}, {1e-3, 2e-3, "ms"},
                 {1, 2, "s"},     {60, 300, "min"},   {3600, 3 * 3600.0, "h"}};
    size_t i = 0;
    while (i + 1 < sizeof units / sizeof units[0] && max_seconds >= units[i + 1].from)
        i++;
    *name = units[i].name;
    return units[i].seconds;
}

void svg_format_number(char *buf, size_t len, double v)
{
    snprintf(buf, len, "%.3f", v);
    char *dot = strchr(buf, '.');
    if (!dot)
        return;
    char *end = buf + strlen(buf) - 1;
    while (end > dot && *end == '0')
        *end-- = '\0';
    if (end == dot)
        *end = '\0';
    if (strcmp(buf, "-0") == 0)
        strcpy(buf, "0");
}

void svg_format_bytes(char *buf, size_t len, double bytes)
{
    const char *name;
    double unit = svg_byte_unit(bytes, &name);
    double v = bytes / unit;
    int decimals = v >= 100 || unit == 1 ? 0 : v >= 10 ? 1 : 2;
    snprintf(buf, len, "%.*f %s", decimals, v, name);
    /* "1.50 GiB" -> "1.5 GiB", "2.00 MiB" -> "2 MiB" */
    char *dot = strchr(buf, '.');
    if (!dot)
        return;
    char *sp = strchr(dot, ' ');
    char *end = sp - 1;
    while (end > dot && *end == '0')
        end--;
    if (end == dot)
        end--;
    memmove(end + 1, sp, strlen(sp) + 1);
}
