/* worker.h - one SBCL process running the Lisp agent (lisp/agent.lisp).
 *
 * A worker owns the child process, the pipes its frames travel on (fd 3 and
 * 4 in the child) and the pipe of the child's own fd 1 and 2 (its console). It
 * reports three things to its owner: a reply, console bytes, and its death.
 * It never blocks: everything is driven by the event loop. */
#ifndef LISPMCP_WORKER_H
#define LISPMCP_WORKER_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>
#include <uv.h>

#include "config.h"
#include "util.h"

typedef struct worker worker_t;

typedef struct worker_events {
    /* One reply frame, parsed. Console bytes written before the reply was
     * sent have been delivered first. reply is borrowed. */
    void (*on_reply)(void *ctx, json_t *reply);
    /* Bytes the child wrote to its fd 1 or 2. */
    void (*on_console)(void *ctx, const char *data, size_t len);
    /* The process is gone (why: "exited with status 1", ...). The owner
     * must still call worker_close(). */
    void (*on_death)(void *ctx, const char *why);
} worker_events_t;

/* Start a worker. Returns 0, or a negative uv error code. */
int worker_start(uv_loop_t *loop, const config_t *cfg, const worker_events_t *events,
                 void *ctx, worker_t **out);

/* From now on report to events/ctx (a pooled worker joining a session). */
void worker_adopt(worker_t *w, const worker_events_t *events, void *ctx);

/* Queue one frame (the bytes are copied). If the worker cannot take it, its
 * death is reported through on_death, never here. */
void worker_send(worker_t *w, const char *frame, size_t len);

/* Ask the running evaluation to stop (SIGINT; the agent unwinds and replies). */
void worker_interrupt(worker_t *w);

/* Kill the process and everything it started; no callback is made after
 * this. The memory is released once the process has been reaped. */
void worker_close(worker_t *w);

pid_t worker_pid(const worker_t *w);

#endif
