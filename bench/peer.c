/* peer.c - the bench's client side; see peer.h. */
#include "peer.h"

#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define LINE_MAX_BYTES (64 << 20)

double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void die(const char *what)
{
    perror(what);
    exit(1);
}

peer_t peer_start(char *const argv[])
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

void peer_stop(peer_t *p)
{
    fclose(p->in);   /* EOF: the server shuts down */
    fclose(p->out);
    waitpid(p->pid, NULL, 0);
}

long peer_send(peer_t *p, const char *method, const char *params)
{
    long id = p->next_id++;
    fprintf(p->in, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"%s\",\"params\":%s}\n", id, method,
            params);
    fflush(p->in);
    return id;
}

long peer_recv_id(peer_t *p, const char **line)
{
    static char *buf;
    if (buf == NULL && (buf = malloc(LINE_MAX_BYTES)) == NULL)
        die("malloc");
    if (fgets(buf, LINE_MAX_BYTES, p->out) == NULL) {
        fprintf(stderr, "bench: the peer closed its output\n");
        exit(1);
    }
    *line = buf;
    /* Both servers put the id first after "jsonrpc", as jansson keeps
     * insertion order; a notification has none. */
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
    if (strncmp(buf, head, sizeof head - 1) != 0)
        return -1;
    return strtol(buf + sizeof head - 1, NULL, 10);
}

json_t *peer_call(peer_t *p, const char *method, const char *params)
{
    long id = peer_send(p, method, params);
    const char *line;
    while (peer_recv_id(p, &line) != id)
        ;   /* a notification */
    json_t *m = json_loads(line, 0, NULL);
    if (m == NULL) {
        fprintf(stderr, "bench: not JSON: %.200s\n", line);
        exit(1);
    }
    return m;
}

json_t *peer_eval(peer_t *p, const char *tool, const char *code, const char *session)
{
    json_t *args = json_pack("{s:s}", "code", code);
    if (session)
        json_object_set_new(args, "session", json_string(session));
    json_t *params = json_pack("{s:s, s:o}", "name", tool, "arguments", args);
    char *text = json_dumps(params, JSON_COMPACT);
    json_t *r = peer_call(p, "tools/call", text);
    free(text);
    json_decref(params);
    return r;
}

void peer_initialize(peer_t *p)
{
    json_decref(peer_call(p, "initialize",
                          "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                          "\"clientInfo\":{\"name\":\"bench\",\"version\":\"1\"}}"));
    fprintf(p->in, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    fflush(p->in);
}

char *peer_create_session(peer_t *p)
{
    json_t *r = peer_call(p, "tools/call", "{\"name\":\"create-session\",\"arguments\":{}}");
    const char *id = json_string_value(json_object_get(structured(r), "session"));
    if (id == NULL) {
        fprintf(stderr, "bench: create-session failed\n");
        exit(1);
    }
    char *copy = strdup(id);
    json_decref(r);
    return copy;
}

json_t *structured(json_t *response)
{
    return json_object_get(json_object_get(response, "result"), "structuredContent");
}

double in_image_ms(json_t *response)
{
    json_t *timing = json_object_get(structured(response), "timing");
    return json_number_value(json_object_get(timing, "real-time-ms"));
}

const char *first_value(json_t *response)
{
    const char *v = json_string_value(json_array_get(json_object_get(structured(response),
                                                                     "values"), 0));
    return v ? v : "";
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double percentile(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    int i = (int)(p / 100 * n);
    return v[i < n ? i : n - 1];
}

stats_t percentiles(double *v, int n)
{
    return (stats_t){percentile(v, n, 50), percentile(v, n, 90), percentile(v, n, 99)};
}

long pss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Pss: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

long long cpu_ns(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/schedstat", (int)pid);
    FILE *f = fopen(path, "r");
    long long ns = 0;
    if (f && fscanf(f, "%lld", &ns) != 1)
        ns = 0;
    if (f)
        fclose(f);
    return ns;
}

int children(pid_t pid, pid_t *out, int max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    FILE *f = fopen(path, "r");
    int n = 0, child;
    while (f && n < max && fscanf(f, "%d", &child) == 1)
        out[n++] = child;
    if (f)
        fclose(f);
    return n;
}

void row(json_t *out, const char *key, const char *what, double value, const char *unit,
         double target, int higher_is_better)
{
    const char *verdict = "";
    if (target > 0)
        verdict = (higher_is_better ? value >= target : value <= target) ? "met" : "NOT MET";
    printf("%-58s %12.4f %-7s", what, value, unit);
    if (target > 0)
        printf(" target %s %-8g %s", higher_is_better ? ">=" : "<=", target, verdict);
    printf("\n");
    fflush(stdout);
    json_object_set_new(out, key, json_pack("{s:s, s:f, s:s, s:o, s:s}", "what", what, "value",
                                            value, "unit", unit,
                                            "target", target > 0 ? json_real(target) : json_null(),
                                            "verdict", verdict));
}
