// The one place where the commands turn exceptions into messages and exit statuses.
#pragma once

#include "tools/vbn/commands.hpp"
#include "runtime/error.hpp"

#include <exception>
#include <new>
#include <ostream>
#include <string>

namespace vbn::commands {

// Runs body() and returns its status; a vbn::Error prints its message (model diagnostics
// already carry "file:line:col: error:", other messages get an "error: " prefix) and returns
// the status of its kind (docs/design.md §3).
template <class F>
int guarded(std::ostream& err, F&& body) {
    try {
        return body();
    } catch (const Error& e) {
        std::string msg = e.what();
        if (!msg.empty() && msg.back() != '\n') msg += '\n';
        err << (e.kind() == ErrorKind::model ? "" : "error: ") << msg;
        return exit_status(static_cast<int>(e.kind()));
    } catch (const std::bad_alloc&) {
        err << "error: out of memory\n";
        return 1;
    } catch (const std::exception& e) {
        err << "error: " << e.what() << '\n';
        return 1;
    }
}

}  // namespace vbn::commands
