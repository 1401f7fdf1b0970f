/* server.h - what every part of the server shares: the loop, the settings
 * and the count of live sessions (the --max-sessions limit spans all
 * connections). */
#ifndef LISPMCP_SERVER_H
#define LISPMCP_SERVER_H

#include <uv.h>

#include "config.h"

struct pool;

typedef struct server {
    uv_loop_t      *loop;
    const config_t *cfg;
    int             live_sessions;
    struct pool    *pool;          /* workers started ahead of need, or NULL */
} server_t;

#endif
