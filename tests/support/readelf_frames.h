// binutils' readelf as the peer for call-frame information: the rows of
// --debug-dump=frames-interp (a rule per register column at each location)
// and, for the rules it prints only as "exp", the DWARF expressions of
// --debug-dump=frames. One section is read: .eh_frame or .debug_frame.
#pragma once

#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "command_output.h"

namespace xref::test {

struct ReadelfFrameRow {
  uint64_t location = 0;
  std::string cfa;                            // "rsp+8", "rbp+16", "r12+8", "exp"
  std::map<std::string, std::string> rules;   // by column ("rbp", "ra"): "c-16", "u", "s", "exp", ...
};

struct ReadelfFrameFde {
  uint64_t start = 0;
  uint64_t end = 0;
  std::string augmentation;               // its CIE's ("zR", "zRS")
  std::vector<ReadelfFrameRow> rows;      // as printed
  ReadelfFrameRow initial;                // its CIE's row: the rule before the FDE's first row
  // From the raw dump: the text inside DW_CFA_def_cfa_expression ( ... ),
  // and inside DW_CFA_expression for a register ("rbp", "rip").
  std::string cfa_expression;
  size_t cfa_expressions = 0;  // how many the FDE has
  std::map<std::string, std::string> register_expressions;
};

// The words of a line; a register rule "r10 (r10)" (the value is in
// another register) stays one word.
inline std::vector<std::string> readelf_words(const std::string& line) {
  std::istringstream stream(line);
  std::vector<std::string> result;
  for (std::string word; stream >> word;) {
    if (word.starts_with("(") && !result.empty() && result.back().find('(') == std::string::npos) {
      result.back() += " " + word;
    } else {
      result.push_back(word);
    }
  }
  return result;
}

// "00000018 0000000000000024 0000001c FDE cie=00000000 pc=0000000000026000..0000000000026360"
inline bool readelf_fde_header(const std::vector<std::string>& fields, uint64_t& cie, uint64_t& start,
                               uint64_t& end) {
  if (fields.size() < 6 || fields[3] != "FDE" || !fields[4].starts_with("cie=") || !fields[5].starts_with("pc=")) {
    return false;
  }
  const size_t dots = fields[5].find("..");
  if (dots == std::string::npos) return false;
  cie = std::stoull(fields[4].substr(4), nullptr, 16);
  start = std::stoull(fields[5].substr(3, dots - 3), nullptr, 16);
  end = std::stoull(fields[5].substr(dots + 2), nullptr, 16);
  return true;
}

// Every FDE of `section` (".eh_frame", ".debug_frame"), in section order. -wN: do not follow
// .gnu_debuglink (a separate debug file's NOBITS .eh_frame makes readelf
// exit 1). Empty when readelf fails.
inline std::vector<ReadelfFrameFde> readelf_frame_fdes(const std::string& path,
                                                       const std::string& section = ".eh_frame") {
  const std::string contents = "Contents of the " + section + " section";
  const auto interp = try_command_lines("readelf -wN --debug-dump=frames-interp '" + path + "' 2>/dev/null");
  const auto raw = try_command_lines("readelf -wN --debug-dump=frames '" + path + "' 2>/dev/null");
  if (!interp || !raw) return {};
  std::vector<ReadelfFrameFde> fdes;
  std::vector<uint64_t> fde_cies;
  std::map<uint64_t, ReadelfFrameRow> cie_rows;       // by CIE offset: its last row
  std::map<uint64_t, std::string> cie_augmentations;  // by CIE offset
  {
    bool in_section = false, in_cie = false, in_fde = false;
    uint64_t cie_offset = 0;
    std::vector<std::string> columns;
    for (const std::string& line : *interp) {
      if (line.starts_with("Contents of the ")) {
        in_section = line.starts_with(contents);
        in_cie = in_fde = false;
        continue;
      }
      if (!in_section) continue;
      const auto fields = readelf_words(line);
      uint64_t cie = 0, start = 0, end = 0;
      if (fields.size() >= 5 && fields[3] == "CIE") {
        // "00000000 0000000000000014 00000000 CIE "zR" cf=1 df=-8 ra=16"
        cie_offset = std::stoull(fields[0], nullptr, 16);
        std::string augmentation = fields[4];
        if (augmentation.size() >= 2 && augmentation.front() == '"') augmentation = augmentation.substr(1, augmentation.size() - 2);
        cie_augmentations[cie_offset] = augmentation;
        in_cie = true;
        in_fde = false;
      } else if (readelf_fde_header(fields, cie, start, end)) {
        fdes.push_back({start, end, {}, {}, {}, {}, 0, {}});
        fde_cies.push_back(cie);
        in_cie = false;
        in_fde = true;
      } else if (!fields.empty() && fields[0] == "LOC") {
        columns = fields;  // "LOC CFA rbx rbp ra"
      } else if (fields.size() >= 2 && fields[0].size() == 16 &&
                 fields[0].find_first_not_of("0123456789abcdef") == std::string::npos && (in_cie || in_fde)) {
        ReadelfFrameRow row;
        row.location = std::stoull(fields[0], nullptr, 16);
        row.cfa = fields[1];
        for (size_t i = 2; i < fields.size() && i < columns.size(); ++i) row.rules[columns[i]] = fields[i];
        if (in_fde) {
          fdes.back().rows.push_back(row);
        } else {
          cie_rows[cie_offset] = row;
        }
      }
    }
  }
  for (size_t i = 0; i < fdes.size(); ++i) {
    fdes[i].augmentation = cie_augmentations[fde_cies[i]];
    const auto cie = cie_rows.find(fde_cies[i]);
    if (cie != cie_rows.end()) fdes[i].initial = cie->second;
    fdes[i].initial.location = fdes[i].start;
  }
  // The raw dump lists the same FDEs in the same order.
  size_t index = 0;
  bool in_section = false;
  ReadelfFrameFde* fde = nullptr;
  for (const std::string& line : *raw) {
    if (line.starts_with("Contents of the ")) {
      in_section = line.starts_with(contents);
      fde = nullptr;
      continue;
    }
    if (!in_section) continue;
    const auto fields = readelf_words(line);
    uint64_t cie = 0, start = 0, end = 0;
    if (fields.size() >= 4 && fields[3] == "CIE") {
      fde = nullptr;
    } else if (readelf_fde_header(fields, cie, start, end)) {
      fde = index < fdes.size() && fdes[index].start == start ? &fdes[index] : nullptr;
      ++index;
    } else if (fde != nullptr) {
      // "  DW_CFA_def_cfa_expression (DW_OP_breg7 (rsp): 8; DW_OP_deref)"
      // "  DW_CFA_expression: r6 (rbp) (DW_OP_breg7 (rsp): 120)"
      const std::string text = line.substr(line.find_first_not_of(' ') == std::string::npos ? 0 : line.find_first_not_of(' '));
      const size_t open = text.find("(DW_OP");
      if (open == std::string::npos || text.back() != ')') continue;
      const std::string expression = text.substr(open + 1, text.size() - open - 2);
      if (text.starts_with("DW_CFA_def_cfa_expression")) {
        fde->cfa_expression = expression;
        ++fde->cfa_expressions;
      } else if (text.starts_with("DW_CFA_expression: ")) {
        const size_t name = text.find('(');
        const size_t name_end = text.find(')', name);
        if (name != std::string::npos && name_end != std::string::npos) {
          fde->register_expressions[text.substr(name + 1, name_end - name - 1)] = expression;
        }
      }
    }
  }
  return fdes;
}

}  // namespace xref::test
