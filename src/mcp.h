/* mcp.h - one MCP connection: the protocol's lifecycle and methods.
 *
 * A transport hands each incoming message to mcp_conn_handle() and gives the
 * connection a function to send messages with. The connection owns the Lisp
 * sessions made through it; nothing else can reach them. */
#ifndef LISPMCP_MCP_H
#define LISPMCP_MCP_H

#include <jansson.h>
#include <stddef.h>

#include "server.h"

typedef struct mcp_conn mcp_conn_t;

/* Send one message (borrowed) to the client. */
typedef void (*mcp_send_fn)(void *transport, json_t *message);

mcp_conn_t *mcp_conn_new(server_t *srv, mcp_send_fn send, void *transport);
void mcp_conn_handle(mcp_conn_t *conn, const char *data, size_t len);
/* Requests received and not answered yet. */
int mcp_conn_pending(const mcp_conn_t *conn);

/* Close every session of the connection (pending calls are answered with a
 * SESSION-CLOSED error result) and free it. */
void mcp_conn_free(mcp_conn_t *conn);

#endif
