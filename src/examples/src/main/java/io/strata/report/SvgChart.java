// SPDX-License-Identifier: Apache-2.0
package io.strata.report;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Minimal SVG charts for the benchmark report and the flights demo's report, with no dependency:
 * a line chart over categories
 * (linear or log-10 y axis) and a bar chart (grouped or stacked). Missing values ({@code null} or
 * negative) are left out. The output is deterministic for the same input, so regenerating the
 * plots from unchanged results changes no committed file.
 */
public final class SvgChart {
  private static final String[] COLORS = {"#1b9e77", "#d95f02", "#7570b3", "#e7298a",
      "#66a61e", "#e6ab02", "#a6761d", "#666666", "#1f78b4", "#b2df8a"};
  private static final int W = 760;
  private static final int H = 420;
  private static final int LEFT = 80;
  private static final int RIGHT = 230;
  private static final int TOP = 50;
  private static final int BOTTOM = 60;

  private SvgChart() { }

  /**
   * A line chart: one line per series over the categories {@code x}; with more than 20
   * categories only every k-th is labelled, so that at most 20 labels show.
   *
   * @param title the chart's title
   * @param xLabel the x axis's label
   * @param yLabel the y axis's label, with the unit
   * @param x the categories, left to right
   * @param series name to values, one per category (null for none)
   * @param logY log-10 y axis (values must be &gt; 0 to show)
   * @return the SVG document
   */
  public static String lines(String title, String xLabel, String yLabel, List<String> x,
      Map<String, List<Double>> series, boolean logY) {
    Axis y = Axis.of(all(series), logY);
    StringBuilder sb = header(title, xLabel, yLabel);
    y.draw(sb);
    double step = x.size() > 1 ? (double) plotW() / (x.size() - 1) : 0;
    int every = (x.size() + 19) / 20;
    for (int i = 0; i < x.size(); i += Math.max(1, every)) {
      double px = LEFT + (x.size() > 1 ? i * step : plotW() / 2.0);
      text(sb, px, H - BOTTOM + 18, x.get(i), "middle", 12);
    }
    int c = 0;
    for (Map.Entry<String, List<Double>> e : series.entrySet()) {
      String color = COLORS[c % COLORS.length];
      StringBuilder path = new StringBuilder();
      for (int i = 0; i < x.size(); i++) {
        Double v = i < e.getValue().size() ? e.getValue().get(i) : null;
        if (!y.shows(v)) {
          continue;
        }
        double px = LEFT + (x.size() > 1 ? i * step : plotW() / 2.0);
        double py = y.pixel(v);
        path.append(path.length() == 0 ? "M" : " L").append(fmt(px)).append(' ').append(fmt(py));
        sb.append(String.format(Locale.ROOT,
            "<circle cx=\"%s\" cy=\"%s\" r=\"3.5\" fill=\"%s\"/>%n", fmt(px), fmt(py), color));
      }
      if (path.length() > 0) {
        sb.append(String.format(Locale.ROOT,
            "<path d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>%n", path, color));
      }
      legend(sb, c, e.getKey(), color);
      c++;
    }
    return sb.append("</svg>\n").toString();
  }

  /**
   * A bar chart: one group of bars per category; within a group one bar per series, or one
   * stacked bar when {@code stacked}.
   *
   * @param title the chart's title
   * @param xLabel the x axis's label
   * @param yLabel the y axis's label, with the unit
   * @param x the categories, left to right
   * @param series name to values, one per category (null for none)
   * @param stacked one stacked bar per category instead of one bar per series
   * @return the SVG document
   */
  public static String bars(String title, String xLabel, String yLabel, List<String> x,
      Map<String, List<Double>> series, boolean stacked) {
    List<Double> values = new ArrayList<>();
    if (stacked) {
      for (int i = 0; i < x.size(); i++) {
        double sum = 0;
        for (List<Double> l : series.values()) {
          Double v = i < l.size() ? l.get(i) : null;
          sum += v != null && v > 0 ? v : 0;
        }
        values.add(sum);
      }
    } else {
      values.addAll(all(series));
    }
    Axis y = Axis.of(values, false);
    StringBuilder sb = header(title, xLabel, yLabel);
    y.draw(sb);
    double group = (double) plotW() / Math.max(1, x.size());
    int n = stacked ? 1 : Math.max(1, series.size());
    double bar = group * 0.8 / n;
    for (int i = 0; i < x.size(); i++) {
      double gx = LEFT + i * group + group * 0.1;
      text(sb, LEFT + i * group + group / 2, H - BOTTOM + 18, x.get(i), "middle",
          x.size() > 6 ? 10 : 12);
      double base = 0;
      int c = 0;
      for (List<Double> l : series.values()) {
        Double v = i < l.size() ? l.get(i) : null;
        String color = COLORS[c % COLORS.length];
        if (v != null && v > 0) {
          double top = y.pixel(stacked ? base + v : v);
          double bottom = y.pixel(stacked ? base : 0);
          double bx = stacked ? gx : gx + c * bar;
          sb.append(String.format(Locale.ROOT,
              "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"/>%n", fmt(bx),
              fmt(top), fmt(stacked ? group * 0.8 : bar), fmt(Math.max(0.5, bottom - top)),
              color));
          if (stacked) {
            base += v;
          }
        }
        c++;
      }
    }
    int c = 0;
    for (String name : series.keySet()) {
      legend(sb, c, name, COLORS[c % COLORS.length]);
      c++;
    }
    return sb.append("</svg>\n").toString();
  }

  private static List<Double> all(Map<String, List<Double>> series) {
    List<Double> l = new ArrayList<>();
    series.values().forEach(l::addAll);
    return l;
  }

  private static int plotW() {
    return W - LEFT - RIGHT;
  }

  private static int plotH() {
    return H - TOP - BOTTOM;
  }

  private static StringBuilder header(String title, String xLabel, String yLabel) {
    StringBuilder sb = new StringBuilder();
    sb.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
        + "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">%n", W, H, W, H));
    sb.append(String.format(Locale.ROOT,
        "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>%n", W, H));
    text(sb, W / 2.0, 24, title, "middle", 15);
    text(sb, LEFT + plotW() / 2.0, H - 16, xLabel, "middle", 12);
    sb.append(String.format(Locale.ROOT, "<text x=\"18\" y=\"%s\" font-size=\"12\" "
        + "text-anchor=\"middle\" transform=\"rotate(-90 18 %s)\">%s</text>%n",
        fmt(TOP + plotH() / 2.0), fmt(TOP + plotH() / 2.0), escape(yLabel)));
    sb.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
        + "stroke=\"black\"/>%n", LEFT, H - BOTTOM, W - RIGHT, H - BOTTOM));
    sb.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
        + "stroke=\"black\"/>%n", LEFT, TOP, LEFT, H - BOTTOM));
    return sb;
  }

  private static void legend(StringBuilder sb, int i, String name, String color) {
    int lx = W - RIGHT + 15;
    int ly = TOP + 10 + i * 20;
    sb.append(String.format(Locale.ROOT,
        "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>%n", lx, ly - 10,
        color));
    text(sb, lx + 18, ly, name, "start", 12);
  }

  private static void text(StringBuilder sb, double x, double y, String s, String anchor,
      int size) {
    sb.append(String.format(Locale.ROOT,
        "<text x=\"%s\" y=\"%s\" font-size=\"%d\" text-anchor=\"%s\">%s</text>%n", fmt(x),
        fmt(y), size, anchor, escape(s)));
  }

  private static String escape(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
  }

  /** A coordinate or value as SVG text: at most two decimals, no trailing zeros. */
  public static String fmt(double v) {
    return String.format(Locale.ROOT, "%.1f", v);
  }

  /** A y axis: linear from 0, or log-10 over whole decades; ticks and grid lines. */
  private record Axis(double min, double max, boolean log) {
    static Axis of(List<Double> values, boolean log) {
      double lo = Double.MAX_VALUE;
      double hi = 0;
      for (Double v : values) {
        if (v != null && v > 0) {
          lo = Math.min(lo, v);
          hi = Math.max(hi, v);
        }
      }
      if (hi == 0) {
        return new Axis(log ? 1 : 0, log ? 10 : 1, log);
      }
      if (log) {
        double a = Math.pow(10, Math.floor(Math.log10(lo)));
        double b = Math.pow(10, Math.ceil(Math.log10(hi)));
        return new Axis(a, b > a ? b : a * 10, true);
      }
      return new Axis(0, nice(hi * 1.05), false);
    }

    private static double nice(double v) {
      double p = Math.pow(10, Math.floor(Math.log10(v)));
      for (double m : new double[] {1, 2, 2.5, 5, 10}) {
        if (m * p >= v) {
          return m * p;
        }
      }
      return 10 * p;
    }

    boolean shows(Double v) {
      return v != null && (log ? v > 0 : v >= 0);
    }

    double pixel(double v) {
      double f = log ? (Math.log10(v) - Math.log10(min)) / (Math.log10(max) - Math.log10(min))
          : (v - min) / (max - min);
      return H - BOTTOM - f * plotH();
    }

    void draw(StringBuilder sb) {
      Map<Double, String> ticks = new LinkedHashMap<>();
      if (log) {
        for (double d = min; d <= max * 1.0001; d *= 10) {
          for (double m : new double[] {1, 2, 5}) {
            if (d * m <= max * 1.0001) {
              ticks.put(d * m, label(d * m));
            }
          }
        }
      } else {
        for (int i = 0; i <= 5; i++) {
          double v = min + (max - min) * i / 5;
          ticks.put(v, label(v));
        }
      }
      ticks.forEach((v, s) -> {
        double py = pixel(v);
        sb.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%s\" x2=\"%d\" y2=\"%s\" "
            + "stroke=\"#dddddd\"/>%n", LEFT, fmt(py), W - RIGHT, fmt(py)));
        text(sb, LEFT - 6, py + 4, s, "end", 11);
      });
    }

    private static String label(double v) {
      if (v >= 1_000_000) {
        return trim(v / 1_000_000) + "M";
      }
      if (v >= 10_000) {
        return trim(v / 1000) + "k";
      }
      return trim(v);
    }

    private static String trim(double v) {
      return v == Math.rint(v) ? Long.toString((long) v)
          : String.format(Locale.ROOT, "%.2f", v).replaceAll("0+$", "");
    }
  }
}
