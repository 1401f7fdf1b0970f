/* test_jsonrpc.c - unit tests of src/jsonrpc.c: jsonrpc_parse() classifies
 * requests, notifications and responses and turns every malformed message
 * (bad JSON, batches, non-objects, bad "jsonrpc"/"id"/"method"/"params",
 * raw NULs, invalid UTF-8, absurd nesting) into the JSON-RPC error response
 * the specification prescribes. The builders are in test_jsonrpc_builders.c. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"

/* Parse a NUL-terminated message that must be accepted. */
static void parse_ok(const char *text, jsonrpc_msg_t *msg)
{
    json_t *err = (json_t *)1;
    ck_assert_msg(jsonrpc_parse(text, strlen(text), msg, &err) == 0, "rejected: %s", text);
    ck_assert_ptr_null(err);
    ck_assert_ptr_nonnull(msg->root);
}

/* Parse len bytes that must be rejected with code; returns the error
 * response (caller frees) after checking its envelope. */
static json_t *parse_fail(const char *data, size_t len, int code)
{
    jsonrpc_msg_t msg;
    json_t *err = NULL;
    ck_assert_int_eq(jsonrpc_parse(data, len, &msg, &err), -1);
    ck_assert_ptr_null(msg.root);
    ck_assert_ptr_nonnull(err);
    ck_assert_str_eq(json_string_value(json_object_get(err, "jsonrpc")), "2.0");
    ck_assert_ptr_nonnull(json_object_get(err, "id"));
    json_t *e = json_object_get(err, "error");
    ck_assert(json_is_object(e));
    ck_assert_int_eq(json_integer_value(json_object_get(e, "code")), code);
    ck_assert(json_is_string(json_object_get(e, "message")));
    ck_assert_ptr_null(json_object_get(err, "result"));
    char *dump = json_dumps(err, 0);   /* must always serialize */
    ck_assert_ptr_nonnull(dump);
    free(dump);
    return err;
}

static json_t *fail_str(const char *text, int code)
{
    return parse_fail(text, strlen(text), code);
}

static const char *err_message(json_t *err)
{
    return json_string_value(json_object_get(json_object_get(err, "error"), "message"));
}

static void expect_null_id(const char *text, int code)
{
    json_t *err = fail_str(text, code);
    ck_assert_msg(json_is_null(json_object_get(err, "id")), "id not null for %s", text);
    json_decref(err);
}

START_TEST(request_string_and_integer_id)
{
    jsonrpc_msg_t m;
    parse_ok("{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"tools/list\",\"params\":{}}", &m);
    ck_assert_int_eq(m.kind, JSONRPC_REQUEST);
    ck_assert_str_eq(m.method, "tools/list");
    ck_assert_str_eq(json_string_value(m.id), "abc");
    ck_assert(json_is_object(m.params));
    jsonrpc_msg_free(&m);
    ck_assert_ptr_null(m.root);
    parse_ok("{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"ping\"}", &m);
    ck_assert_int_eq(m.kind, JSONRPC_REQUEST);
    ck_assert_int_eq(json_integer_value(m.id), 42);
    ck_assert_str_eq(m.method, "ping");
    ck_assert_ptr_null(m.params);
    jsonrpc_msg_free(&m);
    parse_ok("{\"method\":\"x\",\"params\":[1,2],\"id\":-7,\"jsonrpc\":\"2.0\"}", &m);
    ck_assert_int_eq(json_integer_value(m.id), -7);
    ck_assert(json_is_array(m.params));
    jsonrpc_msg_free(&m);
}
END_TEST

START_TEST(notification)
{
    jsonrpc_msg_t m;
    parse_ok("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &m);
    ck_assert_int_eq(m.kind, JSONRPC_NOTIFICATION);
    ck_assert_ptr_null(m.id);
    ck_assert_str_eq(m.method, "notifications/initialized");
    jsonrpc_msg_free(&m);
}
END_TEST

START_TEST(responses)
{
    jsonrpc_msg_t m;
    parse_ok("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"ok\":true}}", &m);
    ck_assert_int_eq(m.kind, JSONRPC_RESPONSE);
    ck_assert_ptr_null(m.method);
    ck_assert_int_eq(json_integer_value(m.id), 3);
    jsonrpc_msg_free(&m);
    parse_ok("{\"jsonrpc\":\"2.0\",\"id\":\"r\",\"error\":{\"code\":-1,\"message\":\"x\"}}", &m);
    ck_assert_int_eq(m.kind, JSONRPC_RESPONSE);
    ck_assert_str_eq(json_string_value(m.id), "r");
    jsonrpc_msg_free(&m);
    /* both result and error, neither, or no id: invalid */
    json_decref(fail_str("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":1,\"error\":{}}",
                         JSONRPC_INVALID_REQUEST));
    json_decref(fail_str("{\"jsonrpc\":\"2.0\",\"id\":3}", JSONRPC_INVALID_REQUEST));
    expect_null_id("{\"jsonrpc\":\"2.0\",\"result\":1}", JSONRPC_INVALID_REQUEST);
}
END_TEST

START_TEST(malformed_json)
{
    static const char *const bad[] = {
        "{", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"", "{\"jsonrpc\":\"2.0\",",
        "{jsonrpc:2}", "{\"a\":1,}", "nul", "{\"a\":1} {\"b\":2}", "\"unterminated", "  ",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *err = fail_str(bad[i], JSONRPC_PARSE_ERROR);
        ck_assert_msg(json_is_null(json_object_get(err, "id")), "id for %s", bad[i]);
        ck_assert_msg(strstr(err_message(err), "Parse error") != NULL, "message %s",
                      err_message(err));
        json_decref(err);
    }
    /* empty input */
    json_t *err = parse_fail("", 0, JSONRPC_PARSE_ERROR);
    ck_assert(json_is_null(json_object_get(err, "id")));
    json_decref(err);
    /* only len bytes are read: a valid message cut short is truncated JSON */
    const char *full = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}";
    for (size_t n = 0; n < strlen(full); n++)
        json_decref(parse_fail(full, n, JSONRPC_PARSE_ERROR));
}
END_TEST

START_TEST(batch_and_non_objects)
{
    json_t *err = fail_str("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}]",
                           JSONRPC_INVALID_REQUEST);
    ck_assert(json_is_null(json_object_get(err, "id")));
    ck_assert_ptr_nonnull(strstr(err_message(err), "Invalid Request"));
    json_decref(err);
    expect_null_id("[]", JSONRPC_INVALID_REQUEST);
    expect_null_id("42", JSONRPC_INVALID_REQUEST);
    expect_null_id("\"a string\"", JSONRPC_INVALID_REQUEST);
    expect_null_id("null", JSONRPC_INVALID_REQUEST);
    expect_null_id("true", JSONRPC_INVALID_REQUEST);
}
END_TEST

START_TEST(bad_version_keeps_id)
{
    json_t *err = fail_str("{\"id\":7,\"method\":\"x\"}", JSONRPC_INVALID_REQUEST);
    ck_assert_int_eq(json_integer_value(json_object_get(err, "id")), 7);
    ck_assert_ptr_nonnull(strstr(err_message(err), "jsonrpc"));
    json_decref(err);
    err = fail_str("{\"jsonrpc\":\"1.0\",\"id\":\"s\",\"method\":\"x\"}", JSONRPC_INVALID_REQUEST);
    ck_assert_str_eq(json_string_value(json_object_get(err, "id")), "s");
    json_decref(err);
    err = fail_str("{\"jsonrpc\":2.0,\"id\":8,\"method\":\"x\"}", JSONRPC_INVALID_REQUEST);
    ck_assert_int_eq(json_integer_value(json_object_get(err, "id")), 8);
    json_decref(err);
    /* an unusable id is not echoed even when the version is wrong too */
    expect_null_id("{\"jsonrpc\":\"2\",\"id\":1.5,\"method\":\"x\"}", JSONRPC_INVALID_REQUEST);
}
END_TEST

START_TEST(bad_id_types)
{
    static const char *const ids[] = {"1.5", "{\"a\":1}", "null", "true", "false", "[1]"};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
        char text[128];
        snprintf(text, sizeof text, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"m\"}", ids[i]);
        json_t *err = fail_str(text, JSONRPC_INVALID_REQUEST);
        ck_assert_msg(json_is_null(json_object_get(err, "id")), "id echoed for %s", ids[i]);
        ck_assert_ptr_nonnull(strstr(err_message(err), "id"));
        json_decref(err);
    }
}
END_TEST

START_TEST(bad_method_and_params)
{
    json_t *err = fail_str("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", JSONRPC_INVALID_REQUEST);
    ck_assert_int_eq(json_integer_value(json_object_get(err, "id")), 1);
    ck_assert_ptr_nonnull(strstr(err_message(err), "method"));
    json_decref(err);
    json_decref(fail_str("{\"jsonrpc\":\"2.0\",\"method\":null}", JSONRPC_INVALID_REQUEST));
    static const char *const params[] = {"\"str\"", "12", "true", "null"};
    for (size_t i = 0; i < sizeof params / sizeof *params; i++) {
        char text[128];
        snprintf(text, sizeof text,
                 "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"m\",\"params\":%s}", params[i]);
        err = fail_str(text, JSONRPC_INVALID_REQUEST);
        ck_assert_str_eq(json_string_value(json_object_get(err, "id")), "p");
        ck_assert_ptr_nonnull(strstr(err_message(err), "params"));
        json_decref(err);
    }
}
END_TEST

START_TEST(nul_bytes)
{
    jsonrpc_msg_t m;
    parse_ok("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"e\",\"params\":{\"code\":\"a\\u0000b\"}}",
             &m);
    json_t *code = json_object_get(m.params, "code");
    ck_assert_uint_eq(json_string_length(code), 3);
    ck_assert(memcmp(json_string_value(code), "a\0b", 3) == 0);
    jsonrpc_msg_free(&m);
    /* a literal 0 byte, inside a string or between tokens */
    static const char in_string[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"e\0x\"}";
    json_decref(parse_fail(in_string, sizeof in_string - 1, JSONRPC_PARSE_ERROR));
    static const char between[] = "{\"jsonrpc\":\"2.0\",\0\"id\":1,\"method\":\"e\"}";
    json_decref(parse_fail(between, sizeof between - 1, JSONRPC_PARSE_ERROR));
    static const char trailing[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"e\"}\0";
    json_decref(parse_fail(trailing, sizeof trailing - 1, JSONRPC_PARSE_ERROR));
}
END_TEST

START_TEST(method_with_nul_not_truncated)
{
    /* msg->method is a C string: "ping\u0000xyz" must not become "ping" */
    const char *text = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\\u0000xyz\"}";
    jsonrpc_msg_t m;
    json_t *err = NULL;
    if (jsonrpc_parse(text, strlen(text), &m, &err) < 0) {
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(err, "error"),
                                                            "code")), JSONRPC_INVALID_REQUEST);
        json_decref(err);
        return;
    }
    size_t full = json_string_length(json_object_get(m.root, "method"));
    size_t seen = strlen(m.method);
    jsonrpc_msg_free(&m);
    ck_assert_msg(seen == full, "method of %zu bytes accepted as the %zu-byte \"ping\"", full,
                  seen);
}
END_TEST

START_TEST(invalid_utf8)
{
    static const char *const bad[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\xc3\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xed\xa0\x80\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xc0\x80\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"\xfe\":1}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\xf0\x9f\"method\":\"m\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        expect_null_id(bad[i], JSONRPC_PARSE_ERROR);
    /* valid multi-byte text is fine */
    jsonrpc_msg_t m;
    parse_ok("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xce\xbb\xf0\x9f\x98\x80\"}", &m);
    ck_assert_str_eq(m.method, "\xce\xbb\xf0\x9f\x98\x80");
    jsonrpc_msg_free(&m);
}
END_TEST

START_TEST(deep_nesting)
{
    size_t n = 100000;
    char *deep = malloc(2 * n);
    memset(deep, '[', n);
    json_decref(parse_fail(deep, n, JSONRPC_PARSE_ERROR));          /* unbalanced */
    memset(deep + n, ']', n);
    json_t *err = parse_fail(deep, 2 * n, JSONRPC_PARSE_ERROR);     /* balanced, too deep */
    ck_assert(json_is_null(json_object_get(err, "id")));
    json_decref(err);
    for (size_t i = 0; i < n; i++)
        deep[i] = i % 2 ? '{' : '[';
    json_decref(parse_fail(deep, n, JSONRPC_PARSE_ERROR));
    free(deep);
}
END_TEST

START_TEST(five_megabyte_string)
{
    const size_t big = 5u << 20;
    const char *head = "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"m\",\"params\":{\"s\":\"";
    const char *tail = "\"}}";
    size_t hl = strlen(head), tl = strlen(tail);
    char *text = malloc(hl + big + tl);
    memcpy(text, head, hl);
    memset(text + hl, 'x', big);
    memcpy(text + hl + big, tail, tl);
    jsonrpc_msg_t m;
    json_t *err = NULL;
    ck_assert_int_eq(jsonrpc_parse(text, hl + big + tl, &m, &err), 0);
    ck_assert_ptr_null(err);
    ck_assert_int_eq(m.kind, JSONRPC_REQUEST);
    ck_assert_uint_eq(json_string_length(json_object_get(m.params, "s")), big);
    jsonrpc_msg_free(&m);
    free(text);
}
END_TEST

static Suite *jsonrpc_suite(void)
{
    Suite *s = suite_create("jsonrpc");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, request_string_and_integer_id);
    tcase_add_test(tc, notification);
    tcase_add_test(tc, responses);
    tcase_add_test(tc, malformed_json);
    tcase_add_test(tc, batch_and_non_objects);
    tcase_add_test(tc, bad_version_keeps_id);
    tcase_add_test(tc, bad_id_types);
    tcase_add_test(tc, bad_method_and_params);
    tcase_add_test(tc, nul_bytes);
    tcase_add_test(tc, method_with_nul_not_truncated);
    tcase_add_test(tc, invalid_utf8);
    tcase_add_test(tc, deep_nesting);
    tcase_add_test(tc, five_megabyte_string);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(jsonrpc_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
