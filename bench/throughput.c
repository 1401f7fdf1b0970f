/* throughput.c - bench section 4: one client keeps one evaluation in flight
 * in each of K sessions at once, so the server and K workers run in
 * parallel; completed evaluations per second. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#define MAX_SESSIONS 16

static double evals_per_second(peer_t *p, char **sessions, int k, double seconds)
{
    char params[MAX_SESSIONS][160];
    long in_flight[MAX_SESSIONS];
    for (int i = 0; i < k; i++) {
        snprintf(params[i], sizeof params[i],
                 "{\"name\":\"evaluate-lisp\",\"arguments\":{\"code\":\"(+ 1 2)\","
                 "\"session\":\"%s\"}}", sessions[i]);
        in_flight[i] = peer_send(p, "tools/call", params[i]);
    }
    long done = 0;
    double t0 = now_ms(), end = t0 + seconds * 1e3, t = t0;
    int open = k;
    while (open > 0) {
        const char *line;
        long id = peer_recv_id(p, &line);
        int i = 0;
        while (i < k && in_flight[i] != id)
            i++;
        if (i == k)
            continue;   /* a notification */
        if (strstr(line, "\"values\":[\"3\"]") == NULL) {
            fprintf(stderr, "bench: unexpected answer: %.300s\n", line);
            exit(1);
        }
        t = now_ms();
        if (t < end) {
            done++;
            in_flight[i] = peer_send(p, "tools/call", params[i]);
        } else {
            in_flight[i] = 0;
            open--;
        }
    }
    return (double)done / ((t - t0) / 1e3);
}

void bench_throughput(const bench_cfg_t *cfg, json_t *out)
{
    static const int counts[] = {1, 2, 4, 16};
    char *argv[] = {cfg->server, "--log-level", "off", NULL};
    peer_t p = peer_start(argv);
    peer_initialize(&p);
    char *sessions[MAX_SESSIONS];
    for (int i = 0; i < MAX_SESSIONS; i++) {
        sessions[i] = peer_create_session(&p);
        json_decref(peer_eval(&p, "evaluate-lisp", "(+ 1 2)", sessions[i]));
    }
    printf("\n4. Throughput over stdio: one client, K sessions evaluating (+ 1 2) in parallel\n");
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int k = counts[c];
        char key[32], what[96];
        snprintf(key, sizeof key, "throughput-%d", k);
        snprintf(what, sizeof what, "%d session%s in parallel", k, k > 1 ? "s" : "");
        double rate = evals_per_second(&p, sessions, k, cfg->quick ? 0.5 : 2.0);
        row(out, key, what, rate, "evals/s", k == 16 ? 40000 : 0, 1);
    }
    for (int i = 0; i < MAX_SESSIONS; i++)
        free(sessions[i]);
    peer_stop(&p);
}
