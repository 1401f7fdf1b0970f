/* test_frame.c - unit tests of src/frame.c, the server <-> worker frame codec
 * (docs/worker-protocol.md): evaluate-request encode/decode round trips, the
 * exact byte layout, frame_peek on partial, complete, back-to-back and
 * oversized frames, rejection of malformed payloads, and a deterministic
 * random-input run that must never crash or read past its buffer. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

static frame_eval_t make_req(const char *package, size_t package_len, const char *code,
                             size_t code_len)
{
    frame_eval_t r = {
        .seq = 0xDEADBEEF, .flags = FRAME_FLAG_TIMING, .output_cap = 1048576,
        .value_cap = 7, .package = package, .package_len = package_len,
        .code = code, .code_len = code_len,
    };
    return r;
}

/* Encode, peek, decode, and compare every field. */
static void round_trip(const frame_eval_t *in)
{
    buf_t b;
    buf_init(&b);
    buf_append(&b, "junk", 4);   /* encode appends: earlier content stays */
    ck_assert_int_eq(frame_encode_eval(&b, in), 0);
    const char *frame = b.data + 4;
    size_t frame_len = b.len - 4;
    ck_assert(memcmp(b.data, "junk", 4) == 0);
    ck_assert_uint_eq(frame_len, FRAME_HEADER_SIZE + 22 + in->package_len + in->code_len);

    size_t plen = 0;
    ck_assert_int_eq(frame_peek(frame, frame_len, FRAME_MAX_PAYLOAD, &plen), FRAME_READY);
    ck_assert_uint_eq(plen, frame_len - FRAME_HEADER_SIZE);

    frame_eval_t out;
    memset(&out, 0xAB, sizeof out);
    ck_assert_int_eq(frame_decode_eval(frame + FRAME_HEADER_SIZE, plen, &out), 0);
    ck_assert_uint_eq(out.seq, in->seq);
    ck_assert_uint_eq(out.flags, in->flags);
    ck_assert_uint_eq(out.output_cap, in->output_cap);
    ck_assert_uint_eq(out.value_cap, in->value_cap);
    ck_assert_uint_eq(out.package_len, in->package_len);
    ck_assert_uint_eq(out.code_len, in->code_len);
    if (in->package_len)
        ck_assert(memcmp(out.package, in->package, in->package_len) == 0);
    else
        ck_assert_ptr_null(out.package);
    if (in->code_len)
        ck_assert(memcmp(out.code, in->code, in->code_len) == 0);
    else
        ck_assert_ptr_null(out.code);
    buf_free(&b);
}

START_TEST(round_trips)
{
    frame_eval_t r = make_req(NULL, 0, "(+ 1 2)", 7);
    round_trip(&r);
    static const char nul_code[] = "(list \"a\0b\" \"\xce\xbb\" \"\xf0\x9f\x98\x80\")\0";
    r = make_req("CL-USER", 7, nul_code, sizeof nul_code - 1);
    round_trip(&r);
    r = make_req("\xc3\xa9T\xc3\xa9", 5, "", 0);
    r.seq = 0, r.flags = 0, r.output_cap = 0, r.value_cap = UINT32_MAX;
    round_trip(&r);
    r = make_req(NULL, 0, NULL, 0);
    round_trip(&r);
    size_t big = 300000;
    char *code = malloc(big);
    for (size_t i = 0; i < big; i++)
        code[i] = (char)(i * 7 + 3);
    r = make_req("P", 1, code, big);
    round_trip(&r);
    free(code);
}
END_TEST

START_TEST(exact_layout)
{
    frame_eval_t r = {
        .seq = 0x01020304, .flags = 0x01, .output_cap = 0x0A0B0C0D, .value_cap = 0x100,
        .package = "CL-USER", .package_len = 7, .code = "(+ 1 2)", .code_len = 7,
    };
    static const unsigned char want[] = {
        0, 0, 0, 36,                 /* payload length */
        'E',                         /* op */
        1, 2, 3, 4,                  /* seq */
        1,                           /* flags */
        0x0A, 0x0B, 0x0C, 0x0D,      /* output-cap */
        0, 0, 1, 0,                  /* value-cap */
        0, 0, 0, 7, 'C', 'L', '-', 'U', 'S', 'E', 'R',
        0, 0, 0, 7, '(', '+', ' ', '1', ' ', '2', ')',
    };
    buf_t b;
    buf_init(&b);
    ck_assert_int_eq(frame_encode_eval(&b, &r), 0);
    ck_assert_uint_eq(b.len, sizeof want);
    for (size_t i = 0; i < sizeof want; i++)
        ck_assert_msg((unsigned char)b.data[i] == want[i], "byte %zu: %02x, want %02x", i,
                      (unsigned char)b.data[i], want[i]);

    /* no package: a zero length field and nothing else */
    buf_clear(&b);
    r.package = NULL, r.package_len = 0, r.code = "x", r.code_len = 1;
    ck_assert_int_eq(frame_encode_eval(&b, &r), 0);
    ck_assert_uint_eq(b.len, 4 + 23);
    static const unsigned char tail[] = {0, 0, 0, 0, 0, 0, 0, 1, 'x'};
    ck_assert(memcmp(b.data + b.len - sizeof tail, tail, sizeof tail) == 0);
    ck_assert_uint_eq((unsigned char)b.data[3], 23);
    buf_free(&b);
}
END_TEST

START_TEST(encode_too_large)
{
    buf_t b;
    buf_init(&b);
    buf_append(&b, "keep", 4);
    frame_eval_t r = make_req(NULL, 0, "x", (size_t)FRAME_MAX_PAYLOAD);  /* never read */
    ck_assert_int_eq(frame_encode_eval(&b, &r), -1);
    r = make_req("x", (size_t)FRAME_MAX_PAYLOAD + 1, "y", 1);
    ck_assert_int_eq(frame_encode_eval(&b, &r), -1);
    r = make_req("x", SIZE_MAX - 10, "y", 1);
    ck_assert_int_eq(frame_encode_eval(&b, &r), -1);
    ck_assert_uint_eq(b.len, 4);
    ck_assert(memcmp(b.data, "keep", 4) == 0);
    buf_free(&b);
}
END_TEST

START_TEST(peek_incomplete_and_ready)
{
    const char frame[] = {0, 0, 0, 3, 'a', 'b', 'c', 0, 0, 0, 1, 'z'};
    size_t len = 12345;
    for (size_t n = 0; n < 4; n++)
        ck_assert_int_eq(frame_peek(frame, n, 100, &len), FRAME_INCOMPLETE);
    for (size_t n = 4; n < 7; n++)
        ck_assert_int_eq(frame_peek(frame, n, 100, &len), FRAME_INCOMPLETE);
    ck_assert_uint_eq(len, 12345);   /* untouched until ready */
    ck_assert_int_eq(frame_peek(frame, 7, 100, &len), FRAME_READY);
    ck_assert_uint_eq(len, 3);
    ck_assert_int_eq(frame_peek(frame, 7, 3, &len), FRAME_READY);   /* exactly the limit */
    /* two frames back to back: the first, then the second after it */
    ck_assert_int_eq(frame_peek(frame, sizeof frame, 100, &len), FRAME_READY);
    ck_assert_uint_eq(len, 3);
    size_t next = FRAME_HEADER_SIZE + len;
    ck_assert_int_eq(frame_peek(frame + next, sizeof frame - next - 1, 100, &len),
                     FRAME_INCOMPLETE);
    ck_assert_int_eq(frame_peek(frame + next, sizeof frame - next, 100, &len), FRAME_READY);
    ck_assert_uint_eq(len, 1);
    ck_assert_int_eq(frame[next + FRAME_HEADER_SIZE], 'z');

    const char empty[] = {0, 0, 0, 0};
    len = 99;
    ck_assert_int_eq(frame_peek(empty, 4, 0, &len), FRAME_READY);
    ck_assert_uint_eq(len, 0);
}
END_TEST

START_TEST(peek_oversize)
{
    size_t len;
    const char over_limit[] = {0, 0, 0, 101};
    ck_assert_int_eq(frame_peek(over_limit, 4, 100, &len), FRAME_OVERSIZE);
    ck_assert_int_eq(frame_peek(over_limit, 4, 101, &len), FRAME_INCOMPLETE);
    const char max_frame[] = {0x40, 0, 0, 0};   /* exactly 1 GiB */
    ck_assert_int_eq(frame_peek(max_frame, 4, SIZE_MAX, &len), FRAME_INCOMPLETE);
    const char above_max[] = {0x40, 0, 0, 1};
    ck_assert_int_eq(frame_peek(above_max, 4, SIZE_MAX, &len), FRAME_OVERSIZE);
    const char huge[] = {(char)0xFF, (char)0xFF, (char)0xFF, (char)0xFF};
    ck_assert_int_eq(frame_peek(huge, 4, SIZE_MAX, &len), FRAME_OVERSIZE);
    const char high_bit[] = {(char)0x80, 0, 0, 0};
    ck_assert_int_eq(frame_peek(high_bit, 4, SIZE_MAX, &len), FRAME_OVERSIZE);
}
END_TEST

static void put32(char *p, uint32_t v)
{
    p[0] = (char)(v >> 24), p[1] = (char)(v >> 16), p[2] = (char)(v >> 8), p[3] = (char)v;
}

START_TEST(decode_rejects)
{
    frame_eval_t r = make_req("PKG", 3, "(foo)", 5), out;
    buf_t b;
    buf_init(&b);
    ck_assert_int_eq(frame_encode_eval(&b, &r), 0);
    char *p = b.data + FRAME_HEADER_SIZE;
    size_t n = b.len - FRAME_HEADER_SIZE;
    ck_assert_int_eq(frame_decode_eval(p, n, &out), 0);

    /* every strict prefix is truncated */
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(frame_decode_eval(p, i, &out) == -1, "prefix of %zu accepted", i);

    /* trailing garbage */
    char *longer = malloc(n + 8);
    memcpy(longer, p, n);
    memset(longer + n, 0, 8);
    for (size_t extra = 1; extra <= 8; extra++)
        ck_assert_int_eq(frame_decode_eval(longer, n + extra, &out), -1);
    free(longer);

    /* wrong op */
    static const char ops[] = {'e', 'X', 0, (char)0xC5};
    for (size_t i = 0; i < sizeof ops; i++) {
        char saved = p[0];
        p[0] = ops[i];
        ck_assert_int_eq(frame_decode_eval(p, n, &out), -1);
        p[0] = saved;
    }

    /* length fields that overrun (or underrun) the payload */
    static const uint32_t bad_lens[] = {4, 10, 0x7FFFFFFF, 0xFFFFFFFF, 2};
    for (size_t i = 0; i < sizeof bad_lens / sizeof *bad_lens; i++) {
        put32(p + 14, bad_lens[i]);               /* package length */
        ck_assert_int_eq(frame_decode_eval(p, n, &out), -1);
        put32(p + 14, 3);
        put32(p + 21, bad_lens[i] == 2 ? 6 : bad_lens[i]);   /* code length */
        ck_assert_int_eq(frame_decode_eval(p, n, &out), -1);
        put32(p + 21, 5);
    }
    ck_assert_int_eq(frame_decode_eval(p, n, &out), 0);   /* restored intact */
    ck_assert(memcmp(out.code, "(foo)", 5) == 0);
    buf_free(&b);
}
END_TEST

/* A small deterministic generator (xorshift32): same inputs every run. */
static uint32_t rng_state = 2463534242u;
static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

START_TEST(random_buffers)
{
    enum { ROUNDS = 10000, MAXLEN = 96 };
    size_t ready = 0, decoded = 0;
    for (int round = 0; round < ROUNDS; round++) {
        size_t len = rng() % (MAXLEN + 1);
        /* an exact-size heap block, so a read past it shows up under ASan */
        char *data = malloc(len ? len : 1);
        for (size_t i = 0; i < len; i++)
            data[i] = (char)rng();
        /* bias: plausible headers, ops and small string lengths */
        if (len >= 4 && rng() % 2)
            put32(data, rng() % (MAXLEN + 8));
        if (len >= 5 && rng() % 2)
            data[4] = 'E';
        if (len >= 22 && rng() % 2) {
            put32(data + 18, rng() % 24);
            uint32_t rest = (uint32_t)(len - 22);
            uint32_t pl = rng() % (rest + 1);
            if (rng() % 2)
                put32(data + 18, pl);
            if (rng() % 2 && 26 + pl <= len) {
                put32(data + 22 + pl, (uint32_t)(len - 26 - pl));
                if (rng() % 2)
                    put32(data + 22 + pl, rng() % 8);
            }
        }
        size_t plen = (size_t)-1;
        frame_status_t st = frame_peek(data, len, rng() % 2 ? MAXLEN : FRAME_MAX_PAYLOAD, &plen);
        ck_assert(st == FRAME_INCOMPLETE || st == FRAME_READY || st == FRAME_OVERSIZE);
        if (st == FRAME_READY) {
            ready++;
            ck_assert_uint_le(FRAME_HEADER_SIZE + plen, len);
        }
        size_t body = len >= 4 ? len - 4 : 0;
        frame_eval_t out;
        if (frame_decode_eval(data + (len >= 4 ? 4 : 0), body, &out) == 0) {
            decoded++;
            const char *start = data + 4, *end = data + len;
            ck_assert_uint_eq(14 + 4 + out.package_len + 4 + out.code_len, body);
            if (out.package_len)
                ck_assert(out.package >= start && out.package + out.package_len <= end);
            if (out.code_len)
                ck_assert(out.code >= start && out.code + out.code_len <= end);
        }
        free(data);
    }
    /* the generator must actually reach both success paths */
    ck_assert_uint_gt(ready, 100);
    ck_assert_uint_gt(decoded, 10);
}
END_TEST

/* A reply payload: json, a NUL, then each blob with its length. */
static size_t reply(char *out, const char *json, const char *const *blobs, size_t nblobs)
{
    size_t n = strlen(json);
    memcpy(out, json, n);
    if (nblobs)
        out[n++] = '\0';
    for (size_t i = 0; i < nblobs; i++) {
        size_t len = strlen(blobs[i]);
        put32(out + n, (uint32_t)len);
        memcpy(out + n + 4, blobs[i], len);
        n += 4 + len;
    }
    return n;
}

START_TEST(reply_blobs)
{
    char p[512];
    const char *blobs[] = {"out\n", "", "\"quoted\" \\ text", "bad \xFF byte"};
    size_t n = reply(p, "{\"seq\":3,\"stdout\":{\"blob\":0},\"stderr\":{\"blob\":1},"
                        "\"values\":[{\"blob\":2},\"plain\",{\"blob\":3}],"
                        "\"error\":{\"message\":\"m\\u0000\",\"blob\":\"not a ref\"}}", blobs, 4);
    json_t *m = frame_decode_reply(p, n);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(json_integer_value(json_object_get(m, "seq")), 3);
    ck_assert_str_eq(json_string_value(json_object_get(m, "stdout")), "out\n");
    ck_assert_str_eq(json_string_value(json_object_get(m, "stderr")), "");
    json_t *values = json_object_get(m, "values");
    ck_assert_str_eq(json_string_value(json_array_get(values, 0)), "\"quoted\" \\ text");
    ck_assert_str_eq(json_string_value(json_array_get(values, 1)), "plain");
    ck_assert_str_eq(json_string_value(json_array_get(values, 2)), "bad \xEF\xBF\xBD byte");
    ck_assert_uint_eq(json_string_length(json_object_get(json_object_get(m, "error"), "message")),
                      2);
    json_decref(m);

    n = reply(p, "{\"hello\":1}", NULL, 0);   /* no blobs, no NUL */
    m = frame_decode_reply(p, n);
    ck_assert_ptr_nonnull(m);
    json_decref(m);
}
END_TEST

START_TEST(reply_rejects)
{
    char p[512];
    const char *one[] = {"x"};
    static const char *const bad_json[] = {
        "{\"v\":{\"blob\":1}}",        /* no blob 1 */
        "{\"v\":{\"blob\":-1}}",
        "{\"v\":[{\"blob\":\"0\"}]}",  /* not an index */
        "[{\"blob\":0}]",              /* not an object */
        "{\"v\":",                     /* not JSON */
    };
    for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
        size_t n = reply(p, bad_json[i], one, 1);
        ck_assert_msg(frame_decode_reply(p, n) == NULL, "accepted %s", bad_json[i]);
    }
    size_t n = reply(p, "{\"v\":{\"blob\":0}}", one, 1);
    for (size_t cut = 1; cut <= 5; cut++)   /* a blob cut short, or a length cut short */
        ck_assert(frame_decode_reply(p, n - cut) == NULL);
    ck_assert(frame_decode_reply("", 0) == NULL);
}
END_TEST

static Suite *frame_suite(void)
{
    Suite *s = suite_create("frame");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, round_trips);
    tcase_add_test(tc, reply_blobs);
    tcase_add_test(tc, reply_rejects);
    tcase_add_test(tc, exact_layout);
    tcase_add_test(tc, encode_too_large);
    tcase_add_test(tc, peek_incomplete_and_ready);
    tcase_add_test(tc, peek_oversize);
    tcase_add_test(tc, decode_rejects);
    tcase_add_test(tc, random_buffers);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(frame_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
