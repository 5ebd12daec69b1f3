// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.junit.jupiter.api.Test;

/** The write stream's contract, with an upload that records what it is sent (no S3 needed). */
class AtomicPutOutputStreamTest {
  private final List<byte[]> sent = new ArrayList<>();

  private AtomicPutOutputStream stream() {
    return new AtomicPutOutputStream("s3://b/ckpt/offsets/0", body -> {
      try (InputStream in = body.open()) {
        byte[] bytes = in.readAllBytes();
        assertEquals(body.length(), bytes.length);
        sent.add(bytes);
      }
    });
  }

  @Test
  void closeSendsTheBytesOnceAndCancelAfterwardsDoesNothing() throws IOException {
    AtomicPutOutputStream out = stream();
    out.write(new byte[] {1, 2, 3});
    out.write(4);
    assertEquals(List.of(), sent, "nothing is sent before close");
    out.close();
    out.close();
    out.cancel();
    assertEquals(1, sent.size());
    assertArrayEquals(new byte[] {1, 2, 3, 4}, sent.get(0));
    assertThrows(IOException.class, () -> out.write(5));
  }

  @Test
  void cancelSendsNothing() throws IOException {
    AtomicPutOutputStream out = stream();
    out.write(new byte[100]);
    out.cancel();
    out.close();
    assertEquals(List.of(), sent);
  }

  @Test
  void aFailedCloseReportsOnceAndLeavesCancelANoOp() throws IOException {
    FileAlreadyExistsException lost = new FileAlreadyExistsException("taken");
    AtomicPutOutputStream out = new AtomicPutOutputStream("s3://b/k", body -> {
      throw lost;
    });
    out.write(1);
    assertSame(lost, assertThrows(FileAlreadyExistsException.class, out::close));
    out.cancel(); // Spark cancels after a failed close
    out.close();
  }

  @Test
  void bigWritesSpillToATemporaryFileThatIsDeletedAfterwards() throws IOException {
    Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
    long before = spillFiles(tmp);
    AtomicPutOutputStream out = stream();
    byte[] chunk = new byte[1 << 20];
    for (int i = 0; i < chunk.length; i++) {
      chunk[i] = (byte) i;
    }
    int chunks = AtomicPutOutputStream.MEMORY_LIMIT / chunk.length + 2;
    for (int i = 0; i < chunks; i++) {
      out.write(chunk);
    }
    assertEquals(before + 1, spillFiles(tmp), "spilled to one temporary file");
    out.close();
    assertEquals((long) chunks * chunk.length, sent.get(0).length);
    assertEquals(before, spillFiles(tmp), "the temporary file is gone after close");
  }

  private static long spillFiles(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.getFileName().toString().startsWith("strata-checkpoint-")).count();
    }
  }
}
