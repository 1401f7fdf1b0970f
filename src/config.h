/* config.h - the server's settings, from the command line and environment. */
#ifndef LISPMCP_CONFIG_H
#define LISPMCP_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "log.h"

#define LISPMCP_VERSION "0.1.0"

typedef struct config {
    char       *sbcl;               /* the sbcl runtime to start workers with */
    char       *core;               /* the worker image */
    char       *http;               /* HOST:PORT, or NULL for stdio */
    char       *token;              /* HTTP bearer token, or NULL */
    char       *allow_origins;      /* comma-separated Origins allowed besides local ones */
    int         allow_remote;       /* bind beyond loopback without a token */
    double      http_session_timeout; /* seconds an idle MCP session over HTTP lives */
    double      eval_timeout;       /* seconds; 0 = none */
    double      interrupt_grace;    /* seconds an interrupted worker gets to unwind */
    int         max_sessions;       /* live sessions in the whole server */
    int         pool_size;          /* workers kept started ahead of need */
    int         session_memory_mb;  /* SBCL dynamic space per worker */
    double      idle_timeout;       /* seconds; 0 = never close idle sessions */
    size_t      max_output_bytes;   /* per captured stream and per printed value */
    size_t      max_message_bytes;  /* largest JSON-RPC message accepted */
    log_level_t log_level;
} config_t;

typedef enum config_result {
    CONFIG_RUN,     /* start the server */
    CONFIG_EXIT_0,  /* --help or --version was printed */
    CONFIG_EXIT_2   /* a bad option; the error was printed */
} config_result_t;

/* Fill cfg from argv and the environment; messages go to out/err. */
config_result_t config_parse(config_t *cfg, int argc, char **argv, FILE *out, FILE *err);
void config_free(config_t *cfg);

#endif
