/* transport_stdio.h - MCP over stdin/stdout, one JSON-RPC message per line.
 *
 * stdout carries protocol messages only; logs go to stderr. EOF on stdin (or
 * SIGTERM/SIGINT) shuts the server down: every session is closed and its
 * worker reaped, then the loop runs dry and main() returns 0. */
#ifndef LISPMCP_TRANSPORT_STDIO_H
#define LISPMCP_TRANSPORT_STDIO_H

#include "server.h"

/* Start serving; returns 0 or a negative uv error code. */
int transport_stdio_start(server_t *srv);

#endif
