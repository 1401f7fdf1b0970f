/* test_jsonrpc_builders.c - unit tests of src/jsonrpc.c's builders:
 * jsonrpc_result, jsonrpc_error and jsonrpc_notification make correct
 * JSON-RPC 2.0 envelopes ("jsonrpc":"2.0", the id copied in, error code and
 * message), and an error message made from invalid UTF-8 still serializes. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"

static const char *err_message(json_t *err)
{
    return json_string_value(json_object_get(json_object_get(err, "error"), "message"));
}

START_TEST(builders)
{
    json_t *id = json_string("req-1");
    json_t *r = jsonrpc_result(id, json_pack("{s:i}", "n", 5));
    json_decref(id);   /* copied in: the envelope must not depend on it */
    ck_assert_str_eq(json_string_value(json_object_get(r, "jsonrpc")), "2.0");
    ck_assert_str_eq(json_string_value(json_object_get(r, "id")), "req-1");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "result"), "n")), 5);
    ck_assert_ptr_null(json_object_get(r, "error"));
    ck_assert_uint_eq(json_object_size(r), 3);
    json_decref(r);
    r = jsonrpc_result(NULL, json_object());
    ck_assert(json_is_null(json_object_get(r, "id")));
    json_decref(r);
    id = json_integer(77);
    json_t *e = jsonrpc_error(id, JSONRPC_METHOD_NOT_FOUND, "no method %s (%d)", "foo", 3);
    ck_assert_int_eq(json_integer_value(json_object_get(e, "id")), 77);
    ck_assert_ptr_ne(json_object_get(e, "id"), id);
    json_decref(id);
    ck_assert_str_eq(json_string_value(json_object_get(e, "jsonrpc")), "2.0");
    json_t *eo = json_object_get(e, "error");
    ck_assert_int_eq(json_integer_value(json_object_get(eo, "code")), -32601);
    ck_assert_str_eq(json_string_value(json_object_get(eo, "message")), "no method foo (3)");
    ck_assert_ptr_null(json_object_get(e, "result"));
    json_decref(e);
    json_t *n = jsonrpc_notification("notifications/message", json_pack("{s:s}", "a", "b"));
    ck_assert_str_eq(json_string_value(json_object_get(n, "jsonrpc")), "2.0");
    ck_assert_str_eq(json_string_value(json_object_get(n, "method")), "notifications/message");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(n, "params"), "a")), "b");
    ck_assert_ptr_null(json_object_get(n, "id"));
    json_decref(n);
    n = jsonrpc_notification("x", NULL);
    ck_assert_ptr_null(json_object_get(n, "params"));
    ck_assert_uint_eq(json_object_size(n), 2);
    json_decref(n);
}
END_TEST

START_TEST(error_from_invalid_utf8)
{
    json_t *e = jsonrpc_error(NULL, JSONRPC_INTERNAL_ERROR, "bad: %s|", "a\xff\xc3(\xed\xa0\x80");
    const char *msg = err_message(e);
    ck_assert_ptr_nonnull(msg);
    ck_assert_str_eq(msg, "bad: a\xef\xbf\xbd\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|");
    char *dump = json_dumps(e, 0);
    ck_assert_ptr_nonnull(dump);
    json_t *back = json_loads(dump, 0, NULL);
    ck_assert_ptr_nonnull(back);
    json_decref(back);
    free(dump);
    json_decref(e);
    /* a message longer than the internal buffer, cut inside a sequence */
    char long_arg[3000];
    for (size_t i = 0; i + 2 < sizeof long_arg; i += 2)
        memcpy(long_arg + i, "\xce\xbb", 2);
    long_arg[sizeof long_arg - 1] = '\0';
    for (int shift = 0; shift < 2; shift++) {
        e = jsonrpc_error(NULL, -1, "%.*s%s", shift, "x", long_arg);
        dump = json_dumps(e, 0);
        ck_assert_ptr_nonnull(dump);
        free(dump);
        json_decref(e);
    }
}
END_TEST

static Suite *builders_suite(void)
{
    Suite *s = suite_create("jsonrpc_builders");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, builders);
    tcase_add_test(tc, error_from_invalid_utf8);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(builders_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
