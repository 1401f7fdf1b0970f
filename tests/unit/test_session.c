/* test_session.c - unit tests of src/session.c with REAL SBCL workers
 * (build/lispmcp-worker.core, sbcl on PATH): the registry (the default
 * session, ids, find, --max-sessions), evaluation and persistence, isolation
 * between sessions, queueing, time limits that keep the image, a dying image
 * and its recovery, and cancellation. Each test ends with a clean shutdown:
 * every worker reaped, no handle left, uv_loop_close() == 0. The rest of the
 * session life cycle is in test_session_lifecycle.c. */
#include "session_fixture.h"

START_TEST(default_once)
{
    setup(NULL);
    const char *err = NULL;
    session_t *a = registry_default(fx.reg, &err);
    ck_assert_msg(a != NULL, "registry_default: %s", err);
    ck_assert_str_eq(a->id, SESSION_DEFAULT_ID);
    ck_assert_ptr_eq(registry_default(fx.reg, &err), a);
    ck_assert_ptr_eq(registry_find(fx.reg, "default"), a);
    ck_assert_ptr_eq(registry_first(fx.reg), a);
    ck_assert_int_eq(fx.srv.live_sessions, 1);
    ck_assert(session_alive(a));
    eval_expect(a, "(+ 1 2)", "3");
    finish();
}
END_TEST

START_TEST(create_find_and_limit)
{
    setup((const char *const[]){"--max-sessions", "2", NULL});
    const char *err = NULL;
    session_t *a = registry_create(fx.reg, "first", &err);
    session_t *b = registry_create(fx.reg, NULL, &err);
    ck_assert(a && b && a != b);
    ck_assert_str_ne(a->id, b->id);
    for (int k = 0; k < 2; k++)
        ck_assert(strlen((k ? b : a)->id) == 16 &&
                  strspn((k ? b : a)->id, "0123456789abcdef") == 16);
    ck_assert_str_eq(a->name, "first");
    ck_assert_ptr_null(b->name);
    ck_assert_ptr_eq(registry_find(fx.reg, a->id), a);
    ck_assert_ptr_eq(registry_find(fx.reg, b->id), b);
    ck_assert_ptr_null(registry_find(fx.reg, "0123456789abcdef"));
    ck_assert_ptr_null(registry_find(fx.reg, "default"));
    ck_assert_ptr_null(registry_find(fx.reg, ""));
    ck_assert_int_eq(fx.srv.live_sessions, 2);
    err = NULL;
    ck_assert_ptr_null(registry_create(fx.reg, "third", &err));
    ck_assert_msg(err && strstr(err, "limit") && strstr(err, "2"), "message: %s", err);
    ck_assert_ptr_null(registry_default(fx.reg, &err));
    ck_assert_int_eq(fx.srv.live_sessions, 2);
    /* closing one makes room again */
    char id[SESSION_ID_MAX];
    strcpy(id, a->id);
    registry_close(fx.reg, a);
    ck_assert_ptr_null(registry_find(fx.reg, id));
    ck_assert_int_eq(fx.srv.live_sessions, 1);
    session_t *c = registry_create(fx.reg, NULL, &err);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(fx.srv.live_sessions, 2);
    eval_expect(c, "(* 6 7)", "42");
    finish();
}
END_TEST

START_TEST(persistence_and_isolation)
{
    setup(NULL);
    session_t *a = create(), *b = create();
    eval_expect(a, "(defvar *x* 41)", "*X*");
    eval_expect(a, "(1+ *x*)", "42");
    eval_expect(b, "(boundp '*x*)", "NIL");
    eval_expect(a, "(boundp '*x*)", "T");
    ck_assert_uint_eq(a->evaluations, 3);
    ck_assert_str_eq(a->package, "COMMON-LISP-USER");
    /* a Lisp error is still a reply, and the session carries on */
    outcome_t o;
    eval(a, "(error \"boom ~a\" 1)", 0, &o);
    ck_assert_int_eq(o.end, EVAL_END_REPLY);
    ck_assert_ptr_nonnull(json_object_get(o.reply, "error"));
    ck_assert_uint_eq(json_array_size(json_object_get(o.reply, "values")), 0);
    outcome_free(&o);
    /* evaluations queue up in order */
    outcome_t q[3];
    submit(a, "(sleep 0.2)", 0, &q[0]);
    submit(a, "(incf *x*)", 0, &q[1]);
    submit(a, "(incf *x*)", 0, &q[2]);
    ck_assert(run_until(&q[2].done, 20));
    expect_value(&q[1], "42");
    expect_value(&q[2], "43");
    for (int i = 0; i < 3; i++)
        expect_end(&q[i], EVAL_END_REPLY, 0);
    finish();
}
END_TEST

START_TEST(timeout_keeps_state)
{
    setup(NULL);
    session_t *s = create();
    eval_expect(s, "(defvar *x* 41)", "*X*");
    outcome_t o;
    eval(s, "(loop)", 0.5, &o);
    ck_assert(json_is_true(json_object_get(o.reply, "interrupted")));
    ck_assert_msg(o.elapsed_ms >= 450 && o.elapsed_ms < 5000, "elapsed %.0f ms", o.elapsed_ms);
    expect_end(&o, EVAL_END_TIMEOUT, 0);
    eval(s, "(1+ *x*)", 5, &o);
    expect_value(&o, "42");
    ck_assert_ptr_null(o.notice);
    outcome_free(&o);
    finish();
}
END_TEST

START_TEST(timeout_kills_a_deaf_image)
{
    /* an image that defers SIGINT forever is killed after the grace period */
    setup((const char *const[]){"--interrupt-grace", "0.3", NULL});
    session_t *s = create();
    eval_expect(s, "(defvar *x* 41)", "*X*");
    outcome_t o;
    eval(s, "(sb-sys:without-interrupts (loop))", 0.3, &o);
    ck_assert_msg(o.elapsed_ms >= 550 && o.elapsed_ms < 5000, "elapsed %.0f ms", o.elapsed_ms);
    ck_assert(o.reply == NULL && o.detail != NULL);
    expect_end(&o, EVAL_END_TIMEOUT, 1);
    ck_assert(!session_alive(s));
    eval(s, "(boundp '*x*)", 0, &o);
    expect_value(&o, "NIL");
    ck_assert_msg(o.notice != NULL, "no notice that the earlier state was lost");
    outcome_free(&o);
    finish();
}
END_TEST

START_TEST(death_and_recovery)
{
    setup(NULL);
    session_t *s = create();
    eval_expect(s, "(defvar *x* 41)", "*X*");
    outcome_t o;
    eval(s, "(sb-ext:exit :abort t)", 0, &o);
    ck_assert(o.reply == NULL && o.detail != NULL);
    expect_end(&o, EVAL_END_DIED, 1);
    ck_assert(!session_alive(s));
    ck_assert_ptr_eq(registry_find(fx.reg, s->id), s);   /* the session stays */
    eval(s, "(boundp '*x*)", 0, &o);
    expect_value(&o, "NIL");
    ck_assert_msg(o.notice != NULL, "no notice that the earlier state was lost");
    outcome_free(&o);
    eval(s, "(+ 1 1)", 0, &o);   /* told once only */
    expect_value(&o, "2");
    ck_assert_ptr_null(o.notice);
    outcome_free(&o);
    /* an evaluation queued behind a fatal one runs in the fresh image */
    outcome_t fatal, next;
    submit(s, "(sb-ext:exit :code 3 :abort t)", 0, &fatal);
    submit(s, "(boundp '*x*)", 0, &next);
    ck_assert(run_until(&next.done, 20));
    ck_assert_msg(fatal.detail && strstr(fatal.detail, "3"), "detail: %s", fatal.detail);
    expect_end(&fatal, EVAL_END_DIED, 1);
    expect_value(&next, "NIL");
    ck_assert_ptr_nonnull(next.notice);
    outcome_free(&next);
    finish();
}
END_TEST

START_TEST(cancel)
{
    setup(NULL);
    session_t *s = create();
    eval_expect(s, "(defvar *x* 41)", "*X*");
    outcome_t running, queued;
    eval_job_t *job = submit(s, "(sleep 30)", 0, &running);
    eval_job_t *later = submit(s, "(incf *x*)", 0, &queued);
    run_until(NULL, 0.3);
    ck_assert(!running.done && !queued.done);
    eval_job_cancel(later);   /* queued: completes at once, never runs */
    expect_end(&queued, EVAL_END_CANCELLED, 0);
    double t0 = now_ms();
    eval_job_cancel(job);
    ck_assert(run_until(&running.done, 10));
    ck_assert_msg(now_ms() - t0 < 5000, "cancel took %.0f ms", now_ms() - t0);
    expect_end(&running, EVAL_END_CANCELLED, 0);
    eval_expect(s, "*x*", "41");   /* the cancelled incf never ran */
    finish();
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {default_once, create_find_and_limit, persistence_and_isolation,
                           timeout_keeps_state, timeout_kills_a_deaf_image,
                           death_and_recovery, cancel};
    return run_session_suite("session", tests, sizeof tests / sizeof *tests);
}
