/* fuzz_frame.c - libFuzzer target for the worker frame codec and the UTF-8
 * repair that every byte from a worker goes through. Properties: frame_peek
 * never reports more than the buffer holds; a payload that decodes as an
 * evaluate request encodes back to exactly the same bytes; a reply decodes
 * to an object or to NULL, never a crash or a leak; utf8_sanitize
 * always yields valid UTF-8 and utf8_prefix never splits a sequence. */
#include <assert.h>
#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "frame.h"
#include "utf8.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_frames(const char *p, size_t n)
{
    size_t used = 0, len;
    for (;;) {
        frame_status_t st = frame_peek(p + used, n - used, 1 << 20, &len);
        if (st != FRAME_READY)
            break;
        assert(FRAME_HEADER_SIZE + len <= n - used);
        const char *payload = p + used + FRAME_HEADER_SIZE;
        frame_eval_t req;
        if (frame_decode_eval(payload, len, &req) == 0) {
            buf_t again;
            buf_init(&again);
            assert(frame_encode_eval(&again, &req) == 0);
            assert(again.len == FRAME_HEADER_SIZE + len);
            assert(memcmp(again.data, p + used, again.len) == 0);
            buf_free(&again);
        }
        json_t *reply = frame_decode_reply(payload, len);
        assert(reply == NULL || json_is_object(reply));
        json_decref(reply);
        used += FRAME_HEADER_SIZE + len;
    }
}

static void check_utf8(const char *p, size_t n)
{
    buf_t clean;
    buf_init(&clean);
    utf8_sanitize(&clean, p, n);
    json_t *s = json_stringn(clean.data ? clean.data : "", clean.len);   /* NULL if invalid */
    assert(s != NULL);
    json_decref(s);
    json_decref(utf8_json_string(p, n));
    size_t cut = utf8_prefix(clean.data ? clean.data : "", clean.len, n / 2);
    assert(cut <= clean.len);
    json_t *prefix = json_stringn(clean.data ? clean.data : "", cut);
    assert(prefix != NULL);
    json_decref(prefix);
    buf_free(&clean);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_frames((const char *)data, size);
    check_utf8((const char *)data, size);
    return 0;
}
