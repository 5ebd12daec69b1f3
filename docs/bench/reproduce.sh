#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Re-runs the end-to-end benchmark exactly as for the results committed in docs/bench/ and
# regenerates docs/benchmarks.md from them. Run from the repository root; needs Java 17 and
# Maven. Five invocations, one results file each (see docs/benchmarks.md, "Commands"):
#   1. latency s3-like, agg at 100 k and 1 M keys, every set-up;
#   2. latency s3-like, agg at 10 M keys and dedup at 1 M keys, Strata and the tuned peer;
#   3. latency none, agg at 100 k keys, and the request-count run (200 partitions), for Strata,
#      Strata with its checkpoint file manager, both RocksDB changelog set-ups and tuned HDFS;
#   4. latency s3-like, 30 one-batch runs at 1 M keys (restore cost against the number of runs),
#      Strata, the tuned RocksDB changelog set-up and tuned HDFS;
#   5. latency s3-like, agg at 1 M and 10 M keys, Strata alone, with its restore path measured
#      again with no query running (the download rate against the ceiling, issue 15).
# Each writes its file after every run and regenerates the page from all five files, so any
# one line can be re-run alone.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=$PWD/docs/bench
common="--warmup 2 --steady 10 --request-partitions 0"
mvn -B -q -Pbench -DskipTests verify -Dbench.out="$B/e2e-s3-like.json" \
  -Dbench.e2e="$B/e2e-s3-like.json,$B/e2e-s3-like-10m.json,$B/e2e-none.json,$B/e2e-runs.json,$B/e2e-restore-alone.json" \
  -Dbench.args="--latency s3-like --sizes 100000,1000000 --dedup-sizes none $common --heap 6g"
mvn -B -q -Pbench -DskipTests verify -Dbench.out="$B/e2e-s3-like-10m.json" \
  -Dbench.e2e="$B/e2e-s3-like.json,$B/e2e-s3-like-10m.json,$B/e2e-none.json,$B/e2e-runs.json,$B/e2e-restore-alone.json" \
  -Dbench.args="--latency s3-like --sizes 10000000 --dedup-sizes 1000000 --setups strata,rocksdb-changelog-tuned $common --heap 12g"
mvn -B -q -Pbench -DskipTests verify -Dbench.out="$B/e2e-none.json" \
  -Dbench.e2e="$B/e2e-s3-like.json,$B/e2e-s3-like-10m.json,$B/e2e-none.json,$B/e2e-runs.json,$B/e2e-restore-alone.json" \
  -Dbench.args="--latency none --sizes 100000 --dedup-sizes none --setups strata,strata-checkpoint,rocksdb-changelog-default,rocksdb-changelog-tuned,hdfs-tuned --warmup 2 --steady 10 --request-partitions 200 --request-size 100000 --heap 6g"
mvn -B -q -Pbench -DskipTests verify -Dbench.out="$B/e2e-runs.json" \
  -Dbench.e2e="$B/e2e-s3-like.json,$B/e2e-s3-like-10m.json,$B/e2e-none.json,$B/e2e-runs.json,$B/e2e-restore-alone.json" \
  -Dbench.args="--latency s3-like --sizes none --dedup-sizes none --setups strata,rocksdb-changelog-tuned,hdfs-tuned --request-partitions 0 --one-batch-runs 30 --runs-size 1000000 --heap 8g"
mvn -B -q -Pbench -DskipTests verify -Dbench.out="$B/e2e-restore-alone.json" \
  -Dbench.e2e="$B/e2e-s3-like.json,$B/e2e-s3-like-10m.json,$B/e2e-none.json,$B/e2e-runs.json,$B/e2e-restore-alone.json" \
  -Dbench.args="--latency s3-like --sizes 1000000,10000000 --dedup-sizes none --setups strata --warmup 2 --steady 10 --request-partitions 0 --heap 8g"
