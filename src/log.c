/* log.c - leveled logging to stderr. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static log_level_t current_level = LOG_LEVEL_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};

void log_set_level(log_level_t level)
{
    current_level = level;
}

int log_level_parse(const char *name, log_level_t *out)
{
    for (int i = 0; i <= LOG_LEVEL_OFF; i++) {
        if (strcmp(name, level_names[i]) == 0) {
            *out = (log_level_t)i;
            return 0;
        }
    }
    if (strcmp(name, "warning") == 0) {
        *out = LOG_LEVEL_WARN;
        return 0;
    }
    return -1;
}

void log_msg(log_level_t level, const char *fmt, ...)
{
    if (level < current_level || level >= LOG_LEVEL_OFF)
        return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "lispmcp %s: %s\n", level_names[level], line);
}
