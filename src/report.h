/* report.h - shape tool results: an evaluation's outcome as MCP's
 * CallToolResult, with structuredContent for programs and content[0].text
 * for people. Formats are policy, so they live here, in C, not in the agent. */
#ifndef LISPMCP_REPORT_H
#define LISPMCP_REPORT_H

#include <jansson.h>

#include "session.h"

typedef enum report_kind {
    REPORT_EVALUATE,   /* evaluate-lisp */
    REPORT_TIME        /* time-execution */
} report_kind_t;

/* The result of an evaluation. */
json_t *report_eval(report_kind_t kind, const eval_result_t *r);

/* A successful result: structured (stolen) and a text summary. */
json_t *report_ok(json_t *structured, const char *text);

/* A tool error that is not the user's Lisp error (an unknown session, a
 * limit): isError, with "[ERROR] TYPE" and the message as its text. */
json_t *report_error(const char *type, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
