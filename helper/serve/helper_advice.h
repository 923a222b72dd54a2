// What a debugger user does about a refusal that root would not meet: the
// helper runs as their own user, and the fix is to start it through sudo
// with the front end's `xref helper sudo -n PATH serve` (docs/lldb.md,
// docs/gdb.md, "The helper and privileges"), not "run xref as root", which
// a debugger user cannot do to a helper the front end starts.
#pragma once

#include "result.h"

namespace xref::serve {

// `error` with that hint when the helper is not root and the error is a
// permission_denied whose hint advises root; else `error` as it is.
Error with_helper_advice(Error error);

}  // namespace xref::serve
