// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.state.StateSchemaCompatibilityChecker$;
import org.apache.spark.sql.execution.streaming.state.StateStoreColFamilySchema;
import org.apache.spark.sql.types.StructType;

/**
 * The schemas of a stopped query's stores as Spark recorded them, for {@link StrataRepartition}:
 * each store's {@link StatePlacement}. A store without column families gets its key and value
 * schema from Spark's state data source; a {@code transformWithState} store its column families
 * from the operator's state schema file, named by the operator's metadata (version 2, {@code
 * state/<op>/_metadata/v2/<batch>}, the newest at or before the batch read), read with Spark's
 * own reader ({@code StateSchemaCompatibilityChecker.readSchemaFile}). Both go through the
 * session's Hadoop file system for the checkpoint's scheme.
 */
final class StoreSchemas {
  /** Spark's setting for how state rows are encoded ({@code unsaferow} or {@code avro}). */
  static final String ENCODING_FORMAT = "spark.sql.streaming.stateStore.encodingFormat";
  private static final ObjectMapper JSON = new ObjectMapper();

  private StoreSchemas() { }

  /**
   * Store {@code s}'s placement at batch {@code batch}.
   *
   * @param conf the SQL settings the batch's offsets entry records
   * @throws StrataRepartition.Refused for a store the job cannot place, or a transformWithState
   *     store whose metadata or schema file is missing or unreadable, or whose rows are Avro
   * @throws IOException if the file system fails
   */
  static StatePlacement placement(SparkSession spark, String checkpoint, StrataRepartition.Store s,
      long batch, Map<String, String> conf) throws IOException {
    if (!StatePlacement.TRANSFORM_WITH_STATE.contains(s.operatorName())) {
      StructType schema = spark.read().format("statestore").option("batchId", batch)
          .option("operatorId", s.operatorId()).option("storeName", s.storeName())
          .load(checkpoint).schema();
      return StatePlacement.of(checkpoint, s, (StructType) schema.apply("key").dataType(),
          (StructType) schema.apply("value").dataType());
    }
    String where = checkpoint + ": operator " + s.operatorId() + " (" + s.operatorName() + ")";
    if ("avro".equalsIgnoreCase(conf.get(ENCODING_FORMAT))) {
      throw new StrataRepartition.Refused(where + " keeps its rows in Avro (" + ENCODING_FORMAT
          + "=avro in offsets/" + batch + "), which this job does not rewrite; it rewrites "
          + "transformWithState state encoded as unsaferow, Spark's default");
    }
    Configuration hadoop = spark.sessionState().newHadoopConf();
    Path dir = new Path(checkpoint + "/state/" + s.operatorId() + "/_metadata/v2");
    FileSystem fs = dir.getFileSystem(hadoop);
    long newest = -1;
    FileStatus[] listed;
    try {
      listed = fs.listStatus(dir);
    } catch (java.io.FileNotFoundException e) {
      listed = new FileStatus[0];
    }
    for (FileStatus f : listed) {
      String name = f.getPath().getName();
      if (name.matches("[0-9]{1,18}") && Long.parseLong(name) <= batch) {
        newest = Math.max(newest, Long.parseLong(name));
      }
    }
    if (newest < 0) {
      throw new StrataRepartition.Refused(where + " has no operator metadata at or before batch "
          + batch + " in " + dir + " (version 2, which names its state schema file)");
    }
    Path metadata = new Path(dir, Long.toString(newest));
    String text;
    try (InputStream in = fs.open(metadata)) {
      text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    String[] lines = text.split("\n", 3);
    if (lines.length < 2 || !lines[0].trim().equals("v2")) {
      throw new StrataRepartition.Refused(where + ": " + metadata + " is not operator metadata "
          + "version 2 (a line \"v2\", then JSON)");
    }
    JsonNode meta = JSON.readTree(lines[1]);
    JsonNode paths = meta.path("stateStoreInfo").path(0).path("stateSchemaFilePaths");
    if (!paths.isArray() || paths.isEmpty()) {
      throw new StrataRepartition.Refused(where + ": " + metadata + " names no state schema "
          + "file (stateStoreInfo[0].stateSchemaFilePaths)");
    }
    // The newest schema is the one the batch was written with (Spark's readSchemaFile reads it).
    Path schemaFile = new Path(paths.get(paths.size() - 1).asText());
    List<StateStoreColFamilySchema> families;
    try (FSDataInputStream in = schemaFile.getFileSystem(hadoop).open(schemaFile)) {
      families = scala.jdk.javaapi.CollectionConverters.asJava(
          StateSchemaCompatibilityChecker$.MODULE$.readSchemaFile(in));
    }
    JsonNode properties = JSON.readTree(meta.path("operatorPropertiesJson").asText("{}"));
    return StatePlacement.transformWithState(checkpoint, s, families, properties);
  }
}
