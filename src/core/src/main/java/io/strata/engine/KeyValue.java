// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

/**
 * One entry returned by a scan. The arrays are fresh copies owned by the caller.
 *
 * @param key encoded key bytes
 * @param value encoded value bytes
 */
public record KeyValue(byte[] key, byte[] value) { }
