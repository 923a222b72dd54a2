// The exit statuses every command shares: 0, then one per ErrorCode
// (shared/result.h, error_exit_status), with what each means for a user.
#pragma once

#include <vector>

#include "manual/help_notes.h"

namespace xref::manual {

// 0 first, then each error's status in order; the meaning names its
// error.code, as the --json error object carries it.
std::vector<ExitStatus> common_exit_statuses();

}  // namespace xref::manual
