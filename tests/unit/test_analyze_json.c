/* JSON writer and text formatting helpers. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "json.h"
#include "table.h"

static char *capture(void (*fn)(FILE *))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fn(f);
    fclose(f);
    return buf;
}

static void nested(FILE *f)
{
    struct json j;
    json_init(&j, f, 0);
    json_begin_object(&j, NULL);
    json_uint(&j, "a", 18446744073709551615ull);
    json_int(&j, "b", -3);
    json_begin_array(&j, "c");
    json_string(&j, NULL, "x\"y\\z\n\x01");
    json_bool(&j, NULL, 1);
    json_null(&j, NULL);
    json_double(&j, NULL, 0.5);
    json_end_array(&j);
    json_begin_object(&j, "empty");
    json_end_object(&j);
    json_string(&j, "utf8", "caf\xc3\xa9 \xff");
    json_end_object(&j);
}

Test(json, compact_output)
{
    char *s = capture(nested);
    cr_assert_str_eq(s, "{\"a\":18446744073709551615,\"b\":-3,\"c\":[\"x\\\"y\\\\z\\n\\u0001\","
                        "true,null,0.5],\"empty\":{},\"utf8\":\"caf\xc3\xa9 \\ufffd\"}\n");
    free(s);
}

Test(table, bytes_and_percent)
{
    char b[32];
    cr_assert_str_eq(table_bytes(0, b, sizeof b), "0 B");
    cr_assert_str_eq(table_bytes(1023, b, sizeof b), "1023 B");
    cr_assert_str_eq(table_bytes(1536, b, sizeof b), "1.50 KiB");
    cr_assert_str_eq(table_bytes(12ull << 30, b, sizeof b), "12.0 GiB");
    cr_assert_str_eq(table_bytes(300ull << 20, b, sizeof b), "300 MiB");
    cr_assert_str_eq(table_percent(1, 3, b, sizeof b), "33.3%");
    cr_assert_str_eq(table_percent(1, 0, b, sizeof b), "-");
    cr_assert_str_eq(table_duration(1500000, b, sizeof b), "1.5 ms");
}

static void small_table(FILE *f)
{
    struct table *t = table_new(2);
    table_cell(t, "name");
    table_cell(t, "bytes");
    table_cell(t, "a");
    table_cell(t, "%d", 10);
    table_cell(t, "longer");
    table_cell(t, "2");
    table_print(t, f, 1);
    table_free(t);
}

Test(table, aligned_columns)
{
    char *s = capture(small_table);
    cr_assert_str_eq(s, " name    bytes\n -------------\n a          10\n longer      2\n");
    free(s);
}
