/* session.h - Lisp sessions and the registry of one MCP connection.
 *
 * A session is one live Lisp image (a worker) plus what the server knows of
 * it: its id and name, its current package, its queue of evaluations. A
 * session runs one evaluation at a time, in order; sessions run in parallel.
 * When a worker dies the session stays: the next evaluation starts a fresh
 * image and is told, once, that the earlier state was lost.
 *
 * Every evaluation handed to session_eval() completes exactly once through its
 * callback, whatever happens (a reply, a timeout, a death, a reset, a close).
 */
#ifndef LISPMCP_SESSION_H
#define LISPMCP_SESSION_H

#include <jansson.h>
#include <stddef.h>
#include <uv.h>

#include "server.h"
#include "util.h"
#include "worker.h"

#define SESSION_ID_MAX 40
#define SESSION_DEFAULT_ID "default"

typedef enum eval_end {
    EVAL_END_REPLY,        /* the image answered (possibly with a Lisp error) */
    EVAL_END_TIMEOUT,      /* interrupted at the time limit */
    EVAL_END_CANCELLED,    /* interrupted by the client */
    EVAL_END_DIED,         /* the image died while evaluating */
    EVAL_END_CLOSED,       /* the session was reset or closed first */
    EVAL_END_START_FAILED  /* no image could be started */
} eval_end_t;

/* Output of a running evaluation, as it is written (stream: "stdout" or
 * "stderr"); text is borrowed. */
typedef void (*eval_output_fn)(void *ctx, const char *stream, json_t *text);

typedef struct eval_request {
    eval_output_fn on_output;  /* NULL: output comes only with the result */
    const char *code;
    size_t      code_len;
    const char *package;     /* NULL: the session's current package */
    size_t      package_len;
    int         timing;      /* measure inside the image */
    double      timeout;     /* seconds; 0 = none */
} eval_request_t;

typedef struct eval_result {
    eval_end_t  end;
    json_t     *reply;          /* the image's reply, or NULL; borrowed */
    int         state_lost;     /* the image is gone with every definition */
    const char *detail;         /* why, when there is no reply */
    const char *console;        /* what the image wrote to fd 1/2 */
    size_t      console_len;
    size_t      console_dropped;
    const char *notice;         /* set when a fresh image replaced a lost one */
    double      elapsed_ms;     /* server-side, from send to completion */
    double      timeout;        /* the limit that applied, seconds */
    const char *session_id;
} eval_result_t;

typedef void (*eval_done_fn)(void *ctx, const eval_result_t *result);

typedef struct eval_job eval_job_t;
typedef struct registry registry_t;

typedef struct session {
    registry_t      *registry;
    struct session  *next;
    char             id[SESSION_ID_MAX];
    char            *name;
    worker_t        *worker;          /* NULL until started, and after a death */
    char            *lost_reason;     /* set after a death, until the next start */
    char             package[256];    /* current package, as last reported */
    unsigned long    evaluations;
    double           last_used_ms;
    uint32_t         next_seq;
    eval_job_t      *running;
    eval_job_t      *queue_head, *queue_tail;
    uv_timer_t       timer;           /* the running job's limit, then its grace */
    buf_t            console;
    size_t           console_dropped;
} session_t;

registry_t *registry_new(server_t *srv);
/* Close every session; pending evaluations complete with EVAL_END_CLOSED. */
void registry_free(registry_t *reg);

session_t *registry_find(registry_t *reg, const char *id);
/* The connection's default session, made on first use. NULL and *err when
 * it cannot be made. */
session_t *registry_default(registry_t *reg, const char **err);
session_t *registry_create(registry_t *reg, const char *name, const char **err);
void registry_close(registry_t *reg, session_t *s);
session_t *registry_first(registry_t *reg);
const config_t *registry_config(registry_t *reg);
/* Was this id closed for being idle (--idle-timeout)? */
int registry_expired(registry_t *reg, const char *id);

/* A fresh image; every definition and pending evaluation is dropped. */
int session_reset(session_t *s, const char **err);

/* Queue an evaluation. NULL and *err when the image cannot be started. */
eval_job_t *session_eval(session_t *s, const eval_request_t *req, eval_done_fn done,
                         void *ctx, const char **err);
/* Stop an evaluation for the client: queued ones never run, a running one is
 * interrupted. Its callback still runs, with EVAL_END_CANCELLED. */
void eval_job_cancel(eval_job_t *job);

int session_alive(const session_t *s);

#endif
