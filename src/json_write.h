/* json_write.h - compact JSON text of a jansson value, appended to a buffer.
 *
 * Every message lispmcp sends is written here, once, straight into the
 * buffer the transport writes from. jansson's own json_dumps is several
 * times slower on the large strings an evaluation can return (it decodes
 * UTF-8 it has already validated and checks every container for cycles),
 * and its answers are what a session's round trip waits for. The output is
 * the same as json_dumps(JSON_COMPACT | JSON_REAL_PRECISION(12)). */
#ifndef LISPMCP_JSON_WRITE_H
#define LISPMCP_JSON_WRITE_H

#include <jansson.h>

#include "util.h"

void json_write(buf_t *out, const json_t *value);
void json_write_string(buf_t *out, const char *s, size_t len);   /* quoted, escaped */
char *json_text(const json_t *value);   /* malloc'd and NUL-terminated */

#endif
