/* config.c - command-line options, their defaults and their validation.
 *
 * Every option is checked strictly: a bad value is a one-line error naming the
 * option and exit status 2, never a silent default. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static const char usage_text[] =
    "Usage: lispmcp [OPTIONS]\n"
    "Serve live Common Lisp (SBCL) sessions to AI agents over the Model Context Protocol.\n"
    "\n"
    "Transport (default: MCP over stdio, newline-delimited JSON-RPC):\n"
    "  --http HOST:PORT          serve MCP Streamable HTTP at http://HOST:PORT/mcp\n"
    "  --token TOKEN             HTTP bearer token (or env LISPMCP_TOKEN)\n"
    "  --allow-origin LIST       Origins allowed besides local ones (comma-separated,\n"
    "                            e.g. https://example.org)\n"
    "  --http-session-timeout SECONDS\n"
    "                            end an MCP session over HTTP idle this long (default 3600)\n"
    "  --allow-remote-without-token\n"
    "                            allow binding beyond loopback with no token (dangerous)\n"
    "\n"
    "Sessions:\n"
    "  --sbcl PATH               SBCL runtime for workers (default: sbcl on PATH)\n"
    "  --core PATH               worker image (default: lispmcp-worker.core beside the binary)\n"
    "  --eval-timeout SECONDS    interrupt an evaluation after this long (default 30; 0 = none)\n"
    "  --interrupt-grace SECONDS time an interrupted evaluation gets before its worker is\n"
    "                            killed (default 2)\n"
    "  --max-sessions N          live sessions in the whole server (default 100)\n"
    "  --pool-size N             Lisp images kept started ahead of need, so a new\n"
    "                            session or a reset waits for none (default 2, max 64)\n"
    "  --session-memory-mb N     SBCL dynamic space per session (default 512)\n"
    "  --idle-timeout SECONDS    close sessions idle this long (default 0 = never)\n"
    "  --max-output-bytes N      output kept per stream and per printed value in one\n"
    "                            evaluation; the rest is dropped and counted (default 1048576)\n"
    "  --max-message-bytes N     largest JSON-RPC message accepted (default 67108864)\n"
    "\n"
    "Other:\n"
    "  --log-level LEVEL         debug, info, warn, error or off (default info)\n"
    "  --help                    show this help\n"
    "  --version                 show the version\n";

enum {
    OPT_HTTP = 256, OPT_TOKEN, OPT_ALLOW_ORIGIN, OPT_HTTP_SESSION_TIMEOUT, OPT_ALLOW_REMOTE, OPT_SBCL, OPT_CORE, OPT_EVAL_TIMEOUT, OPT_GRACE,
    OPT_MAX_SESSIONS, OPT_POOL_SIZE, OPT_MEMORY, OPT_IDLE, OPT_MAX_OUTPUT, OPT_MAX_MESSAGE,
    OPT_LOG_LEVEL, OPT_HELP, OPT_VERSION
};

static const struct option options[] = {
    {"http", required_argument, NULL, OPT_HTTP},
    {"token", required_argument, NULL, OPT_TOKEN},
    {"allow-origin", required_argument, NULL, OPT_ALLOW_ORIGIN},
    {"http-session-timeout", required_argument, NULL, OPT_HTTP_SESSION_TIMEOUT},
    {"allow-remote-without-token", no_argument, NULL, OPT_ALLOW_REMOTE},
    {"sbcl", required_argument, NULL, OPT_SBCL},
    {"core", required_argument, NULL, OPT_CORE},
    {"eval-timeout", required_argument, NULL, OPT_EVAL_TIMEOUT},
    {"interrupt-grace", required_argument, NULL, OPT_GRACE},
    {"max-sessions", required_argument, NULL, OPT_MAX_SESSIONS},
    {"pool-size", required_argument, NULL, OPT_POOL_SIZE},
    {"session-memory-mb", required_argument, NULL, OPT_MEMORY},
    {"idle-timeout", required_argument, NULL, OPT_IDLE},
    {"max-output-bytes", required_argument, NULL, OPT_MAX_OUTPUT},
    {"max-message-bytes", required_argument, NULL, OPT_MAX_MESSAGE},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

static int parse_seconds(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 1e7)
        return -1;
    *out = v;
    return 0;
}

static int parse_count(const char *s, long long min, long long max, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* The worker image lives beside the binary unless --core says otherwise. */
static char *default_core_path(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return xstrdup("lispmcp-worker.core");
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    buf_t b;
    buf_init(&b);
    buf_append(&b, exe, slash ? (size_t)(slash - exe) + 1 : 0);
    buf_append_str(&b, "lispmcp-worker.core");
    return b.data;
}

static void set_string(char **field, const char *value)
{
    free(*field);
    *field = xstrdup(value);
}

config_result_t config_parse(config_t *cfg, int argc, char **argv, FILE *out, FILE *err)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->sbcl = xstrdup("sbcl");
    cfg->eval_timeout = 30;
    cfg->http_session_timeout = 3600;
    cfg->interrupt_grace = 2;
    cfg->max_sessions = 100;
    cfg->pool_size = 2;
    cfg->session_memory_mb = 512;
    cfg->max_output_bytes = 1 << 20;
    cfg->max_message_bytes = 64 << 20;
    cfg->log_level = LOG_LEVEL_INFO;
    const char *env_token = getenv("LISPMCP_TOKEN");
    if (env_token && *env_token)
        cfg->token = xstrdup(env_token);

    optind = 0;   /* 0, not 1: glibc then forgets a previous call's state */
    opterr = 0;
    int c, opt_index = -1;
    while ((c = getopt_long(argc, argv, ":", options, &opt_index)) != -1) {
        long long n = 0;
        int bad = 0;
        switch (c) {
        case OPT_HTTP:
            bad = strchr(optarg, ':') == NULL;
            if (!bad)
                set_string(&cfg->http, optarg);
            break;
        case OPT_TOKEN:        set_string(&cfg->token, optarg); break;
        case OPT_ALLOW_ORIGIN: set_string(&cfg->allow_origins, optarg); break;
        case OPT_ALLOW_REMOTE: cfg->allow_remote = 1; break;
        case OPT_HTTP_SESSION_TIMEOUT:
            bad = parse_seconds(optarg, &cfg->http_session_timeout) || cfg->http_session_timeout == 0;
            break;
        case OPT_SBCL:         set_string(&cfg->sbcl, optarg); break;
        case OPT_CORE:         set_string(&cfg->core, optarg); break;
        case OPT_EVAL_TIMEOUT: bad = parse_seconds(optarg, &cfg->eval_timeout); break;
        case OPT_GRACE:        bad = parse_seconds(optarg, &cfg->interrupt_grace); break;
        case OPT_IDLE:         bad = parse_seconds(optarg, &cfg->idle_timeout); break;
        case OPT_MAX_SESSIONS:
            bad = parse_count(optarg, 1, 100000, &n);
            cfg->max_sessions = (int)n;
            break;
        case OPT_POOL_SIZE:
            bad = parse_count(optarg, 0, 64, &n);
            cfg->pool_size = (int)n;
            break;
        case OPT_MEMORY:
            bad = parse_count(optarg, 64, 1 << 20, &n);
            cfg->session_memory_mb = (int)n;
            break;
        case OPT_MAX_OUTPUT:
            bad = parse_count(optarg, 1, 1 << 30, &n);
            cfg->max_output_bytes = (size_t)n;
            break;
        case OPT_MAX_MESSAGE:
            bad = parse_count(optarg, 1024, 1 << 30, &n);
            cfg->max_message_bytes = (size_t)n;
            break;
        case OPT_LOG_LEVEL:    bad = log_level_parse(optarg, &cfg->log_level); break;
        case OPT_HELP:
            fputs(usage_text, out);
            return CONFIG_EXIT_0;
        case OPT_VERSION:
            fprintf(out, "lispmcp %s\n", LISPMCP_VERSION);
            return CONFIG_EXIT_0;
        case ':':
            fprintf(err, "lispmcp: option %s needs a value\n", argv[optind - 1]);
            return CONFIG_EXIT_2;
        default:
            if (optopt)
                fprintf(err, "lispmcp: unknown option -%c (see --help)\n", optopt);
            else
                fprintf(err, "lispmcp: unknown option %s (see --help)\n", argv[optind - 1]);
            return CONFIG_EXIT_2;
        }
        if (bad) {
            fprintf(err, "lispmcp: bad value '%s' for --%s (see --help)\n", optarg,
                    options[opt_index].name);
            return CONFIG_EXIT_2;
        }
    }
    if (optind < argc) {
        fprintf(err, "lispmcp: unexpected argument '%s' (see --help)\n", argv[optind]);
        return CONFIG_EXIT_2;
    }
    if (cfg->core == NULL)
        cfg->core = default_core_path();
    return CONFIG_RUN;
}

void config_free(config_t *cfg)
{
    free(cfg->sbcl);
    free(cfg->core);
    free(cfg->http);
    free(cfg->token);
    free(cfg->allow_origins);
}
