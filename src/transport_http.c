/* transport_http.c - the Streamable HTTP transport.
 *
 * A request's way: on_request() is called by libmicrohttpd first with the
 * headers (checked at once: path, Host, Origin, token), then with the body in
 * pieces, then once more at its end. A POSTed JSON-RPC request is handed to
 * the MCP connection of its session and the HTTP connection is suspended
 * until the connection's send function receives the matching response; then
 * it is resumed and answered with application/json. A request that will have
 * notifications (a progressToken, or output the client asked to hear as log
 * messages) is answered at once with an SSE stream instead, which carries them
 * and then its response. Notifications and
 * responses from the client get 202. GET offers no stream (405); DELETE ends
 * the session.
 *
 * Sessions ids are 128 bits from the kernel's random source. A session ends
 * on DELETE, after --http-session-timeout without requests, or at shutdown;
 * its Lisp sessions and workers go with it. */
#include "transport_http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "json_write.h"
#include "jsonrpc.h"
#include "log.h"
#include "mcp.h"
#include "pool.h"
#include "util.h"

#define MCP_PATH        "/mcp"
#define SESSION_ID_LEN  32          /* hex digits of 128 random bits */
#define HEADER_MEMORY   (64 * 1024) /* per connection: headers and buffers */
#define IDLE_CONNECTION 60          /* seconds a client may stay silent mid-request */
#define MAX_CONNECTIONS 1024

typedef struct http_server http_server_t;
typedef struct http_session http_session_t;

/* A POSTed request waiting for its JSON-RPC response. */
typedef struct http_call {
    struct http_call      *next;
    http_session_t        *session;     /* NULL once the session has ended */
    struct MHD_Connection *connection;  /* NULL once the client has gone */
    json_t                *id;
    int                    stream;      /* answered as an SSE stream */
    char                  *response;    /* JSON: the response, once it is known */
    buf_t                  events;      /* SSE: events not yet sent */
    int                    done;        /* the response has been given */
    int                    suspended;
    int                    initialize;  /* answer with the Mcp-Session-Id header */
    int                    failed;      /* the response is a JSON-RPC error */
} http_call_t;

struct http_session {
    http_session_t *next;
    http_server_t  *server;
    char            id[SESSION_ID_LEN + 1];
    mcp_conn_t     *conn;
    http_call_t    *calls;
    double          last_seen_ms;
};

/* libmicrohttpd's per-request state. */
typedef struct http_request {
    buf_t        body;
    int          too_large;
    int          checked;               /* headers passed the checks */
    http_call_t *call;
} http_request_t;

struct http_server {
    server_t          *srv;
    struct MHD_Daemon *daemon;
    uv_poll_t          poll;
    uv_timer_t         timer;           /* libmicrohttpd's own timeouts */
    uv_timer_t         sweep;           /* ends idle sessions */
    uv_signal_t        sigterm, sigint;
    http_session_t    *sessions;
    int                loopback;
    int                stopping;
};

static http_server_t http;   /* one HTTP server per process */

/* ---- answers ---------------------------------------------------------- */

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *body,
                               const char *session_id)
{
    size_t len = body ? strlen(body) : 0;
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)(body ? body : ""),
                                                             MHD_RESPMEM_MUST_COPY);
    if (r == NULL)
        return MHD_NO;
    if (len)
        MHD_add_response_header(r, "Content-Type", "application/json");
    if (session_id)
        MHD_add_response_header(r, "Mcp-Session-Id", session_id);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, "Allow", "POST, DELETE");
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

/* An HTTP error, with a JSON-RPC error object saying why. */
static enum MHD_Result refuse(struct MHD_Connection *c, unsigned status, int code,
                              const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    json_t *e = jsonrpc_error(NULL, code, "%s", why);
    char *body = json_text(e);
    json_decref(e);
    log_debug("HTTP %u: %s", status, why);
    enum MHD_Result ok = respond(c, status, body, NULL);
    free(body);
    return ok;
}

/* ---- sessions --------------------------------------------------------- */

static void free_call(http_call_t *call)
{
    json_decref(call->id);
    free(call->response);
    buf_free(&call->events);
    free(call);
}

static void unlink_call(http_call_t *call)
{
    if (call->session == NULL)
        return;
    http_call_t **p = &call->session->calls;
    while (*p != call)
        p = &(*p)->next;
    *p = call->next;
    call->session = NULL;
}

static void on_mhd_timer(uv_timer_t *t);

/* Hand a message to a waiting call (final: its response) and wake its HTTP
 * connection. The resumed connection is served on the next turn of the loop:
 * libmicrohttpd's own wake-up does not reach a loop that polls its epoll
 * descriptor from outside. */
static void deliver(http_session_t *s, http_call_t *call, json_t *message, int final)
{
    if (call->stream) {
        buf_append_str(&call->events, "event: message\ndata: ");
        json_write(&call->events, message);
        buf_append_str(&call->events, "\n\n");
    } else {
        call->response = json_text(message);
    }
    if (final) {
        call->done = 1;
        call->failed = json_object_get(message, "error") != NULL;
        s->last_seen_ms = now_ms();
    }
    if (call->connection == NULL) {
        if (final) {
            unlink_call(call);      /* its client went away: nobody to tell */
            free_call(call);
        }
    } else if (call->suspended) {
        call->suspended = 0;
        MHD_resume_connection(call->connection);
        uv_timer_start(&s->server->timer, on_mhd_timer, 0, 0);
    }
}

static http_call_t *waiting_call(http_session_t *s, json_t *id)
{
    for (http_call_t *call = s->calls; call; call = call->next)
        if (!call->done && json_equal(call->id, id))
            return call;
    return NULL;
}

/* The MCP connection's send function: a response goes to the POST that
 * carried its request, a notification to the stream of the request it is
 * about. Other notifications have no stream to travel on. */
static void session_send(void *transport, json_t *message, json_t *related)
{
    http_session_t *s = transport;
    json_t *id = json_object_get(message, "id");
    http_call_t *call;
    if (json_object_get(message, "method")) {
        if (related && (call = waiting_call(s, related)) != NULL && call->stream)
            deliver(s, call, message, 0);
    } else if (id && (call = waiting_call(s, id)) != NULL) {
        deliver(s, call, message, 1);
    }
}

/* MCP gives a cancelled request no response, but its POST is still open:
 * end it with an error the client, which has given up on it, can ignore. */
static void settle_cancelled(http_session_t *s, jsonrpc_msg_t *msg)
{
    if (strcmp(msg->method, "notifications/cancelled") != 0)
        return;
    json_t *id = json_object_get(msg->params, "requestId");
    http_call_t *call = id ? waiting_call(s, id) : NULL;
    if (call) {
        json_t *e = jsonrpc_error(id, JSONRPC_REQUEST_CANCELLED, "Request cancelled");
        deliver(s, call, e, 1);
        json_decref(e);
    }
}

static http_session_t *new_session(http_server_t *h)
{
    unsigned char raw[SESSION_ID_LEN / 2];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return NULL;
    http_session_t *s = xcalloc(1, sizeof *s);
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(s->id + 2 * i, 3, "%02x", raw[i]);
    s->server = h;
    s->conn = mcp_conn_new(h->srv, session_send, s);
    s->last_seen_ms = now_ms();
    s->next = h->sessions;
    h->sessions = s;
    return s;
}

static http_session_t *find_session(http_server_t *h, const char *id)
{
    for (http_session_t *s = h->sessions; s; s = s->next)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

/* End a session: its pending calls are answered (SESSION-CLOSED) and its
 * workers killed; answered calls still reach their clients. */
static void end_session(http_session_t *s, const char *why)
{
    http_server_t *h = s->server;
    http_session_t **p = &h->sessions;
    while (*p != s)
        p = &(*p)->next;
    *p = s->next;
    log_info("MCP session %.8s... ended (%s)", s->id, why);
    mcp_conn_free(s->conn);
    while (s->calls) {
        http_call_t *call = s->calls;
        unlink_call(call);
        if (call->connection == NULL)
            free_call(call);
    }
    free(s);
}

static void on_sweep(uv_timer_t *t)
{
    http_server_t *h = t->data;
    double limit = h->srv->cfg->http_session_timeout * 1000, now = now_ms();
    http_session_t *s = h->sessions;
    while (s) {
        http_session_t *next = s->next;
        if (s->calls == NULL && now - s->last_seen_ms >= limit)
            end_session(s, "idle");
        s = next;
    }
}

/* ---- checks on every request ------------------------------------------ */

static int local_host(const char *host, size_t len)
{
    static const char *const names[] = {"localhost", "127.0.0.1", "[::1]"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (len == strlen(names[i]) && strncasecmp(host, names[i], len) == 0)
            return 1;
    return 0;
}

/* The host part of "host[:port]" (an IPv6 host keeps its brackets). */
static size_t host_length(const char *hostport)
{
    if (hostport[0] == '[') {
        const char *end = strchr(hostport, ']');
        return end ? (size_t)(end - hostport) + 1 : strlen(hostport);
    }
    return strcspn(hostport, ":");
}

static int origin_allowed(const char *origin, const char *allowed)
{
    const char *rest = NULL;
    if (strncasecmp(origin, "http://", 7) == 0)
        rest = origin + 7;
    else if (strncasecmp(origin, "https://", 8) == 0)
        rest = origin + 8;
    if (rest && local_host(rest, host_length(rest)))
        return 1;
    size_t n = strlen(origin);
    for (const char *p = allowed; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncasecmp(p, origin, n) == 0)
            return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

/* Compare without leaking, through timing, how much of the token matched. */
static int token_matches(const char *given, const char *want)
{
    size_t given_len = strlen(given), want_len = strlen(want);
    unsigned char diff = given_len != want_len;
    for (size_t i = 0; i < want_len; i++)
        diff |= (unsigned char)want[i] ^ (unsigned char)(i < given_len ? given[i] : 0);
    return diff == 0;
}

/* Path, Host (DNS rebinding), Origin and token: MHD_YES to go on, else the
 * refusal has been queued and *refused is set. */
static enum MHD_Result check_headers(http_server_t *h, struct MHD_Connection *c, const char *url,
                                     int *refused)
{
    const config_t *cfg = h->srv->cfg;
    *refused = 1;
    if (strcmp(url, MCP_PATH) != 0)
        return refuse(c, MHD_HTTP_NOT_FOUND, JSONRPC_INVALID_REQUEST,
                      "Not found: the MCP endpoint is %s", MCP_PATH);
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    if (h->loopback && host && !local_host(host, host_length(host)))
        return refuse(c, MHD_HTTP_FORBIDDEN, JSONRPC_INVALID_REQUEST,
                      "Forbidden: Host %s is not a local name", host);
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    if (origin && !origin_allowed(origin, cfg->allow_origins))
        return refuse(c, MHD_HTTP_FORBIDDEN, JSONRPC_INVALID_REQUEST,
                      "Forbidden: Origin %s is not allowed (see --allow-origin)", origin);
    if (cfg->token) {
        const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0 ||
            !token_matches(auth + 7, cfg->token))
            return refuse(c, MHD_HTTP_UNAUTHORIZED, JSONRPC_INVALID_REQUEST,
                          "Unauthorized: send Authorization: Bearer <token>");
    }
    *refused = 0;
    return MHD_YES;
}

/* ---- methods ---------------------------------------------------------- */

static enum MHD_Result answer_call(struct MHD_Connection *c, http_request_t *r)
{
    http_call_t *call = r->call;
    const char *sid = call->initialize && call->session ? call->session->id : NULL;
    enum MHD_Result ok = respond(c, MHD_HTTP_OK, call->response, sid);
    r->call = NULL;
    unlink_call(call);
    free_call(call);
    return ok;
}

/* The SSE stream of a call: what has come so far, then a wait (the
 * connection is suspended until deliver() wakes it), until the response. */
static ssize_t read_events(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    http_call_t *call = cls;
    if (call->events.len) {
        size_t n = call->events.len < max ? call->events.len : max;
        memcpy(out, call->events.data, n);
        buf_consume(&call->events, n);
        return (ssize_t)n;
    }
    if (call->done)
        return MHD_CONTENT_READER_END_OF_STREAM;
    call->suspended = 1;
    MHD_suspend_connection(call->connection);
    return 0;
}

static enum MHD_Result open_stream(struct MHD_Connection *c, http_call_t *call)
{
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096,
                                                               read_events, call, NULL);
    if (r == NULL)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ok;
}

static int accepts_events(struct MHD_Connection *c)
{
    const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
    return accept && strstr(accept, "text/event-stream");
}

static enum MHD_Result do_request(struct MHD_Connection *c, http_request_t *r,
                                  http_session_t *s, jsonrpc_msg_t *msg, int initialize)
{
    if (waiting_call(s, msg->id)) {
        json_t *e = jsonrpc_error(msg->id, JSONRPC_INVALID_REQUEST,
                                  "Invalid Request: id is already used by a request in progress");
        char *body = json_text(e);
        json_decref(e);
        enum MHD_Result ok = respond(c, MHD_HTTP_OK, body, NULL);
        free(body);
        return ok;
    }
    http_call_t *call = xcalloc(1, sizeof *call);
    call->session = s;
    call->connection = c;
    call->id = json_incref(msg->id);
    call->initialize = initialize;
    buf_init(&call->events);
    call->stream = mcp_conn_streams(s->conn, msg) && accepts_events(c);
    call->next = s->calls;
    s->calls = call;
    r->call = call;
    mcp_conn_dispatch(s->conn, msg);
    if (call->stream)
        return open_stream(c, call);
    if (call->response == NULL) {
        call->suspended = 1;
        MHD_suspend_connection(c);
        return MHD_YES;
    }
    if (initialize && call->failed) {
        call->initialize = 0;      /* a failed initialize makes no session */
        unlink_call(call);
        end_session(s, "initialize failed");
    }
    return answer_call(c, r);
}

static enum MHD_Result do_post(http_server_t *h, struct MHD_Connection *c, http_request_t *r)
{
    if (r->too_large)
        return refuse(c, MHD_HTTP_CONTENT_TOO_LARGE, JSONRPC_INVALID_REQUEST,
                      "Payload too large: over %zu bytes (--max-message-bytes)",
                      h->srv->cfg->max_message_bytes);
    const char *type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    if (type == NULL || strncasecmp(type, "application/json", 16) != 0)
        return refuse(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, JSONRPC_INVALID_REQUEST,
                      "Unsupported Media Type: POST application/json");
    jsonrpc_msg_t msg;
    json_t *error;
    if (jsonrpc_parse(r->body.data ? r->body.data : "", r->body.len, &msg, &error) < 0) {
        char *body = json_text(error);
        json_decref(error);
        enum MHD_Result ok = respond(c, MHD_HTTP_BAD_REQUEST, body, NULL);
        free(body);
        return ok;
    }
    int initialize = msg.kind == JSONRPC_REQUEST && strcmp(msg.method, "initialize") == 0;
    const char *sid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Session-Id");
    const char *version = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "MCP-Protocol-Version");
    http_session_t *s = NULL;
    enum MHD_Result ok;
    if (sid == NULL && !initialize) {
        ok = refuse(c, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST,
                    "Bad Request: Mcp-Session-Id header is required (send initialize first)");
    } else if (sid && (s = find_session(h, sid)) == NULL) {
        ok = refuse(c, MHD_HTTP_NOT_FOUND, JSONRPC_INVALID_REQUEST,
                    "Session not found: it ended or never existed; initialize a new one");
    } else if (sid && version && !mcp_version_supported(version)) {
        ok = refuse(c, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST,
                    "Bad Request: unsupported MCP-Protocol-Version %s", version);
    } else if (s == NULL && (s = new_session(h)) == NULL) {
        ok = refuse(c, MHD_HTTP_INTERNAL_SERVER_ERROR, JSONRPC_INTERNAL_ERROR,
                    "the kernel's random source failed");
    } else {
        s->last_seen_ms = now_ms();
        if (msg.kind == JSONRPC_REQUEST) {
            ok = do_request(c, r, s, &msg, initialize && sid == NULL);
        } else {
            mcp_conn_dispatch(s->conn, &msg);
            if (msg.kind == JSONRPC_NOTIFICATION)
                settle_cancelled(s, &msg);
            ok = respond(c, MHD_HTTP_ACCEPTED, NULL, NULL);
        }
    }
    jsonrpc_msg_free(&msg);
    return ok;
}

static enum MHD_Result do_delete(http_server_t *h, struct MHD_Connection *c)
{
    const char *sid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Session-Id");
    if (sid == NULL)
        return refuse(c, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST,
                      "Bad Request: Mcp-Session-Id header is required");
    http_session_t *s = find_session(h, sid);
    if (s == NULL)
        return refuse(c, MHD_HTTP_NOT_FOUND, JSONRPC_INVALID_REQUEST, "Session not found");
    end_session(s, "DELETE");
    return respond(c, MHD_HTTP_OK, NULL, NULL);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **state)
{
    (void)version;
    http_server_t *h = cls;
    http_request_t *r = *state;
    if (r == NULL) {                       /* the headers: check them at once */
        r = xcalloc(1, sizeof *r);
        buf_init(&r->body);
        *state = r;
        int refused;
        enum MHD_Result ok = check_headers(h, c, url, &refused);
        r->checked = !refused;
        return ok;
    }
    if (!r->checked)
        return MHD_YES;                    /* refused: the answer is queued */
    if (*upload_size) {                    /* a piece of the body */
        if (r->body.len + *upload_size > h->srv->cfg->max_message_bytes)
            r->too_large = 1;
        else
            buf_append(&r->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (r->call && !r->call->stream)    /* resumed: the response has come */
        return answer_call(c, r);
    if (strcmp(method, "POST") == 0)
        return do_post(h, c, r);
    if (strcmp(method, "DELETE") == 0)
        return do_delete(h, c);
    return refuse(c, MHD_HTTP_METHOD_NOT_ALLOWED, JSONRPC_INVALID_REQUEST,
                  "Method Not Allowed: this server offers no stream on GET; POST requests");
}

static void on_completed(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode why)
{
    (void)cls;
    (void)c;
    (void)why;
    http_request_t *r = *state;
    if (r == NULL)
        return;
    if (r->call) {                 /* an SSE stream ended, or a client left early */
        r->call->connection = NULL;
        if (r->call->session == NULL || r->call->done) {
            unlink_call(r->call);
            free_call(r->call);
        }
    }
    buf_free(&r->body);
    free(r);
    *state = NULL;
}

/* ---- the daemon on the loop ------------------------------------------- */

static void drive(http_server_t *h);

static void on_mhd_timer(uv_timer_t *t)
{
    drive(t->data);
}

static void on_mhd_readable(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    drive(p->data);
}

/* Let libmicrohttpd do what is ready, then wake it when it next needs to. */
static void drive(http_server_t *h)
{
    if (h->daemon == NULL)
        return;
    MHD_run(h->daemon);
    MHD_UNSIGNED_LONG_LONG timeout;
    if (MHD_get_timeout(h->daemon, &timeout) == MHD_YES)
        uv_timer_start(&h->timer, on_mhd_timer, timeout, 0);
    else
        uv_timer_stop(&h->timer);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    log_debug("http: %s", line);
}

static void shut_down(http_server_t *h)
{
    if (h->stopping)
        return;
    h->stopping = 1;
    log_info("shutting down");
    while (h->sessions)
        end_session(h->sessions, "shutdown");
    pool_free(h->srv->pool);
    h->srv->pool = NULL;
    drive(h);                              /* hand out the last answers */
    uv_poll_stop(&h->poll);
    MHD_stop_daemon(h->daemon);
    h->daemon = NULL;
    uv_close((uv_handle_t *)&h->poll, NULL);
    uv_close((uv_handle_t *)&h->timer, NULL);
    uv_close((uv_handle_t *)&h->sweep, NULL);
    uv_close((uv_handle_t *)&h->sigterm, NULL);
    uv_close((uv_handle_t *)&h->sigint, NULL);
}

static void on_signal(uv_signal_t *s, int signum)
{
    log_info("received signal %d", signum);
    shut_down(s->data);
}

static int is_loopback(const struct sockaddr *a)
{
    if (a->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
    return a->sa_family == AF_INET6 &&
           IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

/* HOST:PORT, where HOST may be a name, an IPv4 address or [an IPv6 one]. */
static struct addrinfo *resolve(const char *hostport)
{
    const char *colon = strrchr(hostport, ':');
    char host[256];
    size_t n = (size_t)(colon - hostport);
    if (hostport[0] == '[' && n >= 2 && hostport[n - 1] == ']')
        snprintf(host, sizeof host, "%.*s", (int)(n - 2), hostport + 1);
    else
        snprintf(host, sizeof host, "%.*s", (int)n, hostport);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | AI_PASSIVE};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0)
        return NULL;
    return res;
}

int transport_http_start(server_t *srv)
{
    http_server_t *h = &http;
    const config_t *cfg = srv->cfg;
    memset(h, 0, sizeof *h);
    h->srv = srv;
    struct addrinfo *addr = resolve(cfg->http);
    if (addr == NULL) {
        fprintf(stderr, "lispmcp: bad value '%s' for --http: expected HOST:PORT\n", cfg->http);
        return -1;
    }
    h->loopback = is_loopback(addr->ai_addr);
    if (!h->loopback && cfg->token == NULL && !cfg->allow_remote) {
        fprintf(stderr, "lispmcp: --http %s is reachable from other machines: set --token (or "
                        "LISPMCP_TOKEN), or pass --allow-remote-without-token\n", cfg->http);
        freeaddrinfo(addr);
        return -1;
    }
    unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (addr->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    h->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, h,
        MHD_OPTION_SOCK_ADDR, addr->ai_addr,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_CONNECTION,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HEADER_MEMORY,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_END);
    freeaddrinfo(addr);
    if (h->daemon == NULL) {
        fprintf(stderr, "lispmcp: cannot listen on %s (in use, or not an address of this "
                        "machine)\n", cfg->http);
        return -1;
    }
    const union MHD_DaemonInfo *epoll = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    const union MHD_DaemonInfo *port = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    uv_poll_init(srv->loop, &h->poll, epoll->epoll_fd);
    h->poll.data = h;
    uv_poll_start(&h->poll, UV_READABLE, on_mhd_readable);
    uv_timer_init(srv->loop, &h->timer);
    h->timer.data = h;
    uv_timer_init(srv->loop, &h->sweep);
    h->sweep.data = h;
    uint64_t every = (uint64_t)(cfg->http_session_timeout * 1000 / 4);
    every = every < 100 ? 100 : every > 10000 ? 10000 : every;
    uv_timer_start(&h->sweep, on_sweep, every, every);
    uv_signal_init(srv->loop, &h->sigterm);
    uv_signal_init(srv->loop, &h->sigint);
    h->sigterm.data = h->sigint.data = h;
    uv_signal_start(&h->sigterm, on_signal, SIGTERM);
    uv_signal_start(&h->sigint, on_signal, SIGINT);

    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)(strrchr(cfg->http, ':') - cfg->http), cfg->http);
    unsigned bound = port ? port->port : 0;
    const char *auth = cfg->token ? " --header \"Authorization: Bearer $LISPMCP_TOKEN\"" : "";
    log_info("listening on http://%s:%u%s", host, bound, MCP_PATH);
    log_info("connect Claude Code with:  claude mcp add --transport http lisp http://%s:%u%s%s",
             host, bound, MCP_PATH, auth);
    log_info("or any MCP client with:  {\"mcpServers\": {\"lisp\": {\"type\": \"http\", "
             "\"url\": \"http://%s:%u%s\"%s}}}", host, bound, MCP_PATH,
             cfg->token ? ", \"headers\": {\"Authorization\": \"Bearer <token>\"}" : "");
    drive(h);
    return 0;
}
