/* transport_stdio.c - newline-delimited JSON-RPC on fd 0 and fd 1.
 *
 * stdin and stdout may each be a pipe, a terminal or a regular file; pipes
 * and terminals are libuv streams, a file is read with uv_fs_read and written
 * with plain write(2) (a file never makes the server wait on a client). A line
 * longer than --max-message-bytes is answered with one error and skipped, so
 * memory stays bounded whatever arrives. */
#include "transport_stdio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json_write.h"
#include "jsonrpc.h"
#include "log.h"
#include "mcp.h"
#include "pool.h"
#include "util.h"

#define READ_CHUNK 65536
/* After EOF on stdin, calls already received get this long to be answered
 * (a script piped into the server wants its answers); then the server ends. */
#define DRAIN_MS   2000
#define DRAIN_POLL 10

typedef union stdio_stream {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_pipe_t   pipe;
    uv_tty_t    tty;
} stdio_stream_t;

typedef struct stdio_transport {
    server_t      *srv;
    mcp_conn_t    *conn;
    stdio_stream_t in, out;
    int            in_is_file, out_is_file;
    uv_fs_t        fs_read;
    char           fs_buf[READ_CHUNK];
    buf_t          line;            /* an incomplete line */
    buf_t          out_line;        /* the line being sent, reused */
    int            discarding;      /* skipping the rest of an oversized line */
    int            pending_writes;
    int            input_done;      /* EOF seen: draining */
    int            shutting_down;
    double         drain_until_ms;
    uv_timer_t     drain;
    uv_signal_t    sigterm, sigint;
} stdio_transport_t;

/* The part of a line stdout would not take at once, waiting for libuv. */
typedef struct line_write {
    uv_write_t         req;
    stdio_transport_t *t;
    char               rest[];
} line_write_t;

static stdio_transport_t transport;   /* there is one stdin */

static void close_output(stdio_transport_t *t);

/* ---- output ----------------------------------------------------------- */

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            log_error("writing to stdout: %s", strerror(errno));
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

static void on_line_written(uv_write_t *req, int status)
{
    line_write_t *lw = (line_write_t *)req;
    stdio_transport_t *t = lw->t;
    if (status < 0 && status != UV_ECANCELED)
        log_warn("writing to stdout: %s", uv_strerror(status));
    free(lw);
    if (--t->pending_writes == 0 && t->shutting_down)
        close_output(t);
}

static void send_line(void *ctx, json_t *message, json_t *related)
{
    (void)related;   /* one stream carries everything */
    stdio_transport_t *t = ctx;
    buf_t *line = &t->out_line;
    buf_clear(line);
    json_write(line, message);
    buf_append(line, "\n", 1);
    if (t->out_is_file) {
        write_all(STDOUT_FILENO, line->data, line->len);
        return;
    }
    /* Most lines fit in the pipe: written now, with no copy and no request
     * for libuv to track. What does not fit is queued behind. */
    uv_buf_t b = uv_buf_init(line->data, (unsigned)line->len);
    int n = uv_try_write(&t->out.stream, &b, 1);
    size_t done = n > 0 ? (size_t)n : 0;
    if (n < 0 && n != UV_EAGAIN) {
        log_error("writing to stdout: %s", uv_strerror(n));
        return;
    }
    if (done == line->len)
        return;
    line_write_t *lw = xmalloc(sizeof *lw + line->len - done);
    lw->t = t;
    memcpy(lw->rest, line->data + done, line->len - done);
    b = uv_buf_init(lw->rest, (unsigned)(line->len - done));
    int rc = uv_write(&lw->req, &t->out.stream, &b, 1, on_line_written);
    if (rc < 0) {
        log_error("writing to stdout: %s", uv_strerror(rc));
        free(lw);
        return;
    }
    t->pending_writes++;
}

/* ---- input ------------------------------------------------------------ */

static void handle_line(stdio_transport_t *t, const char *p, size_t n)
{
    if (n && p[n - 1] == '\r')
        n--;
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    if (i == n)
        return;   /* blank lines are not messages */
    mcp_conn_handle(t->conn, p, n);
}

static void too_large(stdio_transport_t *t)
{
    json_t *e = jsonrpc_error(NULL, JSONRPC_PARSE_ERROR,
                              "Parse error: message larger than %zu bytes (--max-message-bytes); "
                              "it was skipped", t->srv->cfg->max_message_bytes);
    send_line(t, e, NULL);
    json_decref(e);
}

static void feed(stdio_transport_t *t, const char *data, size_t n)
{
    size_t max = t->srv->cfg->max_message_bytes;
    while (n > 0 && !t->shutting_down) {
        const char *nl = memchr(data, '\n', n);
        size_t take = nl ? (size_t)(nl - data) : n;
        if (t->discarding) {
            /* nothing to keep */
        } else if (t->line.len + take > max) {
            too_large(t);
            buf_clear(&t->line);
            t->discarding = 1;
        } else if (nl && t->line.len == 0) {
            handle_line(t, data, take);   /* the common case: no copy */
        } else {
            buf_append(&t->line, data, take);
            if (nl) {
                handle_line(t, t->line.data, t->line.len);
                buf_clear(&t->line);
            }
        }
        if (nl)
            t->discarding = 0;
        data += take + (nl != NULL);
        n -= take + (nl != NULL);
    }
}

static void shut_down(stdio_transport_t *t);

static void on_drain_tick(uv_timer_t *h)
{
    stdio_transport_t *t = h->data;
    if (mcp_conn_pending(t->conn) == 0 || now_ms() >= t->drain_until_ms)
        shut_down(t);
}

/* stdin is finished: answer what is in flight, briefly, then shut down. */
static void input_finished(stdio_transport_t *t)
{
    if (t->input_done || t->shutting_down)
        return;
    t->input_done = 1;
    if (!t->in_is_file)
        uv_read_stop(&t->in.stream);
    if (mcp_conn_pending(t->conn) == 0) {
        shut_down(t);
        return;
    }
    log_info("stdin closed: answering %d call(s) in progress, for up to %d ms",
             mcp_conn_pending(t->conn), DRAIN_MS);
    t->drain_until_ms = now_ms() + DRAIN_MS;
    uv_timer_start(&t->drain, on_drain_tick, DRAIN_POLL, DRAIN_POLL);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    (void)h;
    (void)suggested;
    b->base = transport.fs_buf;
    b->len = sizeof transport.fs_buf;
}

static void on_stream_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    stdio_transport_t *t = s->data;
    if (nread < 0) {
        if (nread != UV_EOF)
            log_warn("reading stdin: %s", uv_strerror((int)nread));
        input_finished(t);
        return;
    }
    feed(t, b->base, (size_t)nread);
}

static void read_file_chunk(stdio_transport_t *t);

static void on_file_read(uv_fs_t *req)
{
    stdio_transport_t *t = req->data;
    ssize_t n = req->result;
    uv_fs_req_cleanup(req);
    if (t->shutting_down)
        return;
    if (n <= 0) {
        if (n < 0)
            log_warn("reading stdin: %s", uv_strerror((int)n));
        input_finished(t);
        return;
    }
    feed(t, t->fs_buf, (size_t)n);
    read_file_chunk(t);
}

static void read_file_chunk(stdio_transport_t *t)
{
    if (t->shutting_down)
        return;
    uv_buf_t b = uv_buf_init(t->fs_buf, sizeof t->fs_buf);
    t->fs_read.data = t;
    int rc = uv_fs_read(t->srv->loop, &t->fs_read, STDIN_FILENO, &b, 1, -1, on_file_read);
    if (rc < 0) {
        log_warn("reading stdin: %s", uv_strerror(rc));
        shut_down(t);
    }
}

/* ---- set-up and shutdown ---------------------------------------------- */

static int open_stream(uv_loop_t *loop, stdio_stream_t *s, int fd, int readable)
{
    if (uv_guess_handle(fd) == UV_TTY)
        return uv_tty_init(loop, &s->tty, fd, readable);
    int rc = uv_pipe_init(loop, &s->pipe, 0);
    return rc < 0 ? rc : uv_pipe_open(&s->pipe, fd);
}

static void close_output(stdio_transport_t *t)
{
    if (!t->out_is_file && !uv_is_closing(&t->out.handle))
        uv_close(&t->out.handle, NULL);
}

static void shut_down(stdio_transport_t *t)
{
    if (t->shutting_down)
        return;
    t->shutting_down = 1;
    log_info("shutting down");
    mcp_conn_free(t->conn);   /* kills every worker; they are reaped as the loop runs on */
    t->conn = NULL;
    pool_free(t->srv->pool);
    t->srv->pool = NULL;
    if (!t->in_is_file)
        uv_close(&t->in.handle, NULL);
    uv_close((uv_handle_t *)&t->sigterm, NULL);
    uv_close((uv_handle_t *)&t->sigint, NULL);
    uv_close((uv_handle_t *)&t->drain, NULL);
    if (t->pending_writes == 0)
        close_output(t);
    buf_free(&t->line);
    buf_free(&t->out_line);
}

static void on_signal(uv_signal_t *h, int signum)
{
    log_info("received signal %d", signum);
    shut_down(h->data);
}

int transport_stdio_start(server_t *srv)
{
    stdio_transport_t *t = &transport;
    memset(t, 0, sizeof *t);
    t->srv = srv;
    buf_init(&t->line);
    buf_init(&t->out_line);
    t->in_is_file = uv_guess_handle(STDIN_FILENO) == UV_FILE;
    t->out_is_file = uv_guess_handle(STDOUT_FILENO) == UV_FILE;
    int rc;
    if (!t->out_is_file && (rc = open_stream(srv->loop, &t->out, STDOUT_FILENO, 0)) < 0)
        return rc;
    if (!t->in_is_file && (rc = open_stream(srv->loop, &t->in, STDIN_FILENO, 1)) < 0)
        return rc;
    t->conn = mcp_conn_new(srv, send_line, t);

    uv_timer_init(srv->loop, &t->drain);
    t->drain.data = t;
    uv_signal_init(srv->loop, &t->sigterm);
    uv_signal_init(srv->loop, &t->sigint);
    t->sigterm.data = t->sigint.data = t;
    uv_signal_start(&t->sigterm, on_signal, SIGTERM);
    uv_signal_start(&t->sigint, on_signal, SIGINT);

    if (t->in_is_file) {
        read_file_chunk(t);
    } else {
        t->in.handle.data = t;
        uv_read_start(&t->in.stream, on_alloc, on_stream_read);
    }
    return 0;
}
