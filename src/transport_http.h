/* transport_http.h - MCP over Streamable HTTP at http://HOST:PORT/mcp.
 *
 * libmicrohttpd parses HTTP; it runs on the server's libuv loop (its epoll
 * descriptor is watched with uv_poll), so the process stays one event loop
 * that never blocks on a worker. Each Mcp-Session-Id is one MCP connection
 * with its own Lisp sessions. SIGTERM/SIGINT ends every session, reaps every
 * worker and returns from the loop. */
#ifndef LISPMCP_TRANSPORT_HTTP_H
#define LISPMCP_TRANSPORT_HTTP_H

#include "server.h"

/* Start listening on cfg->http; 0, or -1 after printing why on stderr. */
int transport_http_start(server_t *srv);

#endif
