/* SVG writer helpers: escaping, tick steps and the units axes are labelled in. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "svg.h"

static char *escaped(const char *s)
{
    char *data = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&data, &len);
    svg_escape(f, s);
    fclose(f);
    return data;
}

Test(viz_svg, escape_markup_and_drop_control_bytes)
{
    char *got = escaped("a<b>&\"c'\x01\td");
    cr_expect_str_eq(got, "a&lt;b&gt;&amp;&quot;c&apos;\td");
    free(got);
    got = escaped("std::vector<int>::push_back \xc3\xa9");
    cr_expect_str_eq(got, "std::vector&lt;int&gt;::push_back \xc3\xa9");
    free(got);
}

Test(viz_svg, nice_steps_are_1_2_5_times_a_power_of_ten)
{
    cr_expect_float_eq(svg_nice_step(10, 10, 1), 1, 1e-12);
    cr_expect_float_eq(svg_nice_step(18, 10, 1), 2, 1e-12);
    cr_expect_float_eq(svg_nice_step(40, 10, 1), 5, 1e-12);
    cr_expect_float_eq(svg_nice_step(0.3, 10, 1), 0.05, 1e-12);
    double gib = 1024.0 * 1024 * 1024;
    cr_expect_float_eq(svg_nice_step(1.5 * gib, 10, gib), 0.2 * gib, 1);
    cr_expect_float_eq(svg_nice_step(0, 10, 1), 1, 1e-12);
}

Test(viz_svg, byte_units)
{
    const char *name;
    cr_expect_float_eq(svg_byte_unit(1000, &name), 1, 0);
    cr_expect_str_eq(name, "B");
    cr_expect_float_eq(svg_byte_unit(1024, &name), 1024, 0);
    cr_expect_str_eq(name, "KiB");
    cr_expect_float_eq(svg_byte_unit(3.0 * (1 << 30), &name), 1 << 30, 0);
    cr_expect_str_eq(name, "GiB");
    char buf[32];
    svg_format_bytes(buf, sizeof buf, 512);
    cr_expect_str_eq(buf, "512 B");
    svg_format_bytes(buf, sizeof buf, 1536);
    cr_expect_str_eq(buf, "1.5 KiB");
    svg_format_bytes(buf, sizeof buf, 24.0 * (1 << 20));
    cr_expect_str_eq(buf, "24 MiB");
    svg_format_bytes(buf, sizeof buf, 1.25 * (1 << 30));
    cr_expect_str_eq(buf, "1.25 GiB");
    svg_format_bytes(buf, sizeof buf, 0);
    cr_expect_str_eq(buf, "0 B");
}

Test(viz_svg, time_units_and_numbers)
{
    const char *name;
    cr_expect_float_eq(svg_time_unit(250e-6, &name), 1e-6, 0);
    cr_expect_str_eq(name, "µs");
    cr_expect_float_eq(svg_time_unit(1.5, &name), 1e-3, 0);
    cr_expect_str_eq(name, "ms");
    cr_expect_float_eq(svg_time_unit(90, &name), 1, 0);
    cr_expect_str_eq(name, "s");
    cr_expect_float_eq(svg_time_unit(3600, &name), 60, 0);
    cr_expect_str_eq(name, "min");
    char buf[32];
    svg_format_number(buf, sizeof buf, 0.25);
    cr_expect_str_eq(buf, "0.25");
    svg_format_number(buf, sizeof buf, 200);
    cr_expect_str_eq(buf, "200");
    svg_format_number(buf, sizeof buf, 1.5000001);
    cr_expect_str_eq(buf, "1.5");
}
