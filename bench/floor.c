/* floor.c - the benchmark's floor: an MCP "server" that evaluates nothing.
 *
 * It answers every request line on stdin with one canned line on stdout,
 * shaped like lispmcp's answer to evaluate-lisp, so that bench.c can measure
 * what the client, the pipes and the kernel cost by themselves in the same
 * run. The id is copied from the request so the client can match answers. */
#include <stdio.h>
#include <string.h>

int main(void)
{
    char line[1 << 16];
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    while (fgets(line, sizeof line, stdin)) {
        const char *id = strstr(line, "\"id\":");
        if (id == NULL)
            continue;   /* a notification: no answer */
        id += 5;
        size_t n = strcspn(id, ",}");
        printf("{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"content\":[{\"type\":\"text\","
               "\"text\":\"=> 6\"}],\"structuredContent\":{\"values\":[\"6\"],\"stdout\":\"\","
               "\"stderr\":\"\",\"warnings\":[],\"package\":\"COMMON-LISP-USER\","
               "\"session\":\"default\",\"timing\":{\"real-time-ms\":0.0}}}}\n", (int)n, id);
        fflush(stdout);
    }
    return 0;
}
