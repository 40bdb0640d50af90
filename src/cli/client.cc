#include "src/cli/client.h"

#include <cctype>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "src/cli/help.h"
#include "src/cli/output.h"
#include "src/daemon/auth.h"

namespace stockade::cli {

ClientSetup setupClient(const ParsedArgs& args) {
  ClientSetup s;
  s.json = args.has("json");
  std::string connect = kDefaultConnect;
  if (const char* env = std::getenv("STOCKADE_CONNECT"); env && *env) connect = env;
  if (auto v = args.value("connect")) connect = *v;
  auto endpoint = parseEndpoint(connect);
  if (auto* e = std::get_if<std::string>(&endpoint)) {
    s.error = *e;
    return s;
  }
  std::optional<std::string> tokenFile;
  if (const char* env = std::getenv("STOCKADE_TOKEN_FILE"); env && *env) tokenFile = env;
  if (auto v = args.value("token-file")) tokenFile = *v;
  std::optional<std::string> token;
  if (tokenFile) {
    auto t = daemon::readTokenFile(*tokenFile);
    if (t.index() == 1) {
      s.error = "--token-file " + std::get<1>(t);
      return s;
    }
    token = std::get<0>(std::move(t));
  }
  s.client = std::make_unique<HttpClient>(std::get<Endpoint>(std::move(endpoint)), std::move(token));
  return s;
}

int usageError(const std::string& command, const std::string& message) {
  printErr("stockade " + command + ": " + message + "; see stockade " + command + " --help\n");
  return kExitUsage;
}

int runDaemonCommand(const std::string& command, const std::vector<std::string>& flags, const DaemonCommand& steps) {
  const HelpTopic& topic = *findHelpTopic(command);
  auto parsed = parseArgs(flags, flagSpecs(topic));
  if (auto* e = std::get_if<std::string>(&parsed)) return usageError(command, *e);
  const ParsedArgs& a = std::get<ParsedArgs>(parsed);
  if (a.has("help")) {
    printOut(helpText(topic));
    return kExitOk;
  }
  if (steps.check)
    if (auto problem = steps.check(a)) return usageError(command, *problem);
  ClientSetup s = setupClient(a);
  if (!s.error.empty()) return usageError(command, s.error);
  try {
    return steps.run(a, s);
  } catch (const ClientError& e) {
    return reportFailure(command, e.what());
  }
}

std::string printable(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7f)) {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

int reportFailure(const std::string& what, const std::string& message) {
  printErr("stockade: " + what + ": " + printable(message) + "\n");
  return kExitDaemonError;
}

int reportError(const std::string& what, const HttpResult& reply) {
  auto j = nlohmann::json::parse(reply.body, nullptr, false);
  if (j.is_object() && j.contains("code") && j.contains("message") && j["message"].is_string() &&
      j["code"].is_string()) {
    std::string code = j["code"];
    std::string hint;
    if (code == "unauthorized") hint = "; give the daemon's token with --token-file or STOCKADE_TOKEN_FILE";
    return reportFailure(what, j["message"].get<std::string>() + " (" + code + ")" + hint);
  }
  return reportFailure(what, "HTTP " + std::to_string(reply.status) + " " + reply.body.substr(0, 200));
}

std::string urlEncode(std::string_view s, std::string_view keep) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || keep.find(static_cast<char>(c)) != std::string_view::npos) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace stockade::cli
