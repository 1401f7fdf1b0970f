/* jsonrpc.c - parsing, validation and construction of JSON-RPC 2.0 messages. */
#include "jsonrpc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "utf8.h"

static int valid_id(const json_t *id)
{
    return json_is_string(id) || json_is_integer(id);
}

/* The id to echo in an error about this message: its own if usable. */
static json_t *error_id(json_t *root)
{
    json_t *id = json_is_object(root) ? json_object_get(root, "id") : NULL;
    return valid_id(id) ? id : NULL;
}

static int invalid(json_t *root, json_t **error_response, const char *why)
{
    *error_response = jsonrpc_error(error_id(root), JSONRPC_INVALID_REQUEST,
                                    "Invalid Request: %s", why);
    json_decref(root);
    return -1;
}

int jsonrpc_parse(const char *data, size_t len, jsonrpc_msg_t *msg, json_t **error_response)
{
    json_error_t jerr;
    memset(msg, 0, sizeof *msg);
    *error_response = NULL;

    json_t *root = json_loadb(data, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (root == NULL) {
        *error_response = jsonrpc_error(NULL, JSONRPC_PARSE_ERROR,
                                        "Parse error: %s at character %d", jerr.text,
                                        jerr.position);
        return -1;
    }
    if (json_is_array(root))
        return invalid(root, error_response, "batches are not supported");
    if (!json_is_object(root))
        return invalid(root, error_response, "a message must be a JSON object");

    json_t *version = json_object_get(root, "jsonrpc");
    if (!json_is_string(version) || strcmp(json_string_value(version), "2.0") != 0)
        return invalid(root, error_response, "\"jsonrpc\" must be \"2.0\"");

    json_t *id = json_object_get(root, "id");
    json_t *method = json_object_get(root, "method");
    if (id && !valid_id(id))
        return invalid(root, error_response, "\"id\" must be a string or an integer");

    if (method == NULL) {
        json_t *result = json_object_get(root, "result");
        json_t *error = json_object_get(root, "error");
        if (id == NULL || (result == NULL) == (error == NULL))
            return invalid(root, error_response,
                           "a message needs \"method\", or \"id\" with \"result\" or \"error\"");
        msg->kind = JSONRPC_RESPONSE;
    } else {
        if (!json_is_string(method) ||
            strlen(json_string_value(method)) != json_string_length(method))
            return invalid(root, error_response, "\"method\" must be a string without NUL");
        json_t *params = json_object_get(root, "params");
        if (params && !json_is_object(params) && !json_is_array(params))
            return invalid(root, error_response, "\"params\" must be an object or an array");
        msg->kind = id ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION;
        msg->method = json_string_value(method);
        msg->params = params;
    }
    msg->root = root;
    msg->id = id;
    return 0;
}

void jsonrpc_msg_free(jsonrpc_msg_t *msg)
{
    json_decref(msg->root);
    memset(msg, 0, sizeof *msg);
}

static json_t *envelope(json_t *id)
{
    json_t *m = json_object();
    json_object_set_new(m, "jsonrpc", json_string("2.0"));
    json_object_set_new(m, "id", id ? json_copy(id) : json_null());
    return m;
}

json_t *jsonrpc_result(json_t *id, json_t *result)
{
    json_t *m = envelope(id);
    json_object_set_new(m, "result", result);
    return m;
}

json_t *jsonrpc_error(json_t *id, int code, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);

    json_t *m = envelope(id);
    json_t *error = json_object();
    json_object_set_new(error, "code", json_integer(code));
    json_object_set_new(error, "message", utf8_json_string(text, strlen(text)));
    json_object_set_new(m, "error", error);
    return m;
}

json_t *jsonrpc_notification(const char *method, json_t *params)
{
    json_t *m = json_object();
    json_object_set_new(m, "jsonrpc", json_string("2.0"));
    json_object_set_new(m, "method", json_string(method));
    if (params)
        json_object_set_new(m, "params", params);
    return m;
}
