// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.util.List;
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
        "4:refused (gc --apply, rewind, savepoint create or copy while the query looks alive, "
            + "and the like; see each command's --help)",
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

  /** The simple logger's per-logger key prefix; relocated with SLF4J in the shaded jar. */
  private static final String LOGGER_LEVEL = "org.slf4j.simpleLogger.log.";

  /**
   * Bundled libraries whose DEBUG lines print what a request sends: Apache HttpClient's
   * {@code headers} and {@code wire} loggers, and the AWS SDK's signer, which logs the canonical
   * request (every signed header, a session token included). Relocated in the shaded jar.
   */
  private static final List<String> REQUEST_LOGGERS = List.of("org.apache.hc",
      "software.amazon.awssdk");

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
    // A DEBUG default shows Strata's lines, never the bundled HTTP client's and SDK's: they
    // print request headers, and a session token is one ("credentials never appear in logs").
    // A level set for one of those loggers by name is the user's explicit choice.
    for (String logger : REQUEST_LOGGERS) {
      String key = String.join("", LOGGER_LEVEL, logger); // not folded: each part relocated
      if (System.getProperty(key) == null) {
        System.setProperty(key, "info");
      }
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
    // picocli's own message for an unknown option echoes every unmatched argument, so a
    // mistyped --secret-key would print the secret after it: name only what looks like an option.
    cl.setParameterExceptionHandler((ex, given) -> {
      if (ex instanceof CommandLine.UnmatchedArgumentException u) {
        java.util.List<String> options =
            u.getUnmatched().stream().filter(a -> a.startsWith("-")).toList();
        err.println("strata: unknown option " + String.join(", ", options)
            + (options.size() < u.getUnmatched().size()
                ? " (the arguments after it are not shown: one may be a secret)" : ""));
        CommandLine.UnmatchedArgumentException.printSuggestions(u, err);
      } else {
        err.println("strata: " + ex.getMessage());
      }
      ex.getCommandLine().usage(err);
      return EXIT_USAGE;
    });
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
