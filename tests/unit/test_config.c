/* test_config.c - unit tests of src/config.c: config_parse() defaults, every
 * option, --help/--version, the strict rejection of bad values (exit status 2
 * with a one-line message naming the option) and LISPMCP_TOKEN. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

typedef struct run {
    config_t        cfg;
    config_result_t rc;
    char           *out, *err;   /* what config_parse printed */
} run_t;

/* Run config_parse on "lispmcp" followed by the NULL-terminated args. */
static void parse(run_t *r, const char *const *args)
{
    char *argv[32];
    int argc = 0;
    argv[argc++] = (char *)"lispmcp";
    while (*args && argc < 31)
        argv[argc++] = (char *)*args++;
    argv[argc] = NULL;
    size_t out_len, err_len;
    FILE *out = open_memstream(&r->out, &out_len);
    FILE *err = open_memstream(&r->err, &err_len);
    ck_assert(out && err);
    r->rc = config_parse(&r->cfg, argc, argv, out, err);
    fclose(out);
    fclose(err);
}

static void done(run_t *r)
{
    config_free(&r->cfg);
    free(r->out);
    free(r->err);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

START_TEST(defaults)
{
    unsetenv("LISPMCP_TOKEN");
    run_t r;
    parse(&r, ARGS(NULL));
    ck_assert_int_eq(r.rc, CONFIG_RUN);
    ck_assert_str_eq(r.out, "");
    ck_assert_str_eq(r.err, "");
    ck_assert_str_eq(r.cfg.sbcl, "sbcl");
    ck_assert_ptr_null(r.cfg.http);   /* stdio mode */
    ck_assert_ptr_null(r.cfg.token);
    ck_assert_ptr_nonnull(r.cfg.core);
    const char *core = r.cfg.core;
    size_t n = strlen(core);
    ck_assert_msg(n >= 19 && strcmp(core + n - 19, "lispmcp-worker.core") == 0, "core %s", core);
    ck_assert_msg(core[0] == '/', "core beside the binary: %s", core);
    ck_assert(r.cfg.eval_timeout == 30.0);
    ck_assert(r.cfg.interrupt_grace == 2.0);
    ck_assert(r.cfg.idle_timeout == 0.0);
    ck_assert_int_eq(r.cfg.max_sessions, 100);
    ck_assert_int_eq(r.cfg.session_memory_mb, 512);
    ck_assert_uint_eq(r.cfg.max_output_bytes, 1048576);
    ck_assert_uint_eq(r.cfg.max_message_bytes, 67108864);
    ck_assert_int_eq(r.cfg.log_level, LOG_LEVEL_INFO);
    done(&r);
}
END_TEST

START_TEST(every_option)
{
    unsetenv("LISPMCP_TOKEN");
    run_t r;
    parse(&r, ARGS("--http", "127.0.0.1:8080", "--token", "t0k", "--sbcl", "/opt/sbcl",
                   "--core", "w.core", "--eval-timeout", "2.5", "--interrupt-grace", "0.25",
                   "--max-sessions", "7", "--session-memory-mb", "1024", "--idle-timeout", "600",
                   "--max-output-bytes", "4096", "--max-message-bytes", "2048",
                   "--log-level", "debug"));
    ck_assert_int_eq(r.rc, CONFIG_RUN);
    ck_assert_str_eq(r.err, "");
    ck_assert_str_eq(r.cfg.http, "127.0.0.1:8080");
    ck_assert_str_eq(r.cfg.token, "t0k");
    ck_assert_str_eq(r.cfg.sbcl, "/opt/sbcl");
    ck_assert_str_eq(r.cfg.core, "w.core");
    ck_assert(r.cfg.eval_timeout == 2.5);
    ck_assert(r.cfg.interrupt_grace == 0.25);
    ck_assert_int_eq(r.cfg.max_sessions, 7);
    ck_assert_int_eq(r.cfg.session_memory_mb, 1024);
    ck_assert(r.cfg.idle_timeout == 600.0);
    ck_assert_uint_eq(r.cfg.max_output_bytes, 4096);
    ck_assert_uint_eq(r.cfg.max_message_bytes, 2048);
    ck_assert_int_eq(r.cfg.log_level, LOG_LEVEL_DEBUG);
    done(&r);

    /* --opt=value form, 0 = no time limit, and the other log levels */
    parse(&r, ARGS("--eval-timeout=0", "--log-level=off", "--core=x.core"));
    ck_assert_int_eq(r.rc, CONFIG_RUN);
    ck_assert(r.cfg.eval_timeout == 0.0);
    ck_assert_int_eq(r.cfg.log_level, LOG_LEVEL_OFF);
    ck_assert_str_eq(r.cfg.core, "x.core");
    done(&r);
    static const char *const levels[] = {"info", "warn", "warning", "error"};
    static const log_level_t want[] = {LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_WARN,
                                       LOG_LEVEL_ERROR};
    for (int i = 0; i < 4; i++) {
        parse(&r, ARGS("--log-level", levels[i]));
        ck_assert_int_eq(r.rc, CONFIG_RUN);
        ck_assert_int_eq(r.cfg.log_level, want[i]);
        done(&r);
    }
    /* a repeated option: the last one wins, without leaking the first */
    parse(&r, ARGS("--sbcl", "a", "--sbcl", "b", "--max-sessions", "1"));
    ck_assert_int_eq(r.rc, CONFIG_RUN);
    ck_assert_str_eq(r.cfg.sbcl, "b");
    ck_assert_int_eq(r.cfg.max_sessions, 1);
    done(&r);
}
END_TEST

START_TEST(help_and_version)
{
    run_t r;
    parse(&r, ARGS("--help"));
    ck_assert_int_eq(r.rc, CONFIG_EXIT_0);
    ck_assert_ptr_nonnull(strstr(r.out, "Usage: lispmcp"));
    ck_assert_ptr_nonnull(strstr(r.out, "--eval-timeout"));
    ck_assert_ptr_nonnull(strstr(r.out, "--max-sessions"));
    ck_assert_str_eq(r.err, "");
    done(&r);

    parse(&r, ARGS("--version"));
    ck_assert_int_eq(r.rc, CONFIG_EXIT_0);
    ck_assert_str_eq(r.out, "lispmcp " LISPMCP_VERSION "\n");
    ck_assert_str_eq(r.err, "");
    done(&r);

    /* after other valid options too */
    parse(&r, ARGS("--max-sessions", "3", "--version"));
    ck_assert_int_eq(r.rc, CONFIG_EXIT_0);
    ck_assert_str_eq(r.out, "lispmcp " LISPMCP_VERSION "\n");
    done(&r);
}
END_TEST

/* The args must be rejected with one line on err that contains naming. */
static void expect_exit2(const char *const *args, const char *naming)
{
    run_t r;
    parse(&r, args);
    ck_assert_msg(r.rc == CONFIG_EXIT_2, "accepted: %s %s", args[0], args[1] ? args[1] : "");
    ck_assert_str_eq(r.out, "");
    size_t n = strlen(r.err);
    ck_assert_msg(n > 1 && r.err[n - 1] == '\n', "err: '%s'", r.err);
    ck_assert_msg(strchr(r.err, '\n') == r.err + n - 1, "not one line: '%s'", r.err);
    ck_assert_msg(strstr(r.err, naming) != NULL, "'%s' does not name %s", r.err, naming);
    ck_assert_msg(strncmp(r.err, "lispmcp: ", 9) == 0, "err: '%s'", r.err);
    done(&r);
}

START_TEST(bad_values)
{
    expect_exit2(ARGS("--eval-timeout", "-1"), "--eval-timeout");
    expect_exit2(ARGS("--eval-timeout", "abc"), "--eval-timeout");
    expect_exit2(ARGS("--eval-timeout", "10x"), "--eval-timeout");
    expect_exit2(ARGS("--eval-timeout", ""), "--eval-timeout");
    expect_exit2(ARGS("--eval-timeout", "nan"), "--eval-timeout");
    expect_exit2(ARGS("--eval-timeout", "inf"), "--eval-timeout");
    expect_exit2(ARGS("--eval-timeout", "1e300"), "--eval-timeout");
    expect_exit2(ARGS("--interrupt-grace", "-0.5"), "--interrupt-grace");
    expect_exit2(ARGS("--idle-timeout", "5 "), "--idle-timeout");
    expect_exit2(ARGS("--max-sessions", "0"), "--max-sessions");
    expect_exit2(ARGS("--max-sessions", "-3"), "--max-sessions");
    expect_exit2(ARGS("--max-sessions", "10x"), "--max-sessions");
    expect_exit2(ARGS("--max-sessions", "2.5"), "--max-sessions");
    expect_exit2(ARGS("--max-sessions", "99999999999999999999"), "--max-sessions");
    expect_exit2(ARGS("--session-memory-mb", "8"), "--session-memory-mb");
    expect_exit2(ARGS("--session-memory-mb", "lots"), "--session-memory-mb");
    expect_exit2(ARGS("--max-output-bytes", "0"), "--max-output-bytes");
    expect_exit2(ARGS("--max-message-bytes", "10"), "--max-message-bytes");
    expect_exit2(ARGS("--log-level", "loud"), "--log-level");
    expect_exit2(ARGS("--http", "8080"), "--http");
    /* a valid option before the bad one does not hide it */
    expect_exit2(ARGS("--max-sessions", "4", "--eval-timeout", "x"), "--eval-timeout");
}
END_TEST

START_TEST(bad_usage)
{
    expect_exit2(ARGS("--frobnicate"), "--frobnicate");
    expect_exit2(ARGS("--max-sessions", "2", "--bogus", "1"), "--bogus");
    expect_exit2(ARGS("-x"), "-x");
    expect_exit2(ARGS("--eval-timeout"), "--eval-timeout");
    expect_exit2(ARGS("--core"), "--core");
    expect_exit2(ARGS("--max-sessions", "2", "--token"), "--token");
    expect_exit2(ARGS("stray"), "stray");
    expect_exit2(ARGS("--help=yes"), "--help");
}
END_TEST

START_TEST(short_option_cluster)
{
    /* "-xy" is one unknown argument; the message must name it, not argv[0] */
    expect_exit2(ARGS("-xy"), "-x");
}
END_TEST

START_TEST(token_from_environment)
{
    run_t r;
    setenv("LISPMCP_TOKEN", "from-env", 1);
    parse(&r, ARGS(NULL));
    ck_assert_int_eq(r.rc, CONFIG_RUN);
    ck_assert_str_eq(r.cfg.token, "from-env");
    done(&r);

    parse(&r, ARGS("--token", "from-flag"));   /* the flag wins */
    ck_assert_str_eq(r.cfg.token, "from-flag");
    done(&r);

    setenv("LISPMCP_TOKEN", "", 1);   /* empty means unset */
    parse(&r, ARGS(NULL));
    ck_assert_ptr_null(r.cfg.token);
    done(&r);

    unsetenv("LISPMCP_TOKEN");
    parse(&r, ARGS(NULL));
    ck_assert_ptr_null(r.cfg.token);
    done(&r);
}
END_TEST

START_TEST(reparse_is_independent)
{
    /* config_parse starts from scratch each time: nothing of an earlier
     * call (its values, or getopt's position inside "-xy") carries over */
    run_t r;
    parse(&r, ARGS("--max-sessions", "5", "--help"));
    done(&r);
    parse(&r, ARGS("--eval-timeout", "x"));
    done(&r);
    parse(&r, ARGS("--max-output-bytes", "100"));
    ck_assert_int_eq(r.rc, CONFIG_RUN);
    ck_assert_int_eq(r.cfg.max_sessions, 100);
    ck_assert(r.cfg.eval_timeout == 30.0);
    ck_assert_uint_eq(r.cfg.max_output_bytes, 100);
    done(&r);
    parse(&r, ARGS("-xy"));
    ck_assert_int_eq(r.rc, CONFIG_EXIT_2);
    done(&r);
    parse(&r, ARGS("--max-output-bytes", "100"));
    ck_assert_msg(r.rc == CONFIG_RUN, "a valid command line after \"-xy\" was rejected: %s",
                  r.err);
    done(&r);
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, defaults);
    tcase_add_test(tc, every_option);
    tcase_add_test(tc, help_and_version);
    tcase_add_test(tc, bad_values);
    tcase_add_test(tc, bad_usage);
    tcase_add_test(tc, token_from_environment);
    tcase_add_test(tc, short_option_cluster);   /* these two last: see the report */
    tcase_add_test(tc, reparse_is_independent);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(config_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
