#include "gpubench/core/io/files.hpp"
#include "cli/app.h"
#include "cli/scenario_flags.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>

#include "gpubench/core/build_info.hpp"
#include "gpubench/core/scenario/scenario_loader.hpp"
#include "gpubench/report/document.hpp"

namespace gpubench::cli {

namespace {

/// Every long and short flag name of `cmd` and its parents (global flags work everywhere).
std::vector<std::string> flag_names(const CLI::App* cmd) {
  std::vector<std::string> out;
  for (const CLI::App* a = cmd; a != nullptr; a = a->get_parent()) {
    for (const CLI::Option* o : a->get_options()) {
      for (const auto& l : o->get_lnames()) out.push_back("--" + l);
      for (const auto& s : o->get_snames()) out.push_back("-" + s);
    }
  }
  return out;
}

/// The most deeply nested subcommand that was parsed (`db add` -> add), or `app` itself.
CLI::App* selected(CLI::App* app) {
  for (CLI::App* sub : app->get_subcommands()) {
    if (sub->parsed()) return selected(sub);
  }
  return app;
}

std::string full_name(const CLI::App* cmd) {
  std::string name;
  for (const CLI::App* a = cmd; a != nullptr && a->get_parent() != nullptr; a = a->get_parent()) {
    name = a->get_name() + (name.empty() ? "" : " " + name);
  }
  return "gpubench " + name;
}

/// Arguments CLI11 could not place, as a usage error with the closest flag suggested.
void refuse_extras(CLI::App& app, CLI::App* cmd) {
  const std::vector<std::string> extras = app.remaining(true);
  if (extras.empty()) return;
  const std::string& first = extras.front();
  std::string message;
  if (!first.empty() && first[0] == '-' && first.size() > 1) {
    const std::string flag = first.substr(0, first.find('='));
    message = full_name(cmd) + ": unknown flag " + flag;
    const std::string best = closest_match(flag, flag_names(cmd));
    if (!best.empty()) message += " (did you mean " + best + "?)";
  } else {
    message = full_name(cmd) + ": unexpected argument '" + first + "'";
  }
  throw UsageError(message + "; see `" + full_name(cmd) + " --help`");
}

/// The first word that is not a global option: the command the user meant, checked before CLI11 sees it so that a
/// misspelt one gets a suggestion rather than "A subcommand is required".
void check_command_name(int argc, char** argv, const std::vector<CommandSpec>& commands) {
  std::vector<std::string> names;
  for (const auto& c : commands) names.push_back(c.name);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--log-level") {
      ++i;
      continue;
    }
    if (!a.empty() && a[0] == '-') continue;
    if (std::find(names.begin(), names.end(), a) != names.end()) return;
    std::string message = "unknown command '" + a + "'";
    const std::string best = closest_match(a, names);
    if (!best.empty()) message += " (did you mean '" + best + "'?)";
    std::string all;
    for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
    throw UsageError(message + "; commands: " + all + " (gpubench --help)");
  }
}

/// An empty argument (`--out ''`, `--cuda-graph ''`, `--out=`) is never a value: CLI11 would take it as "true" for a
/// boolean and a default place for a path.
void refuse_empty_values(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const size_t eq = a.find('=');
    if (a.rfind("-", 0) == 0 && eq != std::string::npos && eq + 1 == a.size()) {
      throw UsageError(a + ": an empty value; give one, or leave " + a.substr(0, eq) + " out");
    }
    if (a.empty()) {
      const std::string before = i > 1 ? std::string(argv[i - 1]) : std::string("gpubench");
      throw UsageError("an empty argument after " + before + ": an empty value is never a default; give one" +
                       (before.rfind("-", 0) == 0 ? ", or leave " + before + " out" : std::string()));
    }
  }
}

void set_log_level(int verbosity, const std::string& level) {
  if (!level.empty()) {
    spdlog::set_level(spdlog::level::from_str(level));
  } else if (verbosity < 0) {
    spdlog::set_level(spdlog::level::warn);
  } else if (verbosity > 0) {
    spdlog::set_level(spdlog::level::debug);
  }
}

void allow_extras_everywhere(CLI::App* app) {
  app->allow_extras();
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) allow_extras_everywhere(sub);
}

/// One rule for every command: no output (its own or --save's) is one of its inputs, a store or another output.
void check_file_roles(const Command& command, const OutputOptions& output) {
  FileRoles roles;
  try {
    command.files(roles);
    for (const auto& t : output.targets) roles.output(t.path, "--save");
    roles.check();
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
}

/// `--format openmetrics` or a `.prom` save of a command that prints no metrics: exit 2 before any work (rather than an
/// empty exposition, or exit 4 once the work is done).
void refuse_openmetrics_without_metrics(const Command& command, const OutputOptions& output, const std::string& name) {
  if (command.has_metrics()) return;
  const auto is_om = [](const std::string& f) { return f == "openmetrics" || f == "prometheus"; };
  std::string where;
  if (is_om(output.format)) where = "--format " + output.format;
  for (const auto& t : output.targets) {
    if (where.empty() && is_om(t.format)) where = "--save " + t.path;
  }
  if (!where.empty()) {
    throw UsageError(name + " " + where + ": this command prints no metrics to expose as OpenMetrics (run, history "
                     "and export do); choose another format");
  }
}

}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& choices) {
  return gpubench::closest_match(word, choices, std::max<size_t>(3, word.size() / 3));  // longer words, more slack
}

void Context::print(const Document& d) const {
  PrinterMultiplex mux;
  add_outputs(mux, output, document_stream == stderr);
  try {
    mux.print(d);
  } catch (const std::exception& e) {
    throw OutputNotWritten(e.what());
  }
}

CLI::Validator decimal_whole() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const bool digits =
            !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (!digits) return "expected a whole number in decimal digits, got '" + text + "'";
        const size_t first = text.find_first_not_of('0');
        text = first == std::string::npos ? "0" : text.substr(first);  // 010 is ten, never octal eight
        return {};
      },
      "");
}

CLI::Validator unsigned_64() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        const bool digits = !text.empty() && text.size() <= 20 &&
                            std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
        errno = 0;
        if (digits) (void)std::strtoull(text.c_str(), nullptr, 10);
        if (!digits || errno == ERANGE) return "expected a whole number from 0 to 18446744073709551615, got '" + text + "'";
        return {};
      },
      "");
}

int run_cli(const std::vector<CommandSpec>& commands, int argc, char** argv) {
  Context ctx;
  // Every password the command line or PGPASSWORD holds is known before anything can print it (redact.hpp).
  for (int i = 0; i < argc; ++i) register_secrets_in_argument(argv[i]);
  if (const char* pw = std::getenv("PGPASSWORD")) register_secret(pw);
  if (const char* store = std::getenv("GPUBENCH_DB")) register_secrets_in_argument(store);
  for (int i = 0; i < argc; ++i) {
    ctx.argv.emplace_back(argv[i]);
    // What records and logs show of the command: a store URL's password never (`run --db postgresql://u:pw@h/db`).
    ctx.command_line += (i ? " " : "") + without_passwords(argv[i]);
  }
  ctx.self = "/proc/self/exe";
  ScenarioFlags::focus_help(ctx.argv);  // `run MODEL --help` lists that model's keys

  CLI::App app{"gpubench: how fast does this chip really train, and why?\n"
               "Trains real models (ResNet-50, BERT, the SD UNet, GPT-2, Llama) on CUDA, ROCm, MPS or the CPU and "
               "writes a JSON record."};
  app.set_version_flag("--version", "gpubench " + build_info().version + " (" + build_info().git_revision + ")");
  app.require_subcommand(1);
  app.fallthrough();
  bool quiet = false, verbose = false;
  std::string log_level;
  app.add_flag("-q,--quiet", quiet, "Only warnings, errors and the final result")->group("Global options");
  app.add_flag("-v,--verbose", verbose, "Debug messages too")->group("Global options");
  app.add_option("--log-level", log_level, "Log level")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}).description(""))
      ->type_name("trace|debug|info|warn|error|off")
      ->group("Global options");

  std::vector<std::unique_ptr<Command>> instances;
  std::map<CLI::App*, const CommandSpec*> spec_of;
  std::map<CLI::App*, Command*> command_of;
  for (const auto& spec : commands) {
    instances.push_back(spec.make());
    CLI::App* sub = app.add_subcommand(spec.name, spec.summary);
    instances.back()->declare(*sub);
    sub->add_option("--format", ctx.output.format,
                    "Format of what is printed on standard output (default " + spec.default_format +
                        "; openmetrics: run, history and export, the commands with metrics)")
        ->type_name("console|md|html|csv|jsonl|json|junit|openmetrics")
        ->group("Output");
    sub->add_option("--save", ctx.output.save,
                    "Also write it to FILE, in the format its extension names (" + known_extensions() +
                        ") or as FORMAT:FILE; repeatable")
        ->type_name("[FORMAT:]FILE")
        ->group("Output");
    const std::string footer = sub->get_footer();
    sub->footer((footer.empty() ? "" : footer + "\n") + exit_code_footer(spec.exit_codes));
    spec_of[sub] = &spec;
    command_of[sub] = instances.back().get();
  }
  // The root's footer last: subcommands copy their parent's when they are added.
  std::vector<int> all_codes;
  for (const auto& e : exit_code_table()) all_codes.push_back(e.code);
  app.footer("Each command's --help lists its flags and the exit codes it returns.\n" + exit_code_footer(all_codes) +
             "\nNO_COLOR=1 turns colour off; there is none when standard error is not a terminal.");
  allow_extras_everywhere(&app);

  try {
    refuse_empty_values(argc, argv);
    check_command_name(argc, argv, commands);
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    CLI::App* cmd = selected(&app);
    spdlog::error("{}: {}; see `{} --help`", full_name(cmd), without_passwords(e.what()), full_name(cmd));
    return kExitUsage;
  } catch (const UsageError& e) {
    spdlog::error("{}", without_passwords(e.what()));
    return kExitUsage;
  }

  CLI::App* top = nullptr;
  for (CLI::App* sub : app.get_subcommands()) top = sub;
  try {
    refuse_extras(app, selected(&app));
    set_log_level(quiet ? -1 : (verbose ? 1 : 0), log_level);
    ctx.verbosity = quiet ? -1 : (verbose ? 1 : 0);
    ctx.output.default_format = spec_of.at(top)->default_format;
    resolve_outputs(ctx.output);
    Command* command = command_of.at(top);
    refuse_openmetrics_without_metrics(*command, ctx.output, full_name(selected(&app)));
    check_file_roles(*command, ctx.output);
    return command->run(ctx);
  } catch (const std::exception& e) {
    spdlog::error("{}", without_passwords(e.what()));  // a store URL in a message never shows its password
    return exit_code_for(e);
  } catch (...) {
    spdlog::error("unexpected error (not a std::exception)");
    return kExitUsage;
  }
}

}  // namespace gpubench::cli
