/* memory.c - bench sections 6 and 7: PSS of the server and its workers idle,
 * after 100 definitions and for N live sessions, and round trips while a
 * thousand sessions are alive. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFINING_SESSIONS 10
#define DEFINITIONS       100
#define MAX_CHILDREN      2048

/* PSS of the server and all its children, kB; *workers: how many. */
static long total_pss_kb(pid_t server, int *workers)
{
    static pid_t kids[MAX_CHILDREN];
    int n = children(server, kids, MAX_CHILDREN);
    long kb = pss_kb(server);
    for (int i = 0; i < n; i++)
        kb += pss_kb(kids[i]);
    if (workers)
        *workers = n;
    return kb;
}

static void define_many(peer_t *p, const char *session)
{
    char code[160];
    for (int i = 0; i < DEFINITIONS; i++) {
        snprintf(code, sizeof code, "(defun f%d (x) \\\"Scale x.\\\" (* x %d))", i, i);
        char params[320];
        snprintf(params, sizeof params, "{\"name\":\"evaluate-lisp\",\"arguments\":"
                 "{\"code\":\"%s\",\"session\":\"%s\"}}", code, session);
        json_t *r = peer_call(p, "tools/call", params);
        if (json_is_true(json_object_get(json_object_get(r, "result"), "isError"))) {
            fprintf(stderr, "bench: a definition failed\n");
            exit(1);
        }
        json_decref(r);
    }
}

void bench_memory(const bench_cfg_t *cfg, json_t *out)
{
    char *argv[] = {cfg->server, "--log-level", "off", "--pool-size", "0", NULL};
    peer_t p = peer_start(argv);
    peer_initialize(&p);
    printf("\n6. Memory (PSS from /proc/PID/smaps_rollup)\n");
    row(out, "pss-server-idle", "server, initialized, no session", (double)pss_kb(p.pid) / 1024,
        "MB", 0, 0);
    char *sessions[DEFINING_SESSIONS];
    for (int i = 0; i < DEFINING_SESSIONS; i++) {
        sessions[i] = peer_create_session(&p);
        json_decref(peer_eval(&p, "evaluate-lisp", "nil", sessions[i]));
    }
    int workers;
    long server_kb = pss_kb(p.pid), total = total_pss_kb(p.pid, &workers);
    row(out, "pss-idle-session", "idle session (one worker after one evaluation), mean",
        (double)(total - server_kb) / workers / 1024, "MB", 8, 0);
    for (int i = 0; i < DEFINING_SESSIONS; i++)
        define_many(&p, sessions[i]);
    total = total_pss_kb(p.pid, &workers);
    row(out, "pss-10-sessions-100-defs-busy", "10 sessions with 100 definitions, just after",
        (double)total / 1024, "MB", 0, 0);
    usleep(500000);   /* at rest: a worker gives memory back after 250 ms idle */
    total = total_pss_kb(p.pid, &workers);
    server_kb = pss_kb(p.pid);
    row(out, "pss-session-100-defs", "session after 100 definitions, mean",
        (double)(total - server_kb) / workers / 1024, "MB", 0, 0);
    row(out, "pss-10-sessions-100-defs", "10 sessions with 100 definitions each, at rest, total",
        (double)total / 1024, "MB", 80, 0);
    row(out, "pss-server-10-sessions", "  of which the server", (double)server_kb / 1024, "MB", 0,
        0);
    for (int i = 0; i < DEFINING_SESSIONS; i++)
        free(sessions[i]);
    peer_stop(&p);
}

/* p99 of n round trips, each in a session picked in turn. */
static stats_t round_trips_across(peer_t *p, char **sessions, int count, int n)
{
    double *t = malloc(sizeof *t * (size_t)n);
    if (t == NULL)
        die("malloc");
    for (int i = 0; i < n; i++) {
        const char *s = sessions[(size_t)i * 7919 % (size_t)count];
        double t0 = now_ms();
        json_decref(peer_eval(p, "evaluate-lisp", "(+ 1 2)", s));
        t[i] = now_ms() - t0;
    }
    stats_t st = percentiles(t, n);
    free(t);
    return st;
}

static void scale_to(const bench_cfg_t *cfg, int count, json_t *out, json_t *curve)
{
    char *argv[] = {cfg->server, "--log-level", "off", "--max-sessions", "1100", NULL};
    peer_t p = peer_start(argv);
    peer_initialize(&p);
    char **sessions = calloc((size_t)count, sizeof *sessions);
    if (sessions == NULL)
        die("calloc");
    double t0 = now_ms();
    for (int i = 0; i < count; i++) {
        sessions[i] = peer_create_session(&p);
        json_t *r = peer_eval(&p, "evaluate-lisp", "(+ 1 2)", sessions[i]);
        if (strcmp(first_value(r), "3") != 0) {
            fprintf(stderr, "bench: session %d did not answer 3\n", i);
            exit(1);
        }
        json_decref(r);
    }
    double started = now_ms() - t0;
    stats_t st = round_trips_across(&p, sessions, count, cfg->quick ? 500 : 2000);
    int workers;
    long total = total_pss_kb(p.pid, &workers);
    char key[48], what[96];
    snprintf(key, sizeof key, "scale-%d-start", count);
    snprintf(what, sizeof what, "%d sessions: create and evaluate in each, all", count);
    row(out, key, what, started / 1e3, "s", 0, 0);
    snprintf(key, sizeof key, "scale-%d-p99", count);
    snprintf(what, sizeof what, "%d sessions: round trip p99 while all alive", count);
    row(out, key, what, st.p99, "ms", 5, 0);
    snprintf(key, sizeof key, "scale-%d-pss", count);
    snprintf(what, sizeof what, "%d sessions: total PSS (%d processes)", count, workers + 1);
    row(out, key, what, (double)total / 1024, "MB", 0, 0);
    json_array_append_new(curve, json_pack("{s:i, s:f, s:f}", "sessions", count, "pss-mb",
                                           (double)total / 1024, "p99-ms", st.p99));
    for (int i = 0; i < count; i++)
        free(sessions[i]);
    free(sessions);
    peer_stop(&p);
}

void bench_scale(const bench_cfg_t *cfg, json_t *out)
{
    static const int counts[] = {1, 10, 100, 500, 1000};
    printf("\n7. Scale: N live sessions, each has evaluated; round trips across them\n");
    json_t *curve = json_array();
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        if (!cfg->quick || counts[i] <= 100)
            scale_to(cfg, counts[i], out, curve);
    json_object_set_new(out, "memory-curve", curve);
}
