/* session_fixture.h - shared by the session tests (test_session*.c): a fresh
 * uv loop, config and registry per test with REAL SBCL workers, helpers that
 * run the loop until an evaluation completes (with a deadline), and a clean
 * shutdown check. Tests run from the repository root. Everything here is
 * static inline, so a test file that leaves a helper unused still builds. */
#ifndef LISPMCP_TEST_SESSION_FIXTURE_H
#define LISPMCP_TEST_SESSION_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "server.h"
#include "session.h"

/* The worker image: $BUILD/lispmcp-worker.core (make check and check-asan
 * export BUILD), else build/lispmcp-worker.core. */
static inline const char *core_path(void)
{
    static char path[4096];
    const char *build = getenv("BUILD");
    snprintf(path, sizeof path, "%s/lispmcp-worker.core", build && *build ? build : "build");
    return path;
}

/* sbcl on PATH, as an absolute path: workers are started with execve(2),
 * which does not search PATH (main.c resolves --sbcl the same way). NULL if
 * there is none. */
static inline const char *sbcl_path(void)
{
    static char found[4096];
    const char *path = getenv("PATH");
    for (path = path ? path : "/usr/bin:/bin"; *path; ) {
        size_t n = strcspn(path, ":");
        snprintf(found, sizeof found, "%.*s/sbcl", (int)n, path);
        if (found[0] == '/' && access(found, X_OK) == 0)
            return found;
        path += n + (path[n] == ':');
    }
    return NULL;
}

static struct {
    uv_loop_t   loop;
    config_t    cfg;
    server_t    srv;
    registry_t *reg;
    uv_timer_t  clock;      /* deadlines for waits, then the shutdown watchdog */
    int         expired;
} fx;

typedef struct outcome {       /* what an evaluation's callback was given */
    int        done, state_lost;
    eval_end_t end;
    json_t    *reply;
    char      *detail, *notice, *console;
    double     elapsed_ms;
} outcome_t;

static inline void on_done(void *ctx, const eval_result_t *r)
{
    outcome_t *o = ctx;
    ck_assert_msg(!o->done, "an evaluation completed twice");
    o->done = 1, o->end = r->end, o->state_lost = r->state_lost;
    o->reply = json_incref(r->reply);   /* borrowed: keep it */
    o->detail = r->detail ? strdup(r->detail) : NULL;
    o->notice = r->notice ? strdup(r->notice) : NULL;
    o->console = r->console_len ? strndup(r->console, r->console_len) : NULL;
    o->elapsed_ms = r->elapsed_ms;
}

static inline void outcome_free(outcome_t *o)
{
    json_decref(o->reply);
    free(o->detail), free(o->notice), free(o->console);
    memset(o, 0, sizeof *o);
}

static inline void on_clock(uv_timer_t *t)
{
    (void)t;
    fx.expired = 1;
    uv_stop(&fx.loop);
}

static inline void setup(const char *const *args)
{
    char *argv[16] = {(char *)"lispmcp", (char *)"--core", (char *)core_path(),
                      (char *)"--sbcl", (char *)sbcl_path()};
    int argc = 5;
    while (args && *args)
        argv[argc++] = (char *)*args++;
    FILE *null = fopen("/dev/null", "w");
    ck_assert_int_eq(config_parse(&fx.cfg, argc, argv, null, stderr), CONFIG_RUN);
    fclose(null);
    ck_assert_int_eq(uv_loop_init(&fx.loop), 0);
    fx.srv = (server_t){.loop = &fx.loop, .cfg = &fx.cfg, .live_sessions = 0};
    uv_timer_init(&fx.loop, &fx.clock);
    fx.reg = registry_new(&fx.srv);
}

/* Free the registry; every worker must be reaped and every handle closed. */
static inline void finish(void)
{
    registry_free(fx.reg);
    ck_assert_int_eq(fx.srv.live_sessions, 0);
    fx.expired = 0;
    uv_unref((uv_handle_t *)&fx.clock);   /* a watchdog, not a reason to run */
    uv_timer_start(&fx.clock, on_clock, 15000, 0);
    int rc = uv_run(&fx.loop, UV_RUN_DEFAULT);
    ck_assert_msg(!fx.expired, "workers were not reaped within 15 s");
    ck_assert_int_eq(rc, 0);
    uv_close((uv_handle_t *)&fx.clock, NULL);
    ck_assert_int_eq(uv_run(&fx.loop, UV_RUN_DEFAULT), 0);
    ck_assert_int_eq(uv_loop_close(&fx.loop), 0);
    config_free(&fx.cfg);
}

/* Run the loop until *flag is set (never, if flag is NULL) or seconds pass. */
static inline int run_until(const int *flag, double seconds)
{
    fx.expired = 0;
    uv_timer_start(&fx.clock, on_clock, (uint64_t)(seconds * 1000), 0);
    while (!(flag && *flag) && !fx.expired)
        uv_run(&fx.loop, UV_RUN_ONCE);
    uv_timer_stop(&fx.clock);
    return flag && *flag;
}

static inline eval_job_t *submit(session_t *s, const char *code, double timeout, outcome_t *o)
{
    memset(o, 0, sizeof *o);
    eval_request_t req = {.code = code, .code_len = strlen(code), .timeout = timeout};
    const char *err = NULL;
    eval_job_t *job = session_eval(s, &req, on_done, o, &err);
    ck_assert_msg(job != NULL, "session_eval(%s) failed: %s", code, err ? err : "?");
    return job;
}

static inline void eval(session_t *s, const char *code, double timeout, outcome_t *o)
{
    submit(s, code, timeout, o);
    ck_assert_msg(run_until(&o->done, 20), "no completion for %s within 20 s", code);
}

/* The evaluation was answered with exactly one printed value, want. */
static inline void expect_value(const outcome_t *o, const char *want)
{
    ck_assert_msg(o->end == EVAL_END_REPLY, "end %d (%s), want a reply", o->end,
                  o->detail ? o->detail : "");
    ck_assert_ptr_nonnull(o->reply);
    json_t *values = json_object_get(o->reply, "values");
    char *dump = json_dumps(o->reply, 0);
    ck_assert_msg(json_is_array(values) && json_array_size(values) == 1 &&
                  json_is_string(json_array_get(values, 0)) &&
                  strcmp(json_string_value(json_array_get(values, 0)), want) == 0,
                  "want [\"%s\"], reply %s", want, dump);
    free(dump);
    ck_assert_int_eq(o->state_lost, 0);
}

static inline void eval_expect(session_t *s, const char *code, const char *want)
{
    outcome_t o;
    eval(s, code, 0, &o);
    expect_value(&o, want);
    outcome_free(&o);
}

/* The evaluation ended as end, with state_lost as lost; o is freed. */
static inline void expect_end(outcome_t *o, eval_end_t end, int lost)
{
    ck_assert_msg(o->done, "not completed");
    ck_assert_msg(o->end == end, "end %d (%s), want %d", o->end, o->detail ? o->detail : "", end);
    ck_assert_int_eq(o->state_lost, lost);
    outcome_free(o);
}

static inline session_t *create(void)
{
    const char *err = NULL;
    session_t *s = registry_create(fx.reg, NULL, &err);
    ck_assert_msg(s != NULL, "registry_create: %s", err ? err : "?");
    return s;
}

/* Run the tests as one suite of worker tests. A missing worker image or sbcl
 * is a failure, not a skip: make check always builds the image first. */
static inline int run_session_suite(const char *name, const TTest *const *tests, size_t n)
{
    if (access(core_path(), R_OK) != 0 || sbcl_path() == NULL) {
        fprintf(stderr, "%s: cannot run: %s (looked for %s)\n", name,
                sbcl_path() == NULL ? "no sbcl on PATH" : "the worker image is missing; run make",
                core_path());
        return EXIT_FAILURE;
    }
    Suite *suite = suite_create(name);
    TCase *tc = tcase_create("workers");
    tcase_set_timeout(tc, 60);
    for (size_t i = 0; i < n; i++)
        tcase_add_test(tc, tests[i]);
    suite_add_tcase(suite, tc);
    log_set_level(getenv("LISPMCP_TEST_LOG") ? LOG_LEVEL_DEBUG : LOG_LEVEL_OFF);
    SRunner *sr = srunner_create(suite);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
