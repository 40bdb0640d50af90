// `stockade code SANDBOX [--language L] [--timeout S] CODE|-`: code in a
// sandbox's kernel of a running stockaded (docs/api.md, "Code").
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "src/cli/client.h"
#include "src/cli/commands.h"
#include "src/cli/output.h"

namespace stockade::cli {
namespace {

using nlohmann::json;

constexpr int kExitRaised = 1;     // the code raised an exception
constexpr int kExitTimedOut = 124; // --timeout interrupted it
constexpr int kExitKernelDied = 125;

// All of standard input (no iostreams in the CLI: output.h says why).
std::optional<std::string> readStdin() {
  std::string out;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(0, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return out;
    out.append(buffer, static_cast<std::size_t>(n));
  }
}

std::string textOf(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

// How the code ended, as an exit status.
int exitStatusOf(const json& e) {
  if (!e.contains("error") || !e["error"].is_object()) return kExitOk;
  const std::string name = textOf(e["error"], "name");
  return name == "TimeoutError" ? kExitTimedOut : name == "KernelDied" ? kExitKernelDied : kExitRaised;
}

// The code's output as it wrote it, then each result's text (its other
// formats named on stderr), then the error's traceback.
int printExecution(const json& e) {
  if (e.contains("logs") && e["logs"].is_object()) {
    for (const char* channel : {"stdout", "stderr"}) {
      const json& chunks = e["logs"][channel];
      if (!chunks.is_array()) continue;
      for (const auto& c : chunks)
        if (c.is_string()) (channel[3] == 'o' ? printOut : printErrAsIs)(c.get_ref<const std::string&>());
    }
  }
  if (e.contains("results") && e["results"].is_array()) {
    for (const auto& r : e["results"]) {
      const std::string text = textOf(r, "text");
      if (!text.empty()) printOut(text + "\n");
      std::string others;
      if (r.contains("formats") && r["formats"].is_array())
        for (const auto& f : r["formats"])
          if (f.is_string() && f != "text") others += (others.empty() ? "" : ", ") + f.get<std::string>();
      if (!others.empty()) printErr("stockade code: a result also has " + others + " (--json prints them)\n");
    }
  }
  if (e.contains("kernel") && e["kernel"].is_object() && e["kernel"].contains("stateLost"))
    printErr("stockade code: a fresh kernel: " + printable(textOf(e["kernel"], "stateLost")) + "\n");
  if (!e.contains("error") || !e["error"].is_object()) return kExitOk;
  const json& err = e["error"];
  const std::string name = textOf(err, "name"), traceback = textOf(err, "traceback");
  if (!traceback.empty()) printErr(traceback + "\n");
  if (name == "TimeoutError" || name == "KernelDied" || traceback.empty())
    printErr("stockade code: " + printable(name) + ": " + printable(textOf(err, "value")) + "\n");
  return exitStatusOf(e);
}

int codeBody(const ParsedArgs& a, ClientSetup& s) {
  const std::string sandbox = a.positionals[0];
  std::string code = a.positionals[1];
  if (code == "-") {
    auto in = readStdin();
    if (!in) return reportFailure("code", std::string("reading standard input: ") + std::strerror(errno));
    code = std::move(*in);
  }
  json body{{"code", code}};
  if (auto v = a.value("language")) body["language"] = *v;
  if (auto v = a.value("timeout")) {
    char* end = nullptr;
    errno = 0;
    const double seconds = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || errno != 0 || !(seconds > 0))
      return usageError("code", "--timeout " + *v + ": give seconds above 0 (a fraction allowed)");
    body["timeout"] = seconds;
  }
  HttpResult r = s.client->request("POST", "/v1/sandboxes/" + urlEncode(sandbox, ":") + "/code", body.dump());
  if (r.status != 200) return reportError("code", r);
  json e = json::parse(r.body, nullptr, false);
  if (!e.is_object()) return reportFailure("code", "the daemon's reply is not JSON");
  if (s.json) {
    printOut(r.body + "\n");
    return exitStatusOf(e);
  }
  return printExecution(e);
}

}  // namespace

int codeCommand(const std::vector<std::string>& args) {
  return runDaemonCommand("code", args,
                          {[](const ParsedArgs& a) -> std::optional<std::string> {
                             if (a.positionals.size() != 2 || !a.rest.empty())
                               return "give the sandbox id, then the code (or - to read it from standard input)";
                             return std::nullopt;
                           },
                           codeBody});
}

}  // namespace stockade::cli
