/* output.c - bench section 5: large output and large results, time and
 * bytes on the wire. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

typedef struct big_case {
    const char *key, *what, *code;
    double      target_ms;
} big_case_t;

static const big_case_t cases[] = {
    {"output-100k", "100 000 characters of output", "(progn (write-string (make-string 100000 "
     ":initial-element #\\a)) nil)", 3},
    {"output-10m", "10 MB of output", "(progn (write-string (make-string 10000000 "
     ":initial-element #\\a)) nil)", 0},
    {"result-100k", "a 100 000-element list as the result, printed whole",
     "(progn (setf *print-length* 200000) (loop for i below 100000 collect i))", 0},
};

/* Median time of n evaluations; *wire: bytes of the answer's line. */
static double timed(peer_t *p, const char *code, int n, size_t *wire)
{
    json_t *args = json_pack("{s:s}", "code", code);
    json_t *params = json_pack("{s:s, s:o}", "name", "evaluate-lisp", "arguments", args);
    char *text = json_dumps(params, JSON_COMPACT);
    double t[20];
    for (int i = 0; i < n; i++) {
        double t0 = now_ms();
        long id = peer_send(p, "tools/call", text);
        const char *line;
        while (peer_recv_id(p, &line) != id)
            ;
        t[i] = now_ms() - t0;
        *wire = strlen(line);
        if (strstr(line, "\"isError\":true") || strstr(line, "\"truncated\":true")) {
            fprintf(stderr, "bench: %s: error or truncated: %.300s\n", code, line);
            exit(1);
        }
    }
    free(text);
    json_decref(params);
    return percentile(t, n, 50);
}

void bench_output(const bench_cfg_t *cfg, json_t *out)
{
    char *argv[] = {cfg->server, "--log-level", "off", "--max-output-bytes", "33554432", NULL};
    peer_t p = peer_start(argv);
    peer_initialize(&p);
    printf("\n5. Large output and results (median of 10 round trips; bytes on the wire)\n");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t wire = 0;
        timed(&p, cases[i].code, 2, &wire);   /* warm-up: compile the printer paths */
        double ms = timed(&p, cases[i].code, 10, &wire);
        char key[48], what[96];
        row(out, cases[i].key, cases[i].what, ms, "ms", cases[i].target_ms, 0);
        snprintf(key, sizeof key, "%s-bytes", cases[i].key);
        snprintf(what, sizeof what, "  bytes on the wire");
        row(out, key, what, (double)wire, "bytes", 0, 0);
    }
    peer_stop(&p);
}
