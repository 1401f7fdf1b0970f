/* test_session_lifecycle.c - unit tests of src/session.c with REAL SBCL
 * workers, the end of a session's life: session_reset (definitions wiped,
 * the running evaluation ended), registry_close and registry_free with work
 * pending, console bytes (fd 1/2 of the image) delivered with one evaluation,
 * --idle-timeout expiry, and an sbcl that cannot be started. */
#include "session_fixture.h"

START_TEST(reset_and_close)
{
    setup(NULL);
    session_t *s = create();
    eval_expect(s, "(defun f () 7)", "F");
    eval_expect(s, "(f)", "7");
    outcome_t o;
    submit(s, "(sleep 30)", 0, &o);
    run_until(NULL, 0.2);
    const char *err = NULL;
    ck_assert_int_eq(session_reset(s, &err), 0);
    expect_end(&o, EVAL_END_CLOSED, 1);   /* completed by the reset itself */
    eval_expect(s, "(fboundp 'f)", "NIL");
    ck_assert_uint_eq(s->evaluations, 1);
    char id[SESSION_ID_MAX];
    strcpy(id, s->id);
    submit(s, "(sleep 30)", 0, &o);
    registry_close(fx.reg, s);
    expect_end(&o, EVAL_END_CLOSED, 1);
    ck_assert_ptr_null(registry_find(fx.reg, id));
    ck_assert_int_eq(fx.srv.live_sessions, 0);
    /* registry_free ends what is still pending */
    session_t *d = registry_default(fx.reg, &err);
    ck_assert_ptr_nonnull(d);
    submit(d, "(sleep 30)", 0, &o);
    run_until(NULL, 0.1);
    registry_free(fx.reg);
    expect_end(&o, EVAL_END_CLOSED, 1);
    fx.reg = registry_new(&fx.srv);   /* for finish() */
    finish();
}
END_TEST

START_TEST(console_and_idle)
{
    setup((const char *const[]){"--idle-timeout", "0.3", NULL});
    session_t *s = create();
    outcome_t o;
    eval(s, "(flet ((raw (fd text) (let ((b (sb-ext:string-to-octets text)))"
            "                     (sb-unix:unix-write fd b 0 (length b)))))"
            "  (raw 1 \"on-fd-1\") (raw 2 \"+2\") 5)", 0, &o);
    expect_value(&o, "5");
    ck_assert_msg(o.console && strstr(o.console, "on-fd-1") && strstr(o.console, "+2"),
                  "console: %s", o.console ? o.console : "(none)");
    outcome_free(&o);
    eval(s, "6", 0, &o);
    expect_value(&o, "6");
    ck_assert_ptr_null(o.console);   /* console output belongs to one evaluation */
    outcome_free(&o);
    char id[SESSION_ID_MAX];
    strcpy(id, s->id);
    /* a busy session is never idle */
    submit(s, "(sleep 1.2)", 0, &o);
    ck_assert(run_until(&o.done, 10));
    expect_end(&o, EVAL_END_REPLY, 0);
    ck_assert_ptr_eq(registry_find(fx.reg, id), s);
    ck_assert(!registry_expired(fx.reg, id));
    run_until(NULL, 1.0);
    ck_assert_ptr_null(registry_find(fx.reg, id));
    ck_assert(registry_expired(fx.reg, id));
    ck_assert_int_eq(fx.srv.live_sessions, 0);
    finish();
}
END_TEST

START_TEST(start_failure)
{
    setup((const char *const[]){"--sbcl", "/nonexistent/sbcl", NULL});
    const char *err = NULL;
    ck_assert_ptr_null(registry_default(fx.reg, &err));
    ck_assert_msg(err && strstr(err, "/nonexistent/sbcl"), "message: %s", err ? err : "");
    ck_assert_ptr_null(registry_create(fx.reg, NULL, &err));
    ck_assert_int_eq(fx.srv.live_sessions, 0);
    ck_assert_ptr_null(registry_first(fx.reg));
    finish();
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {reset_and_close, console_and_idle, start_failure};
    return run_session_suite("session_lifecycle", tests, sizeof tests / sizeof *tests);
}
