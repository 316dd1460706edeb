#!/bin/sh
# Runs one fuzz target for a number of seconds: its growing corpus in
# BUILD/fuzz/corpus-<name>, seeded from tests/fuzz/seeds/<name without
# fuzz_>/ when that exists; what it finds (crash-, leak-, timeout- files)
# goes to BUILD/fuzz/artifacts/, never to the working directory. One line
# of output; libFuzzer's whole output in BUILD/fuzz/log-<name>; the
# target's exit status (a finding fails it).
# Usage: run-one.sh SECONDS BUILD/fuzz TARGET
set -u
seconds=$1 dir=$2 target=$3
name=$(basename "$target")
corpus=$dir/corpus-$name
seeds=tests/fuzz/seeds/${name#fuzz_}
[ -d "$seeds" ] || seeds=
mkdir -p "$corpus" "$dir/artifacts"
log=$dir/log-$name
# shellcheck disable=SC2086 # $seeds is empty or one directory
"$target" -max_total_time="$seconds" -print_final_stats=0 \
  -artifact_prefix="$dir/artifacts/$name-" "$corpus" $seeds > "$log" 2>&1
rc=$?
echo "fuzzing $name for $seconds s: $(tail -n 1 "$log")"
if [ $rc != 0 ]; then
  echo "$name failed (exit $rc); its output:"; tail -n 40 "$log"
fi
exit $rc
