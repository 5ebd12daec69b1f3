// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import java.io.PrintStream;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code strata}: inspect, verify, garbage-collect, rewind, pin and copy a Strata checkpoint
 * from S3 alone, with no Spark and no query running. Started as {@code java -jar
 * strata-tools-<version>.jar <command>} or {@code spark-submit --class io.strata.tools.StrataTool
 * strata-tools-<version>.jar <command>}. The commands ({@link DescribeCommand}, {@link
 * HistoryCommand}, {@link VerifyCommand}, {@link GcCommand}, {@link RewindCommand}, {@link
 * SavepointCommand}, {@link CopyCommand}) read the checkpoint with strata-core's format and
 * reachability code, so they see it exactly as a load and maintenance do.
 *
 * <p>Exit codes: {@value #EXIT_OK} all is well; {@value #EXIT_PROBLEMS} {@code verify} found
 * problems; {@value #EXIT_USAGE} bad arguments or settings; {@value #EXIT_UNREADABLE} the
 * checkpoint cannot be read (nothing there, not Strata's, written by a newer Strata, no such
 * bucket, credentials refused, S3 unreachable); {@value #EXIT_REFUSED} a command refused to act
 * ({@code gc --apply} or {@code rewind} on a query that looks alive, a rewind past what is
 * retained); {@value #EXIT_BUG} an unexpected error
 * (a stack trace follows).
 */
@Command(name = "strata", mixinStandardHelpOptions = true,
    versionProvider = StrataTool.Version.class,
    description = "Inspect, verify and clean a Strata checkpoint without running the query.",
    subcommands = {DescribeCommand.class, HistoryCommand.class, VerifyCommand.class,
        GcCommand.class, RewindCommand.class, SavepointCommand.class,
        CopyCommand.class},
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {"0:all is well", "1:verify found problems",
        "2:bad arguments or settings",
        "3:the checkpoint cannot be read (nothing there, not Strata's, a newer format, no such "
            + "bucket, credentials refused, S3 unreachable)",
        "4:refused (gc --apply while the query looks alive; see --force)",
        "70:unexpected error"})
public final class StrataTool implements Runnable {
  /** All is well. */
  public static final int EXIT_OK = 0;
  /** {@code verify} found at least one problem. */
  public static final int EXIT_PROBLEMS = 1;
  /** Bad arguments or settings. */
  public static final int EXIT_USAGE = 2;
  /** The checkpoint cannot be read. */
  public static final int EXIT_UNREADABLE = 3;
  /** A command refused to act. */
  public static final int EXIT_REFUSED = 4;
  /** An unexpected error. */
  public static final int EXIT_BUG = 70;

  private static final String LOG_LEVEL = "org.slf4j.simpleLogger.defaultLogLevel";

  final PrintStream out;
  final PrintStream err;

  private StrataTool(PrintStream out, PrintStream err) {
    this.out = out;
    this.err = err;
  }

  /**
   * Runs the tool and exits the JVM with its exit code.
   *
   * @param args a command and its arguments, e.g. {@code describe s3://bucket/ckpt}
   */
  public static void main(String[] args) {
    // strata-core's INFO lines (a garbage-collection round's summary) repeat what the tool
    // prints; WARN and above still show. The shaded jar relocates this key with SLF4J.
    if (System.getProperty(LOG_LEVEL) == null) {
      System.setProperty(LOG_LEVEL, "warn");
    }
    int code = run(args, System.out, System.err);
    System.out.flush();
    System.exit(code);
  }

  /**
   * Runs the tool in this JVM.
   *
   * @param args a command and its arguments
   * @param out where results go (tables or JSON)
   * @param err where errors, warnings and the progress bar go
   * @return the exit code (see the class comment)
   */
  public static int run(String[] args, PrintStream out, PrintStream err) {
    CommandLine cl = new CommandLine(new StrataTool(out, err));
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    cl.setExecutionExceptionHandler((e, line, parsed) -> {
      if (e instanceof ToolException t) {
        err.println("strata: " + t.getMessage());
        return t.exitCode();
      }
      err.println("strata: unexpected error: " + e);
      e.printStackTrace(err);
      return EXIT_BUG;
    });
    return cl.execute(args);
  }

  @Override
  public void run() {
    new CommandLine(this).usage(out);
  }

  /** The jar's version, from its manifest. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = StrataTool.class.getPackage().getImplementationVersion();
      return new String[] {"strata-tools " + (v == null ? "(development build)" : v)};
    }
  }
}
