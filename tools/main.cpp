// SPDX-License-Identifier: Apache-2.0
// wharf: the command-line program. `wharf info`, `wharf inspect FILE`, `wharf load FILE`,
// `wharf demo`, `wharf generate PACKAGE`.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli.h"
#include "core/env.h"
#include "core/text.h"
#include "io/json.h"

namespace wharf_cli {

bool failed(wharf_status* st, const char* what) {
  if (!st) return false;
  std::fprintf(stderr, "wharf: %s: %s: %s\n", what, wharf_code_name(wharf_status_code(st)), wharf_status_message(st));
  wharf_status_free(st);
  return true;
}

bool failed_on(wharf_status* st, const std::string& file) {
  if (!st) return false;
  const char* message = wharf_status_message(st);
  // The library's messages about a file name it with quote_path(); say it only once.
  if (std::strstr(message, wharf::quote_path(file).c_str()))
    std::fprintf(stderr, "wharf: %s: %s\n", wharf_code_name(wharf_status_code(st)), message);
  else
    std::fprintf(stderr, "wharf: %s: %s: %s\n", shown(file).c_str(), wharf_code_name(wharf_status_code(st)), message);
  wharf_status_free(st);
  return true;
}

namespace {

// Shown raw in a table: not a space of any kind (a space would split a column; Unicode's
// spaces and zero-width characters look like one or like nothing), not a quote or the
// backslash (ambiguous beside quoted names), nothing quote_name() escapes.
bool plain_code_point(uint32_t cp) {
  return cp > 0x20 && cp != '"' && cp != '\'' && cp != '\\' && !wharf::escaped_when_shown(cp) && cp != 0xA0 &&
         cp != 0x1680 && !(cp >= 0x2000 && cp <= 0x200F) && cp != 0x202F && cp != 0x205F &&
         !(cp >= 0x2060 && cp <= 0x206F) && cp != 0x3000 && cp != 0xFEFF;
}

}  // namespace

std::string shown(const std::string& s) {
  if (s.empty()) return "''";
  for (size_t i = 0; i < s.size();) {
    const size_t len = wharf::utf8_sequence_length(s, i);
    if (len == 0 || !plain_code_point(wharf::utf8_decode(s, i, len))) return wharf::quote_path(s);
    i += len;
  }
  return s;
}

std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", v, units[u]);
  return buf;
}

std::string shape_str(const wharf_tensor_view& v) {
  std::string s = "[";
  for (int i = 0; i < v.ndim; ++i) s += (i ? ", " : "") + std::to_string(v.shape[i]);
  return s + "]";
}

const char* backend_str(wharf_backend b) {
  switch (b) {
    case WHARF_BACKEND_CUDA:
      return "cuda";
    case WHARF_BACKEND_HOST:
      return "host";
    default:
      return "auto";
  }
}

// A variable's name as printed: as it is when plain (letters, digits, '_'), else quoted (a
// name is any bytes but '=': an escape must not reach the terminal).
std::string shown_name(const std::string& name) {
  for (char c : name)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
      return wharf::quote_name(name);
  return name;
}

// Errors only, to stderr: `info` reports the rest itself (the environment's unknown names
// among them), once.
void errors_to_stderr(wharf_log_level, const char* message, void*) {
  std::fprintf(stderr, "[wharf error] %s\n", message);
}

int cmd_info(bool json) {
  wharf_log_set_callback(errors_to_stderr, WHARF_LOG_ERROR, nullptr);
  // CUDA first, asked for explicitly, then the host backend: what backend AUTO does, but
  // without its log warning, so the reason CUDA is not used is printed once, below.
  std::string why_not_cuda;
  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = WHARF_BACKEND_CUDA;
  wharf_runtime* rt = nullptr;
  if (wharf_status* st = wharf_runtime_create(&ro, &rt)) {
    why_not_cuda = wharf_status_message(st);
    wharf_status_free(st);
    ro.backend = WHARF_BACKEND_HOST;
    if (failed(wharf_runtime_create(&ro, &rt), "creating the runtime")) return 1;
  }
  const std::vector<std::pair<std::string, std::string>> env = wharf::wharf_env_variables();
  const std::vector<wharf::UnknownEnvVariable> unknown = wharf::unknown_env_variables();
  wharf_device_info info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (failed(wharf_runtime_get_device_info(rt, &info), "reading device info")) {
    wharf_runtime_free(rt);
    return 1;
  }
  if (json) {
    wharf::io::json::Writer w;
    w.begin_object().key("version").string(wharf_version()).key("abi").uint(wharf_abi_version());
    w.key("backend").string(backend_str(info.backend)).key("device").string(info.name);
    w.key("device_index").sint(info.device_index);
    w.key("compute").string(std::to_string(info.compute_major) + "." + std::to_string(info.compute_minor));
    w.key("total_memory").uint(info.total_memory).key("free_memory").uint(info.free_memory);
    w.key("cuda_unavailable");
    if (why_not_cuda.empty())
      w.null();
    else
      w.string(why_not_cuda);
    // The switches set (docs/environment.md), and those Wharf does not read.
    w.key("environment").begin_object();
    for (const auto& [name, value] : env) w.key(name).string(value);
    w.end_object().key("unknown_environment").begin_array();
    for (const wharf::UnknownEnvVariable& u : unknown) {
      w.begin_object().key("name").string(u.name).key("closest");
      if (u.closest.empty())
        w.null();
      else
        w.string(u.closest);
      w.end_object();
    }
    w.end_array();
    w.end_object();
    std::printf("%s\n", w.text().c_str());
  } else {
    std::printf("wharf %s (ABI %u)\n", wharf_version(), wharf_abi_version());
    std::printf("backend:       %s\n", backend_str(info.backend));
    std::printf("device:        %s (index %d)\n", info.name, info.device_index);
    if (info.compute_major) std::printf("compute:       sm_%d%d\n", info.compute_major, info.compute_minor);
    std::printf("memory:        %s total, %s free\n", human_bytes(info.total_memory).c_str(),
                human_bytes(info.free_memory).c_str());
    if (!why_not_cuda.empty()) std::printf("cuda:          not used: %s\n", why_not_cuda.c_str());
    // The switches set (docs/environment.md): what an A/B run actually ran with.
    for (size_t i = 0; i < env.size(); ++i) {
      std::string note;
      for (const wharf::UnknownEnvVariable& u : unknown)
        if (u.name == env[i].first)
          note = u.closest.empty() ? " (Wharf reads no such variable)"
                                   : " (Wharf reads no such variable; did you mean " + u.closest + "?)";
      std::printf("%s%s=%s%s\n", i == 0 ? "environment:   " : "               ", shown_name(env[i].first).c_str(),
                  wharf::quote_name(env[i].second).c_str(), note.c_str());
    }
  }
  wharf_runtime_free(rt);
  return 0;
}

namespace {

// One file's object for `inspect --json`: its tensors, metadata and total bytes, or, when the
// file cannot be read, {"file": ..., "error": {"code": ..., "message": ...}}. Built whole
// before it is printed, so a file that fails half-way never leaves half an object.
wharf::io::json::Writer inspect_json(const std::string& file, bool* ok) {
  using wharf::io::json::Writer;
  const auto error_object = [&file, ok](wharf_status* st) {
    Writer e;
    e.begin_object().key("file").string(file).key("error").begin_object();
    e.key("code").string(wharf_code_name(wharf_status_code(st))).key("message").string(wharf_status_message(st));
    e.end_object().end_object();
    wharf_status_free(st);
    *ok = false;
    return e;
  };
  wharf_constant_map* map = nullptr;
  if (wharf_status* st = wharf_constant_map_load_safetensors(file.c_str(), &map)) return error_object(st);
  Writer w;
  w.begin_object().key("file").string(file).key("tensors").begin_array();
  uint64_t total = 0;
  for (size_t i = 0, n = wharf_constant_map_num_entries(map); i < n; ++i) {
    const char* name = nullptr;
    wharf_tensor_view v;
    std::memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    if (wharf_status* st = wharf_constant_map_get_entry(map, i, &name, &v)) {
      wharf_constant_map_free(map);
      return error_object(st);
    }
    const uint64_t bytes = tensor_bytes(v);
    total += bytes;
    const char* dt = wharf_dtype_name(v.dtype);
    w.begin_object().key("name").string(name).key("dtype").string(dt ? dt : "?").key("shape").begin_array();
    for (int d = 0; d < v.ndim; ++d) w.sint(v.shape[d]);
    w.end_array().key("bytes").uint(bytes).end_object();
  }
  w.end_array().key("metadata").begin_object();
  for (size_t i = 0; i < wharf_constant_map_num_metadata_entries(map); ++i) {
    const char *k, *val;
    if (wharf_status* st = wharf_constant_map_get_metadata_entry(map, i, &k, &val)) {
      wharf_constant_map_free(map);
      return error_object(st);
    }
    w.key(k).string(val);
  }
  w.end_object().key("total_bytes").uint(total).end_object();
  wharf_constant_map_free(map);
  return w;
}

}  // namespace

uint64_t tensor_bytes(const wharf_tensor_view& v) {
  // Sized in bits: sub-byte dtypes (F4, F6) pack several elements per byte.
  uint64_t bits = wharf_dtype_bits(v.dtype);
  for (int d = 0; d < v.ndim; ++d) bits *= uint64_t(v.shape[d]);
  return bits / 8;
}

int cmd_inspect(const std::vector<std::string>& files, bool json) {
  int rc = 0;
  if (json) {
    // One array, one object per file in the order given; a file that fails is an error object
    // in its place (and the exit status is 1), never a gap.
    wharf::io::json::Writer w;
    w.begin_array();
    for (const std::string& file : files) {
      bool ok = true;
      w.value(inspect_json(file, &ok));
      if (!ok) rc = 1;
    }
    w.end_array();
    std::printf("%s\n", w.text().c_str());
    return rc;
  }
  for (size_t f = 0; f < files.size(); ++f) {
    const std::string& file = files[f];
    wharf_constant_map* map = nullptr;
    if (failed_on(wharf_constant_map_load_safetensors(file.c_str(), &map), file)) {
      rc = 1;
      continue;
    }
    const size_t n = wharf_constant_map_num_entries(map);
    uint64_t total = 0;
    if (files.size() > 1) std::printf("%s== %s\n", f ? "\n" : "", shown(file).c_str());
    std::printf("%-48s %-8s %-20s %12s\n", "tensor", "dtype", "shape", "bytes");
    for (size_t i = 0; i < n; ++i) {
      const char* name = nullptr;
      wharf_tensor_view v;
      std::memset(&v, 0, sizeof v);
      v.struct_size = sizeof v;
      if (failed_on(wharf_constant_map_get_entry(map, i, &name, &v), file)) {
        rc = 1;
        break;
      }
      const uint64_t bytes = tensor_bytes(v);
      total += bytes;
      const char* dt = wharf_dtype_name(v.dtype);
      std::printf("%-48s %-8s %-20s %12llu\n", shown(name).c_str(), dt ? dt : "?", shape_str(v).c_str(),
                  static_cast<unsigned long long>(bytes));
    }
    for (size_t i = 0; i < wharf_constant_map_num_metadata_entries(map); ++i) {
      const char *k, *val;
      if (failed_on(wharf_constant_map_get_metadata_entry(map, i, &k, &val), file)) {
        rc = 1;
        continue;
      }
      std::printf("metadata: %s = %s\n", shown(k).c_str(), shown(val).c_str());
    }
    std::printf("%zu tensors, %s\n", n, human_bytes(total).c_str());
    wharf_constant_map_free(map);
  }
  return rc;
}

namespace {

// The usage errors of every command exit with 2, as most Unix tools do (CLI11's own codes,
// 105/106/109..., say nothing to a shell script); failures of the work itself exit with 1.
constexpr int kUsageError = 2;

std::string version_line() {
  return std::string("wharf ") + wharf_version() + " (ABI " + std::to_string(wharf_abi_version()) + ")";
}

std::string command_list(const CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands({})) names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

// The subcommand named `name`, or nullptr.
const CLI::App* find_command(const CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands({}))
    if (sub->check_name(name)) return sub;
  return nullptr;
}

int usage_error(const std::string& what, const std::string& help_command) {
  std::fprintf(stderr, "wharf: %s\nRun '%s --help' for more information.\n", what.c_str(), help_command.c_str());
  return kUsageError;
}

}  // namespace

}  // namespace wharf_cli

int main(int argc, char** argv) {
  using namespace wharf_cli;
  CLI::App app{"wharf: GPU-resident weights and per-session state for inference services"};
  app.name("wharf");
  app.set_version_flag("-V,--version", version_line(), "print the version and exit");
  app.require_subcommand(1);
  bool json = false;
  auto* info = app.add_subcommand("info", "version, backend found, device name and memory");
  info->add_flag("--json", json, "one JSON object");
  std::vector<std::string> files;
  auto* inspect = app.add_subcommand("inspect", "table of tensors, dtypes, shapes and bytes of safetensors files");
  // No existence check here: a file that cannot be read is reported by the library, and
  // with --json as an error object in its place.
  inspect->add_option("files", files, "safetensors files")->required();
  inspect->add_flag("--json", json,
                    "a JSON array, one object per file in order; a file that cannot be read is "
                    "{\"file\", \"error\": {\"code\", \"message\"}} (exit status 1)");
  LoadOptions load;
  auto* l = app.add_subcommand("load",
                               "load a checkpoint into a container on the device, then apply updates from "
                               "files (progress on a terminal)");
  l->add_option("file", load.file, "a safetensors file or a sharded checkpoint's *.safetensors.index.json")->required();
  l->add_option("--update", load.updates,
                "a safetensors file of some of its tensors, applied and swapped in "
                "after the load (repeatable, in order)");
  l->add_option("--backend", load.backend, "auto (default), cuda or host")
      ->check(CLI::IsMember({"auto", "cuda", "host"}));
  l->add_flag("--json", load.json,
              "one JSON object at the end: the backend, a step per file (tensors, bytes, ms, generation) "
              "and the error, if any");
  DemoOptions demo;
  auto* d = app.add_subcommand("demo",
                               "on a GPU, the committed AOTInductor model serving two conversations through a hot "
                               "update; elsewhere weights updated while serving threads read them");
  d->add_flag("--host", demo.host, "force the host backend (the weights-only demo)");
  d->add_flag("--weights-only", demo.weights_only, "the weights-only demo even on a GPU");
  d->add_option("--model", demo.model_dir, "the compiled model's directory (default: found automatically)");
  d->add_option("--readers", demo.readers, "serving threads of the weights-only demo")->check(CLI::Range(0, 64));
  GenerateOptions gen;
  std::string prompt_text;
  auto* g = app.add_subcommand("generate",
                               "greedy decoding with a model package (prefill, then decode one token at a time), "
                               "optionally hot-updating its weights mid-conversation");
  g->add_option("package", gen.package, "the model package's directory (docs/model-package.md)")->required();
  g->add_option("--prompt", prompt_text, "the prompt's token ids, comma-separated (1,2,3)")->required();
  g->add_option("--max-new-tokens", gen.max_new_tokens, "tokens to generate (the first from prefill)")
      ->required()
      ->check(CLI::Range(1, 1 << 20));
  auto* upd = g->add_option("--update", gen.update,
                            "a safetensors file (or sharded index) of some of the package's parameters: written into "
                            "its weight store and swapped in mid-conversation");
  auto* after = g->add_option("--update-after", gen.update_after,
                              "apply --update after this many generated tokens (0: before the prefill)")
                    ->check(CLI::NonNegativeNumber);
  upd->needs(after);
  after->needs(upd);
  g->add_option("--backend", gen.backend, "auto (default), cuda or host")
      ->check(CLI::IsMember({"auto", "cuda", "host"}));
  g->add_flag("--graphs", gen.graphs, "decode by replaying a CUDA graph (wharf_model_enable_graphs)");
  g->add_flag("--json", gen.json,
              "one JSON object: tokens, generation (per token), prefill_us, decode_us_median, update, error");
  std::string help_topic;
  auto* help = app.add_subcommand("help", "this help, or a command's: wharf help COMMAND");
  help->add_option("command", help_topic, "a command");
  auto* version = app.add_subcommand("version", "print the version (as wharf -V, wharf --version)");

  // The first word that is not an option names the command. An unknown one is said to be one
  // (CLI11 would report "a subcommand is required" or "arguments not expected"), with the
  // list of commands.
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help" || arg == "-V" || arg == "--version") continue;
    if (arg[0] == '-')
      return usage_error("unknown option " + wharf::quote_name(arg) + " (a command comes first; the commands are " +
                             command_list(app) + ")",
                         "wharf");
    if (!find_command(app, arg))
      return usage_error("unknown command " + wharf::quote_name(argv[i]) + "; the commands are " + command_list(app),
                         "wharf");
    break;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (app.get_subcommands().empty())
      return usage_error("a command is required; the commands are " + command_list(app), "wharf");
    return usage_error(e.what(), "wharf " + app.get_subcommands().front()->get_name());
  }
  if (help->parsed()) {
    // app.help() would show the help of the command parsed, `help` itself.
    if (help_topic.empty()) {
      std::printf("%s", app.get_formatter()->make_help(&app, "wharf", CLI::AppFormatMode::Normal).c_str());
      return 0;
    }
    const CLI::App* topic = find_command(app, help_topic);
    if (!topic || topic == help)
      return usage_error(
          "help: unknown command " + wharf::quote_name(help_topic) + "; the commands are " + command_list(app),
          "wharf");
    std::printf(
        "%s", app.get_formatter()->make_help(topic, "wharf " + topic->get_name(), CLI::AppFormatMode::Normal).c_str());
    return 0;
  }
  if (version->parsed()) {
    std::printf("%s\n", version_line().c_str());
    return 0;
  }
  if (info->parsed()) return cmd_info(json);
  if (inspect->parsed()) return cmd_inspect(files, json);
  if (l->parsed()) return cmd_load(load);
  if (g->parsed()) {
    // "1,2,3": non-negative integers, no empty item.
    size_t at = 0;
    while (at <= prompt_text.size()) {
      size_t comma = prompt_text.find(',', at);
      if (comma == std::string::npos) comma = prompt_text.size();
      const std::string item = prompt_text.substr(at, comma - at);
      char* end = nullptr;
      errno = 0;
      const long long v = item.empty() || item[0] == '-' || item[0] == '+' ? -1 : std::strtoll(item.c_str(), &end, 10);
      if (v < 0 || errno != 0 || !end || *end != '\0')
        return usage_error(
            "--prompt: " + wharf::quote_name(item) + " is not a token id (comma-separated integers >= 0)",
            "wharf generate");
      gen.prompt.push_back(v);
      at = comma + 1;
    }
    if (!gen.update.empty() && gen.update_after >= gen.max_new_tokens)
      return usage_error("--update-after " + std::to_string(gen.update_after) +
                             " is not before the last of --max-new-tokens " + std::to_string(gen.max_new_tokens),
                         "wharf generate");
    return cmd_generate(gen);
  }
  return cmd_demo(demo);
}
