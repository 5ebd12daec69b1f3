// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The {@code strata describe} command line that reads a demo run's checkpoint, as the demo
 * prints it for a kept run (issue 46): the tool jar the reactor built, the query's checkpoint,
 * and the S3 options the demo used, which are the tool's own ({@code --endpoint}, {@code
 * --region}, {@code --path-style}, {@code --access-key}, {@code --secret-key}). Keys are
 * printed only for the demo's own loopback S3 server, whose keys are fixed test keys; for
 * another endpoint the command holds placeholders for them.
 */
final class ToolCommand {
  private ToolCommand() { }

  /**
   * The command, to run from the project's root directory.
   *
   * @param checkpoint the query's checkpoint location
   * @param o the demo's options
   * @param localEndpoint the demo's own S3 server, if it runs one
   * @param localKeys its access key and secret key (fixed test keys), when it runs one
   */
  static String describe(String checkpoint, DemoOptions o, Optional<String> localEndpoint,
      List<String> localKeys) {
    List<String> args = new ArrayList<>(List.of("java", "-jar", toolJar(), "describe",
        checkpoint));
    if (localEndpoint.isPresent()) {
      args.addAll(List.of("--endpoint", localEndpoint.get(), "--path-style", "--access-key",
          localKeys.get(0), "--secret-key", localKeys.get(1)));
    } else if (!checkpoint.startsWith("file:")) {
      o.endpoint().ifPresent(e -> args.addAll(List.of("--endpoint", e.toString())));
      o.region().ifPresent(r -> args.addAll(List.of("--region", r)));
      if (o.pathStyle()) {
        args.add("--path-style");
      }
      if (o.accessKey().isPresent()) { // the keys as placeholders: never printed
        args.addAll(List.of("--access-key", "YOUR_ACCESS_KEY", "--secret-key",
            "YOUR_SECRET_KEY"));
      }
    }
    return String.join(" ", args);
  }

  /**
   * The tool jar the reactor built, relative to the project root ({@code
   * src/tools/target/strata-tools-<version>.jar}); the demo runs in {@code src/examples}.
   */
  static String toolJar() {
    Path target = Path.of("..", "tools", "target");
    if (Files.isDirectory(target)) {
      try (Stream<Path> jars = Files.list(target)) {
        Optional<String> jar = jars.map(p -> p.getFileName().toString())
            .filter(n -> n.matches("strata-tools-[^-]+(-SNAPSHOT)?\\.jar")).sorted().findFirst();
        if (jar.isPresent()) {
          return "src/tools/target/" + jar.get();
        }
      } catch (IOException e) {
        // fall through to the generic name
      }
    }
    return "src/tools/target/strata-tools-<version>.jar";
  }
}
