/* pool.h - a few Lisp images started ahead of need.
 *
 * A new session, a reset and the replacement of a dead image take a worker
 * from the pool instead of waiting for SBCL to start; the pool refills on
 * the next turn of the loop, off the request's path. The pool is shared by
 * every connection. A pooled image has never run user code. */
#ifndef LISPMCP_POOL_H
#define LISPMCP_POOL_H

#include "server.h"
#include "worker.h"

#define POOL_MAX 64

typedef struct pool pool_t;

/* A pool of cfg->pool_size workers (none when it is 0: then NULL). */
pool_t *pool_new(server_t *srv);

/* A started worker, now reporting to events/ctx; NULL when none is ready. */
worker_t *pool_take(pool_t *pool, const worker_events_t *events, void *ctx);

/* Kill the pooled workers; the pool is freed once its timer has closed. */
void pool_free(pool_t *pool);

#endif
