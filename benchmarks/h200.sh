#!/bin/bash
# The H200 runs behind docs/: the benchmarks program's report and the
# per-package benchmarks each issue names. The machine has no Go toolchain,
# so the binaries are built beforehand (../shared/device/prepare.sh builds
# the test binaries into .devrun/bin; `cd benchmarks && go build -o
# ../.devrun/bin/bench .` the program, which is a module of its own). Usage, from the project root on that machine:
#
#   source .devrun/gpu-env.sh && bash benchmarks/h200.sh report|tests|tier|split OUTDIR
#
# tier: the BTree's hot tier rows of docs/btree.md (Ranges read in parts
# over several cores, writes mixed with Ranges), about 5 minutes at most.
#
# Each step has its own time limit, so one slow step cannot stop the rest.
set -u
what=$1
out=${2:-/tmp/h200}
mkdir -p "$out"
bin=$PWD/.devrun/bin
root=$PWD
log=$out/$what.txt
step() {
	local limit=$1
	shift
	echo "== $(date +%T) $*" >>"$log"
	timeout "$limit" "$@" >>"$log" 2>&1
	echo "== rc=$?" >>"$log"
}

case $what in
report)
	step 540 "$bin/bench" -backend vulkan -sizes 1e6,1e7 -time 100ms -count 3 \
		-capacity-max 160GiB -build-budget 10s -deadline ${DEADLINE:-7m} -suites ${SUITES:-all} -out "$out/report" -format svg
	tar -C "$out" -czf "$out/report.tgz" report && rm -rf "$out/report"
	;;
tests)
	cd "$root/vmem"
	VMEM_BENCH_BIG=1 step 100 "$bin/vmem.test" -test.run X -test.benchtime 1s \
		-test.bench 'SliceGet$|SliceSet$|SliceBulk'
	VMEM_BENCH_SNAPSHOT_GIB=10 step 100 "$bin/vmem.test" -test.run X -test.benchtime 2x \
		-test.bench 'SliceSnapshot'
	VMEM_BENCH_SIZES=1e7,1e8 step 120 "$bin/vmem.test" -test.run X -test.benchtime 5x \
		-test.bench 'SliceSort/vulkan/uint64|SortScratch/vulkan'
	VMEM_BENCH_SIZES=1e7 step 60 "$bin/vmem.test" -test.run X -test.benchtime 20x \
		-test.bench 'SliceGather/vulkan/e64/1e7'
	cd "$root/collections"
	VMEM_BENCH_SIZES=1e6,64MiB,256MiB step 50 "$bin/collections.test" -test.run X -test.benchtime 20x \
		-test.bench 'Ring(PushBatch|PopBatch|SPSC)$'
	step 30 "$bin/collections.test" -test.run X -test.benchtime 10000000x -test.bench 'Ring(Push|Pop)$'
	VMEM_BENCH_SIZES=1e7,1e8 step 240 "$bin/collections.test" -test.run X -test.benchtime 10x \
		-test.bench 'Benchmark(MapGetBatch|MapPutBatch)$'
	VMEM_BENCH_SIZES=1e7,1e8 step 150 "$bin/collections.test" -test.run X -test.benchtime 10x \
		-test.bench 'ShardedMapGetBatch'
	VMEM_BENCH_SIZES=1.6e7 step 130 "$bin/collections.test" -test.run X -test.benchtime 1s \
		-test.bench 'BTree(Get|Scan|BulkLoad)$'
	;;
tier)
	cd "$root/collections"
	export VMEM_BENCH_SIZES=1 VMEM_BENCH_BTREE_SIZES=1.6e7 VMEM_BENCH_WARM=3.2e7
	VMEM_BENCH_GOROUTINES=1 VMEM_BENCH_SCAN_PARTS=1,4 step 150 "$bin/collections.test" -test.run X \
		-test.benchtime 300000x -test.count 2 -test.bench 'BTreeRangeParallel$/1.6e7/'
	# Put$ and Range100+Put10$ anchored: a level's regexp is unanchored.
	VMEM_BENCH_WARM=1.6e7 step 150 "$bin/collections.test" -test.run X -test.benchtime 200000x \
		-test.bench 'BTreeTier$/1.6e7/(Put|Range100\+Put10)$/zipf1.1'
	;;
split)
	# The default cutting of scan windows (btree_split.go) against none
	# (govram-split1), one and sixteen goroutines, twice; about 3 minutes.
	cd "$root/collections"
	VMEM_BENCH_SIZES=1 VMEM_BENCH_BTREE_SIZES=1.6e7 VMEM_BENCH_WARM=3.2e7 VMEM_BENCH_GOROUTINES=1,16 \
		VMEM_BENCH_SCAN_PARTS=1 step 170 "$bin/collections.test" -test.run X -test.benchtime 300000x \
		-test.count 2 -test.bench 'BTreeRangeParallel$/1.6e7/'
	;;
esac
