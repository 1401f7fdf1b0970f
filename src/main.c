/* main.c - lispmcp: live Common Lisp sessions for AI agents over MCP.
 *
 * Parses the options, checks that SBCL and the worker image are there, and
 * runs the event loop with the chosen transport until it runs dry. */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "config.h"
#include "log.h"
#include "pool.h"
#include "server.h"
#include "tools.h"
#include "transport_http.h"
#include "transport_stdio.h"
#include "util.h"

/* Resolve a program name on PATH, as execvp would; NULL if not found. */
static char *find_program(const char *name)
{
    if (strchr(name, '/'))
        return access(name, X_OK) == 0 ? xstrdup(name) : NULL;
    const char *path = getenv("PATH");
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        char candidate[PATH_MAX];
        if (snprintf(candidate, sizeof candidate, "%.*s/%s", (int)n, path, name) <
                (int)sizeof candidate && access(candidate, X_OK) == 0)
            return xstrdup(candidate);
        path += n + (path[n] == ':');
    }
    return NULL;
}

static int check_runtime(config_t *cfg)
{
    char *sbcl = find_program(cfg->sbcl);
    if (sbcl == NULL) {
        fprintf(stderr, "lispmcp: cannot find SBCL ('%s'); install it (apt-get install sbcl) "
                        "or pass --sbcl PATH\n", cfg->sbcl);
        return -1;
    }
    free(cfg->sbcl);
    cfg->sbcl = sbcl;
    if (access(cfg->core, R_OK) != 0) {
        fprintf(stderr, "lispmcp: cannot read the worker image %s; build it with 'make' "
                        "or pass --core PATH\n", cfg->core);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    config_t cfg;
    switch (config_parse(&cfg, argc, argv, stdout, stderr)) {
    case CONFIG_EXIT_0:
        config_free(&cfg);
        return 0;
    case CONFIG_EXIT_2:
        config_free(&cfg);
        return 2;
    case CONFIG_RUN:
        break;
    }
    log_set_level(cfg.log_level);
    json_set_alloc_funcs(xmalloc, free);
    signal(SIGPIPE, SIG_IGN);
    if (check_runtime(&cfg) < 0) {
        config_free(&cfg);
        return 2;   /* a bad --sbcl or --core, or what their defaults name */
    }

    uv_loop_t *loop = uv_default_loop();
    server_t srv = {.loop = loop, .cfg = &cfg};
    srv.pool = pool_new(&srv);
    if (cfg.http) {
        if (transport_http_start(&srv) < 0) {
            config_free(&cfg);
            return 2;
        }
    } else {
        int rc = transport_stdio_start(&srv);
        if (rc < 0) {
            fprintf(stderr, "lispmcp: cannot use stdin/stdout: %s\n", uv_strerror(rc));
            config_free(&cfg);
            return 1;
        }
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        self[n > 0 ? n : 0] = '\0';
        log_info("lispmcp %s serving MCP over stdio (SBCL: %s). Register it with an MCP client, "
                 "e.g.: claude mcp add lisp -- %s", LISPMCP_VERSION, cfg.sbcl, n > 0 ? self : argv[0]);
    }
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    uv_tty_reset_mode();
    tools_cleanup();
    config_free(&cfg);
    return 0;
}
