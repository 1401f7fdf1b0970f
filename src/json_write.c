/* json_write.c - compact JSON text of a jansson value; see json_write.h. */
#include "json_write.h"

#include <stdio.h>
#include <string.h>

static int needs_escape(unsigned char c)
{
    return c < 0x20 || c == '"' || c == '\\';
}

void json_write_string(buf_t *out, const char *s, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    buf_reserve(out, len + 2);
    out->data[out->len++] = '"';
    size_t run = 0;   /* start of the bytes not yet copied */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!needs_escape(c))
            continue;
        buf_append(out, s + run, i - run);
        run = i + 1;
        char esc[6] = {'\\', 0};
        size_t n = 2;
        switch (c) {
        case '"':  esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\t': esc[1] = 't'; break;
        case '\r': esc[1] = 'r'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            memcpy(esc, (char[]){'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]}, 6);
            n = 6;
        }
        buf_append(out, esc, n);
    }
    buf_append(out, s + run, len - run);
    buf_append(out, "\"", 1);
}

static void write_integer(buf_t *out, json_int_t v)
{
    char digits[24];
    size_t i = sizeof digits;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        digits[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        digits[--i] = '-';
    buf_append(out, digits + i, sizeof digits - i);
}

static void write_real(buf_t *out, double v)
{
    char text[40];
    int n = snprintf(text, sizeof text, "%.12g", v);
    if (n < 0 || (size_t)n >= sizeof text)
        n = snprintf(text, sizeof text, "0.0");
    /* As jansson writes it: an exponent without '+' or leading zeros, and a
     * ".0" that keeps a whole number a real when read back. */
    char *e = strchr(text, 'e');
    if (e) {
        char *digits = e + 1 + (e[1] == '-');
        char *from = e[1] == '+' ? e + 2 : digits;
        while (*from == '0' && from[1])
            from++;
        memmove(digits, from, strlen(from) + 1);
        n = (int)strlen(text);
    }
    buf_append(out, text, (size_t)n);
    if (strpbrk(text, ".e") == NULL)
        buf_append(out, ".0", 2);
}

void json_write(buf_t *out, const json_t *value)
{
    switch (json_typeof(value)) {
    case JSON_OBJECT: {
        const char *key;
        size_t key_len;
        json_t *member;
        int first = 1;
        buf_append(out, "{", 1);
        json_object_keylen_foreach((json_t *)value, key, key_len, member) {
            if (!first)
                buf_append(out, ",", 1);
            first = 0;
            json_write_string(out, key, key_len);
            buf_append(out, ":", 1);
            json_write(out, member);
        }
        buf_append(out, "}", 1);
        break;
    }
    case JSON_ARRAY:
        buf_append(out, "[", 1);
        for (size_t i = 0; i < json_array_size(value); i++) {
            if (i)
                buf_append(out, ",", 1);
            json_write(out, json_array_get(value, i));
        }
        buf_append(out, "]", 1);
        break;
    case JSON_STRING:
        json_write_string(out, json_string_value(value), json_string_length(value));
        break;
    case JSON_INTEGER: write_integer(out, json_integer_value(value)); break;
    case JSON_REAL:    write_real(out, json_real_value(value)); break;
    case JSON_TRUE:    buf_append(out, "true", 4); break;
    case JSON_FALSE:   buf_append(out, "false", 5); break;
    case JSON_NULL:    buf_append(out, "null", 4); break;
    }
}

char *json_text(const json_t *value)
{
    buf_t b;
    buf_init(&b);
    json_write(&b, value);
    buf_append(&b, "", 1);
    return b.data;
}
