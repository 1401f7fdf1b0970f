/* jsonrpc.h - JSON-RPC 2.0 messages: parse and classify one, build replies.
 *
 * This layer knows nothing of MCP. It turns the bytes of one message into a
 * request, a notification or a response, or into the error response that the
 * JSON-RPC specification prescribes for it. */
#ifndef LISPMCP_JSONRPC_H
#define LISPMCP_JSONRPC_H

#include <jansson.h>
#include <stddef.h>

#define JSONRPC_PARSE_ERROR      -32700
#define JSONRPC_INVALID_REQUEST  -32600
#define JSONRPC_METHOD_NOT_FOUND -32601
#define JSONRPC_INVALID_PARAMS   -32602
#define JSONRPC_INTERNAL_ERROR   -32603
#define JSONRPC_REQUEST_CANCELLED -32800   /* as in the Language Server Protocol */

typedef enum jsonrpc_kind {
    JSONRPC_REQUEST,        /* method and id: needs exactly one response */
    JSONRPC_NOTIFICATION,   /* method, no id: never answered */
    JSONRPC_RESPONSE        /* result or error: answers a request we sent */
} jsonrpc_kind_t;

typedef struct jsonrpc_msg {
    jsonrpc_kind_t kind;
    json_t        *root;    /* owned; the fields below point into it */
    json_t        *id;      /* string or integer; NULL for notifications */
    const char    *method;  /* NULL for responses */
    json_t        *params;  /* object or array, or NULL when absent */
} jsonrpc_msg_t;

/* Parse one message of len bytes. Returns 0 and fills msg, or -1 and sets
 * *error_response to the error response to send (NULL if none is owed). */
int jsonrpc_parse(const char *data, size_t len, jsonrpc_msg_t *msg, json_t **error_response);
void jsonrpc_msg_free(jsonrpc_msg_t *msg);

/* Builders. id is borrowed (copied in); result is stolen. A NULL id means null. */
json_t *jsonrpc_result(json_t *id, json_t *result);
json_t *jsonrpc_error(json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
json_t *jsonrpc_notification(const char *method, json_t *params);

#endif
