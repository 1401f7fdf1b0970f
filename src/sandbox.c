/* sandbox.c - clone, wall off and exec a worker.
 *
 * The child is made with a raw clone(2) so that it can be given namespaces
 * (libuv's uv_spawn cannot); between clone and execve it only makes
 * async-signal-safe calls. An exec failure comes back to the parent through a
 * close-on-exec pipe, as in uv_spawn, so a bad --sbcl is reported at once. */
#include "sandbox.h"

#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"

extern char **environ;

/* Unknown until the first try; namespaces are not tried again once refused. */
static int namespaces_refused;

static pid_t clone_process(unsigned long flags)
{
    /* With no new stack, clone behaves like fork. */
    return (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
}

static void limit(int resource, rlim_t value)
{
    struct rlimit r = {value, value};
    setrlimit(resource, &r);
}

/* In the child: nothing here may allocate or take a lock. */
static void __attribute__((noreturn))
child(const sandbox_spec_t *spec, int isolated, int report_fd)
{
    sigset_t none;
    sigemptyset(&none);
    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL);          /* the server ignores SIGPIPE; the worker must not */
    sigprocmask(SIG_SETMASK, &none, NULL);
    setsid();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (isolated) {
        /* A /proc that shows only this PID namespace: the server's and the
         * other sessions' entries are not there to read. */
        mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    }

    /* Move the descriptors above the ones they become first, so that none is
     * overwritten by another's dup2, then put them in place. */
    int high[SANDBOX_FDS];
    for (int i = 0; i < SANDBOX_FDS; i++)
        high[i] = fcntl(spec->fds[i], F_DUPFD_CLOEXEC, 10);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0)
        goto fail;
    for (int i = 0; i < SANDBOX_FDS; i++)
        if (high[i] < 0 || dup2(high[i], i + 1) < 0)
            goto fail;
    close_range(SANDBOX_FDS + 1, ~0U, CLOSE_RANGE_CLOEXEC);   /* report_fd stays open until exec */

    limit(RLIMIT_CORE, 0);
    if (spec->max_open_files > 0)
        limit(RLIMIT_NOFILE, (rlim_t)spec->max_open_files);
    execve(spec->file, spec->argv, environ);
fail:;
    int err = errno;
    if (write(report_fd, &err, sizeof err) < 0)
        _exit(126);
    _exit(127);
}

pid_t sandbox_spawn(const sandbox_spec_t *spec, sandbox_level_t *level)
{
    int report[2];
    if (pipe2(report, O_CLOEXEC) < 0)
        return -errno;

    pid_t pid = -1;
    int isolated = 0;
    if (!namespaces_refused) {
        pid = clone_process(CLONE_NEWPID | CLONE_NEWNS);
        if (pid < 0 && (errno == EPERM || errno == EINVAL || errno == ENOSPC)) {
            namespaces_refused = 1;
            log_warn("cannot give workers PID and mount namespaces (%s); sessions are "
                     "separated by processes only", strerror(errno));
        }
        isolated = pid >= 0;
    }
    if (pid < 0 && namespaces_refused)
        pid = clone_process(0);
    if (pid == 0)
        child(spec, isolated, report[1]);

    int saved = errno;
    close(report[1]);
    if (pid < 0) {
        close(report[0]);
        return -saved;
    }
    /* EOF means the exec succeeded; an int is the errno of the failure. */
    int err = 0;
    ssize_t n;
    do
        n = read(report[0], &err, sizeof err);
    while (n < 0 && errno == EINTR);
    close(report[0]);
    if (n == (ssize_t)sizeof err) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        return -err;
    }
    *level = isolated ? SANDBOX_NAMESPACES : SANDBOX_PROCESS_GROUP;
    return pid;
}
