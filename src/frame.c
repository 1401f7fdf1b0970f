/* frame.c - length-prefixed frames and the evaluate request record. */
#include "frame.h"

#include <string.h>

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
