// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.strata.objectstore.ObjectBody;
import org.junit.jupiter.api.Test;

/** Fault points are inert unless the test property arms one (it is not set for unit tests). */
class FaultPointsTest {
  @Test
  void withoutThePropertyEveryPointIsInert() {
    assertNull(System.getProperty(FaultPoints.PROPERTY), "unit tests run without the property");
    ObjectBody body = ObjectBody.of(new byte[] {1, 2, 3});
    for (String p : new String[] {FaultPoints.SPILL_UPLOAD, FaultPoints.COMMIT_DURING_PUT,
        FaultPoints.SNAPSHOT_UPLOAD}) {
      assertSame(body, FaultPoints.during(p, body), p + " returns the body itself");
    }
    for (String p : new String[] {FaultPoints.COMMIT_BEFORE_PUT, FaultPoints.COMMIT_AFTER_PUT,
        FaultPoints.GC_BEFORE_DELETE, FaultPoints.GC_AFTER_DELETE}) {
      FaultPoints.pass(p); // returns: the JVM is still here
    }
  }
}
