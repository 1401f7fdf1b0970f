/* report.c - evaluation outcomes as tool results. */
#include "report.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "utf8.h"
#include "util.h"

static json_t *result_of(json_t *structured, const char *text, size_t len);

static const char *string_field(json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

/* Append prefix, the string v whole (Lisp text may hold NUL characters) and
 * a newline. Anything but a string appends nothing between them. */
static void text_line(buf_t *t, const char *prefix, json_t *v)
{
    buf_append_str(t, prefix);
    if (json_is_string(v))
        buf_append(t, json_string_value(v), json_string_length(v));
    buf_append(t, "\n", 1);
}

/* A string member, kept whole (Lisp output may hold NUL characters). */
static json_t *text_field(json_t *obj, const char *key)
{
    json_t *s = json_object_get(obj, key);
    return json_is_string(s) ? json_incref(s) : json_string("");
}

static json_t *array_field(json_t *obj, const char *key)
{
    json_t *a = json_object_get(obj, key);
    return json_is_array(a) ? json_incref(a) : json_array();
}

static double micro_round(double ms)
{
    return round(ms * 1000.0) / 1000.0;
}

/* The image reports raw counters; the figures users see are milliseconds. */
static json_t *timing_object(json_t *raw)
{
    if (!json_is_object(raw))
        return NULL;
    double real_ns = json_number_value(json_object_get(raw, "real-ns"));
    double bytes = json_number_value(json_object_get(raw, "bytes"));
    double rate = real_ns > 0 ? bytes / 1e6 / (real_ns / 1e9) : 0;
    json_t *t = json_object();
    json_object_set_new(t, "real-time-ms", json_real(micro_round(real_ns / 1e6)));
    json_object_set_new(t, "run-time-ms",
                        json_real(micro_round(json_number_value(json_object_get(raw, "run-us")) / 1e3)));
    json_object_set_new(t, "gc-time-ms",
                        json_real(micro_round(json_number_value(json_object_get(raw, "gc-us")) / 1e3)));
    json_object_set_new(t, "bytes-allocated", json_integer((json_int_t)bytes));
    json_object_set_new(t, "allocation-rate-mb-per-sec", json_real(round(rate * 1000) / 1000));
    return t;
}

/* The error object for an evaluation that ended without a reply of its own,
 * or was interrupted. */
static json_t *server_error(const eval_result_t *r, json_t *interrupted_error)
{
    const char *type = "SESSION-DIED";
    char message[512];
    const char *detail = r->detail ? r->detail : "";
    const char *lost = "Its state is lost; the next call to this session starts a fresh image.";
    switch (r->end) {
    case EVAL_END_TIMEOUT:
    case EVAL_END_CANCELLED:
        type = r->end == EVAL_END_TIMEOUT ? "TIMEOUT" : "CANCELLED";
        if (r->state_lost)
            snprintf(message, sizeof message, "The evaluation was %s after %.3f s. %s %s",
                     r->end == EVAL_END_TIMEOUT ? "interrupted at its time limit" : "cancelled",
                     r->elapsed_ms / 1e3, detail, lost);
        else if (r->end == EVAL_END_TIMEOUT)
            snprintf(message, sizeof message,
                     "The evaluation was interrupted at its time limit of %g s (after %.3f s). "
                     "The session's state was kept.", r->timeout, r->elapsed_ms / 1e3);
        else
            snprintf(message, sizeof message, "The evaluation was cancelled after %.3f s. "
                     "The session's state was kept.", r->elapsed_ms / 1e3);
        break;
    case EVAL_END_CLOSED:
        type = "SESSION-CLOSED";
        snprintf(message, sizeof message, "%s", detail);
        break;
    case EVAL_END_START_FAILED:
        type = "START-FAILED";
        snprintf(message, sizeof message, "The session's Lisp image could not be started: %s.",
                 detail);
        break;
    default:
        snprintf(message, sizeof message, "%s %s", detail, lost);
        break;
    }
    json_t *e = json_object();
    json_object_set_new(e, "type", json_string(type));
    json_object_set_new(e, "message", utf8_json_string(message, strlen(message)));
    json_object_set_new(e, "backtrace", array_field(interrupted_error, "backtrace"));
    json_object_set_new(e, "elapsed-ms", json_real(micro_round(r->elapsed_ms)));
    return e;
}

static void text_section(buf_t *t, const char *title, const char *body, size_t len)
{
    if (len == 0)
        return;
    buf_printf(t, "[%s]\n", title);
    buf_append(t, body, len);
    if (body[len - 1] != '\n')
        buf_append_str(t, "\n");
}

static void text_truncation(buf_t *t, json_t *truncated)
{
    const char *key;
    json_t *n;
    json_object_foreach(truncated, key, n)
        buf_printf(t, "; %s truncated: %lld bytes dropped\n", key,
                   (long long)json_integer_value(n));
}

static void text_error(buf_t *t, json_t *error)
{
    buf_printf(t, "[ERROR] %s\n", string_field(error, "type"));
    text_line(t, "", json_object_get(error, "message"));
    json_t *bt = json_object_get(error, "backtrace");
    if (json_array_size(bt)) {
        buf_append_str(t, "[Backtrace]\n");
        size_t i;
        json_t *frame;
        json_array_foreach(bt, i, frame)
            text_line(t, "", frame);
    }
    buf_printf(t, "; Session state: %s\n",
               strcmp(string_field(error, "session-state"), "kept") == 0
                   ? "kept (the image and its definitions live on)"
                   : "lost (the next call starts a fresh image)");
}

static void text_timing(buf_t *t, json_t *timing)
{
    if (timing == NULL)
        return;
    buf_printf(t, "; Timing: real %.3f ms, run %.3f ms, GC %.3f ms, %lld bytes allocated\n",
               json_number_value(json_object_get(timing, "real-time-ms")),
               json_number_value(json_object_get(timing, "run-time-ms")),
               json_number_value(json_object_get(timing, "gc-time-ms")),
               (long long)json_integer_value(json_object_get(timing, "bytes-allocated")));
}

static json_t *error_of(const eval_result_t *r)
{
    json_t *reply_error = json_object_get(r->reply, "error");
    json_t *e;
    if (r->end == EVAL_END_REPLY) {
        if (!json_is_object(reply_error))
            return NULL;
        e = json_deep_copy(reply_error);
    } else {
        e = server_error(r, reply_error);
    }
    json_object_set_new(e, "session-state", json_string(r->state_lost ? "lost" : "kept"));
    return e;
}

static json_t *truncation_of(const eval_result_t *r)
{
    json_t *t = json_object_get(r->reply, "truncated");
    t = json_is_object(t) ? json_deep_copy(t) : json_object();
    if (r->console_dropped)
        json_object_set_new(t, "console", json_integer((json_int_t)r->console_dropped));
    if (json_object_size(t) == 0) {
        json_decref(t);
        return NULL;
    }
    return t;
}

/* content[0].text: what a person reads, section by section. */
static void eval_text(buf_t *text, const eval_result_t *r, json_t *out, json_t *err,
                      json_t *values, json_t *error, json_t *truncated, json_t *timing)
{
    if (r->notice)
        buf_printf(text, "; Note: %s\n", r->notice);
    text_section(text, "stdout", json_string_value(out), json_string_length(out));
    text_section(text, "stderr", json_string_value(err), json_string_length(err));
    if (r->console_len) {
        buf_t console;
        buf_init(&console);
        utf8_sanitize(&console, r->console, r->console_len);
        text_section(text, "console", console.data, console.len);
        buf_free(&console);
    }
    json_t *warnings = json_object_get(r->reply, "warnings");
    size_t i;
    json_t *item;
    if (json_array_size(warnings)) {
        buf_append_str(text, "[warnings]\n");
        json_array_foreach(warnings, i, item) {
            buf_printf(text, "%s: ", string_field(item, "type"));
            text_line(text, "", json_object_get(item, "message"));
        }
    }
    if (error) {
        text_error(text, error);
    } else if (json_array_size(values) == 0) {
        buf_append_str(text, "; No values\n");
    } else {
        json_array_foreach(values, i, item)
            text_line(text, "=> ", item);
    }
    if (truncated)
        text_truncation(text, truncated);
    text_timing(text, timing);
}

json_t *report_eval(report_kind_t kind, const eval_result_t *r)
{
    json_t *reply = r->reply;
    json_t *values = array_field(reply, "values");
    json_t *out = text_field(reply, "stdout"), *err = text_field(reply, "stderr");
    json_t *sc = json_object();
    if (kind == REPORT_TIME) {
        json_t *first = json_array_get(values, 0);
        json_object_set_new(sc, "result", first ? json_incref(first) : json_string(""));
        json_object_set_new(sc, "values", values);
        buf_t output;
        buf_init(&output);
        buf_append(&output, json_string_value(out), json_string_length(out));
        buf_append(&output, json_string_value(err), json_string_length(err));
        json_object_set_new(sc, "output", json_stringn(output.data, output.len));
        buf_free(&output);
    } else {
        json_object_set_new(sc, "values", values);
        json_object_set_new(sc, "stdout", json_incref(out));
        json_object_set_new(sc, "stderr", json_incref(err));
        json_object_set_new(sc, "warnings", array_field(reply, "warnings"));
    }
    const char *package = string_field(reply, "package");
    json_object_set_new(sc, "package", json_string(*package ? package : "COMMON-LISP-USER"));
    json_object_set_new(sc, "session", json_string(r->session_id));

    json_t *timing = timing_object(json_object_get(reply, "timing"));
    json_t *error = error_of(r);
    json_t *truncated = truncation_of(r);
    if (timing)
        json_object_set_new(sc, "timing", timing);
    if (error)
        json_object_set_new(sc, "error", error);
    if (truncated)
        json_object_set_new(sc, "truncated", truncated);
    if (r->console_len)
        json_object_set_new(sc, "console", utf8_json_string(r->console, r->console_len));
    if (r->notice)
        json_object_set_new(sc, "notice", json_string(r->notice));

    buf_t text;
    buf_init(&text);
    eval_text(&text, r, out, err, values, error, truncated, timing);
    json_decref(out);
    json_decref(err);
    json_t *result = result_of(sc, text.data ? text.data : "", text.len);
    buf_free(&text);
    if (error)
        json_object_set_new(result, "isError", json_true());
    return result;
}

static json_t *result_of(json_t *structured, const char *text, size_t len)
{
    if (len && text[len - 1] == '\n')
        len--;
    json_t *content = json_pack("[{s:s, s:o}]", "type", "text", "text", utf8_json_string(text, len));
    return json_pack("{s:o, s:o}", "content", content, "structuredContent", structured);
}

json_t *report_ok(json_t *structured, const char *text)
{
    return result_of(structured, text, strlen(text));
}

json_t *report_error(const char *type, const char *fmt, ...)
{
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    buf_t text;
    buf_init(&text);
    buf_printf(&text, "[ERROR] %s\n%s", type, message);
    /* No structuredContent: it would have to match the tool's outputSchema,
     * which describes results, and clients validate it even on errors. */
    json_t *result = json_pack("{s:[{s:s, s:o}], s:b}", "content", "type", "text", "text",
                               utf8_json_string(text.data, text.len), "isError", 1);
    buf_free(&text);
    return result;
}
