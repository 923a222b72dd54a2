// The flame graph SVG, drawn here (docs/profile.md, "Pictures"): the root
// "all" at the bottom, callers below callees, each frame as wide as its
// share of the samples, coloured by module; kernel frames and the markers
// of incomplete stacks in colours of their own. One file, no network: the
// style and the script (render/profile_svg_script.h) are inline.
//
// Bounded: a frame narrower than FlameGraphOptions::min_frame_width is left
// out with everything above it, and the note under the graph counts the
// frames and samples left out (their time stays in their callers' width).
#include <cmath>
#include <cstdio>
#include <functional>

#include "render/profile_flame.h"
#include "render/profile_formats.h"
#include "render/profile_svg_script.h"
#include "render/xml_text.h"

namespace xref::render {
namespace {

constexpr double kMargin = 10;
constexpr double kFrameHeight = 16;
constexpr double kHeader = 84;  // title, subtitle, search line
constexpr double kFooter = 66;  // details, note, legend
constexpr double kCharWidth = 7.3;  // 12 px monospace

// Hues of modules in the order they are first drawn: warm and green ones;
// [kernel] is blue (220), markers grey, a search match magenta (300), so
// none of those can be taken for a module.
constexpr int kModuleHues[] = {28, 95, 170, 48, 190, 355, 125, 70, 15, 150};

std::string fixed2(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", value);
  return buffer;
}

std::string share_text(uint64_t part, uint64_t whole) {
  return fixed2(whole == 0 ? 0.0 : static_cast<double>(part) * 100.0 / static_cast<double>(whole)) + " %";
}

// The label a frame of width `width` shows; the script cuts it the same way
// when a zoom changes the width.
std::string frame_label(const std::string& name, double width) {
  const double fits = std::floor((width - 6) / kCharWidth);
  if (fits < 3) return "";
  const auto chars = static_cast<size_t>(fits);
  size_t letters = 0, at = 0, cut = 0;
  for (; at < name.size(); ++at) {
    if ((static_cast<uint8_t>(name[at]) & 0xC0u) == 0x80u) continue;  // a UTF-8 continuation byte
    if (letters == chars - 2) cut = at;
    ++letters;
  }
  return letters <= chars ? name : name.substr(0, cut) + "..";
}

class Palette {
 public:
  std::string fill(const FlameNode& node) {
    switch (node.kind) {
      case FrameKind::kernel: return "hsl(220, 65%, 62%)";
      case FrameKind::incomplete: return "hsl(0, 0%, 78%)";
      case FrameKind::function:
      case FrameKind::address: break;
    }
    if (node.depth == 0) return "hsl(0, 0%, 88%)";
    const int hue = module_hue(node.module);
    // Neighbours of one module told apart by a lightness from the name.
    const auto lightness = 52 + static_cast<int>(std::hash<std::string>{}(node.name) % 14);
    const int saturation = node.kind == FrameKind::address ? 35 : 75;
    return "hsl(" + std::to_string(hue) + ", " + std::to_string(saturation) + "%, " + std::to_string(lightness) +
           "%)";
  }
  int module_hue(uint32_t module) {
    for (size_t i = 0; i < modules_.size(); ++i) {
      if (modules_[i] == module) return kModuleHues[i % std::size(kModuleHues)];
    }
    modules_.push_back(module);
    return kModuleHues[(modules_.size() - 1) % std::size(kModuleHues)];
  }
  const std::vector<uint32_t>& modules() const { return modules_; }

 private:
  std::vector<uint32_t> modules_;  // in the order first drawn
};

std::string subtitle(const Profile& profile, uint64_t total) {
  const ProfileCaptureParameters& capture = profile.capture;
  std::string text = capture.event;
  if (capture.frequency_hz != 0) text += " at " + std::to_string(capture.frequency_hz) + " Hz";
  if (capture.period_ns != 0) text += " (" + fixed2(static_cast<double>(capture.period_ns) / 1e6) + " ms per sample)";
  text += ", callers " + capture.callers + ", " + std::to_string(total) + (total == 1 ? " sample" : " samples");
  text += ", " + std::to_string(profile.threads.size()) + (profile.threads.size() == 1 ? " thread" : " threads");
  if (capture.duration_ns != 0) text += ", " + fixed2(static_cast<double>(capture.duration_ns) / 1e9) + " s";
  return text;
}

struct Drawing {
  std::string frames;
  size_t drawn = 0;
  size_t omitted = 0;          // frames left out, their subtrees included
  uint64_t omitted_samples = 0;  // samples of the outermost frames left out
  uint32_t depth = 0;          // deepest frame drawn
};

void count_subtree(const std::vector<FlameNode>& nodes, uint32_t index, size_t& count) {
  ++count;
  for (uint32_t child : nodes[index].children) count_subtree(nodes, child, count);
}

}  // namespace

Result<std::string> profile_svg(const Profile& profile, const std::string& title, const FlameGraphOptions& options) {
  if (auto checked = check_picture_input(profile); !checked) return checked.error();
  if (!(options.width >= 200) || !(options.min_frame_width > 0)) {
    return make_error(ErrorCode::invalid_argument, "flame graph: width must be at least 200 px and the minimum frame "
                      "width above 0", "use the defaults of FlameGraphOptions");
  }
  const ProfileFrameNames names(profile);
  const std::vector<FlameNode> nodes = flame_tree(profile, names);
  const uint64_t total = nodes[0].samples;
  const double chart_width = options.width - 2 * kMargin;
  const double per_sample = total == 0 ? 0 : chart_width / static_cast<double>(total);

  // Which frames are drawn: wide enough, and under a drawn caller.
  std::vector<bool> drawn(nodes.size(), false);
  Drawing drawing;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const bool caller_drawn = i == 0 || drawn[nodes[i].parent];
    if (!caller_drawn) continue;
    if (i != 0 && static_cast<double>(nodes[i].samples) * per_sample < options.min_frame_width) {
      count_subtree(nodes, static_cast<uint32_t>(i), drawing.omitted);
      drawing.omitted_samples += nodes[i].samples;
      continue;
    }
    drawn[i] = true;
    drawing.depth = std::max(drawing.depth, nodes[i].depth);
  }
  const double height = kHeader + (drawing.depth + 1) * kFrameHeight + kFooter;
  const double chart_bottom = kHeader + (drawing.depth + 1) * kFrameHeight;

  Palette palette;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!drawn[i]) continue;
    const FlameNode& node = nodes[i];
    ++drawing.drawn;
    const double x = kMargin + static_cast<double>(node.offset) * per_sample;
    const double width = static_cast<double>(node.samples) * per_sample;
    const double y = chart_bottom - (node.depth + 1) * kFrameHeight;
    std::string& out = drawing.frames;
    out += "<g class=\"n";
    if (node.kind == FrameKind::incomplete) out += " incomplete";
    out += "\" id=\"n" + std::to_string(i) + "\" data-o=\"" + std::to_string(node.offset) + "\" data-s=\"" +
           std::to_string(node.samples) + "\" data-d=\"" + std::to_string(node.depth) + "\" data-n=\"";
    append_xml_text(out, node.name);
    out += "\"><title>";
    append_xml_text(out, node.name);
    if (node.kind == FrameKind::function || node.kind == FrameKind::address) {
      if (node.depth != 0) append_xml_text(out, "\nmodule: " + module_file_name(profile, node.module));
    } else if (node.kind == FrameKind::incomplete) {
      append_xml_text(out, "\nthe stacks below ended before their outermost frame");
    }
    append_xml_text(out, "\n" + std::to_string(node.samples) + " samples, " + share_text(node.samples, total) + " of all");
    out += "</title><rect x=\"" + fixed2(x) + "\" y=\"" + fixed2(y) + "\" width=\"" + fixed2(width) +
           "\" height=\"" + fixed2(kFrameHeight - 1) + "\" rx=\"2\" fill=\"" + palette.fill(node) + "\"/><text x=\"" +
           fixed2(x + 3) + "\" y=\"" + fixed2(y + kFrameHeight - 4.5) + "\">";
    append_xml_text(out, frame_label(node.name, width));
    out += "</text></g>\n";
  }

  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + fixed2(options.width) +
         "\" height=\"" + fixed2(height) + "\" viewBox=\"0 0 " + fixed2(options.width) + " " + fixed2(height) +
         "\" data-total=\"" + std::to_string(total) + "\" data-chart-x=\"" + fixed2(kMargin) +
         "\" data-chart-width=\"" + fixed2(chart_width) + "\" data-char-width=\"" + fixed2(kCharWidth) + "\">\n";
  svg += "<style>";
  svg += kFlameGraphStyle;
  svg += "</style>\n<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#fdfcf8\"/>\n";
  svg += "<text id=\"title\" class=\"title\" x=\"" + fixed2(options.width / 2) + "\" y=\"24\">";
  append_xml_text(svg, title.empty() ? "Flame graph" : title);
  svg += "</text>\n<text id=\"subtitle\" class=\"subtitle\" x=\"" + fixed2(options.width / 2) + "\" y=\"44\">";
  append_xml_text(svg, subtitle(profile, total));
  svg += "</text>\n<foreignObject x=\"" + fixed2(kMargin) + "\" y=\"54\" width=\"300\" height=\"24\">"
         "<input xmlns=\"http://www.w3.org/1999/xhtml\" id=\"search\" type=\"search\" "
         "placeholder=\"search: a regular expression\"/></foreignObject>\n";
  svg += "<text id=\"matched\" x=\"320\" y=\"70\"></text>\n";
  svg += "<text id=\"reset\" class=\"button hidden\" x=\"" + fixed2(options.width - kMargin) +
         "\" y=\"70\" text-anchor=\"end\">reset zoom</text>\n";
  svg += "<g id=\"frames\">\n" + drawing.frames + "</g>\n";
  svg += "<text id=\"details\" x=\"" + fixed2(kMargin) + "\" y=\"" + fixed2(chart_bottom + 16) + "\"></text>\n";

  std::string note = std::to_string(drawing.drawn) + " frames drawn";
  if (drawing.omitted != 0) {
    note += "; " + std::to_string(drawing.omitted) + " frames narrower than " + fixed2(options.min_frame_width) +
            " px left out (" + std::to_string(drawing.omitted_samples) +
            " samples, counted in their callers' width; zoom does not bring them back)";
  }
  uint64_t incomplete = 0;
  for (const FlameNode& node : nodes) {
    if (node.depth == 1 && node.kind == FrameKind::incomplete) incomplete += node.samples;
  }
  if (incomplete != 0) note += "; incomplete stacks: " + std::to_string(incomplete) + " samples (" +
                               share_text(incomplete, total) + ")";
  if (!profile.complete()) note += "; the capture is not complete (losses or incomplete stacks: see the report)";
  svg += "<text id=\"note\" x=\"" + fixed2(kMargin) + "\" y=\"" + fixed2(chart_bottom + 34) + "\">";
  append_xml_text(svg, note);
  svg += "</text>\n<g id=\"legend\">";
  double x = kMargin;
  const double y = chart_bottom + 44;
  size_t legend_left_out = 0;
  auto legend = [&](const std::string& fill, const std::string& text) {
    const double needed = 16 + static_cast<double>(text.size()) * kCharWidth + 14;
    if (x + needed > options.width - kMargin - 16 * kCharWidth) {
      ++legend_left_out;
      return;
    }
    svg += "<rect x=\"" + fixed2(x) + "\" y=\"" + fixed2(y) + "\" width=\"12\" height=\"12\" fill=\"" + fill +
           "\"/><text x=\"" + fixed2(x + 16) + "\" y=\"" + fixed2(y + 10) + "\">";
    append_xml_text(svg, text);
    svg += "</text>";
    x += needed;
  };
  for (uint32_t module : palette.modules()) {
    legend("hsl(" + std::to_string(palette.module_hue(module)) + ", 75%, 58%)", module_file_name(profile, module));
  }
  legend("hsl(220, 65%, 62%)", "[kernel]");
  legend("hsl(0, 0%, 78%)", "[incomplete: why]");
  legend("rgb(225, 30, 225)", "search match");
  if (legend_left_out != 0) {
    svg += "<text x=\"" + fixed2(x) + "\" y=\"" + fixed2(y + 10) + "\">+" + std::to_string(legend_left_out) +
           " more</text>";
  }
  svg += "</g>\n<script><![CDATA[";
  svg += kFlameGraphScript;
  svg += "]]></script>\n</svg>\n";
  return svg;
}

}  // namespace xref::render
