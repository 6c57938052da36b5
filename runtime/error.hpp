// Errors the runtime and the API report: a kind, a message that already names the place,
// and the place itself (line/column for models, row/column for data). The class is part of
// the public API (include/vbn/error.hpp), so that what the runtime throws is what hosts catch.
#pragma once

#include "vbn/error.hpp"
