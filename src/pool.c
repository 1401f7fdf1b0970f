/* pool.c - workers started ahead of need, handed out by pool_take(). */
#include "pool.h"

#include <stdlib.h>

#include "log.h"
#include "util.h"

typedef struct pool_slot {
    struct pool *pool;
    worker_t    *worker;   /* NULL: empty */
} pool_slot_t;

struct pool {
    server_t   *srv;
    pool_slot_t slots[POOL_MAX];
    int         size;
    int         failing;   /* the last start failed: wait for the next take */
    uv_timer_t  refill;
};

static void on_reply(void *ctx, json_t *reply)
{
    (void)ctx;
    (void)reply;   /* nothing was asked of a pooled image */
}

static void on_console(void *ctx, const char *data, size_t len)
{
    (void)ctx;
    (void)data;
    (void)len;     /* no session to show it to */
}

static void schedule_refill(pool_t *p);

static void on_death(void *ctx, const char *why)
{
    pool_slot_t *slot = ctx;
    log_info("a pooled Lisp image %s", why);
    worker_close(slot->worker);
    slot->worker = NULL;
    schedule_refill(slot->pool);
}

static void on_refill(uv_timer_t *t);
static const worker_events_t pool_events = {on_reply, on_console, on_death};

/* Refill on the next turn of the loop: never on the path of a request. */
static void schedule_refill(pool_t *p)
{
    uv_timer_start(&p->refill, on_refill, 0, 0);
}

static void on_refill(uv_timer_t *t)
{
    pool_t *p = t->data;
    for (int i = 0; i < p->size && !p->failing; i++) {
        pool_slot_t *slot = &p->slots[i];
        if (slot->worker)
            continue;
        int rc = worker_start(p->srv->loop, p->srv->cfg, &pool_events, slot, &slot->worker);
        if (rc < 0) {
            log_warn("cannot start a Lisp image for the pool: %s", uv_strerror(rc));
            slot->worker = NULL;
            p->failing = 1;
        }
    }
}

pool_t *pool_new(server_t *srv)
{
    if (srv->cfg->pool_size <= 0)
        return NULL;
    pool_t *p = xcalloc(1, sizeof *p);
    p->srv = srv;
    p->size = srv->cfg->pool_size < POOL_MAX ? srv->cfg->pool_size : POOL_MAX;
    for (int i = 0; i < p->size; i++)
        p->slots[i].pool = p;
    uv_timer_init(srv->loop, &p->refill);
    p->refill.data = p;
    schedule_refill(p);
    return p;
}

worker_t *pool_take(pool_t *p, const worker_events_t *events, void *ctx)
{
    p->failing = 0;
    for (int i = 0; i < p->size; i++) {
        worker_t *w = p->slots[i].worker;
        if (w == NULL)
            continue;
        p->slots[i].worker = NULL;
        worker_adopt(w, events, ctx);
        schedule_refill(p);
        return w;
    }
    schedule_refill(p);
    return NULL;
}

static void free_pool(uv_handle_t *h)
{
    free(h->data);
}

void pool_free(pool_t *p)
{
    if (p == NULL)
        return;
    for (int i = 0; i < p->size; i++)
        if (p->slots[i].worker)
            worker_close(p->slots[i].worker);
    uv_close((uv_handle_t *)&p->refill, free_pool);
}
