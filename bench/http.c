/* http.c - bench section 4b: Streamable HTTP, measured from a C client.
 *
 * The Node load test (bench/http-load.mjs) says what an SDK client sees, but
 * most of its time is the client's own. Here a small HTTP/1.1 client on plain
 * sockets (http_wire.c; keep-alive, TCP_NODELAY) drives lispmcp --http, so
 * the figures are the server's: one client's round trip of (+ 1 2), beside a
 * floor (a canned responder thread in this file, driven by the same client
 * code over the same loopback), then 16 clients, each with its own
 * connection and MCP session, calling as fast as they are answered. Every
 * answer is checked.
 *
 * The server's stderr is read until it says which port it got, then drained
 * by a thread so that it never blocks on a full pipe. */
#include "bench.h"
#include "http_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define ROUND_TRIPS    5000
#define WARM_UP        300
#define CLIENTS        16
#define LOAD_MS        2000
#define REQUEST_MAX    4096
#define START_MS       15000         /* for the server to say where it listens */
#define STOP_MS        5000          /* for it to exit after SIGTERM */
#define RECV_TIMEOUT_S 30            /* a stalled answer is an error, not a hang */

#define PROTOCOL    "2025-11-25"
#define EVAL_PARAMS "{\"name\":\"evaluate-lisp\",\"arguments\":{\"code\":\"(+ 1 2)\"}}"
#define EVAL_VALUE  "\"values\":[\"3\"]"

/* ---- the client ------------------------------------------------------- */

typedef struct client {
    reader_t in;                 /* in.fd: the connection, -1 between them */
    int      port;
    long     next_id;
    long     reconnects;         /* times the server closed the connection */
    char     session[SESSION_MAX];
    head_t   head;               /* of the last answer */
    body_t   body;
    char     request[REQUEST_MAX];
} client_t;

static void client_connect(client_t *c)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket");
    set_nodelay(fd);
    struct timeval tv = {.tv_sec = RECV_TIMEOUT_S};
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0)
        die("setsockopt SO_RCVTIMEO");
    struct sockaddr_in a = loopback(c->port);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
        die("connect");
    c->in.fd = fd;
    c->in.pos = c->in.len = 0;
}

static void client_disconnect(client_t *c)
{
    if (c->in.fd >= 0)
        close(c->in.fd);
    c->in.fd = -1;
}

static client_t *client_new(int port)
{
    client_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        die("calloc");
    c->port = port;
    c->next_id = 1;
    c->in.fd = -1;
    client_connect(c);
    return c;
}

static void client_free(client_t *c)
{
    client_disconnect(c);
    free(c->body.data);
    free(c);
}

/* One request, one answer (in c->head and c->body); -1 if the connection
 * failed, which also drops it so the next request opens a new one. */
static int client_request(client_t *c, const char *method, const char *json)
{
    if (c->in.fd < 0)
        client_connect(c);
    c->head = (head_t){.length = -1};
    size_t body_len = json ? strlen(json) : 0;
    int n = snprintf(c->request, sizeof c->request,
                     "%s /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                     "Accept: application/json, text/event-stream\r\n"
                     "%s%s%s%s"
                     "Content-Length: %zu\r\n\r\n",
                     method, c->port, body_len ? "Content-Type: application/json\r\n" : "",
                     c->session[0] ? "Mcp-Session-Id: " : "", c->session,
                     c->session[0] ? "\r\nMCP-Protocol-Version: " PROTOCOL "\r\n" : "", body_len);
    if (n < 0 || (size_t)n + body_len >= sizeof c->request) {
        fprintf(stderr, "bench: http: request too long\n");
        exit(1);
    }
    memcpy(c->request + n, json ? json : "", body_len);
    if (send_all(c->in.fd, c->request, (size_t)n + body_len) < 0) {
        note_once("sending a request failed");
        client_disconnect(c);
        return -1;
    }
    if (read_head(&c->in, &c->head, 1) < 0 || read_body(&c->in, &c->head, &c->body) < 0) {
        note_once("reading an answer failed (closed, timed out or malformed)");
        client_disconnect(c);
        return -1;
    }
    if (c->head.close) {
        c->reconnects++;
        client_disconnect(c);
    }
    return 0;
}

/* A JSON-RPC request with the next id; the answer must come with status. */
static void client_call_expect(client_t *c, const char *method, const char *params, int status)
{
    char json[1024];
    int n = params ? snprintf(json, sizeof json,
                              "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"%s\",\"params\":%s}",
                              c->next_id++, method, params)
                   : snprintf(json, sizeof json, "{\"jsonrpc\":\"2.0\",\"method\":\"%s\"}", method);
    if (n < 0 || (size_t)n >= sizeof json) {
        fprintf(stderr, "bench: http: %s too long\n", method);
        exit(1);
    }
    if (client_request(c, "POST", json) < 0 || c->head.status != status) {
        fprintf(stderr, "bench: http: %s: expected %d, got %d: %.300s\n", method, status,
                c->head.status, c->body.data ? c->body.data : "");
        exit(1);
    }
}

/* initialize, take the session id, then notifications/initialized. */
static void mcp_open(client_t *c)
{
    client_call_expect(c, "initialize",
                       "{\"protocolVersion\":\"" PROTOCOL "\",\"capabilities\":{},"
                       "\"clientInfo\":{\"name\":\"bench-http\",\"version\":\"1\"}}", 200);
    if (c->head.session[0] == '\0') {
        fprintf(stderr, "bench: http: initialize gave no Mcp-Session-Id\n");
        exit(1);
    }
    memcpy(c->session, c->head.session, sizeof c->session);
    client_call_expect(c, "notifications/initialized", NULL, 202);
}

/* DELETE the session, so its worker goes before the next measure. */
static void mcp_close(client_t *c)
{
    if (client_request(c, "DELETE", NULL) < 0 || c->head.status != 200)
        fprintf(stderr, "bench: http: DELETE of the session gave %d\n", c->head.status);
    c->session[0] = '\0';
}

/* One evaluation of (+ 1 2): 1 if answered 200 with the right id and "3". */
static int client_eval(client_t *c)
{
    char json[256], id[32];
    long n = c->next_id++;
    snprintf(json, sizeof json,
             "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":" EVAL_PARAMS "}",
             n);
    snprintf(id, sizeof id, "\"id\":%ld,", n);
    if (client_request(c, "POST", json) < 0)
        return 0;
    if (c->head.status != 200 || strstr(c->body.data, id) == NULL ||
        strstr(c->body.data, EVAL_VALUE) == NULL || strstr(c->body.data, "\"isError\":true")) {
        note_once("an evaluation was not answered 200 with \"3\"");
        return 0;
    }
    return 1;
}

/* Sequential round trips after the warm-up; failures go to *errors. */
static stats_t round_trips(client_t *c, int n, long *errors)
{
    double *t = malloc(sizeof *t * (size_t)n);
    if (t == NULL)
        die("malloc");
    for (int i = 0; i < WARM_UP; i++)
        *errors += !client_eval(c);
    for (int i = 0; i < n; i++) {
        double t0 = now_ms();
        *errors += !client_eval(c);
        t[i] = now_ms() - t0;
    }
    stats_t s = percentiles(t, n);
    free(t);
    return s;
}

/* ---- the floor: a canned responder on a thread ------------------------ */

typedef struct floor_server {
    int       listen_fd;
    int       port;
    pthread_t thread;
} floor_server_t;

/* Serves one connection, answering every POST with what lispmcp answers to
 * (+ 1 2), id copied, then ends when the client closes. */
static void *floor_serve(void *arg)
{
    floor_server_t *f = arg;
    int fd;
    do
        fd = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        die("accept");
    set_nodelay(fd);
    reader_t *r = malloc(sizeof *r);
    if (r == NULL)
        die("malloc");
    r->fd = fd;
    r->pos = r->len = 0;
    head_t h;
    body_t b = {0};
    char body[512], answer[1024];
    while (read_head(r, &h, 0) == 0 && read_body(r, &h, &b) == 0) {
        const char *id = strstr(b.data, "\"id\":");
        id = id ? id + 5 : "0";
        int id_len = (int)strcspn(id, ",}");
        int len = snprintf(body, sizeof body,
            "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"content\":[{\"type\":\"text\","
            "\"text\":\"=> 3\"}],\"structuredContent\":{\"values\":[\"3\"],\"stdout\":\"\","
            "\"stderr\":\"\",\"warnings\":[],\"package\":\"COMMON-LISP-USER\","
            "\"session\":\"default\"}}}", id_len, id);
        if (len < 0 || (size_t)len >= sizeof body)
            break;
        /* The headers libmicrohttpd sends, Date included, for the same bytes. */
        int n = snprintf(answer, sizeof answer,
                         "HTTP/1.1 200 OK\r\nDate: Sun, 22 Nov 2026 05:05:19 GMT\r\n"
                         "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
                         len, body);
        if (n < 0 || (size_t)n >= sizeof answer || send_all(fd, answer, (size_t)n) < 0)
            break;
    }
    free(b.data);
    free(r);
    close(fd);
    return NULL;
}

static void floor_start(floor_server_t *f)
{
    f->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (f->listen_fd < 0)
        die("socket");
    struct sockaddr_in a = loopback(0);
    socklen_t len = sizeof a;
    if (bind(f->listen_fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(f->listen_fd, 1) < 0 ||
        getsockname(f->listen_fd, (struct sockaddr *)&a, &len) < 0)
        die("floor listen");
    f->port = ntohs(a.sin_port);
    int rc = pthread_create(&f->thread, NULL, floor_serve, f);
    if (rc != 0) {
        errno = rc;
        die("pthread_create");
    }
}

static void floor_stop(floor_server_t *f)
{
    pthread_join(f->thread, NULL);   /* it ends when its client has closed */
    close(f->listen_fd);
}

static stats_t floor_round_trips(int n)
{
    floor_server_t f;
    floor_start(&f);
    client_t *c = client_new(f.port);
    /* The same headers as a call in a session, to send the same bytes. */
    snprintf(c->session, sizeof c->session, "%032x", 0);
    long errors = 0;
    stats_t s = round_trips(c, n, &errors);
    if (errors)
        fprintf(stderr, "bench: http: %ld floor calls failed\n", errors);
    client_free(c);
    floor_stop(&f);
    return s;
}

/* ---- the server process ----------------------------------------------- */

typedef struct server {
    pid_t      pid;
    int        err_fd;           /* its stderr */
    int        port;
    pthread_t  drain;
    atomic_int stop;
} server_t;

/* The environment without LISPMCP_TOKEN: the bench calls without a token. */
static char **env_without_token(void)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = malloc(sizeof *env * (n + 1));
    if (env == NULL)
        die("malloc");
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LISPMCP_TOKEN=", 14) != 0)
            env[k++] = environ[i];
    env[k] = NULL;
    return env;
}

/* Read stderr until "listening on http://127.0.0.1:PORT/mcp" is a whole line. */
static int wait_for_port(int fd)
{
    static const char marker[] = "listening on http://127.0.0.1:";
    char text[8192];
    size_t len = 0;
    double deadline = now_ms() + START_MS;
    for (;;) {
        text[len] = '\0';
        const char *at = strstr(text, marker);
        if (at && strchr(at, '\n')) {
            long port = strtol(at + sizeof marker - 1, NULL, 10);
            if (port <= 0 || port > 65535)
                break;
            return (int)port;
        }
        if (len == sizeof text - 1) {            /* keep only the unfinished line */
            char *nl = strrchr(text, '\n');
            size_t keep = nl ? len - (size_t)(nl + 1 - text) : 0;
            memmove(text, text + len - keep, keep);
            len = keep;
        }
        int left = (int)(deadline - now_ms());
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, left) <= 0)
            break;
        ssize_t k = read(fd, text + len, sizeof text - 1 - len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        len += (size_t)k;
    }
    text[len] = '\0';
    fprintf(stderr, "bench: http: the server did not say where it listens:\n%s\n", text);
    exit(1);
}

/* Pass the server's warnings and errors on, drop the rest. */
static void drain_line(const char *line)
{
    if (strstr(line, "lispmcp warn") || strstr(line, "lispmcp error"))
        fprintf(stderr, "bench: http: server said: %s\n", line);
}

/* Keeps reading the server's stderr so it never blocks on a full pipe. Once
 * asked to stop (the server has been reaped), it takes what is left and
 * ends, without waiting for an EOF a stray child could hold back. */
static void *drain(void *arg)
{
    server_t *s = arg;
    char line[2048], chunk[4096];
    size_t len = 0;
    for (;;) {
        int stopping = atomic_load(&s->stop);
        struct pollfd p = {.fd = s->err_fd, .events = POLLIN};
        int ready = poll(&p, 1, stopping ? 0 : 100);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready < 0 || (ready == 0 && stopping))
            break;
        if (ready == 0)
            continue;
        ssize_t k = read(s->err_fd, chunk, sizeof chunk);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        for (ssize_t i = 0; i < k; i++) {
            if (chunk[i] == '\n' || len == sizeof line - 1) {
                line[len] = '\0';
                drain_line(line);
                len = 0;
            }
            if (chunk[i] != '\n')
                line[len++] = chunk[i];
        }
    }
    return NULL;
}

static void server_start(server_t *s, char *path)
{
    char *argv[] = {path, "--http", "127.0.0.1:0", "--log-level", "info", "--pool-size", "2",
                    "--max-sessions", "64", NULL};
    int err[2];
    if (pipe2(err, O_CLOEXEC) < 0)
        die("pipe2");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    char **env = env_without_token();
    int rc = posix_spawn(&s->pid, path, &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    if (rc != 0) {
        errno = rc;
        die(path);
    }
    close(err[1]);
    s->err_fd = err[0];
    s->port = wait_for_port(s->err_fd);
    atomic_init(&s->stop, 0);
    rc = pthread_create(&s->drain, NULL, drain, s);
    if (rc != 0) {
        errno = rc;
        die("pthread_create");
    }
}

/* SIGTERM is the server's clean shutdown (it ends the sessions and their
 * workers); SIGKILL only if it has not gone after STOP_MS. */
static void server_stop(server_t *s)
{
    int status = 0;
    if (kill(s->pid, SIGTERM) < 0)
        die("kill");
    double deadline = now_ms() + STOP_MS;
    pid_t done;
    while ((done = waitpid(s->pid, &status, WNOHANG)) == 0 && now_ms() < deadline)
        usleep(10000);
    if (done == 0) {
        fprintf(stderr, "bench: http: the server ignored SIGTERM for %d ms; killing it\n", STOP_MS);
        kill(s->pid, SIGKILL);
        done = waitpid(s->pid, &status, 0);
    }
    if (done < 0)
        die("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "bench: http: the server ended badly (status %#x)\n", status);
    atomic_store(&s->stop, 1);
    pthread_join(s->drain, NULL);
    close(s->err_fd);
}

/* ---- many clients at once --------------------------------------------- */

typedef struct load {
    client_t          *client;
    pthread_barrier_t *go;
    double             duration_ms;
    double            *latency;     /* of every measured call */
    size_t             calls, cap;
    long               errors;
    double             start, end;
} load_t;

static void *load_run(void *arg)
{
    load_t *l = arg;
    mcp_open(l->client);
    l->errors += !client_eval(l->client);   /* its session's worker starts here */
    pthread_barrier_wait(l->go);
    l->start = now_ms();
    double stop = l->start + l->duration_ms;
    double t0;
    while ((t0 = now_ms()) < stop) {
        l->errors += !client_eval(l->client);
        if (l->calls == l->cap) {
            l->cap = l->cap ? l->cap * 2 : 4096;
            double *more = realloc(l->latency, sizeof *more * l->cap);
            if (more == NULL)
                die("realloc");
            l->latency = more;
        }
        l->latency[l->calls++] = now_ms() - t0;
    }
    l->end = now_ms();
    return NULL;
}

typedef struct load_result {
    double  per_second;
    stats_t latency;
    long    errors, reconnects;
    long    pss_kb;              /* the server's, with every session still open */
} load_result_t;

static load_result_t load(const server_t *s, double duration_ms)
{
    load_t l[CLIENTS] = {{0}};
    pthread_t thread[CLIENTS];
    pthread_barrier_t go;
    if (pthread_barrier_init(&go, NULL, CLIENTS) != 0)
        die("pthread_barrier_init");
    for (int i = 0; i < CLIENTS; i++) {
        l[i].client = client_new(s->port);
        l[i].go = &go;
        l[i].duration_ms = duration_ms;
        int rc = pthread_create(&thread[i], NULL, load_run, &l[i]);
        if (rc != 0) {
            errno = rc;
            die("pthread_create");
        }
    }
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(thread[i], NULL);
    pthread_barrier_destroy(&go);

    load_result_t r = {.pss_kb = pss_kb(s->pid)};
    size_t calls = 0;
    double start = l[0].start, end = l[0].end;
    for (int i = 0; i < CLIENTS; i++) {
        calls += l[i].calls;
        r.errors += l[i].errors;
        start = l[i].start < start ? l[i].start : start;
        end = l[i].end > end ? l[i].end : end;
    }
    if (calls == 0) {
        fprintf(stderr, "bench: http: no call was made under load\n");
        exit(1);
    }
    double *all = malloc(sizeof *all * calls);
    if (all == NULL)
        die("malloc");
    size_t k = 0;
    for (int i = 0; i < CLIENTS; i++) {
        memcpy(all + k, l[i].latency, sizeof *all * l[i].calls);
        k += l[i].calls;
        mcp_close(l[i].client);
        r.reconnects += l[i].client->reconnects;
        client_free(l[i].client);
        free(l[i].latency);
    }
    r.latency = percentiles(all, (int)calls);
    r.per_second = (double)calls / ((end - start) / 1000);
    free(all);
    return r;
}

void bench_http(const bench_cfg_t *cfg, json_t *out)
{
    int n = cfg->quick ? 500 : ROUND_TRIPS;
    double duration = cfg->quick ? LOAD_MS / 4 : LOAD_MS;
    printf("\n4b. Streamable HTTP, C client over keep-alive connections\n");
    fflush(stdout);

    stats_t floor = floor_round_trips(n);

    server_t s;
    server_start(&s, cfg->server);
    client_t *c = client_new(s.port);
    mcp_open(c);
    long errors = 0;
    stats_t rtt = round_trips(c, n, &errors);
    long reconnects = c->reconnects;
    mcp_close(c);
    client_free(c);

    load_result_t many = load(&s, duration);
    errors += many.errors;
    reconnects += many.reconnects;
    server_stop(&s);

    row(out, "http-rtt-p50", "HTTP round trip of (+ 1 2), one client, p50", rtt.p50, "ms",
        0.10, 0);
    row(out, "http-rtt-p99", "HTTP round trip of (+ 1 2), one client, p99", rtt.p99, "ms", 0, 0);
    row(out, "http-floor-p50", "HTTP floor: canned answer, same client, p50", floor.p50, "ms",
        0, 0);
    row(out, "http-rtt-above-floor-p50", "HTTP round trip above the floor, p50",
        rtt.p50 - floor.p50, "ms", 0, 0);
    char what[128];
    snprintf(what, sizeof what, "%d clients, own sessions, %.1f s: evaluations per second",
             CLIENTS, duration / 1000);
    row(out, "http-throughput-16", what, many.per_second, "evals/s", 20000, 1);
    row(out, "http-throughput-16-p50", "16 clients: round trip, p50", many.latency.p50, "ms",
        0, 0);
    row(out, "http-throughput-16-p99", "16 clients: round trip, p99", many.latency.p99, "ms",
        0, 0);
    row(out, "http-errors", "HTTP calls failed or answered wrong (must be 0)", (double)errors,
        "calls", 0, 0);
    row(out, "http-server-pss", "lispmcp --http PSS after the run, 16 sessions open",
        (double)many.pss_kb, "kB", 0, 0);
    if (errors)
        fprintf(stderr, "bench: http: %ld calls failed or were answered wrong\n", errors);
    if (reconnects)
        printf("note: the server closed keep-alive connections %ld times\n", reconnects);
}
