/* frame.h - the codec of the server <-> worker protocol (docs/worker-protocol.md).
 *
 * A frame is a 4-byte big-endian payload length followed by the payload. The
 * server sends evaluate requests (a small binary record) and receives JSON
 * replies whose strings travel beside the JSON as raw UTF-8 ("blobs"), so
 * that megabytes of output are checked and copied, never lexed. This file
 * only encodes and splits bytes; it does no I/O. */
#ifndef LISPMCP_FRAME_H
#define LISPMCP_FRAME_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define FRAME_HEADER_SIZE 4
#define FRAME_MAX_PAYLOAD (1u << 30)

#define FRAME_OP_EVAL 'E'
#define FRAME_FLAG_TIMING 0x01
#define FRAME_FLAG_STREAM 0x02   /* also send output as it is written */

typedef enum frame_status {
    FRAME_INCOMPLETE,   /* need more bytes */
    FRAME_READY,        /* a whole frame is there */
    FRAME_OVERSIZE      /* the header announces more than the limit: close */
} frame_status_t;

typedef struct frame_eval {
    uint32_t    seq;
    uint8_t     flags;
    uint32_t    output_cap;    /* bytes kept per captured stream, 0 = all */
    uint32_t    value_cap;     /* bytes kept per printed value, 0 = all */
    const char *package;       /* may be NULL: the session's current package */
    size_t      package_len;
    const char *code;
    size_t      code_len;
} frame_eval_t;

/* Look at the front of data: is there a whole frame of at most max_payload
 * bytes? On FRAME_READY, *payload_len is its length; the payload starts at
 * data + FRAME_HEADER_SIZE. */
frame_status_t frame_peek(const char *data, size_t len, size_t max_payload,
                          size_t *payload_len);

/* Append one evaluate request frame to out. Returns 0, or -1 if the request
 * does not fit in a frame (out is left unchanged). */
int frame_encode_eval(buf_t *out, const frame_eval_t *req);

/* Parse an evaluate request payload (the inverse of frame_encode_eval, used by
 * tests and the fuzzer to check the codec). Returns 0 or -1. */
int frame_decode_eval(const char *payload, size_t len, frame_eval_t *req);

/* Parse a reply payload: JSON text, then, if there are blobs, a NUL byte and
 * each blob as a 4-byte length and that many bytes. Every {"blob": k} in
 * the JSON becomes a string of blob k (invalid UTF-8 repaired to U+FFFD).
 * Returns a new reference, or NULL if the payload is malformed. */
json_t *frame_decode_reply(const char *payload, size_t len);

#endif
