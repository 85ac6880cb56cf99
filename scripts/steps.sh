# Sourced by serve.sh and test.sh: run one install step quietly. Its output goes to a log
# and is shown only if the step fails, followed by one line naming what could not be had.
step() {
  local what=$1; shift
  local log
  log=$(mktemp "${TMPDIR:-/tmp}/kafkalite-step.XXXXXX")
  if "$@" >"$log" 2>&1; then
    rm -f "$log"
  else
    tail -n 30 "$log" >&2
    echo "$(basename "$0"): could not $what (full output: $log)" >&2
    exit 1
  fi
}
