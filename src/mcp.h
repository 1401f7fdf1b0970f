/* mcp.h - one MCP connection: the protocol's lifecycle and methods.
 *
 * A transport hands each incoming message to mcp_conn_handle() and gives the
 * connection a function to send messages with. The connection owns the Lisp
 * sessions made through it; nothing else can reach them. */
#ifndef LISPMCP_MCP_H
#define LISPMCP_MCP_H

#include <jansson.h>
#include <stddef.h>

#include "jsonrpc.h"
#include "server.h"

typedef struct mcp_conn mcp_conn_t;

/* Send one message (borrowed) to the client. related is the id of the
 * request a notification is about (progress, output), else NULL: a
 * transport with a stream per request sends it there. */
typedef void (*mcp_send_fn)(void *transport, json_t *message, json_t *related);

mcp_conn_t *mcp_conn_new(server_t *srv, mcp_send_fn send, void *transport);
/* Handle the bytes of one message (parse errors are answered here). */
void mcp_conn_handle(mcp_conn_t *conn, const char *data, size_t len);
/* Handle one parsed message; msg stays the caller's. */
void mcp_conn_dispatch(mcp_conn_t *conn, jsonrpc_msg_t *msg);
/* Will this request be followed by notifications about it (progress, or
 * output the client asked to hear as log messages)? */
int mcp_conn_streams(const mcp_conn_t *conn, const jsonrpc_msg_t *msg);

/* Is this a protocol revision the server speaks? */
int mcp_version_supported(const char *version);
/* Requests received and not answered yet. */
int mcp_conn_pending(const mcp_conn_t *conn);

/* Close every session of the connection (pending calls are answered with a
 * SESSION-CLOSED error result) and free it. */
void mcp_conn_free(mcp_conn_t *conn);

#endif
