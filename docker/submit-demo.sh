#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The job container's command (docker/compose.yaml): spark-submit of the flights demo to the
# standalone cluster in client mode, so the driver runs here and prints the demo's lines.
#
#   - Strata's runtime jar is in $SPARK_HOME/jars of every container (docker/Dockerfile). The
#     application jar is the demo's (strata-examples, with strata-testkit beside it), as local:
#     (in the image on every node, nothing shipped); neither is on Spark's own class path.
#   - Spark's settings: $SPARK_HOME/conf/spark-defaults.conf (docker/conf, shared with the
#     cluster test); where S3 is comes from the demo's --endpoint below; the credentials from
#     AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (the AWS default chain), never printed here.
#   - The demo's data and work dir are on paths every worker sees at the same place: the data
#     in the image, the work dir on the shared volume.
#
# Environment (set by compose): SPARK_MASTER_URL, S3_ENDPOINT, CHECKPOINT, WORK_DIR,
# DRIVER_MEMORY, EXECUTOR_MEMORY, DEMO_ARGS (extra demo options, split on spaces); STRATA_JAR,
# STRATA_DEMO_JAR, STRATA_TESTKIT_JAR, STRATA_DEMO_LOG4J and FLIGHTS_DATA (set by the image).
set -euo pipefail

: "${SPARK_MASTER_URL:?}" "${S3_ENDPOINT:?}" "${CHECKPOINT:?}" "${WORK_DIR:?}"
: "${STRATA_JAR:?}" "${STRATA_DEMO_JAR:?}" "${STRATA_TESTKIT_JAR:?}" "${STRATA_DEMO_LOG4J:?}"
: "${FLIGHTS_DATA:?}"

# Extra demo options, e.g. DEMO_ARGS="--max-rows 500000 --partitions 16".
set -f # split on spaces, but expand no wildcards
# shellcheck disable=SC2206 # split on purpose
extra=(${DEMO_ARGS:-})
set +f

args=(
  --master "$SPARK_MASTER_URL"
  --deploy-mode client
  --name strata-flights-demo
  --class io.strata.demo.FlightsDemo
  --driver-memory "${DRIVER_MEMORY:-2g}"
  --executor-memory "${EXECUTOR_MEMORY:-2g}"
  --jars "local://$STRATA_TESTKIT_JAR"
  # The demo's quiet log configuration (Spark at WARN); spark-submit starts logging before
  # the demo's main could choose it.
  --driver-java-options "-Dlog4j2.configurationFile=$STRATA_DEMO_LOG4J"
  "local://$STRATA_DEMO_JAR"
  --data "$FLIGHTS_DATA"
  --checkpoint "$CHECKPOINT"
  --endpoint "$S3_ENDPOINT"
  --path-style
  --work-dir "$WORK_DIR"
  "${extra[@]}"
)

mkdir -p "$WORK_DIR"
echo "spark-submit ${args[*]}"
exec /opt/spark/bin/spark-submit "${args[@]}"
