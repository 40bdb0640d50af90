// libFuzzer target: the daemon's request decoding -> route matching, query
// parsing and every body and query decoder (src/daemon/routes.h,
// requests.h), the workspace's and the code kernel's included.
// Input: "METHOD PATH?QUERY\nBODY". Nothing may crash, hang or leak, and
// every refusal must be a 4xx error with a message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/daemon/requests.h"
#include "src/daemon/routes.h"

namespace {

using namespace stockade::daemon;

template <class T>
void check(const Decoded<T>& d) {
  if (auto* e = std::get_if<ApiError>(&d)) {
    if (e->message.empty() || e->status() < 400 || e->status() >= 500) std::abort();
    (void)e->toJson();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto nl = in.find('\n');
  std::string_view line = in.substr(0, nl);
  std::string_view body = nl == std::string_view::npos ? std::string_view{} : in.substr(nl + 1);

  auto space = line.find(' ');
  std::string_view methodText = line.substr(0, space);
  std::string_view target = space == std::string_view::npos ? std::string_view{} : line.substr(space + 1);
  Target t = splitTarget(target);
  if (auto m = parseMethod(methodText)) {
    auto match = matchRoute(routes(), *m, t.path);
    if (auto* e = std::get_if<ApiError>(&match)) {
      if (e->message.empty()) std::abort();
    } else if (std::get<RouteMatch>(match).route == nullptr) {
      std::abort();
    }
  }
  (void)allowedMethods(routes(), t.path);
  auto query = parseQuery(t.query);
  if (auto* q = std::get_if<Query>(&query)) {
    check(decodeListProcesses(*q));
    check(decodeLogs(*q));
    check(decodeLogStream(*q));
    check(decodeFilePathQuery(*q));
    check(decodeDirectoryQuery(*q));
    check(decodeWatchQuery(*q));
    check(decodeSnapshotLookup(*q));
    (void)requireEmptyQuery(*q);
  }

  check(decodeCreateSandbox(body));
  check(decodeNarrow(body));
  check(decodeStartProcess(body));
  check(decodeRunProcess(body));
  check(decodeWait(body));
  check(decodeKill(body));
  check(decodeStdin(body));
  check(decodeTerminate(body));
  check(decodeCreateSession(body));
  check(decodeSessionRun(body));
  check(decodeSessionStart(body));
  check(decodeStartPty(body));
  check(decodeResize(body));
  check(decodeRunCode(body));
  check(decodeMakeDir(body));
  check(decodePersist(body));
  check(decodeRestore(body));
  check(decodeSnapshot(body));
  (void)requireEmptyBody(body);
  return 0;
}
