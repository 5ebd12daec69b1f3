// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.util.List;
import java.util.Map;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Small Java-to-Scala conversions used by the adapter, for Scala 2.13 (Spark 3.5 on 2.13, and
 * 4.x); the Scala 2.12 build has its own copy under {@code scala-2.12/}.
 */
final class Scala {
  private Scala() { }

  static <T> scala.collection.immutable.Seq<T> seq(List<T> list) {
    return CollectionConverters.asScala(list).toList();
  }

  static <K, V> scala.collection.immutable.Map<K, V> map(Map<K, V> map) {
    return scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(map));
  }

  static <K, V> Map<K, V> javaMap(scala.collection.Map<K, V> map) {
    return CollectionConverters.asJava(map);
  }

  static <T> Option<T> some(T value) {
    return Option.apply(value);
  }

  static <T> Option<T> none() {
    return Option.empty();
  }
}
