/* bench.h - the sections of `make bench`; each prints its rows and stores
 * them in the results object. */
#ifndef BENCH_BENCH_H
#define BENCH_BENCH_H

#include "peer.h"

typedef struct bench_cfg {
    char *server;      /* build/lispmcp */
    char *floor;       /* build/floor */
    int   quick;       /* BENCH_QUICK=1: fewer repetitions, for trying the bench itself */
} bench_cfg_t;

void bench_latency(const bench_cfg_t *cfg, json_t *out);
void bench_throughput(const bench_cfg_t *cfg, json_t *out);
void bench_output(const bench_cfg_t *cfg, json_t *out);
void bench_memory(const bench_cfg_t *cfg, json_t *out);
void bench_scale(const bench_cfg_t *cfg, json_t *out);
void bench_http(const bench_cfg_t *cfg, json_t *out);

#endif
