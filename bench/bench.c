/* bench.c - `make bench`: lispmcp measured from a C client.
 *
 * Drives the real build/lispmcp with raw JSON-RPC over pipes (and over HTTP
 * in http.c), and the same requests against bench/floor, a responder that
 * evaluates nothing, so that latencies can be given both raw and above the
 * floor measured in the same run. Prints a table with the targets and writes
 * bench/results.json, from which bench/plot.gp draws bench/results.png.
 *
 *   build/bench [build/lispmcp] [build/floor]      BENCH_QUICK=1 for a short run
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

int main(int argc, char **argv)
{
    bench_cfg_t cfg = {
        .server = argc > 1 ? argv[1] : "build/lispmcp",
        .floor = argc > 2 ? argv[2] : "build/floor",
        .quick = getenv("BENCH_QUICK") && strcmp(getenv("BENCH_QUICK"), "0") != 0,
    };
    /* The scale section holds a thousand sessions' pipes. */
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
        nofile.rlim_cur = nofile.rlim_max;
        setrlimit(RLIMIT_NOFILE, &nofile);
    }
    json_t *out = json_object();
    printf("lispmcp bench: C client, raw JSON-RPC; floor: bench/floor%s\n",
           cfg.quick ? " (BENCH_QUICK: short run)" : "");
    bench_latency(&cfg, out);
    bench_throughput(&cfg, out);
    bench_http(&cfg, out);
    bench_output(&cfg, out);
    bench_memory(&cfg, out);
    bench_scale(&cfg, out);
    if (json_dump_file(out, "bench/results.json", JSON_INDENT(1) | JSON_REAL_PRECISION(6)) != 0)
        die("bench/results.json");
    printf("\nwritten to bench/results.json\n");
    json_decref(out);
    return 0;
}
