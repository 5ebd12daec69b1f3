// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.util.List;
import java.util.Map;
import scala.Option;
import scala.Predef$;
import scala.Tuple2;
import scala.collection.JavaConverters;

/**
 * Small Java-to-Scala conversions used by the adapter, for Scala 2.12 (Spark 3.5); the Scala 2.13
 * build has its own copy under {@code scala-2.13/} (2.13 replaced these converters).
 */
final class Scala {
  private Scala() { }

  static <T> scala.collection.immutable.Seq<T> seq(List<T> list) {
    return JavaConverters.asScalaBuffer(list).toList();
  }

  static <K, V> scala.collection.immutable.Map<K, V> map(Map<K, V> map) {
    return JavaConverters.mapAsScalaMap(map).toMap(Predef$.MODULE$.<Tuple2<K, V>>$conforms());
  }

  static <K, V> Map<K, V> javaMap(scala.collection.Map<K, V> map) {
    return JavaConverters.mapAsJavaMap(map);
  }

  static <T> Option<T> some(T value) {
    return Option.apply(value);
  }

  static <T> Option<T> none() {
    return Option.empty();
  }
}
