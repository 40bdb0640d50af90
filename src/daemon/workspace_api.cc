#include "src/daemon/workspace_api.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "src/daemon/pumps.h"
#include "src/daemon/requests.h"

namespace stockade::daemon {

using nlohmann::json;

namespace {

// The scope of the daemon's checkpoints (stockade/checkpoint.h): one for the
// whole daemon, so a later sandbox restores what an earlier one persisted.
constexpr std::string_view kCheckpointScope = "default";
// The pieces bytes move in between the workspace and the socket.
constexpr std::size_t kPiece = std::size_t{1} << 18;

Response jsonReply(const json& j) { return Response::json(j.dump(-1, ' ', false, json::error_handler_t::replace)); }

ApiError apiError(const WorkspaceError& e) { return ApiError{apiCodeFor(e.code), e.message}; }
Response errorReply(const WorkspaceError& e) { return Response::error(apiError(e)); }
Response statusReply(const WorkspaceStatus& s) { return s ? errorReply(*s) : Response::noContent(); }

// The library's caller-bug exceptions (a timeout, an exclude it refuses)
// become 400s: the decoder should have caught them first.
template <class Fn>
Response guarded(Fn fn) {
  try {
    return fn();
  } catch (const std::invalid_argument& e) {
    return Response::error(invalidArgument("", e.what()));
  }
}

// The request body as the workspace's ByteSource. A failure of the body
// itself (the client went away, too large, stalled) is kept: it, not the
// workspace's reading of it, is what the reply says.
class BodySource final : public ByteSource {
 public:
  explicit BodySource(std::shared_ptr<BodyReader> body) : body_(std::move(body)) {}
  WorkspaceResult<std::size_t> read(std::span<char> buf) override {
    auto n = body_->read(buf);
    if (auto* e = std::get_if<ApiError>(&n)) {
      failure = *e;
      return WorkspaceError{WorkspaceErrorCode::kUnavailable, e->message};
    }
    return std::get<std::size_t>(n);
  }
  std::optional<ApiError> failure;

 private:
  std::shared_ptr<BodyReader> body_;
};

json checkpointJson(const Checkpoint& c) {
  return {{"size", c.size}, {"sha256", c.sha256}, {"etag", c.etag}, {"persistedAt", c.persistedAt}};
}

json snapshotJson(const SnapshotInfo& s) {
  return {{"id", s.id},
          {"sandboxId", s.sandboxId},
          {"operationKey", s.operationKey},
          {"sha256", s.sha256},
          {"size", s.size},
          {"createdAt", s.createdAt},
          {"freezeMethod", s.freezeMethod},
          {"frozenProcesses", s.frozenProcesses}};
}

json watchEventJson(const WatchEvent& e) {
  json j{{"type", watchEventTypeName(e.type)}, {"path", e.path}, {"isDirectory", e.isDirectory}};
  if (e.type == WatchEvent::Type::kRename) j["oldPath"] = e.oldPath;
  if (!e.detail.empty()) j["detail"] = e.detail;
  return j;
}

std::string line(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

// Decoded request and workspace, or the reply that refuses the request.
template <class T>
struct Prepared {
  T q;
  Sandboxes::WorkspaceHandle h;
};
template <class T>
using PreparedOr = std::variant<Prepared<T>, Response>;

template <class T>
PreparedOr<T> prepare(Sandboxes& sandboxes, const Request& r, Decoded<T> decoded) {
  if (auto* e = std::get_if<ApiError>(&decoded)) return Response::error(*e);
  auto found = sandboxes.workspace(r.match.param("id"));
  if (auto* e = std::get_if<ApiError>(&found)) return Response::error(*e);
  return Prepared<T>{std::get<T>(std::move(decoded)), std::get<Sandboxes::WorkspaceHandle>(std::move(found))};
}

template <class T>
Decoded<T> withEmptyQuery(const Request& r, Decoded<T> decoded) {
  if (auto e = requireEmptyQuery(r.query)) return *e;
  return decoded;
}

// A long operation of the library (a persist, a restore, a snapshot) on a
// thread of its own: its JSON, or its error, is the reply.
template <class Run>
Reply onItsOwnThread(Run run) {
  return Deferred{std::make_shared<ThreadedReply>([run = std::move(run)](std::stop_token) mutable {
    return guarded([&] {
      WorkspaceResult<json> done = run();
      if (auto* e = std::get_if<WorkspaceError>(&done)) return errorReply(*e);
      return jsonReply(std::get<json>(done));
    });
  })};
}

#define STOCKADE_PREPARE(var, expr)                                  \
  auto var##Or = (expr);                                             \
  if (auto* reply = std::get_if<Response>(&var##Or)) return *reply; \
  auto& var = std::get<0>(var##Or)

// A stream of bytes read from `read(span)` (a count, 0 at the end); an
// error cuts the stream (ThreadedChunks: a throw aborts it).
template <class Source>
std::shared_ptr<ChunkSource> byteStream(std::shared_ptr<Source> source) {
  return std::make_shared<ThreadedChunks>([source](std::stop_token stop, const ThreadedChunks::Emit& emit) {
    while (!stop.stop_requested()) {
      std::string buf(kPiece, '\0');
      auto n = source->read(std::span<char>(buf));
      if (auto* e = std::get_if<WorkspaceError>(&n)) throw std::runtime_error(e->message);
      std::size_t got = std::get<std::size_t>(n);
      if (got == 0) return;
      buf.resize(got);
      if (!emit(std::move(buf))) return;  // handed over, not copied
    }
  });
}

}  // namespace

Reply WorkspaceApi::upload(Request& r) {
  STOCKADE_PREPARE(p, prepare(sandboxes_, r, decodeFilePathQuery(r.query)));
  // Refused before the body is read (and before "100 Continue"): the path,
  // the policy, and a length announced over the file limit are judged now.
  if (auto length = r.rawBody->announcedLength(); length && *length > sandboxes_.maxFileBytes())
    return Response::error({ApiCode::kTooLarge, "path " + quoteValue(p.q.path) + ": the body is " +
                                                    std::to_string(*length) + " bytes; a file is limited to " +
                                                    std::to_string(sandboxes_.maxFileBytes()) +
                                                    " bytes (stockaded --max-file-bytes)"});
  auto opened = p.h.workspace.openWrite(p.q.path);
  if (auto* e = std::get_if<WorkspaceError>(&opened)) return errorReply(*e);
  auto writer = std::make_shared<FileWriter>(std::get<FileWriter>(std::move(opened)));
  return Deferred{std::make_shared<ThreadedReply>([writer, body = r.rawBody](std::stop_token) mutable -> Response {
    // A failed upload's temporary is gone before the reply is: the writer
    // is dropped first.
    auto failed = [&](Response reply) {
      writer.reset();
      return reply;
    };
    auto failure = relay(
        [&](std::span<char> buf) -> std::variant<std::size_t, Response> {
          auto n = body->read(buf);
          if (auto* e = std::get_if<ApiError>(&n)) return Response::error(*e);
          return std::get<std::size_t>(n);
        },
        [&](std::string_view bytes) -> std::optional<Response> {
          if (auto e = writer->write(bytes)) return errorReply(*e);
          return std::nullopt;
        });
    if (failure) return failed(std::move(*failure));
    return failed(statusReply(writer->commit()));
  })};
}

Reply WorkspaceApi::download(const Request& r) {
  STOCKADE_PREPARE(p, prepare(sandboxes_, r, decodeFilePathQuery(r.query)));
  auto opened = p.h.workspace.openRead(p.q.path);
  if (auto* e = std::get_if<WorkspaceError>(&opened)) return errorReply(*e);
  auto reader = std::make_shared<FileReader>(std::get<FileReader>(std::move(opened)));
  std::uint64_t size = reader->size();
  return StreamReply{byteStream(reader), "application/octet-stream", size};
}

Reply WorkspaceApi::remove(const Request& r) {
  STOCKADE_PREPARE(p, prepare(sandboxes_, r, decodeFilePathQuery(r.query)));
  return statusReply(p.h.workspace.remove(p.q.path));
}

Reply WorkspaceApi::list(const Request& r) {
  STOCKADE_PREPARE(p, prepare(sandboxes_, r, decodeDirectoryQuery(r.query)));
  auto listed = p.h.workspace.list(p.q.path);
  if (auto* e = std::get_if<WorkspaceError>(&listed)) return errorReply(*e);
  auto& entries = std::get<std::vector<EntryInfo>>(listed);
  std::sort(entries.begin(), entries.end(), [](const EntryInfo& a, const EntryInfo& b) { return a.name < b.name; });
  json items = json::array();
  for (const EntryInfo& e : entries) items.push_back({{"name", e.name}, {"type", entryTypeName(e.type)}, {"path", e.path}});
  return jsonReply(json{{"items", std::move(items)}});
}

Reply WorkspaceApi::exists(const Request& r) {
  STOCKADE_PREPARE(p, prepare(sandboxes_, r, decodeFilePathQuery(r.query)));
  auto found = p.h.workspace.exists(p.q.path);
  if (auto* e = std::get_if<WorkspaceError>(&found)) return errorReply(*e);
  return jsonReply(json{{"exists", std::get<bool>(found)}});
}

Reply WorkspaceApi::makeDir(const Request& r) {
  STOCKADE_PREPARE(p, prepare(sandboxes_, r, withEmptyQuery(r, decodeMakeDir(r.body))));
  auto made = p.h.workspace.makeDir(p.q.path);
  if (auto* e = std::get_if<WorkspaceError>(&made)) return errorReply(*e);
  return Response::noContent();
}

Reply WorkspaceApi::watch(const Request& r) {
  STOCKADE_PREPARE(p, prepare(sandboxes_, r, decodeWatchQuery(r.query)));
  auto started = p.h.workspace.watch(p.q.path, p.q.recursive);
  if (auto* e = std::get_if<WorkspaceError>(&started)) return errorReply(*e);
  auto w = std::make_shared<Watch>(std::get<Watch>(std::move(started)));
  json first{{"type", "watching"}, {"path", p.q.path}, {"recursive", p.q.recursive}};
  return StreamReply{std::make_shared<ThreadedChunks>(
      [w, first = line(first)](std::stop_token stop, const ThreadedChunks::Emit& emit) {
        // The watch is in place before the reply's head is sent: a client
        // that has read this first line sees every change made after it.
        if (!emit(first)) return;
        while (!stop.stop_requested()) {
          auto events = w->next(std::chrono::milliseconds(250));
          if (auto* e = std::get_if<WorkspaceError>(&events)) {
            // The watched directory went away: said as the stream's last line.
            (void)emit(line(json{{"type", "error"}, {"code", e->codeName()}, {"message", e->message}}));
            return;
          }
          for (const WatchEvent& ev : std::get<std::vector<WatchEvent>>(events))
            if (!emit(line(watchEventJson(ev)))) return;
        }
      })};
}

Reply WorkspaceApi::exportTree(const Request& r) {
  STOCKADE_PREPARE(p, prepare(sandboxes_, r, decodeDirectoryQuery(r.query)));
  auto exported = p.h.workspace.exportTree(p.q.path);
  if (auto* e = std::get_if<WorkspaceError>(&exported)) return errorReply(*e);
  auto tree = std::make_shared<TreeExport>(std::get<TreeExport>(std::move(exported)));
  return StreamReply{byteStream(tree), "application/x-tar"};
}

Reply WorkspaceApi::importTree(Request& r) {
  STOCKADE_PREPARE(p, prepare(sandboxes_, r, decodeDirectoryQuery(r.query)));
  Workspace ws = p.h.workspace;
  return Deferred{std::make_shared<ThreadedReply>([ws, path = p.q.path, body = r.rawBody](std::stop_token) mutable {
    BodySource source(body);
    WorkspaceStatus status = ws.importTree(source, path);
    if (status && source.failure) return Response::error(*source.failure);
    return statusReply(status);
  })};
}

Reply WorkspaceApi::persist(const Request& r) {
  STOCKADE_PREPARE(p, prepare(sandboxes_, r, withEmptyQuery(r, decodePersist(r.body))));
  PersistOptions o;
  o.path = p.q.path;
  o.exclude = p.q.exclude;
  if (p.q.timeoutSeconds) o.timeout = std::chrono::seconds(*p.q.timeoutSeconds);
  return onItsOwnThread([ws = p.h.workspace, o, &store = checkpoints_]() mutable -> WorkspaceResult<json> {
    auto done = store.persist(ws, kCheckpointScope, o);
    if (auto* e = std::get_if<WorkspaceError>(&done)) return std::move(*e);
    return checkpointJson(std::get<Checkpoint>(done));
  });
}

Reply WorkspaceApi::restore(const Request& r) {
  STOCKADE_PREPARE(p, prepare(sandboxes_, r, withEmptyQuery(r, decodeRestore(r.body))));
  RestoreOptions o;
  o.path = p.q.path;
  if (p.q.timeoutSeconds) o.timeout = std::chrono::seconds(*p.q.timeoutSeconds);
  return onItsOwnThread([ws = p.h.workspace, o, &store = checkpoints_]() mutable -> WorkspaceResult<json> {
    auto done = store.restore(ws, kCheckpointScope, o);
    if (auto* e = std::get_if<WorkspaceError>(&done)) return std::move(*e);
    const RestoreResult& result = std::get<RestoreResult>(done);
    json j{{"restored", result.restored}};
    if (!result.reason.empty()) j["reason"] = result.reason;
    if (result.checkpoint) j.update(checkpointJson(*result.checkpoint));
    return j;
  });
}

Reply WorkspaceApi::snapshot(const Request& r) {
  STOCKADE_PREPARE(p, prepare(sandboxes_, r, withEmptyQuery(r, decodeSnapshot(r.body))));
  SnapshotRequest request;
  request.sandboxId = p.h.live.id;
  request.operationKey = p.q.operationKey;
  request.processRoots = [sandbox = p.h.live.sandbox] { return sandbox->processRoots(); };
  if (p.q.timeoutSeconds) request.timeout = std::chrono::seconds(*p.q.timeoutSeconds);
  return onItsOwnThread([ws = p.h.workspace, request, &store = snapshots_,
                         sandbox = p.h.live.sandbox]() mutable -> WorkspaceResult<json> {
    // No process starts while the sandbox's processes are frozen and captured.
    auto held = sandbox->holdAdmissions();
    auto done = store.snapshot(ws, request);
    if (auto* e = std::get_if<WorkspaceError>(&done)) return std::move(*e);
    return snapshotJson(std::get<SnapshotInfo>(done));
  });
}

Reply WorkspaceApi::lookupSnapshot(const Request& r) {
  auto decoded = decodeSnapshotLookup(r.query);
  if (auto* e = std::get_if<ApiError>(&decoded)) return Response::error(*e);
  auto found = snapshots_.lookup(std::get<SnapshotLookupQuery>(decoded).operationKey);
  if (auto* e = std::get_if<WorkspaceError>(&found)) return errorReply(*e);
  return jsonReply(snapshotJson(std::get<SnapshotInfo>(found)));
}

std::variant<SandboxView, ApiError> WorkspaceApi::createFromSnapshot(const CreateSandboxRequest& request) {
  auto snapshot = snapshots_.get(*request.fromSnapshot);
  if (auto* e = std::get_if<WorkspaceError>(&snapshot)) return apiError(*e);
  auto created = sandboxes_.create(request);
  if (auto* e = std::get_if<ApiError>(&created)) return *e;
  const std::string id = std::get<SandboxView>(created).record.id;
  auto fill = [&]() -> std::optional<ApiError> {
    auto found = sandboxes_.workspace(id);
    if (auto* e = std::get_if<ApiError>(&found)) return *e;
    if (auto e = snapshots_.restoreInto(*request.fromSnapshot, std::get<Sandboxes::WorkspaceHandle>(found).workspace))
      return apiError(*e);
    return std::nullopt;
  };
  if (auto e = fill()) {
    (void)sandboxes_.close(id);
    return ApiError{e->code, "sandbox " + id + " from snapshot " + *request.fromSnapshot + " was closed again: " +
                                 e->message};
  }
  return created;
}

}  // namespace stockade::daemon
