/* mcp.c - the Model Context Protocol on one connection.
 *
 * Lifecycle (initialize, version negotiation), ping, logging/setLevel,
 * tools/list and tools/call, and notifications/cancelled. Every request gets
 * exactly one response, except a cancelled one, which gets none (as the
 * specification says); notifications get none. */
#include "mcp.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "jsonrpc.h"
#include "log.h"
#include "session.h"
#include "tools.h"
#include "util.h"

/* Newest first: a client asking for anything else is offered the first. */
static const char *const protocol_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};

static const char *const log_levels[] = {"debug", "info", "notice", "warning", "error",
                                         "critical", "alert", "emergency"};

static const char instructions[] =
    "lispmcp gives you live Common Lisp (SBCL) sessions. evaluate-lisp runs code; whatever it "
    "defines stays for later calls to the same session, so build up a program step by step. "
    "Results separate the printed values, *standard-output*, *error-output*, warnings and errors "
    "(with a backtrace). Long evaluations are interrupted at a time limit without losing the "
    "session's definitions. Use create-session for independent images, time-execution to measure "
    "code, reset-session for a clean image.";

/* While a call that carries a progressToken runs, the client hears from it
 * this often: a long evaluation is not mistaken for a dead server. */
#define PROGRESS_MS 1000

typedef struct pending {
    struct pending *next;
    struct mcp_conn *conn;
    json_t         *id;
    json_t         *progress_token;   /* NULL when the client asked for none */
    double          started_ms;
    tool_call_t    *call;
} pending_t;

struct mcp_conn {
    server_t   *srv;
    registry_t *sessions;
    mcp_send_fn send;
    void       *transport;
    int         initialized;     /* initialize has been answered */
    pending_t  *pending;         /* tools/call requests not yet answered */
    uv_timer_t  progress;        /* ticks while a pending call wants progress */
    int         log_output;      /* logging/setLevel asked for info or more */
};

mcp_conn_t *mcp_conn_new(server_t *srv, mcp_send_fn send, void *transport)
{
    mcp_conn_t *c = xcalloc(1, sizeof *c);
    c->srv = srv;
    c->sessions = registry_new(srv);
    c->send = send;
    c->transport = transport;
    uv_timer_init(srv->loop, &c->progress);
    c->progress.data = c;
    return c;
}

static void free_conn(uv_handle_t *h)
{
    free(h->data);
}

void mcp_conn_free(mcp_conn_t *c)
{
    /* Every pending call completes now, answered with a SESSION-CLOSED error
     * result while the transport can still carry it: each request gets its
     * one response. */
    registry_free(c->sessions);
    uv_close((uv_handle_t *)&c->progress, free_conn);
}

int mcp_conn_pending(const mcp_conn_t *c)
{
    int n = 0;
    for (const pending_t *p = c->pending; p; p = p->next)
        n++;
    return n;
}

/* Send m (stolen); related: the request it is about, or NULL. */
static void send_related(mcp_conn_t *c, json_t *m, json_t *related)
{
    c->send(c->transport, m, related);
    json_decref(m);
}

static void send_message(mcp_conn_t *c, json_t *m)
{
    send_related(c, m, NULL);
}

/* ---- methods ---------------------------------------------------------- */

static json_t *progress_token_of(const jsonrpc_msg_t *m)
{
    json_t *token = json_object_get(json_object_get(m->params, "_meta"), "progressToken");
    return json_is_string(token) || json_is_integer(token) ? token : NULL;
}


static json_t *bad_params(jsonrpc_msg_t *m, const char *why)
{
    return jsonrpc_error(m->id, JSONRPC_INVALID_PARAMS, "Invalid params: %s", why);
}

static json_t *do_initialize(mcp_conn_t *c, jsonrpc_msg_t *m)
{
    if (c->initialized)
        return jsonrpc_error(m->id, JSONRPC_INVALID_REQUEST,
                             "Invalid Request: the connection is already initialized");
    json_t *asked = json_object_get(m->params, "protocolVersion");
    if (!json_is_object(m->params) || !json_is_string(asked))
        return bad_params(m, "\"protocolVersion\" must be a string");
    const char *version = mcp_version_supported(json_string_value(asked))
                              ? json_string_value(asked) : protocol_versions[0];
    c->initialized = 1;
    json_t *client = json_object_get(json_object_get(m->params, "clientInfo"), "name");
    log_info("client %s connected, protocol %s",
             json_is_string(client) ? json_string_value(client) : "(unnamed)", version);
    return jsonrpc_result(m->id, json_pack(
        "{s:s, s:{s:{s:b}, s:{}}, s:{s:s, s:s, s:s}, s:s}",
        "protocolVersion", version,
        "capabilities", "tools", "listChanged", 0, "logging",
        "serverInfo", "name", "lispmcp", "title", "lispmcp: live Common Lisp sessions",
        "version", LISPMCP_VERSION,
        "instructions", instructions));
}

static json_t *do_set_level(mcp_conn_t *c, jsonrpc_msg_t *m)
{
    const char *level = json_string_value(json_object_get(m->params, "level"));
    for (size_t i = 0; level && i < sizeof log_levels / sizeof *log_levels; i++) {
        if (strcmp(level, log_levels[i]) == 0) {
            /* Output is logged at "info": the client hears it at info or debug. */
            c->log_output = i <= 1;
            return jsonrpc_result(m->id, json_object());
        }
    }
    return bad_params(m, "\"level\" must be one of debug, info, notice, warning, error, "
                         "critical, alert, emergency");
}

static void free_pending(pending_t *p)
{
    json_decref(p->id);
    json_decref(p->progress_token);
    free(p);
}

static void on_progress_tick(uv_timer_t *t)
{
    mcp_conn_t *c = t->data;
    int wanted = 0;
    double now = now_ms();
    for (pending_t *p = c->pending; p; p = p->next) {
        if (p->progress_token == NULL)
            continue;
        wanted = 1;
        double seconds = round((now - p->started_ms) / 100) / 10;
        char message[64];
        snprintf(message, sizeof message, "evaluating for %.0f s", seconds);
        send_related(c, jsonrpc_notification("notifications/progress", json_pack(
            "{s:O, s:f, s:s}", "progressToken", p->progress_token, "progress", seconds,
            "message", message)), p->id);
    }
    if (!wanted)
        uv_timer_stop(t);
}

/* Output written during a call, as a log message the client asked for. */
static void on_tool_output(void *ctx, const char *stream, json_t *text)
{
    pending_t *p = ctx;
    send_related(p->conn, jsonrpc_notification("notifications/message", json_pack(
        "{s:s, s:s, s:O}", "level", "info", "logger", stream, "data", text)), p->id);
}

static void on_tool_done(void *ctx, json_t *result)
{
    pending_t *p = ctx;
    mcp_conn_t *c = p->conn;
    pending_t **link = &c->pending;
    while (*link != p)
        link = &(*link)->next;
    *link = p->next;
    if (result)
        send_message(c, jsonrpc_result(p->id, result));
    free_pending(p);
}

static pending_t *find_pending(mcp_conn_t *c, json_t *id)
{
    for (pending_t *p = c->pending; p; p = p->next)
        if (json_equal(p->id, id))
            return p;
    return NULL;
}

static json_t *do_tools_call(mcp_conn_t *c, jsonrpc_msg_t *m)
{
    json_t *name = json_object_get(m->params, "name");
    json_t *args = json_object_get(m->params, "arguments");
    if (!json_is_string(name))
        return bad_params(m, "\"name\" must be a string");
    if (args && !json_is_object(args))
        return bad_params(m, "\"arguments\" must be an object");
    if (find_pending(c, m->id))
        return jsonrpc_error(m->id, JSONRPC_INVALID_REQUEST,
                             "Invalid Request: id is already used by a request in progress");

    json_t *empty = args ? NULL : json_object();
    json_t *token = progress_token_of(m);
    pending_t *p = xcalloc(1, sizeof *p);
    p->conn = c;
    p->id = json_incref(m->id);
    p->started_ms = now_ms();
    if (token)
        p->progress_token = json_incref(token);
    p->next = c->pending;
    c->pending = p;

    json_t *result = NULL;
    char message[512];
    tool_status_t st = tools_call(c->sessions, json_string_value(name), args ? args : empty,
                                  on_tool_done, c->log_output ? on_tool_output : NULL, p,
                                  &result, &p->call, message, sizeof message);
    json_decref(empty);
    if (st == TOOL_PENDING) {
        if (p->progress_token && !uv_is_active((uv_handle_t *)&c->progress))
            uv_timer_start(&c->progress, on_progress_tick, PROGRESS_MS, PROGRESS_MS);
        return NULL;
    }
    c->pending = p->next;   /* answered at once: it is still first in the list */
    free_pending(p);
    if (st == TOOL_BAD_PARAMS)
        return jsonrpc_error(m->id, JSONRPC_INVALID_PARAMS, "%s", message);
    return jsonrpc_result(m->id, result);
}

/* Returns the response, or NULL when it will be sent later. */
static json_t *handle_request(mcp_conn_t *c, jsonrpc_msg_t *m)
{
    const char *method = m->method;
    if (strcmp(method, "ping") == 0)
        return jsonrpc_result(m->id, json_object());
    if (strcmp(method, "initialize") == 0)
        return do_initialize(c, m);
    if (!c->initialized)
        return jsonrpc_error(m->id, JSONRPC_INVALID_REQUEST,
                             "Invalid Request: the connection is not initialized; send "
                             "\"initialize\" first");
    if (strcmp(method, "tools/list") == 0)
        return jsonrpc_result(m->id, tools_list());
    if (strcmp(method, "tools/call") == 0)
        return do_tools_call(c, m);
    if (strcmp(method, "logging/setLevel") == 0)
        return do_set_level(c, m);
    return jsonrpc_error(m->id, JSONRPC_METHOD_NOT_FOUND, "Method not found: %s", method);
}

static void handle_notification(mcp_conn_t *c, jsonrpc_msg_t *m)
{
    if (strcmp(m->method, "notifications/cancelled") == 0) {
        pending_t *p = find_pending(c, json_object_get(m->params, "requestId"));
        if (p) {
            log_debug("cancelling a tool call at the client's request");
            tools_cancel(p->call);   /* may free p */
        }
    }
    /* notifications/initialized and anything unknown need nothing. */
}

void mcp_conn_dispatch(mcp_conn_t *c, jsonrpc_msg_t *m)
{
    if (m->kind == JSONRPC_REQUEST) {
        json_t *response = handle_request(c, m);
        if (response)
            send_message(c, response);
    } else if (m->kind == JSONRPC_NOTIFICATION) {
        handle_notification(c, m);
    }
}

void mcp_conn_handle(mcp_conn_t *c, const char *data, size_t len)
{
    jsonrpc_msg_t m;
    json_t *error;
    if (jsonrpc_parse(data, len, &m, &error) < 0) {
        if (error)
            send_message(c, error);
        return;
    }
    mcp_conn_dispatch(c, &m);
    jsonrpc_msg_free(&m);
}

int mcp_conn_streams(const mcp_conn_t *c, const jsonrpc_msg_t *m)
{
    return m->kind == JSONRPC_REQUEST && strcmp(m->method, "tools/call") == 0 &&
           (c->log_output || progress_token_of(m));
}

int mcp_version_supported(const char *version)
{
    for (size_t i = 0; i < sizeof protocol_versions / sizeof *protocol_versions; i++)
        if (strcmp(version, protocol_versions[i]) == 0)
            return 1;
    return 0;
}
