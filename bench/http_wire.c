/* http_wire.c - the bench's HTTP/1.1 on plain sockets; see http_wire.h. */
#include "http_wire.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peer.h"

/* Say what went wrong the first time only: one broken connection would
 * otherwise print a line per call. */
static atomic_flag noted = ATOMIC_FLAG_INIT;

void note_once(const char *what)
{
    if (!atomic_flag_test_and_set(&noted))
        fprintf(stderr, "bench: http: %s (further problems are only counted)\n", what);
}

/* Called only when the buffer is used up, so it can start over. */
static ssize_t fill(reader_t *r)
{
    ssize_t n;
    do
        n = recv(r->fd, r->buf, sizeof r->buf, 0);
    while (n < 0 && errno == EINTR);
    r->pos = 0;
    r->len = n > 0 ? (size_t)n : 0;
    return n;
}

/* One line without its CRLF; -1 on EOF, error or a line too long. */
static int read_line(reader_t *r, char *line, size_t max)
{
    size_t n = 0;
    for (;;) {
        if (r->pos == r->len && fill(r) <= 0)
            return -1;
        char *start = r->buf + r->pos, *nl = memchr(start, '\n', r->len - r->pos);
        size_t take = nl ? (size_t)(nl - start) + 1 : r->len - r->pos;
        if (n + take >= max)
            return -1;
        memcpy(line + n, start, take);
        n += take;
        r->pos += take;
        if (nl)
            break;
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        n--;
    line[n] = '\0';
    return (int)n;
}

int read_exact(reader_t *r, char *dst, size_t n)
{
    while (n > 0) {
        if (r->pos == r->len && fill(r) <= 0)
            return -1;
        size_t take = r->len - r->pos < n ? r->len - r->pos : n;
        memcpy(dst, r->buf + r->pos, take);
        r->pos += take;
        dst += take;
        n -= take;
    }
    return 0;
}

int body_reserve(body_t *b, size_t more)
{
    if (b->len + more > MAX_BODY)
        return -1;
    size_t need = b->len + more + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need)
        cap *= 2;
    char *data = realloc(b->data, cap);
    if (data == NULL)
        die("realloc");
    b->data = data;
    b->cap = cap;
    return 0;
}

static int header_is(const char *line, size_t name_len, const char *name)
{
    return name_len == strlen(name) && strncasecmp(line, name, name_len) == 0;
}

static int parse_header(head_t *h, const char *line)
{
    const char *colon = strchr(line, ':');
    if (colon == NULL)
        return -1;
    size_t name_len = (size_t)(colon - line);
    const char *value = colon + 1;
    value += strspn(value, " \t");
    if (header_is(line, name_len, "Content-Length")) {
        char *end;
        errno = 0;
        long n = strtol(value, &end, 10);
        if (errno || end == value || *end != '\0' || n < 0 || n > MAX_BODY)
            return -1;
        h->length = n;
    } else if (header_is(line, name_len, "Transfer-Encoding")) {
        h->chunked = strcasestr(value, "chunked") != NULL;
    } else if (header_is(line, name_len, "Connection")) {
        h->close = strcasestr(value, "close") != NULL;
    } else if (header_is(line, name_len, "Mcp-Session-Id")) {
        size_t n = strlen(value);
        if (n >= sizeof h->session)
            return -1;
        memcpy(h->session, value, n + 1);
    }
    return 0;
}

/* The status line (or request line) and the headers. */
int read_head(reader_t *r, head_t *h, int response)
{
    char line[LINE_MAX_LEN];
    *h = (head_t){.length = -1};
    if (read_line(r, line, sizeof line) < 0)
        return -1;
    if (response ? sscanf(line, "HTTP/1.%*d %d", &h->status) != 1
                 : strncmp(line, "POST ", 5) != 0)
        return -1;
    for (int i = 0; i < MAX_HEADERS; i++) {
        int n = read_line(r, line, sizeof line);
        if (n < 0)
            return -1;
        if (n == 0)
            return 0;
        if (parse_header(h, line) < 0)
            return -1;
    }
    return -1;
}

static int read_chunked(reader_t *r, body_t *b)
{
    char line[LINE_MAX_LEN];
    for (;;) {
        if (read_line(r, line, sizeof line) < 0)
            return -1;
        char *end;
        errno = 0;
        unsigned long n = strtoul(line, &end, 16);
        if (errno || end == line || n > MAX_BODY)
            return -1;
        if (n == 0)
            break;
        if (body_reserve(b, n) < 0 || read_exact(r, b->data + b->len, n) < 0)
            return -1;
        b->len += n;
        if (read_line(r, line, sizeof line) != 0)   /* the CRLF after the data */
            return -1;
    }
    int n;
    while ((n = read_line(r, line, sizeof line)) > 0)
        ;                                         /* trailers */
    return n;
}

int read_body(reader_t *r, const head_t *h, body_t *b)
{
    b->len = 0;
    if (body_reserve(b, 0) < 0)
        die("body");
    if (h->chunked) {
        if (read_chunked(r, b) < 0)
            return -1;
    } else if (h->length >= 0) {
        if (body_reserve(b, (size_t)h->length) < 0 ||
            read_exact(r, b->data, (size_t)h->length) < 0)
            return -1;
        b->len = (size_t)h->length;
    } else if (!(h->status == 204 || h->status == 304 || (h->status >= 100 && h->status < 200))) {
        /* Only a close could end it, which a keep-alive client cannot use. */
        note_once("an answer with neither Content-Length nor chunked encoding");
        return -1;
    }
    b->data[b->len] = '\0';
    return 0;
}

int send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

void set_nodelay(int fd)
{
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
        die("setsockopt TCP_NODELAY");
}

struct sockaddr_in loopback(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    return a;
}
