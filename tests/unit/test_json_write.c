/* test_json_write.c - unit tests of src/json_write.c: for every kind of value
 * its text must be byte for byte what jansson's json_dumps writes with
 * JSON_COMPACT | JSON_REAL_PRECISION(12), and read back to an equal value. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json_write.h"

#define DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(12) | JSON_ENCODE_ANY)

static void assert_same_as_jansson(const json_t *v)
{
    char *mine = json_text(v);
    char *theirs = json_dumps(v, DUMP_FLAGS);
    ck_assert_ptr_nonnull(theirs);
    ck_assert_str_eq(mine, theirs);
    /* 12 digits do not always give the same double back; jansson reads no
     * key with a NUL in it. What it can read must come back equal. */
    json_t *back = json_loads(mine, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (back)
        ck_assert(json_equal(back, v) || json_is_real(v));
    else
        ck_assert(json_object_getn(v, "key\0with nul", 13) != NULL);
    json_decref(back);
    free(mine);
    free(theirs);
}

START_TEST(scalars)
{
    json_t *values[] = {
        json_true(), json_false(), json_null(), json_integer(0), json_integer(-1),
        json_integer(INT64_MAX), json_integer(INT64_MIN), json_real(0.0), json_real(1.5),
        json_real(-0.001), json_real(1e300), json_real(1e-5), json_real(-2.5e-100), json_real(1e21), json_real(3.0), json_real(0.1 + 0.2),
        json_real(123456789012345.0), json_string(""), json_string("plain"),
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        assert_same_as_jansson(values[i]);
        json_decref(values[i]);
    }
}
END_TEST

START_TEST(every_escape)
{
    static const char more[] = "\xC3\xA9 \xE2\x80\xA8 \xF0\x9F\x98\x80 \"\\/";
    char all[128 + sizeof more];
    for (int i = 0; i < 128; i++)
        all[i] = (char)i;   /* every ASCII byte, NUL included */
    memcpy(all + 128, more, sizeof more - 1);
    json_t *s = json_stringn(all, sizeof all - 1);
    ck_assert_ptr_nonnull(s);
    assert_same_as_jansson(s);
    json_decref(s);
}
END_TEST

START_TEST(containers)
{
    json_t *v = json_pack("{s:[], s:{}, s:[i, s, {s:[n, b, f]}], s:s}", "empty", "none", "list",
                          1, "two", "three", 0, 2.5, "last", "x");
    json_object_setn_new(v, "key\0with nul", 13, json_string("nul key"));
    assert_same_as_jansson(v);
    json_decref(v);
}
END_TEST

START_TEST(large_string)
{
    size_t n = 1 << 20;
    char *text = malloc(n);
    ck_assert_ptr_nonnull(text);
    for (size_t i = 0; i < n; i++)
        text[i] = "ab\"\n\\c\t"[i % 7];
    json_t *s = json_stringn(text, n);
    assert_same_as_jansson(s);
    json_decref(s);
    free(text);
}
END_TEST

static Suite *json_write_suite(void)
{
    Suite *s = suite_create("json_write");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, scalars);
    tcase_add_test(tc, every_escape);
    tcase_add_test(tc, containers);
    tcase_add_test(tc, large_string);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(json_write_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
