// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class KnownKeysTest {
  private static final String S = "http://127.0.0.1:9000|us-east-1|bucket";

  @Test
  void unknownDirectoriesAnswerNothing() {
    KnownKeys k = new KnownKeys(8);
    assertNull(k.exists(S, "ckpt/offsets/0", true, true));
    k.listed(S, "ckpt/offsets", List.of(), List.of(), k.startListing());
    assertNull(k.exists(S, "ckpt/offsets/0", true, false), "the parent listing is not allowed");
    assertEquals(Boolean.FALSE, k.exists(S, "ckpt/offsets/0", false, true));
    assertNull(k.exists("other|scope", "ckpt/offsets/0", true, true), "scopes are separate");
  }

  @Test
  void aListingPlusOwnWritesAndDeletesAnswersExists() {
    KnownKeys k = new KnownKeys(8);
    k.listed(S, "ckpt/offsets", List.of("0", "1"), List.of("sub"), k.startListing());
    assertEquals(Boolean.TRUE, k.exists(S, "ckpt/offsets/1", false, true));
    assertEquals(Boolean.TRUE, k.exists(S, "ckpt/offsets/sub", false, true));
    assertTrue(k.isKnownObject(S, "ckpt/offsets/1"));
    assertFalse(k.isKnownObject(S, "ckpt/offsets/sub"), "a directory is not an object");
    k.created(S, "ckpt/offsets/2");
    assertEquals(Boolean.TRUE, k.exists(S, "ckpt/offsets/2", false, true));
    k.deleted(S, "ckpt/offsets/0");
    assertEquals(Boolean.FALSE, k.exists(S, "ckpt/offsets/0", false, true));
    assertEquals(Boolean.TRUE, k.exists(S, "ckpt/offsets", true, false),
        "a listed directory with children exists");
  }

  @Test
  void aWriteDuringAListingIsNotForgotten() {
    KnownKeys k = new KnownKeys(8);
    // never listed before: the LIST is sent, a PUT lands, then the (older) answer arrives
    long stamp = k.startListing();
    k.created(S, "ckpt/commits/5");
    k.listed(S, "ckpt/commits", List.of("4"), List.of(), stamp);
    assertEquals(Boolean.TRUE, k.exists(S, "ckpt/commits/5", false, true));
    // and a delete during a relisting
    long again = k.startListing();
    k.deleted(S, "ckpt/commits/4");
    k.listed(S, "ckpt/commits", List.of("4", "5"), List.of(), again);
    assertEquals(Boolean.FALSE, k.exists(S, "ckpt/commits/4", false, true));
    // changes before a listing started are superseded by it
    k.created(S, "ckpt/commits/9");
    k.listed(S, "ckpt/commits", List.of("5"), List.of(), k.startListing());
    assertEquals(Boolean.FALSE, k.exists(S, "ckpt/commits/9", false, true));
  }

  @Test
  void createsMakeAncestorsDirectoriesAndDeletesForgetBelow() {
    KnownKeys k = new KnownKeys(8);
    k.listed(S, "ckpt", List.of("metadata"), List.of(), k.startListing());
    k.listed(S, "ckpt/state/0", List.of(), List.of(), k.startListing());
    k.created(S, "ckpt/state/0/_metadata/metadata");
    assertEquals(Boolean.TRUE, k.exists(S, "ckpt/state", false, true));
    assertEquals(Boolean.TRUE, k.exists(S, "ckpt/state/0/_metadata", false, true));
    k.deleted(S, "ckpt/state");
    assertEquals(Boolean.FALSE, k.exists(S, "ckpt/state", false, true));
    assertNull(k.exists(S, "ckpt/state/0/_metadata", false, true), "knowledge below is dropped");
  }

  @Test
  void leastRecentlyUsedDirectoriesAreForgotten() {
    KnownKeys k = new KnownKeys(2);
    k.listed(S, "a", List.of("x"), List.of(), k.startListing());
    k.listed(S, "b", List.of("x"), List.of(), k.startListing());
    k.exists(S, "a/x", false, true); // a is now the most recently used
    k.listed(S, "c", List.of("x"), List.of(), k.startListing());
    assertTrue(k.knows(S, "a"));
    assertFalse(k.knows(S, "b"));
    assertNull(k.exists(S, "b/x", false, true), "a forgotten directory costs a request again");
  }

  /**
   * Issue 43: a file this JVM wrote exists for any manager until a listing of its directory that
   * started later says otherwise (a lagging store's LIST of it alone would say "no"); a rewind
   * (a later listing without it) and a delete here still win.
   */
  @Test
  void aFileThisJvmWroteExistsUntilALaterListingOrDeleteSaysOtherwise() {
    KnownKeys k = new KnownKeys(8);
    assertFalse(k.createdHere(S, "ckpt/state/0/0/_metadata/schema"));
    k.created(S, "ckpt/state/0/0/_metadata/schema");
    assertTrue(k.createdHere(S, "ckpt/state/0/0/_metadata/schema"), "never listed: unlisted");
    assertFalse(k.createdHere(S, "ckpt/state/0/0/_metadata"), "a directory is not a file");
    long during = k.startListing();
    k.created(S, "ckpt/offsets/3");
    k.listed(S, "ckpt/offsets", List.of("1", "2"), List.of(), during);
    assertTrue(k.createdHere(S, "ckpt/offsets/3"), "written while the listing was in flight");
    k.listed(S, "ckpt/offsets", List.of("1", "2"), List.of(), k.startListing());
    assertFalse(k.createdHere(S, "ckpt/offsets/3"), "a later listing without it wins (rewind)");
    k.listed(S, "ckpt/offsets", List.of("1", "2", "3"), List.of(), k.startListing());
    assertFalse(k.createdHere(S, "ckpt/offsets/3"), "listed, not written here since");
    k.created(S, "ckpt/offsets/4");
    k.deleted(S, "ckpt/offsets/4");
    assertFalse(k.createdHere(S, "ckpt/offsets/4"), "deleted here");
  }

  /**
   * Review of issue 43 (i43-adv2): a file this JVM wrote and another process deleted since (a
   * checkpoint removed by hand before the query starts again in the same driver JVM) must not
   * exist for ever: once the store's lag has long passed, a listing decides, as with Spark's own
   * manager. Before, {@code exists(metadata)} stayed true and Spark's {@code StreamMetadata.read}
   * then failed with FileNotFoundException after 4.5 s of GETs instead of starting afresh.
   */
  @Test
  void aFileThisJvmWroteCountsAsPresentWithoutAListingOnlyForAWhile() {
    long[] now = {1_000_000_000L};
    KnownKeys k = new KnownKeys(8, () -> now[0]);
    k.created(S, "ckpt/metadata");
    now[0] += (KnownKeys.OWN_WRITE_TRUST_MILLIS - 1) * 1_000_000L;
    assertTrue(k.createdHere(S, "ckpt/metadata"), "within the store's possible lag");
    now[0] += 2_000_000L;
    assertFalse(k.createdHere(S, "ckpt/metadata"), "past it: a listing decides");
    k.created(S, "ckpt/metadata"); // written again (the query started afresh)
    assertTrue(k.createdHere(S, "ckpt/metadata"));
  }
}
