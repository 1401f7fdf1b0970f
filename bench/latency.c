/* latency.c - bench sections 1-3: cold start, round trips beside the floor
 * and what each process spends on one, create-session with and without the
 * warm pool. */
#include "bench.h"

#include <stdlib.h>
#include <unistd.h>

#define ROUND_TRIPS 5000
#define WARM_UP     300
#define COLD_RUNS   10
#define CREATES     50

/* Round trips of one evaluation; minus_image: less the in-image time. */
static stats_t round_trips(peer_t *p, const char *tool, const char *code, int n, int minus_image)
{
    double *t = malloc(sizeof *t * (size_t)n);
    if (t == NULL)
        die("malloc");
    for (int i = 0; i < WARM_UP; i++)
        json_decref(peer_eval(p, tool, code, NULL));
    for (int i = 0; i < n; i++) {
        double t0 = now_ms();
        json_t *r = peer_eval(p, tool, code, NULL);
        t[i] = now_ms() - t0;
        if (minus_image)
            t[i] -= in_image_ms(r);
        json_decref(r);
    }
    stats_t s = percentiles(t, n);
    free(t);
    return s;
}

static double progn_timed(peer_t *p, int n)
{
    double t[500];
    for (int i = 0; i < n; i++) {
        json_t *r = peer_eval(p, "time-execution", "(progn)", NULL);
        t[i] = in_image_ms(r);
        json_decref(r);
    }
    return percentile(t, n, 50);
}

static void cold_start(const bench_cfg_t *cfg, json_t *out)
{
    double init[COLD_RUNS], first[COLD_RUNS];
    for (int i = 0; i < COLD_RUNS; i++) {
        char *argv[] = {cfg->server, "--log-level", "off", NULL};
        double t0 = now_ms();
        peer_t p = peer_start(argv);
        peer_initialize(&p);
        init[i] = now_ms() - t0;
        json_decref(peer_eval(&p, "evaluate-lisp", "(+ 1 2)", NULL));
        first[i] = now_ms() - t0;
        peer_stop(&p);
    }
    row(out, "cold-initialize", "process start -> initialize answered (median of 10)",
        percentile(init, COLD_RUNS, 50), "ms", 0, 0);
    row(out, "cold-first-result", "process start -> first (+ 1 2) result (median of 10)",
        percentile(first, COLD_RUNS, 50), "ms", 10, 0);
}

static stats_t create_and_first(const bench_cfg_t *cfg, const char *pool)
{
    char *argv[] = {cfg->server, "--log-level", "off", "--pool-size", (char *)pool,
                    "--max-sessions", "200", NULL};
    peer_t p = peer_start(argv);
    peer_initialize(&p);
    usleep(300000);   /* let the pool fill, as it would between a user's requests */
    double t[CREATES];
    for (int i = 0; i < CREATES; i++) {
        double t0 = now_ms();
        char *id = peer_create_session(&p);
        json_decref(peer_eval(&p, "evaluate-lisp", "(+ 1 2)", id));
        t[i] = now_ms() - t0;
        free(id);
        usleep(20000);
    }
    peer_stop(&p);
    return percentiles(t, CREATES);
}

/* CPU time the server and its worker spend per round trip (schedstat). */
static void cpu_per_call(peer_t *p, int n, json_t *out)
{
    pid_t worker;
    if (children(p->pid, &worker, 1) != 1)
        return;
    long long s0 = cpu_ns(p->pid), w0 = cpu_ns(worker);
    for (int i = 0; i < n; i++)
        json_decref(peer_eval(p, "evaluate-lisp", "(+ 1 2 3)", NULL));
    row(out, "server-cpu-per-call", "server CPU per (+ 1 2 3) call, user + kernel",
        (double)(cpu_ns(p->pid) - s0) / n / 1e6, "ms", 0, 0);
    row(out, "worker-cpu-per-call", "worker CPU per (+ 1 2 3) call, user + kernel",
        (double)(cpu_ns(worker) - w0) / n / 1e6, "ms", 0, 0);
}

static void histogram(json_t *out, const char *key, peer_t *p, int n)
{
    json_t *all = json_array();
    for (int i = 0; i < n; i++) {
        double t0 = now_ms();
        json_decref(peer_eval(p, "evaluate-lisp", "(+ 1 2 3)", NULL));
        json_array_append_new(all, json_real(now_ms() - t0));
    }
    json_object_set_new(out, key, all);
}

void bench_latency(const bench_cfg_t *cfg, json_t *out)
{
    int n = cfg->quick ? 500 : ROUND_TRIPS;
    char *floor_argv[] = {cfg->floor, NULL};
    peer_t fl = peer_start(floor_argv);
    stats_t floor = round_trips(&fl, "evaluate-lisp", "(+ 1 2 3)", n, 0);
    histogram(out, "floor-samples", &fl, n);
    peer_stop(&fl);

    char *server_argv[] = {cfg->server, "--log-level", "off", "--pool-size", "0", NULL};
    peer_t sv = peer_start(server_argv);
    peer_initialize(&sv);
    stats_t nil = round_trips(&sv, "evaluate-lisp", "nil", n, 0);
    stats_t add = round_trips(&sv, "evaluate-lisp", "(+ 1 2 3)", n, 0);
    stats_t share = round_trips(&sv, "time-execution", "(+ 1 2 3)", n, 1);
    double progn = progn_timed(&sv, 500);
    histogram(out, "add-samples", &sv, n);

    printf("\n1-3. Latency over stdio; %d round trips after %d warm-up each\n", n, WARM_UP);
    row(out, "floor-p50", "floor: canned answer round trip, p50", floor.p50, "ms", 0, 0);
    row(out, "floor-p99", "floor: canned answer round trip, p99", floor.p99, "ms", 0, 0);
    row(out, "nil-p50", "round trip of nil, p50", nil.p50, "ms", 0, 0);
    row(out, "nil-p90", "round trip of nil, p90", nil.p90, "ms", 0, 0);
    row(out, "nil-p99", "round trip of nil, p99", nil.p99, "ms", 0, 0);
    row(out, "add-p50", "round trip of (+ 1 2 3), p50", add.p50, "ms", 0, 0);
    row(out, "add-p90", "round trip of (+ 1 2 3), p90", add.p90, "ms", 0, 0);
    row(out, "add-p99", "round trip of (+ 1 2 3), p99", add.p99, "ms", 0, 0);
    row(out, "nil-above-floor-p50", "round trip of nil above the floor, p50",
        nil.p50 - floor.p50, "ms", 0, 0);
    row(out, "add-above-floor-p50", "round trip of (+ 1 2 3) above the floor, p50",
        add.p50 - floor.p50, "ms", 0.012, 0);
    row(out, "add-above-floor-p99", "round trip of (+ 1 2 3) above the floor, p99",
        add.p99 - floor.p99, "ms", 0, 0);
    row(out, "share-p50", "round trip minus in-image time, p50", share.p50, "ms", 0, 0);
    /* The floor's canned answer says 0 ms in the image. */
    row(out, "share-above-floor-p50", "round trip minus in-image time, above the floor, p50",
        share.p50 - floor.p50, "ms", 0.005, 0);
    cpu_per_call(&sv, n, out);
    row(out, "progn-timed-p50", "(progn) timed by time-execution, p50", progn, "ms", 0.02, 0);
    peer_stop(&sv);

    cold_start(cfg, out);
    stats_t pooled = create_and_first(cfg, "2");
    stats_t unpooled = create_and_first(cfg, "0");
    row(out, "create-first-pool-p50", "create-session + first result, pool of 2, p50",
        pooled.p50, "ms", 2, 0);
    row(out, "create-first-pool-p99", "create-session + first result, pool of 2, p99",
        pooled.p99, "ms", 0, 0);
    row(out, "create-first-nopool-p50", "create-session + first result, no pool, p50",
        unpooled.p50, "ms", 0, 0);
    row(out, "create-first-nopool-p99", "create-session + first result, no pool, p99",
        unpooled.p99, "ms", 0, 0);
}
