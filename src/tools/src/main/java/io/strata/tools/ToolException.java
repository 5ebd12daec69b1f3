// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

/**
 * A failure the tool reports as one message and an exit code, without a stack trace: the
 * checkpoint cannot be read (not Strata's, written by a newer Strata, a missing bucket, refused
 * credentials), or a command refused to act.
 */
final class ToolException extends Exception {
  private static final long serialVersionUID = 1L;
  private final int exitCode;

  /**
   * @param exitCode one of {@link StrataTool}'s exit codes
   * @param message what went wrong, naming the setting, object or store, and what to do
   */
  ToolException(int exitCode, String message, Throwable cause) {
    super(message, cause);
    this.exitCode = exitCode;
  }

  int exitCode() {
    return exitCode;
  }
}
