/* frame.c - length-prefixed frames and the evaluate request record. */
#include "frame.h"

#include <stdlib.h>
#include <string.h>

#include "utf8.h"

static void put_u32(buf_t *b, uint32_t v)
{
    unsigned char p[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    buf_append(b, p, 4);
}

static uint32_t get_u32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

frame_status_t frame_peek(const char *data, size_t len, size_t max_payload,
                          size_t *payload_len)
{
    if (len < FRAME_HEADER_SIZE)
        return FRAME_INCOMPLETE;
    size_t n = get_u32(data);
    if (n > max_payload || n > FRAME_MAX_PAYLOAD)
        return FRAME_OVERSIZE;
    if (len - FRAME_HEADER_SIZE < n)
        return FRAME_INCOMPLETE;
    *payload_len = n;
    return FRAME_READY;
}

int frame_encode_eval(buf_t *out, const frame_eval_t *req)
{
    size_t payload = 1 + 4 + 1 + 4 + 4 + 4 + req->package_len + 4 + req->code_len;
    if (req->package_len > FRAME_MAX_PAYLOAD || req->code_len > FRAME_MAX_PAYLOAD ||
        payload > FRAME_MAX_PAYLOAD)
        return -1;
    buf_reserve(out, FRAME_HEADER_SIZE + payload);
    put_u32(out, (uint32_t)payload);
    buf_append(out, (const char[]){FRAME_OP_EVAL}, 1);
    put_u32(out, req->seq);
    buf_append(out, &req->flags, 1);
    put_u32(out, req->output_cap);
    put_u32(out, req->value_cap);
    put_u32(out, (uint32_t)req->package_len);
    buf_append(out, req->package, req->package_len);
    put_u32(out, (uint32_t)req->code_len);
    buf_append(out, req->code, req->code_len);
    return 0;
}

/* Take a length-prefixed string from *p, advancing it; -1 if it overruns. */
static int take_string(const char **p, const char *end, const char **s, size_t *n)
{
    if (end - *p < 4)
        return -1;
    size_t len = get_u32(*p);
    *p += 4;
    if ((size_t)(end - *p) < len)
        return -1;
    *s = len ? *p : NULL;
    *n = len;
    *p += len;
    return 0;
}

int frame_decode_eval(const char *payload, size_t len, frame_eval_t *req)
{
    const char *p = payload, *end = payload + len;
    if (len < 1 + 4 + 1 + 4 + 4 || p[0] != FRAME_OP_EVAL)
        return -1;
    req->seq = get_u32(p + 1);
    req->flags = (uint8_t)p[5];
    req->output_cap = get_u32(p + 6);
    req->value_cap = get_u32(p + 10);
    p += 14;
    if (take_string(&p, end, &req->package, &req->package_len) < 0 ||
        take_string(&p, end, &req->code, &req->code_len) < 0 || p != end)
        return -1;
    return 0;
}

typedef struct blob {
    const char *data;
    size_t      len;
} blob_t;

typedef struct blobs {
    blob_t *at;
    size_t  count;
} blobs_t;

static int split_blobs(const char *p, size_t len, blobs_t *out)
{
    size_t cap = 0;
    while (len > 0) {
        if (len < 4 || len - 4 < get_u32(p))
            return -1;
        if (out->count == cap) {
            cap = cap ? 2 * cap : 8;
            out->at = xrealloc(out->at, cap * sizeof *out->at);
        }
        out->at[out->count++] = (blob_t){p + 4, get_u32(p)};
        len -= 4 + get_u32(p);
        p += 4 + get_u32(p);
    }
    return 0;
}

/* The blob an object {"blob": k} stands for; NULL if v is no such object. */
static const blob_t *reference(json_t *v, const blobs_t *blobs, int *bad)
{
    json_t *k = json_object_get(v, "blob");
    if (k == NULL || json_object_size(v) != 1)
        return NULL;
    if (!json_is_integer(k) || json_integer_value(k) < 0 ||
        (size_t)json_integer_value(k) >= blobs->count) {
        *bad = 1;
        return NULL;
    }
    return &blobs->at[json_integer_value(k)];
}

/* Replace the references in v's members and elements; -1 on a bad one. */
static int resolve(json_t *v, const blobs_t *blobs)
{
    int bad = 0;
    const blob_t *b;
    if (json_is_object(v)) {
        const char *key;
        json_t *member;
        void *tmp;
        json_object_foreach_safe(v, tmp, key, member) {
            if ((b = reference(member, blobs, &bad)) != NULL)
                json_object_set_new(v, key, utf8_json_string(b->data, b->len));
            else if (bad || resolve(member, blobs) < 0)
                return -1;
        }
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *e = json_array_get(v, i);
            if ((b = reference(e, blobs, &bad)) != NULL)
                json_array_set_new(v, i, utf8_json_string(b->data, b->len));
            else if (bad || resolve(e, blobs) < 0)
                return -1;
        }
    }
    return 0;
}

json_t *frame_decode_reply(const char *payload, size_t len)
{
    const char *nul = memchr(payload, 0, len);
    size_t json_len = nul ? (size_t)(nul - payload) : len;
    blobs_t blobs = {NULL, 0};
    json_t *msg = NULL;
    if (nul == NULL || split_blobs(nul + 1, len - json_len - 1, &blobs) == 0)
        msg = json_loadb(payload, json_len, JSON_ALLOW_NUL, NULL);
    if (msg && (!json_is_object(msg) || resolve(msg, &blobs) < 0)) {
        json_decref(msg);
        msg = NULL;
    }
    free(blobs.at);
    return msg;
}
