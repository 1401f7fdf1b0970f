/* sandbox.h - start a worker process walled off from the server and from
 * every other worker.
 *
 * Where the kernel allows it (root, or an unprivileged user namespace), the
 * child gets PID and mount namespaces of its own with a fresh /proc: it is
 * process 1 of a world that holds only itself and what it starts, so it can
 * neither see nor signal nor read the server or another session, and when it
 * dies the kernel ends everything it started. Everywhere, it leads its own
 * session and process group, has core dumps off and a bound on open files,
 * and dies with the server (PR_SET_PDEATHSIG). */
#ifndef LISPMCP_SANDBOX_H
#define LISPMCP_SANDBOX_H

#include <sys/types.h>

#define SANDBOX_FDS 4

typedef struct sandbox_spec {
    const char  *file;             /* absolute path of the program */
    char *const *argv;
    int          fds[SANDBOX_FDS]; /* become the child's fd 1, 2, 3 and 4; fd 0 is /dev/null */
    int          max_open_files;
} sandbox_spec_t;

typedef enum sandbox_level {
    SANDBOX_NAMESPACES,    /* own PID and mount namespaces */
    SANDBOX_PROCESS_GROUP  /* only its own session and process group */
} sandbox_level_t;

/* Start the program. Returns its pid (as the server sees it) or a negative
 * errno (for instance -ENOENT when it cannot be executed). */
pid_t sandbox_spawn(const sandbox_spec_t *spec, sandbox_level_t *level);

#endif
