/* test_utf8.c - unit tests of src/utf8.c (UTF-8 validation per RFC 3629 and
 * repair to U+FFFD: utf8_sequence_length, utf8_sanitize, utf8_json_string,
 * utf8_prefix) and of util.h's growable byte buffer buf_t. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"
#include "util.h"

#define U(s) ((const unsigned char *)(s))
#define FFFD "\xEF\xBF\xBD"

/* Is s[0..n) entirely valid UTF-8 by a reference decoder written here? */
static int ref_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
                   : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (len == 0 || i + len > n)
            return 0;
        uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += len;
    }
    return 1;
}

START_TEST(sequence_valid)
{
    static const struct { const char *s; size_t len; } ok[] = {
        {"A", 1}, {"\x7F", 1}, {"\0", 1},
        {"\xC2\x80", 2}, {"\xC3\xA9", 2}, {"\xDF\xBF", 2},
        {"\xE0\xA0\x80", 3}, {"\xE2\x82\xAC", 3}, {"\xED\x9F\xBF", 3}, {"\xEE\x80\x80", 3},
        {"\xEF\xBF\xBF", 3},
        {"\xF0\x90\x80\x80", 4}, {"\xF0\x9F\x98\x80", 4}, {"\xF4\x8F\xBF\xBF", 4},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        ck_assert_msg(utf8_sequence_length(U(ok[i].s), ok[i].len) == ok[i].len, "case %zu", i);
        /* more bytes after it change nothing */
        char longer[8] = {0};
        memcpy(longer, ok[i].s, ok[i].len);
        longer[ok[i].len] = 'x';
        ck_assert_uint_eq(utf8_sequence_length(U(longer), ok[i].len + 1), ok[i].len);
    }
}
END_TEST

START_TEST(sequence_invalid)
{
    static const struct { const char *s; size_t n; } bad[] = {
        /* overlong */
        {"\xC0\x80", 2}, {"\xC1\xBF", 2}, {"\xE0\x80\x80", 3}, {"\xE0\x9F\xBF", 3},
        {"\xF0\x80\x80\x80", 4}, {"\xF0\x8F\xBF\xBF", 4},
        /* surrogates */
        {"\xED\xA0\x80", 3}, {"\xED\xBF\xBF", 3}, {"\xED\xB0\x80", 3},
        /* above U+10FFFF, and bytes that never start a sequence */
        {"\xF4\x90\x80\x80", 4}, {"\xF5\x80\x80\x80", 4}, {"\xF7\xBF\xBF\xBF", 4},
        {"\xF8\x88\x80\x80\x80", 5}, {"\xFE", 1}, {"\xFF", 1},
        /* stray continuation bytes */
        {"\x80", 1}, {"\xBF", 1}, {"\x80\x80", 2},
        /* truncated by n */
        {"\xC3", 1}, {"\xE2\x82", 2}, {"\xE2", 1}, {"\xF0\x9F\x98", 3}, {"\xF0\x9F", 2},
        /* truncated by a non-continuation byte */
        {"\xC3" "A", 2}, {"\xE2\x82" "A", 3}, {"\xE2" "A\xAC", 3}, {"\xF0\x9F\x98" "A", 4},
        {"\xF0\x9F" "A\x80", 4}, {"\xC3\xC3", 2}, {"\xE2\x82\xC0", 3},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(utf8_sequence_length(U(bad[i].s), bad[i].n) == 0, "case %zu accepted", i);
    /* n bounds the look-ahead even when more bytes are there */
    ck_assert_uint_eq(utf8_sequence_length(U("\xE2\x82\xAC"), 2), 0);
    ck_assert_uint_eq(utf8_sequence_length(U("\xF0\x9F\x98\x80"), 3), 0);
}
END_TEST

START_TEST(sequence_matches_reference)
{
    /* every first byte with a few second/third/fourth byte choices */
    static const unsigned char tails[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0,
                                          0xBF, 0xC0, 0xFF};
    unsigned char s[4];
    for (int c = 0; c < 256; c++)
        for (size_t a = 0; a < sizeof tails; a++)
            for (size_t b = 0; b < sizeof tails; b++) {
                s[0] = (unsigned char)c, s[1] = tails[a], s[2] = tails[b], s[3] = 0x80;
                size_t got = utf8_sequence_length(s, 4);
                size_t want = 0;
                for (size_t l = 1; l <= 4 && !want; l++)
                    if (ref_valid(s, l))
                        want = l;
                ck_assert_msg(got == want, "%02x %02x %02x 80: %zu, want %zu", s[0], s[1],
                              s[2], got, want);
            }
}
END_TEST

static void check_sanitize(const char *in, size_t n, const char *want)
{
    buf_t b;
    buf_init(&b);
    buf_append_str(&b, "<");
    utf8_sanitize(&b, in, n);
    ck_assert_uint_eq(b.len, 1 + strlen(want));
    ck_assert_msg(memcmp(b.data + 1, want, strlen(want)) == 0, "sanitized %s", b.data);
    ck_assert(ref_valid(U(b.data), b.len));
    buf_free(&b);
}

START_TEST(sanitize)
{
    check_sanitize("plain \xC3\xA9t\xC3\xA9", 11, "plain \xC3\xA9t\xC3\xA9");
    check_sanitize("", 0, "");
    check_sanitize("a\xFF" "b", 3, "a" FFFD "b");
    check_sanitize("\xC0\x80", 2, FFFD FFFD);
    check_sanitize("\xE0\x80\x80", 3, FFFD FFFD FFFD);
    check_sanitize("\xF0\x80\x80\x80", 4, FFFD FFFD FFFD FFFD);
    check_sanitize("\xED\xA0\x80", 3, FFFD FFFD FFFD);
    check_sanitize("\xF4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD);
    check_sanitize("x\xE2\x82", 3, "x" FFFD FFFD);
    check_sanitize("\xE2\x82" "A\xE2\x82\xAC", 6, FFFD FFFD "A\xE2\x82\xAC");
    check_sanitize("\x80\x80", 2, FFFD FFFD);
    check_sanitize(FFFD, 3, FFFD);   /* a real U+FFFD is kept as is */
    /* NUL is valid UTF-8 and is kept */
    buf_t b;
    buf_init(&b);
    utf8_sanitize(&b, "a\0\xFF", 3);
    ck_assert_uint_eq(b.len, 5);
    ck_assert(memcmp(b.data, "a\0" FFFD, 5) == 0);
    buf_free(&b);
}
END_TEST

static uint32_t rng_state = 88172645u;
static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

START_TEST(sanitize_random)
{
    unsigned char in[64];
    for (int round = 0; round < 20000; round++) {
        size_t n = rng() % sizeof in;
        for (size_t i = 0; i < n; i++)
            in[i] = (unsigned char)(rng() % 3 ? 0x80 + rng() % 0x80 : rng());
        buf_t b;
        buf_init(&b);
        utf8_sanitize(&b, (const char *)in, n);
        ck_assert(ref_valid(U(b.data), b.len));
        if (ref_valid(in, n)) {
            ck_assert_uint_eq(b.len, n);
            ck_assert(n == 0 || memcmp(b.data, in, n) == 0);
        } else {
            ck_assert_uint_gt(b.len, n);   /* each bad byte became three */
        }
        json_t *j = utf8_json_string((const char *)in, n);
        ck_assert_ptr_nonnull(j);
        ck_assert_uint_eq(json_string_length(j), b.len);
        ck_assert(b.len == 0 || memcmp(json_string_value(j), b.data, b.len) == 0);
        json_decref(j);
        buf_free(&b);
    }
}
END_TEST

START_TEST(json_string_never_null)
{
    json_t *j = utf8_json_string("ok \xCE\xBB", 5);
    ck_assert_str_eq(json_string_value(j), "ok \xCE\xBB");
    json_decref(j);
    j = utf8_json_string("\xFF\xFE", 2);
    ck_assert_ptr_nonnull(j);
    ck_assert_str_eq(json_string_value(j), FFFD FFFD);
    char *dump = json_dumps(j, JSON_ENCODE_ANY);
    ck_assert_ptr_nonnull(dump);
    free(dump);
    json_decref(j);
    j = utf8_json_string("", 0);
    ck_assert_ptr_nonnull(j);
    ck_assert_uint_eq(json_string_length(j), 0);
    json_decref(j);
    j = utf8_json_string(NULL, 0);   /* e.g. no console output at all */
    ck_assert_ptr_nonnull(j);
    ck_assert_uint_eq(json_string_length(j), 0);
    json_decref(j);
    j = utf8_json_string("a\0b", 3);
    ck_assert_uint_eq(json_string_length(j), 3);
    json_decref(j);
}
END_TEST

START_TEST(prefix)
{
    /* 1-, 2-, 3- and 4-byte characters mixed */
    const char *s = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80" "b\xF0\x9F\x98\x80\xE2\x82\xAC";
    size_t n = strlen(s);
    for (size_t max = 0; max <= n + 2; max++) {
        size_t p = utf8_prefix(s, n, max);
        ck_assert_uint_le(p, (max < n ? max : n));
        ck_assert_msg(ref_valid(U(s), p), "max %zu: prefix %zu splits a sequence", max, p);
        ck_assert_msg(p + 4 > (max < n ? max : n), "max %zu: prefix %zu too short", max, p);
        if (max >= n)
            ck_assert_uint_eq(p, n);
    }
    ck_assert_uint_eq(utf8_prefix(s, n, 2), 1);   /* inside the 2-byte one */
    ck_assert_uint_eq(utf8_prefix(s, n, 3), 3);
    ck_assert_uint_eq(utf8_prefix(s, n, 9), 6);   /* inside the emoji */
    ck_assert_uint_eq(utf8_prefix("abc", 3, 0), 0);
    ck_assert_uint_eq(utf8_prefix("", 0, 0), 0);
}
END_TEST

START_TEST(buffer)
{
    buf_t b;
    buf_init(&b);
    ck_assert_ptr_null(b.data);
    ck_assert_uint_eq(b.len, 0);
    buf_append(&b, "hello", 5);
    ck_assert_uint_eq(b.len, 5);
    ck_assert_str_eq(b.data, "hello");   /* always NUL-terminated */
    buf_append_str(&b, ", world");
    ck_assert_str_eq(b.data, "hello, world");
    buf_append(&b, "\0x", 2);
    ck_assert_uint_eq(b.len, 14);
    ck_assert(memcmp(b.data + 12, "\0x", 2) == 0);
    ck_assert_int_eq(b.data[14], '\0');

    buf_consume(&b, 7);
    ck_assert_uint_eq(b.len, 7);
    ck_assert(memcmp(b.data, "world\0x", 7) == 0);
    buf_consume(&b, 0);
    ck_assert_uint_eq(b.len, 7);
    buf_consume(&b, 100);   /* more than there is: empty */
    ck_assert_uint_eq(b.len, 0);
    ck_assert_str_eq(b.data, "");

    buf_printf(&b, "%d-%s-%05.1f", 42, "x", 3.14159);
    ck_assert_str_eq(b.data, "42-x-003.1");
    buf_printf(&b, "%s", "");
    ck_assert_str_eq(b.data, "42-x-003.1");
    char big[5000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    buf_printf(&b, "[%s]", big);
    ck_assert_uint_eq(b.len, 10 + 2 + 4999);
    ck_assert_int_eq(b.data[10], '[');
    ck_assert_int_eq(b.data[b.len - 1], ']');
    ck_assert_int_eq(b.data[b.len], '\0');
    ck_assert_uint_gt(b.cap, b.len);

    size_t cap = b.cap;
    char *data = b.data;
    buf_clear(&b);
    ck_assert_uint_eq(b.len, 0);
    ck_assert_uint_eq(b.cap, cap);       /* the memory is kept for reuse */
    ck_assert_ptr_eq(b.data, data);
    ck_assert_str_eq(b.data, "");
    buf_reserve(&b, 100);
    ck_assert_uint_ge(b.cap, 101);
    buf_free(&b);
    ck_assert_ptr_null(b.data);
    ck_assert_uint_eq(b.len + b.cap, 0);

    /* many small appends, then consuming them in pieces, keeps order */
    for (int i = 0; i < 10000; i++)
        buf_printf(&b, "%04d", i);
    ck_assert_uint_eq(b.len, 40000);
    for (int i = 0; i < 10000; i += 2500) {
        char want[12];
        snprintf(want, sizeof want, "%04d", i);
        ck_assert(memcmp(b.data, want, 4) == 0);
        buf_consume(&b, 4 * 2500);
    }
    ck_assert_uint_eq(b.len, 0);
    buf_free(&b);

    buf_append(&b, NULL, 0);   /* an empty append still gives a C string */
    ck_assert_ptr_nonnull(b.data);
    ck_assert_str_eq(b.data, "");
    buf_free(&b);
}
END_TEST

static Suite *utf8_suite(void)
{
    Suite *s = suite_create("utf8");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, sequence_valid);
    tcase_add_test(tc, sequence_invalid);
    tcase_add_test(tc, sequence_matches_reference);
    tcase_add_test(tc, sanitize);
    tcase_add_test(tc, sanitize_random);
    tcase_add_test(tc, json_string_never_null);
    tcase_add_test(tc, prefix);
    tcase_add_test(tc, buffer);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(utf8_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
