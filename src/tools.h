/* tools.h - the MCP tools lispmcp offers, their schemas and their dispatch.
 *
 * A call either finishes at once (the session tools) or is pending until its
 * evaluation ends; then the done callback receives the CallToolResult. */
#ifndef LISPMCP_TOOLS_H
#define LISPMCP_TOOLS_H

#include <jansson.h>
#include <stddef.h>

#include "session.h"

typedef enum tool_status {
    TOOL_DONE,        /* *result holds the CallToolResult */
    TOOL_PENDING,     /* the done callback will run, once */
    TOOL_BAD_PARAMS   /* a JSON-RPC invalid-params error; message says why */
} tool_status_t;

typedef struct tool_call tool_call_t;

/* result is stolen; NULL means the call was cancelled: answer nothing. */
typedef void (*tool_done_fn)(void *ctx, json_t *result);
/* Output of a running evaluation as it is written (NULL: not wanted). */
typedef void (*tool_output_fn)(void *ctx, const char *stream, json_t *text);

/* The tools/list result, a new reference. */
json_t *tools_list(void);

tool_status_t tools_call(registry_t *reg, const char *name, json_t *args,
                         tool_done_fn done, tool_output_fn output, void *ctx, json_t **result,
                         tool_call_t **pending, char *message, size_t message_size);

/* The callback runs with NULL, possibly before this returns. */
void tools_cancel(tool_call_t *call);

void tools_cleanup(void);

#endif
