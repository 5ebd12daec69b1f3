// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import java.io.PrintStream;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;

/**
 * A plain-text table for people: a header row, columns padded to their widest cell, numbers
 * right-aligned. The machine form is {@code --json}; this one may change between releases.
 */
final class Table {
  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss'Z'").withZone(ZoneOffset.UTC);
  private final List<String> header;
  private final List<List<String>> rows = new ArrayList<>();

  Table(String... header) {
    this.header = List.of(header);
  }

  Table row(Object... cells) {
    List<String> r = new ArrayList<>();
    for (Object c : cells) {
      r.add(c == null ? "-" : c.toString());
    }
    rows.add(r);
    return this;
  }

  boolean isEmpty() {
    return rows.isEmpty();
  }

  void print(PrintStream out) {
    int[] w = new int[header.size()];
    for (int i = 0; i < w.length; i++) {
      w[i] = header.get(i).length();
      for (List<String> r : rows) {
        w[i] = Math.max(w[i], r.get(i).length());
      }
    }
    print(out, header, w, false);
    for (List<String> r : rows) {
      print(out, r, w, true);
    }
  }

  private static void print(PrintStream out, List<String> cells, int[] w, boolean align) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < w.length; i++) {
      String c = cells.get(i);
      boolean right = align && c.matches("-?[0-9][0-9.,]*( [KMGT]?i?B)?");
      String pad = " ".repeat(w[i] - c.length());
      sb.append(right ? pad + c : c + (i == w.length - 1 ? "" : pad));
      if (i < w.length - 1) {
        sb.append("  ");
      }
    }
    out.println(sb.toString().stripTrailing());
  }

  /** {@code 1.5 MiB}-style size. */
  /** "1 object", "3 objects": {@code n} and {@code noun}, plural unless n is 1. */
  static String count(long n, String noun) {
    return n + " " + noun + (n == 1 ? "" : "s");
  }

  static String bytes(long n) {
    if (n < 1024) {
      return n + " B";
    }
    String[] units = {"KiB", "MiB", "GiB", "TiB"};
    double v = n;
    int u = -1;
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return String.format(java.util.Locale.ROOT, "%.1f %s", v, units[u]);
  }

  /** ISO-8601 UTC time to the second, or "-" for an unknown time. */
  static String time(long epochMillis) {
    return epochMillis <= 0 ? "-" : TIME.format(Instant.ofEpochMilli(epochMillis));
  }

  /** "42 s", "7 min", "3 h", "2 d" for an age in ms. */
  static String age(long millis) {
    long s = millis / 1000;
    if (s < 120) {
      return s + " s";
    }
    if (s < 7200) {
      return s / 60 + " min";
    }
    if (s < 172800) {
      return s / 3600 + " h";
    }
    return s / 86400 + " d";
  }
}
