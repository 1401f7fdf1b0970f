/* bench.c - latency of lispmcp over stdio, measured by a C client.
 *
 * Drives the real build/lispmcp with raw JSON-RPC over pipes, and the same
 * requests against bench/floor (a responder that evaluates nothing), so that
 * every latency is reported both raw and above the floor measured in the
 * same run. Prints a table with the targets and writes bench/results.json.
 *
 *   build/bench [build/lispmcp] [build/floor]
 */
#include <jansson.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define ROUND_TRIPS 5000
#define WARM_UP     300
#define COLD_RUNS   10
#define CREATES     50

typedef struct peer {
    pid_t pid;
    FILE *in;     /* its stdin */
    FILE *out;    /* its stdout */
    long  next_id;
} peer_t;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static peer_t start(char *const argv[])
{
    int to[2], from[2];
    if (pipe(to) < 0 || pipe(from) < 0)
        die("pipe");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from[1], 1);
    posix_spawn_file_actions_addclose(&fa, to[1]);
    posix_spawn_file_actions_addclose(&fa, from[0]);
    peer_t p = {.next_id = 1};
    if (posix_spawn(&p.pid, argv[0], &fa, NULL, argv, environ) != 0)
        die(argv[0]);
    posix_spawn_file_actions_destroy(&fa);
    close(to[0]);
    close(from[1]);
    p.in = fdopen(to[1], "w");
    p.out = fdopen(from[0], "r");
    if (p.in == NULL || p.out == NULL)
        die("fdopen");
    return p;
}

static void stop(peer_t *p)
{
    fclose(p->in);   /* EOF: the server shuts down */
    fclose(p->out);
    waitpid(p->pid, NULL, 0);
}

/* Send one request (params: JSON text) and return the parsed response. */
static json_t *call(peer_t *p, const char *method, const char *params)
{
    long id = p->next_id++;
    fprintf(p->in, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"%s\",\"params\":%s}\n", id, method, params);
    fflush(p->in);
    static char line[1 << 20];
    while (fgets(line, sizeof line, p->out)) {
        json_t *m = json_loads(line, 0, NULL);
        if (m && json_integer_value(json_object_get(m, "id")) == id)
            return m;
        json_decref(m);   /* a notification, or not ours */
    }
    fprintf(stderr, "bench: the peer closed its output\n");
    exit(1);
}

static json_t *evaluate(peer_t *p, const char *tool, const char *code, const char *session)
{
    char params[512];
    snprintf(params, sizeof params,
             "{\"name\":\"%s\",\"arguments\":{\"code\":\"%s\"%s%s%s}}", tool, code,
             session ? ",\"session\":\"" : "", session ? session : "", session ? "\"" : "");
    return call(p, "tools/call", params);
}

static void initialize(peer_t *p)
{
    json_decref(call(p, "initialize", "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                                      "\"clientInfo\":{\"name\":\"bench\",\"version\":\"1\"}}"));
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    int i = (int)(p / 100 * n);
    return v[i < n ? i : n - 1];
}

typedef struct stats {
    double p50, p90, p99;
} stats_t;

/* Round trips of an evaluation of code; share: minus the in-image time. */
static stats_t round_trips(peer_t *p, const char *tool, const char *code, int share)
{
    static double t[ROUND_TRIPS];
    for (int i = 0; i < WARM_UP; i++)
        json_decref(evaluate(p, tool, code, NULL));
    for (int i = 0; i < ROUND_TRIPS; i++) {
        double t0 = now_ms();
        json_t *r = evaluate(p, tool, code, NULL);
        t[i] = now_ms() - t0;
        if (share) {
            json_t *timing = json_object_get(json_object_get(json_object_get(r, "result"),
                                                             "structuredContent"), "timing");
            t[i] -= json_number_value(json_object_get(timing, "real-time-ms"));
        }
        json_decref(r);
    }
    return (stats_t){pct(t, ROUND_TRIPS, 50), pct(t, ROUND_TRIPS, 90), pct(t, ROUND_TRIPS, 99)};
}

static double median_cold_start(char *server, double *first_result)
{
    double init[COLD_RUNS], first[COLD_RUNS];
    for (int i = 0; i < COLD_RUNS; i++) {
        char *argv[] = {server, "--log-level", "off", NULL};
        double t0 = now_ms();
        peer_t p = start(argv);
        initialize(&p);
        init[i] = now_ms() - t0;
        json_decref(evaluate(&p, "evaluate-lisp", "(+ 1 2)", NULL));
        first[i] = now_ms() - t0;
        stop(&p);
    }
    *first_result = pct(first, COLD_RUNS, 50);
    return pct(init, COLD_RUNS, 50);
}

static stats_t create_and_first(char *server, const char *pool)
{
    char *argv[] = {server, "--log-level", "off", "--pool-size", (char *)pool,
                    "--max-sessions", "200", NULL};
    peer_t p = start(argv);
    initialize(&p);
    usleep(300000);   /* let the pool fill, as it would between a user's requests */
    double t[CREATES];
    for (int i = 0; i < CREATES; i++) {
        double t0 = now_ms();
        json_t *c = call(&p, "tools/call", "{\"name\":\"create-session\",\"arguments\":{}}");
        const char *id = json_string_value(json_object_get(
            json_object_get(json_object_get(c, "result"), "structuredContent"), "session"));
        json_decref(evaluate(&p, "evaluate-lisp", "(+ 1 2)", id));
        t[i] = now_ms() - t0;
        json_decref(c);
        usleep(20000);
    }
    stop(&p);
    return (stats_t){pct(t, CREATES, 50), pct(t, CREATES, 90), pct(t, CREATES, 99)};
}

static double progn_timed(peer_t *p)
{
    double t[500];
    for (int i = 0; i < 500; i++) {
        json_t *r = evaluate(p, "time-execution", "(progn)", NULL);
        json_t *timing = json_object_get(json_object_get(json_object_get(r, "result"),
                                                         "structuredContent"), "timing");
        t[i] = json_number_value(json_object_get(timing, "real-time-ms"));
        json_decref(r);
    }
    return pct(t, 500, 50);
}

static void row(json_t *out, const char *key, const char *what, double value, double target)
{
    const char *verdict = target <= 0 ? "" : value <= target ? "met" : "not met";
    if (target > 0)
        printf("%-52s %10.4f ms   target <= %-8g %s\n", what, value, target, verdict);
    else
        printf("%-52s %10.4f ms\n", what, value);
    json_object_set_new(out, key, json_pack("{s:s, s:f, s:o, s:s}", "what", what, "ms", value,
                                            "target-ms", target > 0 ? json_real(target) : json_null(),
                                            "verdict", verdict));
}

int main(int argc, char **argv)
{
    char *server = argc > 1 ? argv[1] : "build/lispmcp";
    char *floor_bin = argc > 2 ? argv[2] : "build/floor";
    json_t *out = json_object();

    char *floor_argv[] = {floor_bin, NULL};
    peer_t fl = start(floor_argv);
    stats_t floor = round_trips(&fl, "evaluate-lisp", "(+ 1 2 3)", 0);
    stop(&fl);

    char *server_argv[] = {server, "--log-level", "off", NULL};
    peer_t sv = start(server_argv);
    initialize(&sv);
    stats_t nil = round_trips(&sv, "evaluate-lisp", "nil", 0);
    stats_t add = round_trips(&sv, "evaluate-lisp", "(+ 1 2 3)", 0);
    stats_t share = round_trips(&sv, "time-execution", "(+ 1 2 3)", 1);
    double progn = progn_timed(&sv);
    stop(&sv);

    double first_result, cold = median_cold_start(server, &first_result);
    stats_t pooled = create_and_first(server, "2");
    stats_t unpooled = create_and_first(server, "0");

    printf("lispmcp over stdio, C client; %d round trips after %d warm-up (floor: bench/floor)\n\n",
           ROUND_TRIPS, WARM_UP);
    row(out, "floor-p50", "floor: canned answer round trip, p50", floor.p50, 0);
    row(out, "nil-p50", "round trip of nil, p50", nil.p50, 0);
    row(out, "nil-p99", "round trip of nil, p99", nil.p99, 0);
    row(out, "add-p50", "round trip of (+ 1 2 3), p50", add.p50, 0);
    row(out, "add-p90", "round trip of (+ 1 2 3), p90", add.p90, 0);
    row(out, "add-p99", "round trip of (+ 1 2 3), p99", add.p99, 0);
    row(out, "add-above-floor-p50", "round trip of (+ 1 2 3) above the floor, p50",
        add.p50 - floor.p50, 0.012);
    row(out, "server-share-p50", "round trip minus in-image time, above floor, p50",
        share.p50 - floor.p50, 0.005);   /* the floor's answer says 0 ms in the image */
    row(out, "progn-timed-p50", "(progn) timed by time-execution, p50", progn, 0.02);
    row(out, "cold-initialize", "process start -> initialize answered (median of 10)", cold, 0);
    row(out, "cold-first-result", "process start -> first (+ 1 2) result (median of 10)",
        first_result, 10);
    row(out, "create-first-pool-p50", "create-session + first result, pool of 2, p50",
        pooled.p50, 2);
    row(out, "create-first-pool-p99", "create-session + first result, pool of 2, p99",
        pooled.p99, 0);
    row(out, "create-first-nopool-p50", "create-session + first result, no pool, p50",
        unpooled.p50, 0);
    row(out, "create-first-nopool-p99", "create-session + first result, no pool, p99",
        unpooled.p99, 0);

    if (json_dump_file(out, "bench/results.json", JSON_INDENT(2) | JSON_REAL_PRECISION(6)) == 0)
        printf("\nwritten to bench/results.json\n");
    json_decref(out);
    return 0;
}
