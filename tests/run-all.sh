#!/bin/sh
# Run every test of lispmcp: the C unit tests given as arguments (Check
# programs), then the end-to-end tests (node's test runner driving the real
# build/lispmcp through the official MCP SDK client). Ends with one line CI
# reads: "N passed, M failed".
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
export LISPMCP_BIN="${LISPMCP_BIN:-$PWD/$BUILD/lispmcp}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
passed=0
failed=0

# Add one runner's counts; a nonzero exit with no failure counted is a failure.
add_counts() { # passed failed exit-status
    passed=$((passed + $1))
    failed=$((failed + $2))
    [ "$3" -ne 0 ] && [ "$2" -eq 0 ] && failed=$((failed + 1))
}

for t in "$@"; do
    echo "== $t"
    "$t" >"$log" 2>&1
    status=$?
    cat "$log"
    # Check's summary: "100%: Checks: 12, Failures: 0, Errors: 0"
    line=$(grep -E 'Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$log" | tail -n 1)
    if [ -z "$line" ]; then
        echo "$t: no summary (exit $status)"
        failed=$((failed + 1))
        continue
    fi
    n=$(echo "$line" | sed -E 's/.*Checks: ([0-9]+).*/\1/')
    f=$(echo "$line" | sed -E 's/.*Failures: ([0-9]+).*/\1/')
    e=$(echo "$line" | sed -E 's/.*Errors: ([0-9]+).*/\1/')
    add_counts $((n - f - e)) $((f + e)) "$status"
done

# Run node's test runner on a folder and add its counts to the totals.
node_tests() {
    echo "== $1"
    node --test --test-reporter=tap --test-concurrency=2 "$1" >"$log" 2>&1
    status=$?
    cat "$log"
    p=$(grep -E '^# pass [0-9]+' "$log" | tail -n 1 | sed -E 's/# pass //')
    f=$(grep -E '^# fail [0-9]+' "$log" | tail -n 1 | sed -E 's/# fail //')
    if [ -z "$p" ] || [ -z "$f" ]; then
        echo "$1: no summary (exit $status)"
        failed=$((failed + 1))
        return
    fi
    add_counts "$p" "$f" "$status"
}

node_tests tests/e2e/
# valgrind cannot run a sanitizer build: the leak check runs with the plain one.
[ "$BUILD" = build ] && node_tests tests/valgrind/

echo "== conformance (the official MCP suite, over HTTP)"
tests/conformance/run.sh >"$log" 2>&1
status=$?
cat "$log"
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
if [ -z "$line" ]; then
    echo "conformance: no summary (exit $status)"
    failed=$((failed + 1))
else
    p=${line%% passed*}
    f=${line#*, }
    f=${f%% failed}
    add_counts "$p" "$f" "$status"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
