/* fuzz_mcp.c - libFuzzer target: bytes as they would arrive on stdin, split
 * into lines and handled by a fresh MCP connection (JSON-RPC parsing, MCP
 * dispatch, tool argument checking, session lookup). Properties: nothing
 * crashes or leaks, and every message sent back is valid JSON-RPC 2.0 in
 * valid UTF-8. Sessions are configured with an SBCL that cannot start, so no
 * process is ever spawned. */
#include <assert.h>
#include <jansson.h>
#include <stdint.h>
#include <string.h>
#include <uv.h>

#include "config.h"
#include "mcp.h"
#include "server.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static config_t cfg;
static server_t srv;

static void check_sent(void *transport, json_t *message, json_t *related)
{
    (void)transport;
    (void)related;
    char *text = json_dumps(message, JSON_COMPACT);
    assert(text != NULL);
    json_error_t err;
    json_t *back = json_loads(text, 0, &err);   /* rejects invalid UTF-8 */
    assert(back != NULL);
    assert(strcmp(json_string_value(json_object_get(back, "jsonrpc")), "2.0") == 0);
    json_decref(back);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (srv.loop == NULL) {
        char *argv[] = {"fuzz", "--sbcl", "/nonexistent/sbcl", "--core", "/nonexistent.core",
                        "--log-level", "off", NULL};
        config_parse(&cfg, 7, argv, stdout, stderr);
        log_set_level(LOG_LEVEL_OFF);
        json_set_alloc_funcs(xmalloc, free);
        srv.loop = uv_default_loop();
        srv.cfg = &cfg;
    }
    mcp_conn_t *conn = mcp_conn_new(&srv, check_sent, NULL);
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        mcp_conn_handle(conn, p, n);
        p += n + (nl != NULL);
    }
    mcp_conn_free(conn);
    uv_run(srv.loop, UV_RUN_NOWAIT);   /* let closed handles go */
    return 0;
}
