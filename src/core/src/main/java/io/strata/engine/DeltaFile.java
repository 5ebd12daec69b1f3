// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

import java.nio.file.Path;

/**
 * An SST delta written locally.
 *
 * @param path the SST file
 * @param size size in bytes
 * @param checksum XXHash64 of the file's bytes
 * @param entries number of puts and tombstones in it
 */
public record DeltaFile(Path path, long size, long checksum, long entries) { }
