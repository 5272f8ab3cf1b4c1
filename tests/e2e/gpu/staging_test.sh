#!/usr/bin/env bash
# tcp ring collectives with the data in GPU memory, staged through host memory (--gpu-staging):
# every pattern, three float types, both placements, odd sizes, wrong = 0; and a corrupted element
# is counted (exit 1). Exit 77 (skipped, with the reason) where no GPU is visible.
# Usage: staging_test.sh MPIEXEC FABRICBENCH
set -u
MPI=$1; FB=$2
run() { "$MPI" -np 2 --oversubscribe "$FB" --transport tcp --gpu-staging --timeout 60 --no-files "$@" 2>&1; }
out=$(run --collective all --dtype float32,float16,bfloat16 --placement both -b 1 -e 1M -f 7 -n 2 -w 1); rc=$?
reason=$(echo "$out" | grep -m1 -o 'skipped tcp: .*')
if [ $rc -eq 3 ] && [ -n "$reason" ]; then echo "SKIP: $reason"; exit 77; fi
echo "$out" | grep -E '^# (status|note)'
[ $rc -eq 0 ] || { echo "FAIL: staged run exited $rc"; echo "$out" | tail -20; exit 1; }
echo "$out" | grep -q 'GPU memory staged via host' || { echo "FAIL: rows not labelled as staged"; exit 1; }
out=$(run --collective allreduce -b 1K -e 1K -n 2 --fb-test-corrupt 1:7); rc=$?
echo "$out" | grep -E '^# status'
[ $rc -eq 1 ] && echo "$out" | grep -q '2 wrong elements in 2 rows' || { echo "FAIL: corruption not counted (exit $rc)"; exit 1; }
echo "PASS: staged rows correct, corruption counted"
