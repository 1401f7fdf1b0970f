/* utf8.c - UTF-8 validation and repair (RFC 3629: no surrogates, no
 * overlong forms, nothing above U+10FFFF). */
#include "utf8.h"

size_t utf8_sequence_length(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;   /* bounds of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;          /* overlong */
        if (c == 0xED) hi = 0x9F;          /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;          /* overlong */
        if (c == 0xF4) hi = 0x8F;          /* above U+10FFFF */
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

void utf8_sanitize(buf_t *out, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t run = 0;   /* start of the current run of valid bytes */
    size_t i = 0;
    buf_reserve(out, n);
    while (i < n) {
        size_t len = utf8_sequence_length(u + i, n - i);
        if (len) {
            i += len;
            continue;
        }
        buf_append(out, s + run, i - run);
        buf_append(out, "\xEF\xBF\xBD", 3);
        run = ++i;
    }
    buf_append(out, s + run, i - run);
}

json_t *utf8_json_string(const char *s, size_t n)
{
    json_t *j = json_stringn(s, n);   /* valid input is the common case */
    if (j)
        return j;
    buf_t b;
    buf_init(&b);
    utf8_sanitize(&b, s, n);
    j = json_stringn(b.data ? b.data : "", b.len);
    buf_free(&b);
    return j;
}

size_t utf8_prefix(const char *s, size_t n, size_t max)
{
    if (n <= max)
        return n;
    size_t end = max;
    /* Step back over continuation bytes to the start of the split sequence. */
    while (end > 0 && ((unsigned char)s[end] & 0xC0) == 0x80)
        end--;
    return end;
}
