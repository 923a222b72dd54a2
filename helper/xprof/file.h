// The .xprof file (docs/xprof.md, schema_version 1): a Profile as one JSON
// document, written whole and read back bounded and checked, so a report
// of a file equals the report of the capture that wrote it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "result.h"
#include "xprof/profile.h"

namespace xref {

// The document (file_write.cpp), and its `losses` object, which every
// document about a capture repeats as the file spells it.
nlohmann::json xprof_json(const Profile& profile);
nlohmann::json losses_json(const ProfileLosses& losses);
// Written to a temporary file next to `path`, then renamed over it; the
// path is opened with the rights of the user sudo ran xref for.
Result<void> write_xprof(const Profile& profile, const std::string& path);

// Read back (file_read.cpp): a regular file of at most XREF_MAX_XPROF_BYTES
// (default 1 GiB; over it limit_exceeded), JSON nesting bounded, every
// index checked; anything else wrong is capture_format, one line saying
// what and where.
Result<Profile> read_xprof(const std::string& path);
Result<Profile> profile_from_json(const nlohmann::json& document);

}  // namespace xref
