#!/usr/bin/env bash
# Builds and runs Ember's fuzz targets (tests/fuzz: libFuzzer + AddressSanitizer + UndefinedBehaviorSanitizer, built
# with clang by --config=fuzz). The committed corpora are never modified except by `merge`.
#
#   tools/fuzz.sh ci [SECONDS]         replay every committed corpus, then fuzz each target for a fixed, seeded
#                                      number of inputs (at most SECONDS, default 120), two at a time; any crash,
#                                      leak, timeout or sanitizer report fails (./ember test)
#   tools/fuzz.sh long [RUNS [TARGET...]]  each target (default: all) for RUNS executions (default 10,000,000),
#                                      FUZZ_JOBS at a time (default 1); writes fuzz-results/<date>-<commit>.md with
#                                      executions, coverage, corpus
#   tools/fuzz.sh run TARGET [ARGS]    one target on a scratch copy of its corpus, libFuzzer flags passed through
#   tools/fuzz.sh replay [TARGET]      the committed corpora once (no fuzzing)
#   tools/fuzz.sh findings             which saved crashing inputs (tests/fuzz/findings) still crash
#   tools/fuzz.sh merge TARGET DIR     adds DIR's inputs that reach new code to TARGET's committed corpus
#   tools/fuzz.sh seeds                rewrites the generated seeds (kernel signatures; programs need the venv)
#   tools/fuzz.sh targets | flags TARGET | bin [TARGET...]   the targets; one's libFuzzer flags; builds the named
#                                      targets and prints "TARGET BINARY" for each (tools/heavy's fuzz tier)
#
# Targets: TARGETS below (xnnpack_blob_fuzz built with --config=fuzz_xnnpack, the rest with --config=fuzz: one output
# tree, see tests/fuzz/README.md). Crashes are written to $FUZZ_OUT
# (default: out/fuzz), named <target>-crash-<sha1>; reproduce one with
# `bazel-out/k8-optfuzz/bin/tests/fuzz/<target> FILE` (EMBER_FUZZ_LOG=1 prints the runtime's errors).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# kernel_fuzz first: the slowest (about 5,500 executions/s against 10,000-30,000 for the others).
TARGETS=(kernel_fuzz program_fuzz data_loader_fuzz bundled_program_fuzz runner_fill_fuzz ptd_fuzz)
TARGETS+=(grammar_fuzz server_request_fuzz)
# The tokenizer files' readers (examples/llm/tokenizer).
TARGETS+=(tokenizer_json_fuzz sentencepiece_fuzz)
TARGETS+=(xnnpack_blob_fuzz chat_template_fuzz)
OUT="${FUZZ_OUT:-$ROOT/out/fuzz}"
BIN=""
PY="$ROOT/.venv/bin/python3"
[[ -x "$PY" ]] || PY=python3

corpus_of() { echo "tests/fuzz/corpus/${1%_fuzz}"; }

# Per-target libFuzzer flags: a dictionary where there is one, and a time limit per input well above the
# slowest legitimate one (a mutated program may plan megabytes and run real convolutions under the sanitizers).
flags_of() {
  local f=(-timeout=25 -rss_limit_mb=2560 -print_final_stats=1)
  case "$1" in
    program_fuzz) f+=(-dict=tests/fuzz/program.dict -max_len=65536) ;;
    kernel_fuzz) f+=(-max_len=4096) ;;
    data_loader_fuzz) f+=(-max_len=16384) ;;
    runner_fill_fuzz) f+=(-max_len=256) ;;
    bundled_program_fuzz) f+=(-max_len=16384) ;;
    ptd_fuzz) f+=(-max_len=8192) ;;
    chat_template_fuzz) f+=(-max_len=4096) ;;
    grammar_fuzz) f+=(-dict=tests/fuzz/grammar.dict -max_len=4096) ;;
    server_request_fuzz) f+=(-dict=tests/fuzz/server_request.dict -max_len=8192) ;;
    tokenizer_json_fuzz) f+=(-dict=tests/fuzz/tokenizer_json.dict -max_len=8192) ;;
    sentencepiece_fuzz) f+=(-max_len=8192) ;;
    xnnpack_blob_fuzz) f+=(-dict=tests/fuzz/xnnpack_blob.dict -max_len=16384) ;;
  esac
  echo "${f[@]}"
}

# Builds what the named targets (default: all) need: --config=fuzz's //tests/fuzz:all, and --config=fuzz_xnnpack's
# xnnpack_blob_fuzz (it links the XnnpackBackend and Debian's libXNNPACK; the same output tree, so it compiles only
# the backend's files on top of the first build).
build() {
  local wanted=" ${*:-${TARGETS[*]}} " others="${*:-${TARGETS[*]}}"
  others="${others//xnnpack_blob_fuzz/}"
  : >"$OUT/build.log"
  if [[ -n "${others// /}" ]]; then
    bazel build --config=fuzz //tests/fuzz:all >>"$OUT/build.log" 2>&1 || {
      tail -n 30 "$OUT/build.log" >&2
      echo "fuzz: bazel build --config=fuzz //tests/fuzz:all failed (log: $OUT/build.log)" >&2
      exit 1
    }
    BIN="$(bazel info --config=fuzz bazel-bin 2>/dev/null)/tests/fuzz"
  fi
  if [[ "$wanted" == *" xnnpack_blob_fuzz "* ]]; then
    bazel build --config=fuzz_xnnpack //tests/fuzz:xnnpack_blob_fuzz >>"$OUT/build.log" 2>&1 || {
      tail -n 30 "$OUT/build.log" >&2
      echo "fuzz: bazel build --config=fuzz_xnnpack //tests/fuzz:xnnpack_blob_fuzz failed (log: $OUT/build.log)" >&2
      exit 1
    }
    BIN_XNNPACK="$(bazel info --config=fuzz_xnnpack bazel-bin 2>/dev/null)/tests/fuzz"
  fi
}
# The directory holding target $1's binary.
bin_of() { if [[ "$1" == xnnpack_blob_fuzz ]]; then echo "$BIN_XNNPACK"; else echo "$BIN"; fi; }

# Inputs whose replay is part of every run: the committed corpus, and regression files that live elsewhere.
replay_dirs() {
  local dirs=("$(corpus_of "$1")")
  # The program findings of issue 19 and of this fuzzer, kept as runtime/executor regression test data.
  local findings=runtime/executor/test/testdata/fuzz_findings
  if [[ "$1" == program_fuzz && -d $findings ]]; then dirs+=("$findings"); fi
  echo "${dirs[@]}"
}

replay() {
  local t="$1"
  # shellcheck disable=SC2046
  "$(bin_of "$t")/$t" $(flags_of "$t") -runs=0 -artifact_prefix="$OUT/$t-replay-" $(replay_dirs "$t") \
    >"$OUT/$t-replay.log" 2>&1 || {
    echo "fuzz: $t: replay of $(replay_dirs "$t") FAILED; see $OUT/$t-replay.log:" >&2
    grep -E "ERROR|runtime error|Test unit written|Running: " "$OUT/$t-replay.log" | tail -n 8 >&2
    return 1
  }
  echo "fuzz: $t: replayed $(grep -o 'Done [0-9]* runs' "$OUT/$t-replay.log" | cut -d' ' -f2) inputs"
}

# Fuzzes one target for $2 seconds (or, with $3 = runs, $2 executions) on a scratch copy of its corpus.
fuzz_one() {
  local t="$1" amount="$2" kind="${3:-seconds}" work="$OUT/$t-corpus"
  rm -rf "$work" && mkdir -p "$work"
  cp "$(corpus_of "$t")"/* "$work"/
  local limit=(-max_total_time="$amount")
  [[ "$kind" == runs ]] && limit=(-runs="$amount")
  local start=$SECONDS status=0
  # shellcheck disable=SC2046
  "$(bin_of "$t")/$t" $(flags_of "$t") "${limit[@]}" "${EXTRA_FLAGS[@]}" -artifact_prefix="$OUT/$t-" "$work" >"$OUT/$t.log" 2>&1 || status=$?
  local done_line execs rate
  done_line="$(grep -E '^#[0-9]+[[:space:]]+DONE' "$OUT/$t.log" | tail -n 1 || true)"
  execs="$(grep -o 'number_of_executed_units: [0-9]*' "$OUT/$t.log" | awk '{print $2}' || true)"
  rate="$(grep -o 'average_exec_per_sec: *[0-9]*' "$OUT/$t.log" | awk '{print $2}' || true)"
  if [[ $status != 0 ]]; then
    echo "fuzz: $t FAILED after $((SECONDS - start)) s; see $OUT/$t.log:" >&2
    grep -E "ERROR|runtime error|SUMMARY|Test unit written" "$OUT/$t.log" | head -n 8 >&2
    return 1
  fi
  echo "fuzz: $t: ${execs:-?} executions in $((SECONDS - start)) s (${rate:-?}/s), ${done_line#*DONE   }"
}

EXTRA_FLAGS=()
# CI fuzzes a fixed prefix of one seeded sequence: the same inputs on every run, so a CI failure is a regression in
# the change under test, never a lucky new finding (those are for `long`, whose seed varies). Each target's prefix
# was run to the end with no finding at the commit that set these numbers: about 20-30 s each on a 2-core VM, so
# twelve targets fit CI's time (the first six had a minute each while they were the only ones).
ci_runs_of() {
  case "$1" in
    program_fuzz) echo 400000 ;;
    data_loader_fuzz) echo 500000 ;;
    runner_fill_fuzz) echo 1000000 ;;
    kernel_fuzz) echo 250000 ;;
    bundled_program_fuzz) echo 150000 ;;
    ptd_fuzz) echo 100000 ;;
    grammar_fuzz) echo 5500 ;;
    server_request_fuzz) echo 40000 ;;
    tokenizer_json_fuzz) echo 25000 ;;
    sentencepiece_fuzz) echo 30000 ;;
    xnnpack_blob_fuzz) echo 300000 ;;
    chat_template_fuzz) echo 60000 ;;
  esac
}
CI_SEED=20261123

cmd="${1:-}"; shift || true
mkdir -p "$OUT"
case "$cmd" in
  ci)
    seconds="${1:-120}"
    build
    status=0
    for t in "${TARGETS[@]}"; do replay "$t" || status=1; done
    # Two at a time: the machine has two cores and nothing else runs at this point of CI.
    pids=()
    for t in "${TARGETS[@]}"; do
      EXTRA_FLAGS=(-seed="$CI_SEED" -runs="$(ci_runs_of "$t")")
      fuzz_one "$t" "$seconds" & pids+=($!)
      if (( ${#pids[@]} == 2 )); then
        for p in "${pids[@]}"; do wait "$p" || status=1; done
        pids=()
      fi
    done
    for p in "${pids[@]}"; do wait "$p" || status=1; done
    exit $status
    ;;
  long)
    runs="${1:-10000000}"; shift || true
    targets=("${@:-${TARGETS[@]}}")
    jobs="${FUZZ_JOBS:-1}"
    build "${targets[@]}"
    commit="$(git rev-parse --short HEAD)"
    mkdir -p fuzz-results
    results="fuzz-results/$(date +%Y-%m-%d)-$commit.md"
    # The table's one formatter is tools/fuzz_results.py (tools/heavy's fuzz tier writes it too).
    "$PY" tools/fuzz_results.py header "$runs" "$commit" "$jobs at a time" > "$results"
    # One target's row, from its log: the DONE line, or the last status line when it stopped on a finding.
    long_one() {
      local t="$1" start=$SECONDS result=ok
      fuzz_one "$t" "$runs" runs || result=FAILED
      "$PY" tools/fuzz_results.py row "$t" "$result" "$((SECONDS - start))" "$OUT/$t.log" > "$OUT/$t.row"
      [[ $result == ok ]]
    }
    status=0
    running=0
    # A pool of FUZZ_JOBS: the next target starts as soon as any one finishes (kernel_fuzz takes three times as
    # long as the next slowest, so name it first).
    for t in "${targets[@]}"; do
      rm -f "$OUT/$t.row"
      if (( running >= jobs )); then wait -n || status=1; running=$((running - 1)); fi
      long_one "$t" &
      running=$((running + 1))
    done
    while (( running > 0 )); do wait -n || status=1; running=$((running - 1)); done
    for t in "${targets[@]}"; do cat "$OUT/$t.row" >> "$results"; done
    echo >> "$results"
    echo "Command: \`FUZZ_JOBS=$jobs tools/fuzz.sh long $runs ${targets[*]}\`; logs and any crashing inputs in $OUT." \
      >> "$results"
    echo "fuzz: results in $results"
    exit $status
    ;;
  targets) echo "${TARGETS[@]}" ;;
  flags) flags_of "${1:?usage: tools/fuzz.sh flags TARGET}" ;;
  bin)
    build "$@"
    for t in "${@:-${TARGETS[@]}}"; do echo "$t $(bin_of "$t")/$t"; done
    ;;
  run)
    t="${1:?usage: tools/fuzz.sh run TARGET [libFuzzer flags]}"; shift
    build "$t"
    work="$OUT/$t-corpus"
    mkdir -p "$work" && cp -n "$(corpus_of "$t")"/* "$work"/
    # shellcheck disable=SC2046
    exec "$(bin_of "$t")/$t" $(flags_of "$t") -artifact_prefix="$OUT/$t-" "$@" "$work"
    ;;
  replay)
    build
    status=0
    chosen=("${TARGETS[@]}")
    [[ $# -gt 0 ]] && chosen=("$@")
    for t in "${chosen[@]}"; do replay "$t" || status=1; done
    exit $status
    ;;
  findings)
    build
    for f in tests/fuzz/findings/*/*; do
      [[ -f "$f" ]] || continue
      t="$(basename "$(dirname "$f")")_fuzz"
      if "$(bin_of "$t")/$t" -runs=1 "$f" >/dev/null 2>&1; then echo "fixed:   $f"; else echo "crashes: $f"; fi
    done
    ;;
  merge)
    t="${1:?usage: tools/fuzz.sh merge TARGET DIR}"; dir="${2:?usage: tools/fuzz.sh merge TARGET DIR}"
    build "$t"
    # shellcheck disable=SC2046
    "$(bin_of "$t")/$t" $(flags_of "$t") -merge=1 "$(corpus_of "$t")" "$dir"
    ;;
  seeds)
    build
    EMBER_KERNEL_FUZZ_SEEDS="$(corpus_of kernel_fuzz)" "$BIN/kernel_fuzz"
    .venv/bin/python3 -m tests.fuzz.make_program_seeds --out "$(corpus_of program_fuzz)"
    .venv/bin/python3 -m tests.fuzz.make_xnnpack_seeds --out "$(corpus_of xnnpack_blob_fuzz)"
    ;;
  *) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; [[ -z "$cmd" || "$cmd" == -h || "$cmd" == --help ]] || exit 2 ;;
esac
