#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fault campaign (issue 43; docs/operations.md, "Fault campaign"): a stateful job on a Spark
# 4.1 standalone cluster (a master, two workers, executors as JVMs) with its checkpoint on
# S3Proxy behind a fault-injecting relay, for N minutes of random faults (kill -9 of the driver
# and of executors, 503 storms, lost writes, slow and reset connections, dropped answers, a
# zombie driver), every answer compared with Spark's HDFS-backed provider's on the same input.
# Prints the table (also in src/spark-4.1/target/fault-campaign/report.md); fails if any answer
# is wrong or missing, an object is beyond the collection bound or left after the final
# collection, or `strata verify` finds a problem.
#
# Usage: docs/campaign/fault-campaign.sh [minutes, default 60] [seed, default 43]
# The minutes count from the job's start (faults begin once its first batch answered); the
# build before and the wrap-up after (final collection, oracle, tool runs) add about 6 minutes.
# A run shorter than about 6 minutes does not reach every kind of fault (one every 15 to 45 s,
# each kind once in every eight). Maven options go in MAVEN_OPTS (for example
# -Dmaven.repo.local=...); the script installs the build into that local repository.
# Run from a clone with Java 17 and Maven; nothing else may use the machine's cores meanwhile if
# the figures are to be compared with docs/operations.md's.
set -euo pipefail
cd "$(dirname "$0")/../.."
minutes=${1:-60}
seed=${2:-43}
# The runtime jar (which the job's executors and driver run) and the tool jar, tests skipped.
mvn -B -ntp -q install -DskipTests
mvn -B -ntp -pl src/spark-4.1 verify -Dconformance.skip=true -Dtest=NONE \
  -Dsurefire.failIfNoSpecifiedTests=false -Dit.test=FaultCampaignIT \
  -Dfailsafe.failIfNoSpecifiedTests=false \
  -Dstrata.campaign.minutes="$minutes" -Dstrata.campaign.seed="$seed"
cat src/spark-4.1/target/fault-campaign/report.md
