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

# Each parser reads a runner's output in $log and prints "PASSED FAILED", or
# nothing when the runner printed no summary.
check_counts() { # "100%: Checks: 12, Failures: 0, Errors: 0"
    grep -E 'Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$log" | tail -n 1 |
        sed -E 's/.*Checks: ([0-9]+), Failures: ([0-9]+), Errors: ([0-9]+).*/\1 \2 \3/' |
        while read -r n f e; do echo "$((n - f - e)) $((f + e))"; done
}
tap_counts() { # "# pass 12" and "# fail 0"
    p=$(grep -E '^# pass [0-9]+' "$log" | tail -n 1 | sed -E 's/# pass //')
    f=$(grep -E '^# fail [0-9]+' "$log" | tail -n 1 | sed -E 's/# fail //')
    [ -n "$p" ] && [ -n "$f" ] && echo "$p $f"
}
plain_counts() { # "12 passed, 0 failed"
    grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1 | sed -E 's/ passed, / /; s/ failed//'
}

# Run one runner, show its output, and add its counts: a runner without a
# summary, or one that failed without counting a failure, counts as failed.
stage() { # NAME PARSER COMMAND...
    name=$1 parser=$2
    shift 2
    echo "== $name"
    "$@" >"$log" 2>&1
    status=$?
    cat "$log"
    counts=$($parser)
    if [ -z "$counts" ]; then
        echo "$name: no summary (exit $status)"
        failed=$((failed + 1))
        return
    fi
    # shellcheck disable=SC2086
    add_counts $counts "$status"
}

for t in "$@"; do
    stage "$t" check_counts "$t"
done
node_test() { node --test --test-reporter=tap --test-concurrency=2 "$1"; }
stage "end-to-end (tests/e2e)" tap_counts node_test tests/e2e/
# valgrind cannot run a sanitizer build: the leak check runs with the plain one.
if [ "$BUILD" = build ]; then
    stage "valgrind (tests/valgrind)" tap_counts node_test tests/valgrind/
fi
stage "conformance (the official MCP suite, over HTTP)" plain_counts tests/conformance/run.sh

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
