#pragma once
// The commands, one file each under src/cli/commands/; main.cpp's table lists them (one line per command).

#include <string>

#include "cli/app.h"

namespace gpubench::cli {

CommandSpec run_command();
CommandSpec sweep_command();
CommandSpec scaling_command();
CommandSpec compare_command();
CommandSpec report_command();
CommandSpec export_command();
CommandSpec history_command();
CommandSpec db_command();
CommandSpec trace_command();
CommandSpec metrics_command();
CommandSpec list_command();
CommandSpec info_command();
CommandSpec validate_command();
CommandSpec fit_command();
CommandSpec dataset_command();

/// "20261130-024512": local time, for default folder names (sweep, scaling).
std::string local_timestamp();

}  // namespace gpubench::cli
