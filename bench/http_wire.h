/* http_wire.h - the bench's HTTP/1.1 on plain sockets: reading a message
 * (head, Content-Length or chunked body) and writing one, shared by the
 * client and the canned floor responder in http.c. */
#ifndef BENCH_HTTP_WIRE_H
#define BENCH_HTTP_WIRE_H

#include <netinet/in.h>
#include <stddef.h>
#include <sys/types.h>

#define READ_BUF       (64 * 1024)
#define LINE_MAX_LEN   8192          /* one status or header line */
#define MAX_HEADERS    100
#define MAX_BODY       (16 << 20)
#define SESSION_MAX    128

typedef struct reader {
    int    fd;
    size_t pos, len;
    char   buf[READ_BUF];
} reader_t;

typedef struct head {
    int  status;             /* responses only */
    long length;             /* Content-Length, -1 if none */
    int  chunked;
    int  close;              /* Connection: close */
    char session[SESSION_MAX];
} head_t;

typedef struct body {
    char  *data;             /* NUL-terminated, for strstr */
    size_t len, cap;
} body_t;

/* Print what went wrong the first time only; later problems are counted. */
void note_once(const char *what);

/* 0 on success, -1 on EOF, error or a malformed message. */
int  read_head(reader_t *r, head_t *h, int response);
int  read_body(reader_t *r, const head_t *h, body_t *b);
int  read_exact(reader_t *r, char *dst, size_t n);
int  body_reserve(body_t *b, size_t more);
int  send_all(int fd, const char *p, size_t n);
void set_nodelay(int fd);
struct sockaddr_in loopback(int port);

#endif
