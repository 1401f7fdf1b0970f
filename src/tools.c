/* tools.c - tool definitions, argument checking and dispatch.
 *
 * The JSON schemas below are the single description of each tool's
 * arguments: tools/list sends them, and check_arguments() validates calls
 * against them (types, required members, unknown names, minimums), so the
 * two can never disagree. */
#include "tools.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "report.h"
#include "util.h"

#define SESSION_ARG \
    "\"session\": {\"type\": \"string\", \"description\": \"Session id (from create-session); " \
    "omit for this connection's default session.\"}"
#define PACKAGE_ARG \
    "\"package\": {\"type\": \"string\", \"description\": \"Package to read and evaluate in for " \
    "this call only (default: the session's current package).\"}"
#define TIMING_SCHEMA \
    "{\"type\": \"object\", \"properties\": {\"real-time-ms\": {\"type\": \"number\"}, " \
    "\"run-time-ms\": {\"type\": \"number\"}, \"gc-time-ms\": {\"type\": \"number\"}, " \
    "\"bytes-allocated\": {\"type\": \"integer\"}, \"allocation-rate-mb-per-sec\": {\"type\": \"number\"}}}"
#define ERROR_SCHEMA \
    "{\"type\": \"object\", \"properties\": {\"type\": {\"type\": \"string\"}, " \
    "\"message\": {\"type\": \"string\"}, \"backtrace\": {\"type\": \"array\", \"items\": " \
    "{\"type\": \"string\"}}, \"session-state\": {\"enum\": [\"kept\", \"lost\"]}}}"
#define COMMON_RESULT \
    "\"values\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}, " \
    "\"package\": {\"type\": \"string\"}, \"session\": {\"type\": \"string\"}, " \
    "\"timing\": " TIMING_SCHEMA ", \"error\": " ERROR_SCHEMA ", " \
    "\"truncated\": {\"type\": \"object\", \"additionalProperties\": {\"type\": \"integer\"}}, " \
    "\"console\": {\"type\": \"string\"}, \"notice\": {\"type\": \"string\"}"

static const char tool_definitions[] = "["
    "{\"name\": \"evaluate-lisp\", \"title\": \"Evaluate Common Lisp\","
    " \"description\": \"Evaluate Common Lisp code in a live SBCL session. The forms are read and "
    "evaluated one by one; what they define (functions, variables, macros, classes, packages, the "
    "current package) stays for later calls to the same session. Returns every value of the last "
    "form printed with PRIN1, the output to *standard-output* and *error-output* separately, the "
    "warnings, and on error the condition's type, report and backtrace. An evaluation that runs too "
    "long is interrupted and the session keeps its state.\","
    " \"inputSchema\": {\"type\": \"object\", \"properties\": {"
    "  \"code\": {\"type\": \"string\", \"description\": \"One or more Lisp forms.\"}, "
    SESSION_ARG ", " PACKAGE_ARG ", "
    "  \"timeout-seconds\": {\"type\": \"number\", \"minimum\": 0, \"maximum\": 1e7, \"description\": \"Interrupt the "
    "evaluation after this many seconds (0 = no limit; default: the server's --eval-timeout).\"}, "
    "  \"capture-time\": {\"type\": \"boolean\", \"description\": \"Also report real, run and GC time "
    "and bytes allocated, measured inside the image.\"}},"
    " \"required\": [\"code\"]},"
    " \"outputSchema\": {\"type\": \"object\", \"properties\": {" COMMON_RESULT ", "
    "  \"stdout\": {\"type\": \"string\"}, \"stderr\": {\"type\": \"string\"}, "
    "  \"warnings\": {\"type\": \"array\", \"items\": {\"type\": \"object\", \"properties\": "
    "{\"type\": {\"type\": \"string\"}, \"message\": {\"type\": \"string\"}}}}},"
    " \"required\": [\"values\", \"stdout\", \"stderr\", \"warnings\", \"package\", \"session\"]},"
    " \"annotations\": {\"readOnlyHint\": false, \"destructiveHint\": false, \"openWorldHint\": false}},"

    "{\"name\": \"time-execution\", \"title\": \"Time Common Lisp code\","
    " \"description\": \"Evaluate Common Lisp code like evaluate-lisp and report how long it took, "
    "measured inside the Lisp image from just before the code is read to just after its output is "
    "captured: real, run and GC time in milliseconds (microsecond resolution), bytes allocated and "
    "the allocation rate. Nothing of the protocol is included in the figures.\","
    " \"inputSchema\": {\"type\": \"object\", \"properties\": {"
    "  \"code\": {\"type\": \"string\", \"description\": \"One or more Lisp forms.\"}, "
    SESSION_ARG ", " PACKAGE_ARG "}, \"required\": [\"code\"]},"
    " \"outputSchema\": {\"type\": \"object\", \"properties\": {" COMMON_RESULT ", "
    "  \"result\": {\"type\": \"string\"}, \"output\": {\"type\": \"string\"}},"
    " \"required\": [\"result\", \"values\", \"output\", \"package\", \"session\"]},"
    " \"annotations\": {\"readOnlyHint\": false, \"destructiveHint\": false, \"openWorldHint\": false}},"

    "{\"name\": \"create-session\", \"title\": \"Create a Lisp session\","
    " \"description\": \"Start a new, empty Lisp session (its own SBCL image) and return its id. "
    "Pass the id as `session` to the other tools.\","
    " \"inputSchema\": {\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\", "
    "\"description\": \"A label for people; shown by list-sessions.\"}}},"
    " \"outputSchema\": {\"type\": \"object\", \"properties\": {\"session\": {\"type\": \"string\"}},"
    " \"required\": [\"session\"]},"
    " \"annotations\": {\"readOnlyHint\": false, \"destructiveHint\": false, \"openWorldHint\": false}},"

    "{\"name\": \"list-sessions\", \"title\": \"List Lisp sessions\","
    " \"description\": \"List this connection's Lisp sessions: id, name, current package, number of "
    "evaluations, whether its image is alive, and seconds since it was last used.\","
    " \"inputSchema\": {\"type\": \"object\", \"properties\": {}},"
    " \"outputSchema\": {\"type\": \"object\", \"properties\": {\"sessions\": {\"type\": \"array\", "
    "\"items\": {\"type\": \"object\", \"properties\": {\"session\": {\"type\": \"string\"}, "
    "\"name\": {\"type\": [\"string\", \"null\"]}, \"package\": {\"type\": \"string\"}, "
    "\"evaluations\": {\"type\": \"integer\"}, \"alive\": {\"type\": \"boolean\"}, "
    "\"idle-seconds\": {\"type\": \"number\"}}}}}, \"required\": [\"sessions\"]},"
    " \"annotations\": {\"readOnlyHint\": true, \"openWorldHint\": false}},"

    "{\"name\": \"reset-session\", \"title\": \"Reset a Lisp session\","
    " \"description\": \"Replace a session's image with a fresh one: every definition is gone and "
    "the package is COMMON-LISP-USER again. The session keeps its id.\","
    " \"inputSchema\": {\"type\": \"object\", \"properties\": {" SESSION_ARG "}},"
    " \"outputSchema\": {\"type\": \"object\", \"properties\": {\"session\": {\"type\": \"string\"}, "
    "\"package\": {\"type\": \"string\"}}, \"required\": [\"session\", \"package\"]},"
    " \"annotations\": {\"readOnlyHint\": false, \"destructiveHint\": true, \"idempotentHint\": true, "
    "\"openWorldHint\": false}},"

    "{\"name\": \"close-session\", \"title\": \"Close a Lisp session\","
    " \"description\": \"End a session and its image. Its id is unknown afterwards.\","
    " \"inputSchema\": {\"type\": \"object\", \"properties\": {\"session\": {\"type\": \"string\", "
    "\"description\": \"The id of the session to close.\"}}, \"required\": [\"session\"]},"
    " \"outputSchema\": {\"type\": \"object\", \"properties\": {\"session\": {\"type\": \"string\"}, "
    "\"closed\": {\"type\": \"boolean\"}}, \"required\": [\"session\", \"closed\"]},"
    " \"annotations\": {\"readOnlyHint\": false, \"destructiveHint\": true, \"openWorldHint\": false}}"
    "]";

static json_t *definitions;   /* parsed once, read-only afterwards */

static json_t *all_tools(void)
{
    if (definitions == NULL) {
        json_error_t err;
        definitions = json_loads(tool_definitions, 0, &err);
        if (definitions == NULL) {
            log_error("tool definitions: %s at %d", err.text, err.position);
            definitions = json_array();
        }
    }
    return definitions;
}

json_t *tools_list(void)
{
    return json_pack("{s:O}", "tools", all_tools());
}

void tools_cleanup(void)
{
    json_decref(definitions);
    definitions = NULL;
}

static json_t *find_tool(const char *name)
{
    size_t i;
    json_t *tool;
    json_array_foreach(all_tools(), i, tool)
        if (strcmp(json_string_value(json_object_get(tool, "name")), name) == 0)
            return tool;
    return NULL;
}

static int type_matches(const char *type, json_t *value)
{
    if (strcmp(type, "string") == 0)
        return json_is_string(value);
    if (strcmp(type, "number") == 0)
        return json_is_number(value);
    if (strcmp(type, "boolean") == 0)
        return json_is_boolean(value);
    return 1;
}

/* Validate args against the tool's inputSchema; 0, or -1 with a message. */
static int check_arguments(json_t *tool, json_t *args, char *message, size_t size)
{
    json_t *schema = json_object_get(tool, "inputSchema");
    json_t *props = json_object_get(schema, "properties");
    const char *tool_name = json_string_value(json_object_get(tool, "name"));
    const char *key;
    json_t *value;
    json_object_foreach(args, key, value) {
        json_t *prop = json_object_get(props, key);
        if (prop == NULL) {
            snprintf(message, size, "Invalid params: unknown argument \"%s\" for tool %s",
                     key, tool_name);
            return -1;
        }
        const char *type = json_string_value(json_object_get(prop, "type"));
        if (!type_matches(type, value)) {
            snprintf(message, size, "Invalid params: argument \"%s\" must be a %s", key, type);
            return -1;
        }
        json_t *minimum = json_object_get(prop, "minimum");
        json_t *maximum = json_object_get(prop, "maximum");
        if (minimum && json_number_value(value) < json_number_value(minimum)) {
            snprintf(message, size, "Invalid params: argument \"%s\" must be at least %g",
                     key, json_number_value(minimum));
            return -1;
        }
        if (maximum && json_number_value(value) > json_number_value(maximum)) {
            snprintf(message, size, "Invalid params: argument \"%s\" must be at most %g",
                     key, json_number_value(maximum));
            return -1;
        }
    }
    size_t i;
    json_array_foreach(json_object_get(schema, "required"), i, value) {
        if (json_object_get(args, json_string_value(value)) == NULL) {
            snprintf(message, size, "Invalid params: missing required argument \"%s\" for tool %s",
                     json_string_value(value), tool_name);
            return -1;
        }
    }
    return 0;
}

/* ---- sessions by id --------------------------------------------------- */

static json_t *unknown_session(registry_t *reg, const char *id)
{
    if (registry_expired(reg, id))
        return report_error("SESSION-EXPIRED", "Session \"%s\" was closed after being idle "
                            "(--idle-timeout); its state is gone. Create a new session.", id);
    return report_error("SESSION-NOT-FOUND", "No session \"%s\" in this connection; "
                        "list-sessions shows the ones that exist.", id);
}

/* The session a call names (or the default one). NULL with *error set. */
static session_t *resolve_session(registry_t *reg, json_t *args, json_t **error)
{
    const char *id = json_string_value(json_object_get(args, "session"));
    const char *err;
    session_t *s;
    if (id && strcmp(id, SESSION_DEFAULT_ID) != 0) {
        s = registry_find(reg, id);
        if (s == NULL)
            *error = unknown_session(reg, id);
        return s;
    }
    s = registry_default(reg, &err);
    if (s == NULL)
        *error = report_error("SESSION-UNAVAILABLE", "The default session could not be started: %s",
                              err);
    return s;
}

/* ---- evaluations ------------------------------------------------------ */

struct tool_call {
    report_kind_t  kind;
    tool_done_fn   done;
    tool_output_fn output;
    void          *ctx;
    eval_job_t    *job;
};

static void on_eval_output(void *ctx, const char *stream, json_t *text)
{
    tool_call_t *call = ctx;
    call->output(call->ctx, stream, text);
}

static void on_eval_done(void *ctx, const eval_result_t *r)
{
    tool_call_t *call = ctx;
    call->done(call->ctx, r->end == EVAL_END_CANCELLED ? NULL : report_eval(call->kind, r));
    free(call);
}

static tool_status_t start_eval(registry_t *reg, report_kind_t kind, json_t *args,
                                tool_done_fn done, tool_output_fn output, void *ctx,
                                json_t **result, tool_call_t **pending)
{
    session_t *s = resolve_session(reg, args, result);
    if (s == NULL)
        return TOOL_DONE;
    json_t *code = json_object_get(args, "code");
    json_t *package = json_object_get(args, "package");
    json_t *timeout = json_object_get(args, "timeout-seconds");
    eval_request_t req = {
        .on_output = output ? on_eval_output : NULL,
        .code = json_string_value(code),
        .code_len = json_string_length(code),
        .package = json_string_value(package),
        .package_len = package ? json_string_length(package) : 0,
        .timing = kind == REPORT_TIME || json_is_true(json_object_get(args, "capture-time")),
        .timeout = timeout ? json_number_value(timeout) : registry_config(reg)->eval_timeout,
    };
    tool_call_t *call = xmalloc(sizeof *call);
    *call = (tool_call_t){.kind = kind, .done = done, .output = output, .ctx = ctx};
    const char *err;
    call->job = session_eval(s, &req, on_eval_done, call, &err);
    if (call->job == NULL) {
        free(call);
        *result = report_error("EVALUATION-REFUSED", "%s", err);
        return TOOL_DONE;
    }
    *pending = call;
    return TOOL_PENDING;
}

void tools_cancel(tool_call_t *call)
{
    eval_job_cancel(call->job);
}

/* ---- session tools ---------------------------------------------------- */

static json_t *create_session(registry_t *reg, json_t *args)
{
    const char *name = json_string_value(json_object_get(args, "name"));
    const char *err;
    session_t *s = registry_create(reg, name, &err);
    if (s == NULL)
        return report_error("SESSION-LIMIT", "Cannot create a session: %s", err);
    char text[160];
    snprintf(text, sizeof text, "Created session %s", s->id);
    return report_ok(json_pack("{s:s}", "session", s->id), text);
}

static json_t *list_sessions(registry_t *reg)
{
    json_t *list = json_array();
    buf_t text;
    buf_init(&text);
    double now = now_ms();
    for (session_t *s = registry_first(reg); s; s = s->next) {
        double idle = s->running ? 0 : round((now - s->last_used_ms) / 100) / 10;
        json_array_append_new(list, json_pack("{s:s, s:o, s:s, s:I, s:b, s:f}",
            "session", s->id, "name", s->name ? json_string(s->name) : json_null(),
            "package", s->package, "evaluations", (json_int_t)s->evaluations,
            "alive", session_alive(s), "idle-seconds", idle));
        buf_printf(&text, "%s%s%s%s  %s  %lu evaluations  %s  idle %.1f s\n", s->id,
                   s->name ? " (" : "", s->name ? s->name : "", s->name ? ")" : "", s->package,
                   s->evaluations, session_alive(s) ? "alive" : "not running", idle);
    }
    if (text.len == 0)
        buf_append_str(&text, "No sessions yet.");
    json_t *result = report_ok(json_pack("{s:o}", "sessions", list), text.data);
    buf_free(&text);
    return result;
}

static json_t *reset_session(registry_t *reg, json_t *args)
{
    json_t *error = NULL;
    session_t *s = resolve_session(reg, args, &error);
    const char *err;
    if (s == NULL)
        return error;
    if (session_reset(s, &err) < 0)
        return report_error("START-FAILED", "The session's new image could not be started: %s", err);
    char text[160];
    snprintf(text, sizeof text, "Session %s now runs a fresh image in COMMON-LISP-USER", s->id);
    return report_ok(json_pack("{s:s, s:s}", "session", s->id, "package", "COMMON-LISP-USER"), text);
}

static json_t *close_session(registry_t *reg, json_t *args)
{
    const char *id = json_string_value(json_object_get(args, "session"));
    session_t *s = registry_find(reg, id);
    if (s == NULL)
        return unknown_session(reg, id);
    char text[160];
    snprintf(text, sizeof text, "Closed session %s", s->id);
    json_t *sc = json_pack("{s:s, s:b}", "session", s->id, "closed", 1);
    registry_close(reg, s);
    return report_ok(sc, text);
}

tool_status_t tools_call(registry_t *reg, const char *name, json_t *args,
                         tool_done_fn done, tool_output_fn output, void *ctx, json_t **result,
                         tool_call_t **pending, char *message, size_t message_size)
{
    json_t *tool = find_tool(name);
    if (tool == NULL) {
        snprintf(message, message_size, "Invalid params: unknown tool \"%s\"", name);
        return TOOL_BAD_PARAMS;
    }
    if (check_arguments(tool, args, message, message_size) < 0)
        return TOOL_BAD_PARAMS;
    if (strcmp(name, "evaluate-lisp") == 0)
        return start_eval(reg, REPORT_EVALUATE, args, done, output, ctx, result, pending);
    if (strcmp(name, "time-execution") == 0)
        return start_eval(reg, REPORT_TIME, args, done, output, ctx, result, pending);
    if (strcmp(name, "create-session") == 0)
        *result = create_session(reg, args);
    else if (strcmp(name, "list-sessions") == 0)
        *result = list_sessions(reg);
    else if (strcmp(name, "reset-session") == 0)
        *result = reset_session(reg, args);
    else
        *result = close_session(reg, args);
    return TOOL_DONE;
}
