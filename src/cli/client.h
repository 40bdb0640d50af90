// What every daemon command of the CLI shares: where the daemon is
// (--connect or STOCKADE_CONNECT), its token (--token-file or
// STOCKADE_TOKEN_FILE), --json, and how a daemon's error reads at a terminal.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/cli/args.h"
#include "src/cli/http_client.h"

namespace stockade::cli {

inline constexpr const char* kDefaultConnect = "unix:/run/stockade/stockaded.sock";

struct ClientSetup {
  std::unique_ptr<HttpClient> client;
  bool json = false;
  std::string error;  // set when the flags or the token file are wrong
};
ClientSetup setupClient(const ParsedArgs& args);

// "stockade COMMAND: MESSAGE; see stockade COMMAND --help" on stderr; returns kExitUsage.
int usageError(const std::string& command, const std::string& message);

// The prologue every daemon command shares: `flags` parsed against the
// command's help topic (a bad flag is a usage error), --help printed, then
// `check` (usage problems found before connecting: its message), the client
// set up from --connect and --token-file, and `run`; a ClientError from it
// (the daemon could not be reached) is reported naming the command.
struct DaemonCommand {
  std::function<std::optional<std::string>(const ParsedArgs&)> check;  // optional
  std::function<int(const ParsedArgs&, ClientSetup&)> run;
};
int runDaemonCommand(const std::string& command, const std::vector<std::string>& flags, const DaemonCommand& steps);

// "stockade: <what>: <the daemon's message> (<code>)" on stderr; returns 1.
int reportError(const std::string& what, const HttpResult& reply);
int reportFailure(const std::string& what, const std::string& message);

// Bytes from the daemon made safe for a terminal: control characters escaped.
std::string printable(std::string_view text);

// Percent-encodes `s` for a URL's path or query: every byte but letters,
// digits, "-_.~" and those in `keep` (":" in an id, "/" in a path).
std::string urlEncode(std::string_view s, std::string_view keep = "");

// Exit codes of the daemon commands.
inline constexpr int kExitDaemonError = 1;  // the daemon refused, or could not be reached

}  // namespace stockade::cli
