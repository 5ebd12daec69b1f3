// SPDX-License-Identifier: Apache-2.0
package io.strata.config;

import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keys under {@link StrataConf#PREFIX} that this version of Strata does not know. They are
 * warned about, not refused: a shared {@code spark-defaults.conf} may carry a key a newer Strata
 * added, and that must not stop every query that runs an older jar. The warning names the key
 * and the closest known key (by edit distance) only, so a typo is still found in a short line
 * (listing every known key made it 2 KB long, issue 46). A bad value of a known
 * key still fails ({@link StrataConf#from}).
 *
 * <p>Each key is warned about once per JVM: settings are resolved at every store's
 * initialisation, which happens once per partition.
 */
final class UnknownSettings {
  private static final Logger LOG = LoggerFactory.getLogger(StrataConf.class);
  private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();

  private UnknownSettings() { }

  /**
   * Logs a WARN for {@code key}, unless this JVM already has.
   *
   * @param key the unknown full key (its value is never logged: it may be a secret)
   * @param known the known full keys, non-empty
   * @return the message (also when it was not logged again)
   */
  static String warn(String key, List<String> known) {
    String message = "Ignoring unknown Strata setting " + key + " (did you mean "
        + closest(key, known) + "? README's Configuration section lists the " + known.size()
        + " settings this version knows)";
    if (WARNED.add(key)) {
      LOG.warn(message);
    }
    return message;
  }

  /**
   * The known key nearest to {@code key}: the fewest single-character insertions, deletions
   * and substitutions, compared without case; the first in {@code known}'s order on a tie.
   *
   * @param key any key
   * @param known candidates, non-empty
   * @return one of {@code known}
   * @throws IllegalArgumentException if {@code known} is empty
   */
  static String closest(String key, List<String> known) {
    if (known.isEmpty()) {
      throw new IllegalArgumentException("no known keys to compare " + key + " with");
    }
    String best = known.get(0);
    int bestDistance = Integer.MAX_VALUE;
    for (String k : known) {
      int d = distance(key.toLowerCase(Locale.ROOT), k.toLowerCase(Locale.ROOT));
      if (d < bestDistance) {
        best = k;
        bestDistance = d;
      }
    }
    return best;
  }

  /** Levenshtein distance, two rows. */
  static int distance(String a, String b) {
    int[] prev = new int[b.length() + 1];
    int[] cur = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      prev[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      cur[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int sub = prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
        cur[j] = Math.min(sub, Math.min(prev[j] + 1, cur[j - 1] + 1));
      }
      int[] t = prev;
      prev = cur;
      cur = t;
    }
    return prev[b.length()];
  }
}
