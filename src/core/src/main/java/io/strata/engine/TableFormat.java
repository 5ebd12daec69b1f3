// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

import io.strata.format.sst.SstReader;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.rocksdb.RocksDB;

/**
 * The RocksDB table format ({@code BlockBasedTableOptions::format_version}) of the SST files
 * Strata's local databases write, and which supported Spark line reads which format: the rule
 * that lets a checkpoint move between Spark lines in both directions (docs/format.md, "Table
 * formats across Spark lines").
 *
 * <p>A base snapshot is the local database's own files, so a compaction output written on one
 * line is restored on whichever line loads the checkpoint next. RocksDB 9.x (Spark 4.x) writes
 * table format 6 by default, which RocksDB before 8.6 (Spark 3.5 bundles 8.3) refuses as
 * "Corrupt or unsupported format_version". The local databases therefore write {@link #WRITTEN}
 * on every line; Strata's own delta writer ({@code SstWriter}) writes format 2, which every
 * line reads too.
 *
 * <p>Where a file in an older format cannot be read here (a base snapshot that a Strata build
 * before this rule wrote on Spark 4.x, loaded on Spark 3.5), {@link #unreadable} finds it after
 * RocksDB failed, so the error names the format and the lines that read it rather than reading
 * as corruption.
 */
public final class TableFormat {
  /**
   * The table format version the local databases write on every line: 5, the newest that
   * every supported line's RocksDB reads (format 5, RocksDB 6.6 and later: the fast Bloom
   * filter; format 6, RocksDB 8.6 and later, only adds footer checksums and context).
   */
  public static final int WRITTEN = 5;

  /**
   * A supported Spark line and the rocksdbjni it bundles (the line poms' {@code
   * rocksdb.version}; TableFormatTest checks them).
   *
   * @param spark the line, for example {@code 3.5}
   * @param rocksdb the rocksdbjni version the line's Spark release bundles
   */
  public record SparkLine(String spark, String rocksdb) {
    /** The newest table format version this line's RocksDB reads. */
    public int newestReadable() {
      return TableFormat.newestReadable(rocksdb);
    }
  }

  /** The supported lines, oldest first. */
  public static final List<SparkLine> LINES = List.of(new SparkLine("3.5", "8.3.2"),
      new SparkLine("4.0", "9.8.4"), new SparkLine("4.1", "9.8.4"),
      new SparkLine("4.2", "9.8.4"));

  private TableFormat() { }

  /**
   * The newest table format version RocksDB {@code version} reads: 6 from RocksDB 8.6 on, 5 from
   * 6.6 on, 4 before.
   *
   * @param version a RocksDB version, {@code major.minor[.patch]}
   * @throws IllegalArgumentException if it is not of that form
   */
  static int newestReadable(String version) {
    String[] p = version.split("\\.");
    int major;
    int minor;
    try {
      major = Integer.parseInt(p[0]);
      minor = p.length > 1 ? Integer.parseInt(p[1]) : 0;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("not a RocksDB version: " + version, e);
    }
    if (major > 8 || (major == 8 && minor >= 6)) {
      return 6;
    }
    return major > 6 || (major == 6 && minor >= 6) ? 5 : 4;
  }

  /** The version of the RocksDB this JVM runs, {@code major.minor.patch}. */
  public static String rocksdbHere() {
    RocksDB.loadLibrary();
    return RocksDB.rocksdbVersion().toString();
  }

  /** The newest table format version the RocksDB of this JVM reads. */
  public static int newestReadableHere() {
    return newestReadable(rocksdbHere());
  }

  /**
   * The supported lines whose RocksDB reads table format {@code formatVersion}, for messages:
   * for example {@code "Spark 4.0, 4.1, 4.2 (RocksDB 9.8.4)"}, or {@code "no supported Spark
   * line"}.
   */
  public static String linesReading(int formatVersion) {
    return describe(LINES.stream().filter(l -> l.newestReadable() >= formatVersion).toList());
  }

  /**
   * The RocksDB of this JVM for messages: for example {@code "8.3.2, bundled by Spark 3.5"}, or
   * {@code "10.2.1, bundled by no supported Spark line"}.
   */
  static String describeHere() {
    String here = rocksdbHere();
    List<SparkLine> lines = LINES.stream().filter(l -> l.rocksdb().equals(here)).toList();
    return here + ", bundled by " + (lines.isEmpty() ? "no supported Spark line"
        : "Spark " + String.join(", ", lines.stream().map(SparkLine::spark).toList()));
  }

  private static String describe(List<SparkLine> lines) {
    if (lines.isEmpty()) {
      return "no supported Spark line";
    }
    List<String> rocksdb = lines.stream().map(SparkLine::rocksdb).distinct().toList();
    return "Spark " + String.join(", ", lines.stream().map(SparkLine::spark).toList())
        + " (RocksDB " + String.join(", ", rocksdb) + ")";
  }

  /**
   * The first of {@code ssts} whose footer declares a table format this JVM's RocksDB does not
   * read, as the error to throw; empty if there is none (then RocksDB failed for another
   * reason). Reads each file's last {@value SstReader#FOOTER_TAIL_BYTES} bytes; a file that
   * cannot be read or has no table footer is skipped (the caller's own error stands for it).
   *
   * @param ssts SST files (other files are not looked at)
   * @param dir the database directory, for the message
   * @param cause RocksDB's error
   */
  static Optional<UnreadableTableFormatException> unreadable(List<Path> ssts, Path dir,
      Exception cause) {
    int newest = newestReadableHere();
    for (Path f : ssts) {
      int fv;
      try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ)) {
        long size = ch.size();
        if (size < SstReader.FOOTER_TAIL_BYTES) {
          continue;
        }
        ByteBuffer tail = ByteBuffer.allocate(SstReader.FOOTER_TAIL_BYTES);
        while (tail.hasRemaining()) {
          if (ch.read(tail, size - tail.remaining()) < 0) {
            break;
          }
        }
        tail.flip();
        fv = SstReader.footerFormatVersion(tail);
      } catch (IOException | RuntimeException e) { // SstFormatException is an IOException
        continue;
      }
      if (fv > newest) {
        return Optional.of(new UnreadableTableFormatException(f, dir, fv, "SST " + f.getFileName()
            + " is RocksDB table format " + fv + ", which the RocksDB of this JVM ("
            + describeHere() + ") does not read: it reads table formats up to " + newest
            + ". Table format " + fv + " is read by " + linesReading(fv) + ".", cause));
      }
    }
    return Optional.empty();
  }

  /** The {@code *.sst} files directly in {@code dir}, or none if it cannot be listed. */
  static List<Path> sstsIn(Path dir) {
    try (Stream<Path> files = Files.list(dir)) {
      return files.filter(p -> p.getFileName().toString().endsWith(".sst")).sorted().toList();
    } catch (IOException e) {
      return new ArrayList<>();
    }
  }
}
