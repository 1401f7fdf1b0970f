/* peer.h - the bench's client side: a server process driven over pipes with
 * raw JSON-RPC lines, and the measures taken around it (percentiles, PSS,
 * CPU time). Shared by every section of the bench. */
#ifndef BENCH_PEER_H
#define BENCH_PEER_H

#include <jansson.h>
#include <stdio.h>
#include <sys/types.h>

typedef struct peer {
    pid_t pid;
    FILE *in;     /* its stdin */
    FILE *out;    /* its stdout */
    long  next_id;
} peer_t;

typedef struct stats {
    double p50, p90, p99;
} stats_t;

double  now_ms(void);
void    die(const char *what);

peer_t  peer_start(char *const argv[]);
void    peer_stop(peer_t *p);   /* EOF on its stdin, then reap it */

/* Write one request (params: JSON text) without waiting; returns its id. */
long    peer_send(peer_t *p, const char *method, const char *params);
/* Read one line; return the id of a response without parsing it (-1 for a
 * notification). The line stays in *line until the next read. */
long    peer_recv_id(peer_t *p, const char **line);
json_t *peer_call(peer_t *p, const char *method, const char *params);
json_t *peer_eval(peer_t *p, const char *tool, const char *code, const char *session);
void    peer_initialize(peer_t *p);
char   *peer_create_session(peer_t *p);   /* malloc'd id */

json_t *structured(json_t *response);   /* result.structuredContent */
double  in_image_ms(json_t *response);  /* structuredContent.timing.real-time-ms */
const char *first_value(json_t *response);   /* structuredContent.values[0], or "" */

stats_t percentiles(double *v, int n);
double  percentile(double *v, int n, double p);   /* v gets sorted */

/* From /proc: proportional set size (kB), CPU time used (ns), children. */
long    pss_kb(pid_t pid);
long long cpu_ns(pid_t pid);
int     children(pid_t pid, pid_t *out, int max);

/* One line of the table, also stored in out under key. target <= 0: none.
 * Lower is better unless higher_is_better. */
void    row(json_t *out, const char *key, const char *what, double value, const char *unit,
            double target, int higher_is_better);

#endif
