/* utf8.h - make arbitrary bytes into valid UTF-8 for JSON.
 *
 * Whatever a worker writes to its console, and any text cut at a byte limit,
 * may hold invalid or split sequences; the JSON we send must always be valid
 * UTF-8. Invalid bytes become U+FFFD, as a terminal would show them. */
#ifndef LISPMCP_UTF8_H
#define LISPMCP_UTF8_H

#include <jansson.h>
#include <stddef.h>

#include "util.h"

/* Length of the next valid sequence at s (1..4), or 0 if it is invalid. */
size_t utf8_sequence_length(const unsigned char *s, size_t n);

/* Append s to out, each invalid byte replaced by U+FFFD. */
void utf8_sanitize(buf_t *out, const char *s, size_t n);

/* A JSON string of s, sanitized. Never NULL. */
json_t *utf8_json_string(const char *s, size_t n);

/* The longest prefix of s, at most max bytes, that does not split a
 * sequence. */
size_t utf8_prefix(const char *s, size_t n, size_t max);

#endif
