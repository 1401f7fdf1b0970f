/* util.h - allocation that never returns NULL, and a growable byte buffer.
 *
 * Like Redis' zmalloc, running out of memory is not something lispmcp tries to
 * limp through: xmalloc() and friends log and abort, so every other file can
 * use their results without a check. The byte buffer (buf_t) is the one
 * container used for lines, frames and captured console output. */
#ifndef LISPMCP_UTIL_H
#define LISPMCP_UTIL_H

#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

typedef struct buf {
    char  *data;
    size_t len;
    size_t cap;
} buf_t;

void buf_init(buf_t *b);
void buf_free(buf_t *b);
void buf_reserve(buf_t *b, size_t extra);
void buf_append(buf_t *b, const void *data, size_t len);
void buf_append_str(buf_t *b, const char *s);
void buf_printf(buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void buf_consume(buf_t *b, size_t n);   /* drop n bytes from the front */
void buf_clear(buf_t *b);

/* Monotonic clock in milliseconds, for idle times and elapsed figures. */
double now_ms(void);

#endif
