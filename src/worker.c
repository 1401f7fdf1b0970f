/* worker.c - start, feed, interrupt and reap SBCL worker processes.
 *
 * The child gets /dev/null as stdin, one pipe on both fd 1 and fd 2, its
 * console (drained here with uv_poll, and once more before each reply so
 * that the reply carries everything written to the console before it; one
 * pipe for both keeps that to one read), and its channel to the server: a
 * pipe of requests as fd 3 and a pipe of replies as fd 4 (pipes: a round
 * trip through a socketpair costs the kernel twice as much). sandbox.c
 * starts it walled off (its own PID namespace where the kernel allows it, its
 * own process group always), so closing a worker kills whatever the user's
 * code started too. Children are reaped here, on SIGCHLD.
 *
 * Death is declared once the process has exited and its replies have been
 * read to the end (or a short while after the exit, should some grandchild
 * keep the pipe open), so a reply sent just before an exit is never lost. */
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sys/wait.h>

#include "frame.h"
#include "log.h"
#include "sandbox.h"

#define WORKER_REPLY_MAX   (256u << 20)  /* the agent caps what it prints */
#define WORKER_EXIT_LINGER 100           /* ms to wait for the replies after an exit */
#define CONSOLE_CHUNK      65536

typedef struct console_pipe {
    uv_poll_t handle;
    int       fd;
    int       open;
} console_pipe_t;

struct worker {
    uv_loop_t             *loop;
    const worker_events_t *events;
    void                  *ctx;
    pid_t                  pid;
    struct worker         *next_unreaped;
    uv_pipe_t              requests;     /* to the worker's fd 3 */
    uv_pipe_t              replies;      /* from its fd 4 */
    uv_timer_t             linger;
    console_pipe_t         console;
    buf_t                  in;           /* bytes of replies not yet framed */
    int                    handles;      /* open libuv handles; freed at zero */
    int                    greeted;      /* the hello frame has arrived */
    int                    exited;
    int                    channel_done; /* EOF or error on either pipe */
    int                    dead;         /* on_death has been called */
    int                    closing;      /* worker_close was called */
    char                   why[96];
};

typedef struct write_req {
    uv_write_t req;
    char       data[];
} write_req_t;

/* Every worker whose process has not been reaped yet, and the SIGCHLD
 * watcher that exists while there is any. */
static worker_t   *unreaped;
static uv_signal_t *sigchld;

static void on_process_exit(worker_t *w, int status);

static void free_signal_handle(uv_handle_t *h)
{
    free(h);
}

static void on_sigchld(uv_signal_t *h, int signum)
{
    (void)h;
    (void)signum;
    int status;
    pid_t pid;
    /* The server has no children but its workers. */
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        worker_t **p = &unreaped;
        while (*p && (*p)->pid != pid)
            p = &(*p)->next_unreaped;
        if (*p == NULL)
            continue;
        worker_t *w = *p;
        *p = w->next_unreaped;
        on_process_exit(w, status);
    }
    if (unreaped == NULL && sigchld) {
        uv_close((uv_handle_t *)sigchld, free_signal_handle);
        sigchld = NULL;
    }
}

static void watch_children(uv_loop_t *loop)
{
    if (sigchld)
        return;
    sigchld = xmalloc(sizeof *sigchld);
    uv_signal_init(loop, sigchld);
    /* Referenced: a dying worker's own handles go quiet before it is reaped,
     * and the loop must not end until it has been. */
    uv_signal_start(sigchld, on_sigchld, SIGCHLD);
}

static void on_handle_closed(uv_handle_t *h)
{
    worker_t *w = h->data;
    if (--w->handles == 0) {
        buf_free(&w->in);
        free(w);
    }
}

static void close_handle(worker_t *w, uv_handle_t *h)
{
    if (!uv_is_closing(h)) {
        h->data = w;
        uv_close(h, on_handle_closed);
    }
}

static void drain_console(worker_t *w, console_pipe_t *c)
{
    char chunk[CONSOLE_CHUNK];
    /* Bounded per call so a flooding child cannot starve the loop. */
    for (int rounds = 0; c->open && rounds < 16; rounds++) {
        ssize_t n = read(c->fd, chunk, sizeof chunk);
        if (n > 0) {
            if (!w->closing)
                w->events->on_console(w->ctx, chunk, (size_t)n);
            continue;
        }
        if (n < 0 && (errno == EINTR))
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        uv_poll_stop(&c->handle);   /* EOF or a real error: stop watching */
        c->open = 0;
    }
}

static void on_console_readable(uv_poll_t *h, int status, int events)
{
    (void)status;
    (void)events;
    worker_t *w = h->data;
    drain_console(w, &w->console);
}

static void declare_death(worker_t *w)
{
    if (w->dead || w->closing)
        return;
    w->dead = 1;
    uv_timer_stop(&w->linger);
    drain_console(w, &w->console);
    w->events->on_death(w->ctx, w->why);
}

static void kill_group(worker_t *w)
{
    /* The worker leads its own process group (and, where the kernel allows
     * it, a PID namespace whose processes all die with it). */
    kill(-w->pid, SIGKILL);
}

static void close_all(worker_t *w)
{
    close_handle(w, (uv_handle_t *)&w->requests);
    close_handle(w, (uv_handle_t *)&w->replies);
    close_handle(w, (uv_handle_t *)&w->linger);
    close_handle(w, (uv_handle_t *)&w->console.handle);
    close(w->console.fd);
}

static void on_linger_timeout(uv_timer_t *t)
{
    declare_death(t->data);
}

static void on_process_exit(worker_t *w, int status)
{
    w->exited = 1;
    kill_group(w);   /* whatever the user's code left running goes too */
    if (WIFSIGNALED(status))
        snprintf(w->why, sizeof w->why, "was killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(w->why, sizeof w->why, "exited with status %d", WEXITSTATUS(status));
    log_debug("worker %d %s", w->pid, w->why);
    if (w->closing) {
        close_all(w);
        return;
    }
    if (w->channel_done)
        declare_death(w);
    else
        uv_timer_start(&w->linger, on_linger_timeout, WORKER_EXIT_LINGER, 0);
}

/* The channel is finished: whatever the process is doing, it is of no more use. */
static void channel_finished(worker_t *w, const char *why)
{
    if (w->channel_done)
        return;
    w->channel_done = 1;
    uv_read_stop((uv_stream_t *)&w->replies);
    if (!w->exited) {
        log_debug("worker %d: %s; killing it", w->pid, why);
        kill_group(w);
    } else {
        /* Deferred, so no caller ever sees on_death from inside its own call. */
        uv_timer_start(&w->linger, on_linger_timeout, 0, 0);
    }
}

static void handle_frame(worker_t *w, const char *payload, size_t len)
{
    json_t *msg = frame_decode_reply(payload, len);
    if (msg == NULL) {
        channel_finished(w, "unreadable reply frame");
        return;
    }
    if (!w->greeted) {
        w->greeted = 1;
        if (json_object_get(msg, "hello")) {
            json_decref(msg);
            return;
        }
    }
    drain_console(w, &w->console);
    if (!w->closing)
        w->events->on_reply(w->ctx, msg);
    json_decref(msg);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *out)
{
    (void)suggested;
    worker_t *w = h->data;
    buf_reserve(&w->in, CONSOLE_CHUNK);
    out->base = w->in.data + w->in.len;
    out->len = w->in.cap - w->in.len - 1;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    (void)b;
    worker_t *w = s->data;
    if (nread < 0) {
        channel_finished(w, uv_strerror((int)nread));
        return;
    }
    w->in.len += (size_t)nread;
    size_t used = 0, len;
    while (!w->channel_done && !w->closing) {
        frame_status_t st = frame_peek(w->in.data + used, w->in.len - used, WORKER_REPLY_MAX, &len);
        if (st == FRAME_INCOMPLETE)
            break;
        if (st == FRAME_OVERSIZE) {
            channel_finished(w, "oversized reply frame");
            break;
        }
        handle_frame(w, w->in.data + used + FRAME_HEADER_SIZE, len);
        used += FRAME_HEADER_SIZE + len;
    }
    buf_consume(&w->in, used);
}

/* fds: the console, the requests and the replies, each [read end, write end]. */
static int make_fds(int fds[3][2])
{
    memset(fds, -1, sizeof(int[3][2]));
    for (int i = 0; i < 3; i++)
        if (pipe2(fds[i], O_CLOEXEC) < 0)
            return -errno;
    if (fcntl(fds[0][0], F_SETFL, O_NONBLOCK) < 0)
        return -errno;
    return 0;
}

static void close_fds(int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

int worker_start(uv_loop_t *loop, const config_t *cfg, const worker_events_t *events,
                 void *ctx, worker_t **out)
{
    int fds[3][2];
    int rc = make_fds(fds);
    int *console = fds[0], *requests = fds[1], *replies = fds[2];
    if (rc < 0) {
        close_fds(&fds[0][0], 6);
        return rc;
    }

    char memory[16];
    snprintf(memory, sizeof memory, "%d", cfg->session_memory_mb);
    char *args[] = {cfg->sbcl, "--core", cfg->core, "--dynamic-space-size", memory,
                    "--noinform", "--disable-ldb", "--end-runtime-options", NULL};
    sandbox_spec_t spec = {
        .file = cfg->sbcl,
        .argv = args,
        .fds = {console[1], console[1], requests[0], replies[1]},
        .max_open_files = 1024,
    };
    sandbox_level_t level;
    pid_t pid = sandbox_spawn(&spec, &level);
    close(console[1]), close(requests[0]), close(replies[1]);
    if (pid < 0) {
        close(console[0]), close(requests[1]), close(replies[0]);
        return uv_translate_sys_error(-pid);
    }

    worker_t *w = xcalloc(1, sizeof *w);
    w->loop = loop;
    w->events = events;
    w->ctx = ctx;
    w->pid = pid;
    buf_init(&w->in);
    watch_children(loop);
    w->next_unreaped = unreaped;
    unreaped = w;

    w->handles = 4;
    uv_pipe_init(loop, &w->requests, 0);
    uv_pipe_open(&w->requests, requests[1]);
    w->requests.data = w;
    uv_pipe_init(loop, &w->replies, 0);
    uv_pipe_open(&w->replies, replies[0]);
    w->replies.data = w;
    uv_timer_init(loop, &w->linger);
    w->linger.data = w;
    w->console.fd = console[0];
    w->console.open = 1;
    uv_poll_init(loop, &w->console.handle, console[0]);
    w->console.handle.data = w;
    uv_poll_start(&w->console.handle, UV_READABLE | UV_DISCONNECT, on_console_readable);
    uv_read_start((uv_stream_t *)&w->replies, on_alloc, on_read);
    log_debug("worker %d started (%s)", pid,
              level == SANDBOX_NAMESPACES ? "own PID namespace" : "own process group");
    *out = w;
    return 0;
}

static void on_written(uv_write_t *req, int status)
{
    if (status < 0)
        log_debug("write to worker failed: %s", uv_strerror(status));
    free(req);
}

void worker_send(worker_t *w, const char *frame, size_t len)
{
    if (w->channel_done || w->closing)
        return;   /* its death is already on the way */
    /* Almost every frame fits in the pipe at once: no copy, and no write
     * request for libuv to track (which also costs an epoll_ctl). */
    uv_buf_t b = uv_buf_init((char *)frame, (unsigned)len);
    int n = uv_try_write((uv_stream_t *)&w->requests, &b, 1);
    if (n < 0 && n != UV_EAGAIN) {
        channel_finished(w, uv_strerror(n));
        return;
    }
    size_t done = n > 0 ? (size_t)n : 0;
    if (done == len)
        return;
    write_req_t *req = xmalloc(sizeof *req + len - done);
    memcpy(req->data, frame + done, len - done);
    b = uv_buf_init(req->data, (unsigned)(len - done));
    int rc = uv_write(&req->req, (uv_stream_t *)&w->requests, &b, 1, on_written);
    if (rc < 0) {
        free(req);
        channel_finished(w, uv_strerror(rc));
    }
}

void worker_adopt(worker_t *w, const worker_events_t *events, void *ctx)
{
    w->events = events;
    w->ctx = ctx;
}

void worker_interrupt(worker_t *w)
{
    /* To the main thread, which evaluates, even when user threads exist. */
    if (!w->exited)
        syscall(SYS_tgkill, w->pid, w->pid, SIGINT);
}

void worker_close(worker_t *w)
{
    if (w->closing)
        return;
    w->closing = 1;
    if (w->exited) {
        close_all(w);
    } else {
        kill_group(w);
    }
    /* else on_process_exit closes everything once the process has been reaped */
}

pid_t worker_pid(const worker_t *w)
{
    return w->pid;
}
