// Snapshots (seed 000): ledger record, freeze, capture, thaw, durable.
// <stateDir>/snapshots holds <id>.tar and <id>.json (the SnapshotInfo); the
// file ledger keeps one JSON record per operation key in keys/.
#include "stockade/snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "platform/linux/freezer.h"
#include "src/audit/event.h"
#include "src/workspace/archive_file.h"
#include "src/workspace/tree_import.h"

namespace stockade {

using namespace workspace;
using platform::SysError;
using Json = nlohmann::json;

namespace {

Json toJson(const SnapshotInfo& i) {
  return {{"id", i.id},         {"sandboxId", i.sandboxId}, {"operationKey", i.operationKey},
          {"sha256", i.sha256}, {"size", i.size},           {"createdAt", i.createdAt},
          {"freezeMethod", i.freezeMethod}, {"frozenProcesses", i.frozenProcesses}};
}

std::optional<SnapshotInfo> infoFromJson(const Json& j) {
  try {
    SnapshotInfo i;
    i.id = j.at("id").get<std::string>();
    i.sandboxId = j.at("sandboxId").get<std::string>();
    i.operationKey = j.at("operationKey").get<std::string>();
    i.sha256 = j.at("sha256").get<std::string>();
    i.size = j.at("size").get<std::uint64_t>();
    i.createdAt = j.at("createdAt").get<std::string>();
    i.freezeMethod = j.at("freezeMethod").get<std::string>();
    i.frozenProcesses = j.at("frozenProcesses").get<std::uint64_t>();
    return i;
  } catch (const Json::exception&) {
    return std::nullopt;
  }
}

const char* stateName(SnapshotRecord::State s) {
  switch (s) {
    case SnapshotRecord::State::kCapturing: return "capturing";
    case SnapshotRecord::State::kComplete: return "complete";
    case SnapshotRecord::State::kFailed: return "failed";
  }
  return "failed";
}

// A snapshot id is ours: "snap_" and 32 hex digits, so it is safe in a file name.
bool validSnapshotId(std::string_view id) {
  if (id.size() != 37 || !id.starts_with("snap_")) return false;
  for (char c : id.substr(5))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

class FileLedger final : public SnapshotLedger {
 public:
  explicit FileLedger(std::string dir) : dir_(std::move(dir)) {}

  WorkspaceResult<std::optional<SnapshotRecord>> find(std::string_view key) override {
    auto text = readSmallFile(pathOf(key));
    if (!text) {
      if (errno == ENOENT) return std::optional<SnapshotRecord>();
      return ioError("read", errno, "snapshot ledger");
    }
    Json j = Json::parse(*text, nullptr, false);
    if (!j.is_object()) return makeError(WorkspaceErrorCode::kUnavailable, "snapshot ledger: a record is not JSON");
    SnapshotRecord r;
    try {
      r.operationKey = j.at("operationKey").get<std::string>();
      r.snapshotId = j.at("snapshotId").get<std::string>();
      r.sandboxId = j.at("sandboxId").get<std::string>();
      std::string state = j.at("state").get<std::string>();
      r.state = state == "complete"    ? SnapshotRecord::State::kComplete
                : state == "capturing" ? SnapshotRecord::State::kCapturing
                                       : SnapshotRecord::State::kFailed;
      r.failure = j.value("failure", "");
      if (j.contains("info")) r.info = infoFromJson(j.at("info"));
    } catch (const Json::exception&) {
      return makeError(WorkspaceErrorCode::kUnavailable, "snapshot ledger: a record lacks a field");
    }
    if (r.operationKey != key) return std::optional<SnapshotRecord>();  // a hash collision: not this key
    return std::optional<SnapshotRecord>(std::move(r));
  }

  WorkspaceStatus record(const SnapshotRecord& r) override {
    if (auto e = makeStateDirectory(dir_)) return ioError(*e, "snapshot ledger");
    Json j = {{"operationKey", r.operationKey}, {"snapshotId", r.snapshotId}, {"sandboxId", r.sandboxId},
              {"state", stateName(r.state)}};
    if (r.info) j["info"] = toJson(*r.info);
    if (!r.failure.empty()) j["failure"] = r.failure;
    std::string name = sha256Hex(r.operationKey) + ".json";
    if (auto e = writeDurably(dir_, name, j.dump())) return ioError(*e, "snapshot ledger");
    return std::nullopt;
  }

 private:
  std::string pathOf(std::string_view key) const { return dir_ + "/" + sha256Hex(key) + ".json"; }
  std::string dir_;
};

}  // namespace

std::shared_ptr<SnapshotLedger> fileSnapshotLedger(std::string dir) { return std::make_shared<FileLedger>(std::move(dir)); }

struct SnapshotStore::Impl {
  Options options;
  std::string dir;  // <stateDir>/snapshots

  WorkspaceResult<SnapshotInfo> read(std::string_view id) const {
    if (!validSnapshotId(id))
      return makeError(WorkspaceErrorCode::kNotFound, "snapshot " + quoteValue(id) + ": no such snapshot");
    auto text = readSmallFile(dir + "/" + std::string(id) + ".json");
    if (!text)
      return makeError(WorkspaceErrorCode::kNotFound, "snapshot " + quoteValue(id) + ": no such snapshot");
    auto info = infoFromJson(Json::parse(*text, nullptr, false));
    if (!info)
      return makeError(WorkspaceErrorCode::kDataCorrupted, "snapshot " + quoteValue(id) + ": its record is not valid");
    return *info;
  }
};

WorkspaceResult<SnapshotStore> SnapshotStore::open(Options options) {
  if (options.stateDir.empty() || options.stateDir.front() != '/')
    throw std::invalid_argument("SnapshotStore::Options.stateDir: " + quoteValue(options.stateDir) +
                                " is not an absolute path");
  auto impl = std::make_shared<Impl>();
  impl->dir = options.stateDir + "/snapshots";
  if (auto e = makeStateDirectory(impl->dir)) return ioError(*e, "snapshot store");
  if (!options.ledger) options.ledger = fileSnapshotLedger(impl->dir + "/keys");
  impl->options = std::move(options);
  return SnapshotStore(std::move(impl));
}

WorkspaceResult<SnapshotInfo> SnapshotStore::snapshot(Workspace& workspace, const SnapshotRequest& request) {
  if (request.operationKey.empty() || request.operationKey.size() > 256)
    throw std::invalid_argument("operationKey: " + quoteValue(request.operationKey) +
                                " must be 1 to 256 bytes; give the key the runtime recorded for this call");
  if (request.timeout.count() <= 0)
    throw std::invalid_argument("timeout: " + std::to_string(request.timeout.count()) +
                                " ms is not positive; give the time the snapshot may take");
  const auto start = std::chrono::steady_clock::now();
  const Deadline deadline = start + request.timeout;
  Workspace::Impl& ws = WorkspaceInternals::impl(workspace);
  if (auto e = fence(ws)) return std::move(*e);
  SnapshotLedger& ledger = *impl_->options.ledger;

  // 1. The ledger first: a key already complete is answered from it.
  auto found = ledger.find(request.operationKey);
  if (auto* e = std::get_if<WorkspaceError>(&found)) return std::move(*e);
  if (auto& r = std::get<std::optional<SnapshotRecord>>(found);
      r && r->state == SnapshotRecord::State::kComplete && r->info)
    return *r->info;
  SnapshotRecord record{.operationKey = request.operationKey,
                        .snapshotId = "snap_" + temporaryName("") + temporaryName(""),
                        .sandboxId = request.sandboxId};
  if (auto e = ledger.record(record)) return std::move(*e);
  auto fail = [&](WorkspaceError e) -> WorkspaceError {
    record.state = SnapshotRecord::State::kFailed;
    record.failure = std::string(e.codeName()) + ": " + e.message;
    (void)ledger.record(record);
    return e;
  };

  // 2. Freeze.
  auto roots = [&] {
    std::vector<pid_t> out;
    if (request.processRoots)
      for (int p : request.processRoots()) out.push_back(static_cast<pid_t>(p));
    return out;
  };
  auto quiescentBy = std::min(deadline, start + impl_->options.quiesceTimeout);
  auto frozen = platform::freezeProcessTrees(roots,
                                             impl_->options.freezing == SnapshotFreezing::kSigstopOnly
                                                 ? platform::FreezePreference::kSigstopOnly
                                                 : platform::FreezePreference::kBest,
                                             quiescentBy, deadline);
  if (auto* f = std::get_if<platform::FreezeFailure>(&frozen)) {
    using K = platform::FreezeFailure::Kind;
    WorkspaceErrorCode code = f->kind == K::kNotQuiescent ? WorkspaceErrorCode::kNotQuiescent
                              : f->kind == K::kTimeout    ? WorkspaceErrorCode::kTimeout
                                                          : WorkspaceErrorCode::kUnavailable;
    return fail(makeError(code, "snapshot of sandbox " + quoteValue(request.sandboxId) +
                                    ": the processes could not be frozen (" + f->message + "); nothing was captured"));
  }
  auto& processes = std::get<platform::FrozenProcesses>(frozen);
  SnapshotInfo info{.id = record.snapshotId,
                    .sandboxId = request.sandboxId,
                    .operationKey = request.operationKey,
                    .freezeMethod = platform::freezeMethodName(processes.method()),
                    .frozenProcesses = processes.count()};

  // 3. Capture; thaw as soon as the tree is read.
  std::optional<SysError> thawError;
  auto stored = captureArchive(ws, SandboxPath{}, {}, impl_->dir, info.id + ".tar", 0, deadline,
                               [&] { thawError = processes.thaw(); });
  if (auto e = processes.thaw(); e && !thawError) thawError = e;
  if (auto* e = std::get_if<WorkspaceError>(&stored)) {
    e->message = "snapshot of sandbox " + quoteValue(request.sandboxId) + ": " + e->message;
    return fail(std::move(*e));
  }
  if (thawError)
    return fail(ioError(*thawError, "snapshot of sandbox " + quoteValue(request.sandboxId) + ": thawing"));
  auto& archive = std::get<StoredArchive>(stored);
  info.sha256 = archive.sha256;
  info.size = archive.size;
  info.createdAt = audit::timestamp(std::chrono::system_clock::now());

  // 4. Durable: the record beside the archive, then the ledger.
  if (auto e = writeDurably(impl_->dir, info.id + ".json", toJson(info).dump())) {
    ::unlink(archive.path.c_str());
    return fail(ioError(*e, "snapshot record"));
  }
  record.state = SnapshotRecord::State::kComplete;
  record.info = info;
  if (auto e = ledger.record(record)) return std::move(*e);
  return info;
}

WorkspaceResult<SnapshotInfo> SnapshotStore::lookup(std::string_view operationKey) {
  auto found = impl_->options.ledger->find(operationKey);
  if (auto* e = std::get_if<WorkspaceError>(&found)) return std::move(*e);
  auto& r = std::get<std::optional<SnapshotRecord>>(found);
  if (!r) return makeError(WorkspaceErrorCode::kNotFound, "no snapshot was taken under operationKey " + quoteValue(operationKey));
  if (r->state != SnapshotRecord::State::kComplete || !r->info)
    return makeError(WorkspaceErrorCode::kNotFound,
                     "the snapshot under operationKey " + quoteValue(operationKey) + " did not complete (" +
                         (r->state == SnapshotRecord::State::kCapturing ? std::string("it was being captured")
                                                                        : r->failure) +
                         "); take it again");
  return *r->info;
}

WorkspaceResult<SnapshotInfo> SnapshotStore::get(std::string_view snapshotId) { return impl_->read(snapshotId); }

WorkspaceStatus SnapshotStore::restoreInto(std::string_view snapshotId, Workspace& workspace) {
  auto read = impl_->read(snapshotId);
  if (auto* e = std::get_if<WorkspaceError>(&read)) return std::move(*e);
  const SnapshotInfo& info = std::get<SnapshotInfo>(read);
  const std::string what = "snapshot " + quoteValue(info.id);
  auto corrupted = [&](const std::string& why) {
    return makeError(WorkspaceErrorCode::kDataCorrupted, what + " " + why + "; nothing was placed");
  };
  int fd = ::open((impl_->dir + "/" + info.id + ".tar").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return corrupted("has no archive (" + platform::errnoName(errno) + ")");
  platform::UniqueFd file(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) != info.size)
    return corrupted("is not the size recorded");
  HashingFileSource source(std::move(file));
  std::optional<WorkspaceError> mismatch;
  ImportPlan plan{.symlinks = SymlinkTargets::kAsTheSandboxMadeThem,
                  .placement = Placement::kMerge,
                  .beforePlacement = [&]() -> WorkspaceStatus {
                    if (auto e = source.drain()) return e;
                    if (source.sha256() != info.sha256) mismatch = corrupted("does not match its recorded SHA-256");
                    return mismatch;
                  }};
  auto e = importTreeAt(WorkspaceInternals::impl(workspace), source, SandboxPath{}, plan);
  if (e && !mismatch && e->code == WorkspaceErrorCode::kInvalidArchive && e->reason != "permission_denied") {
    (void)source.drain();
    return corrupted("cannot be read back (" + e->message + ")");
  }
  return mismatch ? mismatch : e;
}

}  // namespace stockade
