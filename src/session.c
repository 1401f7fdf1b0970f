/* session.c - the session registry, evaluation queues, time limits.
 *
 * An evaluation's life: session_eval() encodes its frame and queues it;
 * run_next() sends it when the session is free (starting an image first if
 * there is none); the reply, a death, the time limit or a cancellation ends
 * it through complete(). A timeout or cancellation first interrupts the image
 * (SIGINT: the agent unwinds and keeps every definition); only if the image
 * does not answer within the grace period is it killed. */
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "frame.h"
#include "log.h"
#include "pool.h"

#define EXPIRED_REMEMBERED 32

struct eval_job {
    eval_job_t *next;
    session_t  *session;          /* a job never outlives its session */
    eval_done_fn done;
    eval_output_fn on_output;
    void       *ctx;
    buf_t       frame;
    uint32_t    seq;
    double      timeout;
    double      started_ms;       /* 0 while queued */
    double      kill_at_ms;       /* when an interrupted job's image is killed */
    int         interrupted;      /* SIGINT sent (time limit or cancel) */
    int         timed_out;
    int         cancelled;
    char       *notice;
};

struct registry {
    server_t  *srv;
    session_t *sessions;
    uv_timer_t idle_timer;
    char       expired[EXPIRED_REMEMBERED][SESSION_ID_MAX];
    int        expired_next;
};

static void run_next(session_t *s);
static void on_timer(uv_timer_t *t);

/* ---- completing evaluations ------------------------------------------ */

static void complete(session_t *s, eval_job_t *job, eval_end_t end, json_t *reply,
                     int state_lost, const char *detail)
{
    int ran = job->started_ms > 0;
    eval_result_t r = {
        .end = end,
        .reply = reply,
        .state_lost = state_lost,
        .detail = detail,
        .console = ran ? s->console.data : NULL,
        .console_len = ran ? s->console.len : 0,
        .console_dropped = ran ? s->console_dropped : 0,
        .notice = job->notice,
        .elapsed_ms = ran ? now_ms() - job->started_ms : 0,
        .timeout = job->timeout,
        .session_id = s->id,
    };
    job->done(job->ctx, &r);
    if (ran) {
        buf_clear(&s->console);
        s->console_dropped = 0;
    }
    buf_free(&job->frame);
    free(job->notice);
    free(job);
}

static eval_end_t interrupted_end(const eval_job_t *job)
{
    return job->cancelled ? EVAL_END_CANCELLED : EVAL_END_TIMEOUT;
}

/* End the running job and every queued one, e.g. for a reset or a close. */
static void drop_all(session_t *s, const char *why)
{
    if (s->running) {
        eval_job_t *job = s->running;
        s->running = NULL;
        uv_timer_stop(&s->timer);
        complete(s, job, job->cancelled ? EVAL_END_CANCELLED : EVAL_END_CLOSED, NULL, 1, why);
    }
    while (s->queue_head) {
        eval_job_t *job = s->queue_head;
        s->queue_head = job->next;
        complete(s, job, job->cancelled ? EVAL_END_CANCELLED : EVAL_END_CLOSED, NULL, 0, why);
    }
    s->queue_tail = NULL;
}

/* ---- worker events ---------------------------------------------------- */

static void on_reply(void *ctx, json_t *reply)
{
    session_t *s = ctx;
    eval_job_t *job = s->running;
    json_t *seq = json_object_get(reply, "seq");
    if (job == NULL || !json_is_integer(seq) || json_integer_value(seq) != job->seq) {
        log_debug("session %s: dropping a reply that answers no running evaluation", s->id);
        return;
    }
    json_t *output = json_object_get(reply, "output");
    if (json_is_string(output)) {      /* an interim frame: output as it is written */
        json_t *text = json_object_get(reply, "text");
        if (job->on_output && !job->cancelled && json_is_string(text))
            job->on_output(job->ctx, json_string_value(output), text);
        return;
    }
    const char *package = json_string_value(json_object_get(reply, "package"));
    if (package)
        snprintf(s->package, sizeof s->package, "%s", package);
    s->evaluations++;
    s->last_used_ms = now_ms();
    s->running = NULL;
    uv_timer_stop(&s->timer);

    eval_end_t end = EVAL_END_REPLY;
    if (job->cancelled)
        end = EVAL_END_CANCELLED;
    else if (job->timed_out && json_is_true(json_object_get(reply, "interrupted")))
        end = EVAL_END_TIMEOUT;
    complete(s, job, end, reply, 0, NULL);
    run_next(s);
}

static void on_console(void *ctx, const char *data, size_t len)
{
    session_t *s = ctx;
    size_t cap = s->registry->srv->cfg->max_output_bytes;
    size_t room = s->console.len < cap ? cap - s->console.len : 0;
    size_t keep = len < room ? len : room;
    buf_append(&s->console, data, keep);
    s->console_dropped += len - keep;
}

static void lose_image(session_t *s, const char *why)
{
    worker_close(s->worker);
    s->worker = NULL;
    free(s->lost_reason);
    s->lost_reason = xstrdup(why);
}

static void on_death(void *ctx, const char *why)
{
    session_t *s = ctx;
    char detail[256];
    log_info("session %s: Lisp image (pid %d) %s", s->id, worker_pid(s->worker), why);
    snprintf(detail, sizeof detail, "The session's Lisp image %s.", why);
    lose_image(s, why);
    eval_job_t *job = s->running;
    if (job) {
        s->running = NULL;
        uv_timer_stop(&s->timer);
        complete(s, job, job->interrupted ? interrupted_end(job) : EVAL_END_DIED, NULL, 1, detail);
    }
    run_next(s);
}

static const worker_events_t session_worker_events = {on_reply, on_console, on_death};

/* ---- running ---------------------------------------------------------- */

static int start_worker(session_t *s, const char **err)
{
    static char message[256];
    server_t *srv = s->registry->srv;
    s->worker = srv->pool ? pool_take(srv->pool, &session_worker_events, s) : NULL;
    int rc = s->worker ? 0 : worker_start(srv->loop, srv->cfg, &session_worker_events, s, &s->worker);
    if (rc < 0) {
        s->worker = NULL;
        snprintf(message, sizeof message, "cannot start the Lisp image (%s): %s",
                 srv->cfg->sbcl, uv_strerror(rc));
        log_error("session %s: %s", s->id, message);
        *err = message;
        return -1;
    }
    snprintf(s->package, sizeof s->package, "COMMON-LISP-USER");
    return 0;
}

/* While an interrupted evaluation has not answered, the interrupt is sent
 * again this often: one that lands between two evaluations is ignored. */
#define INTERRUPT_REPEAT_MS 250

static void interrupt_job(session_t *s, eval_job_t *job)
{
    double grace_ms = s->registry->srv->cfg->interrupt_grace * 1000;
    uint64_t every = grace_ms < INTERRUPT_REPEAT_MS ? (uint64_t)grace_ms + 1 : INTERRUPT_REPEAT_MS;
    job->interrupted = 1;
    job->kill_at_ms = now_ms() + grace_ms;
    worker_interrupt(s->worker);
    uv_timer_start(&s->timer, on_timer, every, every);
}

static void on_timer(uv_timer_t *t)
{
    session_t *s = t->data;
    eval_job_t *job = s->running;
    if (!job->interrupted) {
        job->timed_out = 1;
        interrupt_job(s, job);
        return;
    }
    if (now_ms() < job->kill_at_ms) {
        worker_interrupt(s->worker);
        return;
    }
    uv_timer_stop(&s->timer);
    char why[160], detail[256];
    snprintf(why, sizeof why, "was killed: it did not stop within %g s of being interrupted",
             s->registry->srv->cfg->interrupt_grace);
    snprintf(detail, sizeof detail, "The session's Lisp image %s.", why);
    log_info("session %s: %s", s->id, detail);
    lose_image(s, why);
    s->running = NULL;
    complete(s, job, interrupted_end(job), NULL, 1, detail);
    run_next(s);
}

/* Make sure the session has an image for job; a fresh one after a loss
 * carries the notice that earlier state is gone. */
static int ensure_worker(session_t *s, eval_job_t *job, const char **err)
{
    if (s->worker)
        return 0;
    if (start_worker(s, err) < 0)
        return -1;
    if (s->lost_reason) {
        buf_t n;
        buf_init(&n);
        buf_printf(&n, "The previous Lisp image of this session %s; this call ran in a fresh "
                   "image and earlier definitions are gone.", s->lost_reason);
        job->notice = n.data;
        free(s->lost_reason);
        s->lost_reason = NULL;
    }
    return 0;
}

static void run_next(session_t *s)
{
    while (s->running == NULL && s->queue_head) {
        eval_job_t *job = s->queue_head;
        s->queue_head = job->next;
        if (s->queue_head == NULL)
            s->queue_tail = NULL;
        const char *err;
        if (ensure_worker(s, job, &err) < 0) {
            complete(s, job, EVAL_END_START_FAILED, NULL, 0, err);
            continue;
        }
        job->started_ms = now_ms();
        s->last_used_ms = job->started_ms;
        s->running = job;
        worker_send(s->worker, job->frame.data, job->frame.len);
        if (job->timeout > 0)
            uv_timer_start(&s->timer, on_timer, (uint64_t)(job->timeout * 1000), 0);
    }
}

eval_job_t *session_eval(session_t *s, const eval_request_t *req, eval_done_fn done,
                         void *ctx, const char **err)
{
    const config_t *cfg = s->registry->srv->cfg;
    eval_job_t *job = xcalloc(1, sizeof *job);
    job->session = s;
    job->done = done;
    job->on_output = req->on_output;
    job->ctx = ctx;
    job->seq = ++s->next_seq;
    job->timeout = req->timeout;
    buf_init(&job->frame);
    frame_eval_t f = {
        .seq = job->seq,
        .flags = (uint8_t)((req->timing ? FRAME_FLAG_TIMING : 0) |
                           (req->on_output ? FRAME_FLAG_STREAM : 0)),
        .output_cap = (uint32_t)cfg->max_output_bytes,
        .value_cap = (uint32_t)cfg->max_output_bytes,
        .package = req->package,
        .package_len = req->package_len,
        .code = req->code,
        .code_len = req->code_len,
    };
    if (frame_encode_eval(&job->frame, &f) < 0) {
        *err = "the code is too large for one evaluation";
        buf_free(&job->frame);
        free(job);
        return NULL;
    }
    /* An idle session starts its image now, so that a failure is reported to
     * the caller here and the callback never runs before this returns. */
    if (s->running == NULL && ensure_worker(s, job, err) < 0) {
        buf_free(&job->frame);
        free(job->notice);
        free(job);
        return NULL;
    }
    if (s->queue_tail)
        s->queue_tail->next = job;
    else
        s->queue_head = job;
    s->queue_tail = job;
    run_next(s);
    return job;
}

void eval_job_cancel(eval_job_t *job)
{
    session_t *s = job->session;
    job->cancelled = 1;
    if (job == s->running) {
        if (!job->interrupted)
            interrupt_job(s, job);
        return;
    }
    eval_job_t **p = &s->queue_head, *prev = NULL;
    while (*p && *p != job)
        prev = *p, p = &(*p)->next;
    if (*p == NULL)
        return;
    *p = job->next;
    if (s->queue_tail == job)
        s->queue_tail = prev;
    complete(s, job, EVAL_END_CANCELLED, NULL, 0, "cancelled before it ran");
}

int session_alive(const session_t *s)
{
    return s->worker != NULL;
}

/* ---- the registry ----------------------------------------------------- */

static void on_idle_sweep(uv_timer_t *t);

registry_t *registry_new(server_t *srv)
{
    registry_t *reg = xcalloc(1, sizeof *reg);
    reg->srv = srv;
    uv_timer_init(srv->loop, &reg->idle_timer);
    reg->idle_timer.data = reg;
    double idle = srv->cfg->idle_timeout;
    if (idle > 0) {
        uint64_t every = (uint64_t)(idle * 1000 / 4);
        every = every < 100 ? 100 : every > 5000 ? 5000 : every;
        uv_timer_start(&reg->idle_timer, on_idle_sweep, every, every);
    }
    return reg;
}

static void free_registry(uv_handle_t *h)
{
    free(h->data);
}

void registry_free(registry_t *reg)
{
    while (reg->sessions)
        registry_close(reg, reg->sessions);
    uv_close((uv_handle_t *)&reg->idle_timer, free_registry);
}

session_t *registry_first(registry_t *reg)
{
    return reg->sessions;
}

const config_t *registry_config(registry_t *reg)
{
    return reg->srv->cfg;
}

session_t *registry_find(registry_t *reg, const char *id)
{
    for (session_t *s = reg->sessions; s; s = s->next)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

int registry_expired(registry_t *reg, const char *id)
{
    for (int i = 0; i < EXPIRED_REMEMBERED; i++)
        if (reg->expired[i][0] && strcmp(reg->expired[i], id) == 0)
            return 1;
    return 0;
}

static void free_session(uv_handle_t *h)
{
    session_t *s = h->data;
    buf_free(&s->console);
    free(s->name);
    free(s->lost_reason);
    free(s);
}

static session_t *new_session(registry_t *reg, const char *id, const char *name, const char **err)
{
    static char message[200];
    const config_t *cfg = reg->srv->cfg;
    if (reg->srv->live_sessions >= cfg->max_sessions) {
        snprintf(message, sizeof message,
                 "the server's limit of %d live sessions (--max-sessions) is reached; "
                 "close a session first", cfg->max_sessions);
        *err = message;
        return NULL;
    }
    session_t *s = xcalloc(1, sizeof *s);
    s->registry = reg;
    snprintf(s->id, sizeof s->id, "%s", id);
    s->name = name ? xstrdup(name) : NULL;
    buf_init(&s->console);
    uv_timer_init(reg->srv->loop, &s->timer);
    s->timer.data = s;
    if (start_worker(s, err) < 0) {
        uv_close((uv_handle_t *)&s->timer, free_session);
        return NULL;
    }
    s->last_used_ms = now_ms();
    s->next = reg->sessions;
    reg->sessions = s;
    reg->srv->live_sessions++;
    return s;
}

session_t *registry_default(registry_t *reg, const char **err)
{
    session_t *s = registry_find(reg, SESSION_DEFAULT_ID);
    return s ? s : new_session(reg, SESSION_DEFAULT_ID, NULL, err);
}

session_t *registry_create(registry_t *reg, const char *name, const char **err)
{
    unsigned char raw[8];
    char id[SESSION_ID_MAX];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
        *err = "the kernel's random source failed";
        return NULL;
    }
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(id + 2 * i, 3, "%02x", raw[i]);
    return new_session(reg, id, name, err);
}

void registry_close(registry_t *reg, session_t *s)
{
    drop_all(s, "The session was closed (by close-session, or because the server shut down) "
                "before this evaluation finished.");
    if (s->worker)
        worker_close(s->worker);
    s->worker = NULL;
    session_t **p = &reg->sessions;
    while (*p != s)
        p = &(*p)->next;
    *p = s->next;
    reg->srv->live_sessions--;
    uv_close((uv_handle_t *)&s->timer, free_session);
}

int session_reset(session_t *s, const char **err)
{
    drop_all(s, "The session was reset before this evaluation finished.");
    if (s->worker)
        worker_close(s->worker);
    s->worker = NULL;
    free(s->lost_reason);
    s->lost_reason = NULL;
    s->evaluations = 0;
    s->last_used_ms = now_ms();
    buf_clear(&s->console);
    s->console_dropped = 0;
    return start_worker(s, err);
}

static void on_idle_sweep(uv_timer_t *t)
{
    registry_t *reg = t->data;
    double limit_ms = reg->srv->cfg->idle_timeout * 1000, now = now_ms();
    session_t *s = reg->sessions;
    while (s) {
        session_t *next = s->next;
        if (!s->running && !s->queue_head && now - s->last_used_ms >= limit_ms) {
            log_info("session %s: closed after %.0f s idle", s->id, (now - s->last_used_ms) / 1e3);
            snprintf(reg->expired[reg->expired_next], SESSION_ID_MAX, "%s", s->id);
            reg->expired_next = (reg->expired_next + 1) % EXPIRED_REMEMBERED;
            registry_close(reg, s);
        }
        s = next;
    }
}
