// watch(): inotify events turned into the API's create/modify/delete/rename
// stream. Directories are watched through fds opened without following
// symlinks, new subdirectories as they appear (with a scan of what they
// already hold: entries made before the watch was added would be missed
// otherwise). The queue is bounded; a loss of any kind becomes one overflow
// event at the point of the loss.
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <unordered_map>

#include "platform/linux/inotify.h"
#include "src/workspace/tree_walk.h"
#include "src/workspace/workspace_impl.h"

namespace stockade {

using platform::SysError;
using platform::UniqueFd;
using namespace workspace;

struct Watch::State {
  State(AccessRules r, platform::Inotify i) : rules(std::move(r)), inotify(std::move(i)) {}

  AccessRules rules;
  platform::Inotify inotify;
  std::string rootRel;   // the watched directory, relative to the workspace
  std::string rootReal;  // its real host path
  bool recursive = false;
  std::size_t maxEvents = 0, maxDirectories = 0;
  std::unordered_map<int, std::string> dirs;  // wd -> path relative to the watched directory
  int rootWd = -1;
  std::deque<WatchEvent> queue;
  bool overflowed = false;  // an overflow event is queued and nothing after it yet
  bool gone = false;

  std::string sandboxPath(const std::string& rel) const {
    return sandboxPathOf(rel.empty() ? rootRel : joinRel(rootRel, rel));
  }
  bool hidden(const std::string& rel) const {
    return rules.readRefusal(rel.empty() ? rootReal : rootReal + "/" + rel).has_value();
  }

  // Queues an event about `rel` (relative to the watched directory), unless
  // the sandbox could not read there.
  void emit(WatchEvent::Type type, const std::string& rel, bool isDirectory, const std::string* oldRel = nullptr) {
    if (hidden(rel)) return;
    WatchEvent e{.type = type, .path = sandboxPath(rel), .isDirectory = isDirectory};
    if (oldRel) e.oldPath = sandboxPath(*oldRel);
    if (type == WatchEvent::Type::kModify && !queue.empty() && queue.back().type == type && queue.back().path == e.path)
      return;  // a burst of writes to one file is one event
    if (overflowed) return;  // lost since the overflow event: the stream resumes after the next read
    if (queue.size() + 1 >= maxEvents) {
      overflow("more than " + std::to_string(maxEvents) + " events were waiting; later ones were dropped");
      return;
    }
    queue.push_back(std::move(e));
  }
  void overflow(const std::string& why) {
    if (overflowed) return;
    overflowed = true;  // until the queue is handed out: what comes meanwhile is lost, and said so
    queue.push_back(WatchEvent{.type = WatchEvent::Type::kOverflow, .detail = why});
  }

  // Watches the directory at `rel` (relative to the watched root), given an
  // fd that pins it, and -- when recursive -- everything beneath it.
  // `announce`: report what it holds as created (a directory that appeared).
  void add(int dirFd, const std::string& rel, bool announce) {
    if (hidden(rel)) return;
    if (dirs.size() >= maxDirectories) {
      overflow("more than " + std::to_string(maxDirectories) + " directories to watch; " +
               quoteValue(sandboxPath(rel)) + " and what is beneath it are not watched");
      return;
    }
    auto wd = inotify.watchDirectory(dirFd);
    if (auto* e = std::get_if<SysError>(&wd)) {
      overflow(quoteValue(sandboxPath(rel)) + " cannot be watched: " + e->message());
      return;
    }
    dirs[std::get<int>(wd)] = rel;
    if (!recursive) return;
    int fd = ::openat(dirFd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    TreeWalker walk(UniqueFd(fd), false);
    for (;;) {
      auto item = walk.next();
      if (!std::holds_alternative<std::optional<TreeWalker::Item>>(item)) return;
      auto& it = std::get<std::optional<TreeWalker::Item>>(item);
      if (!it) return;
      std::string childRel = joinRel(rel, it->rel);
      bool dir = S_ISDIR(it->st.st_mode);
      if (announce) emit(WatchEvent::Type::kCreate, childRel, dir);
      if (!dir) continue;
      walk.skipChildren();  // add() walks it itself
      int child = ::openat(it->parentFd, it->name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (child < 0) continue;
      UniqueFd owned(child);
      add(child, childRel, announce);
    }
  }

  void renamePrefix(const std::string& from, const std::string& to) {
    for (auto& [wd, rel] : dirs) {
      if (rel == from) rel = to;
      else if (rel.size() > from.size() && rel.compare(0, from.size(), from) == 0 && rel[from.size()] == '/')
        rel = to + rel.substr(from.size());
    }
  }

  WorkspaceStatus drain() {
    auto events = inotify.read();
    if (auto* e = std::get_if<SysError>(&events)) return ioError(*e, "watch of " + quoteValue(sandboxPath("")));
    auto& list = std::get<std::vector<platform::InotifyEvent>>(events);
    for (std::size_t i = 0; i < list.size(); ++i) {
      const auto& ev = list[i];
      if (ev.overflow) {
        overflow("the kernel's inotify queue overflowed; events were lost");
        continue;
      }
      auto dir = dirs.find(ev.wd);
      if (ev.ignored) {
        if (dir != dirs.end()) dirs.erase(dir);
        continue;
      }
      if (dir == dirs.end()) continue;
      if (ev.selfGone) {
        if (ev.wd == rootWd) {
          emit(WatchEvent::Type::kDelete, "", true);
          gone = true;
        }
        continue;
      }
      const std::string rel = joinRel(dir->second, ev.name);
      if (ev.created) {
        emit(WatchEvent::Type::kCreate, rel, ev.isDirectory);
        if (ev.isDirectory && recursive) watchNew(rel);
      } else if (ev.modified) {
        emit(WatchEvent::Type::kModify, rel, false);
      } else if (ev.deleted) {
        emit(WatchEvent::Type::kDelete, rel, ev.isDirectory);
      } else if (ev.movedFrom) {
        // Paired with the next event when it is the matching movedTo.
        if (i + 1 < list.size() && list[i + 1].movedTo && list[i + 1].cookie == ev.cookie &&
            dirs.count(list[i + 1].wd)) {
          const std::string toRel = joinRel(dirs[list[i + 1].wd], list[i + 1].name);
          emit(WatchEvent::Type::kRename, toRel, ev.isDirectory, &rel);
          if (ev.isDirectory) renamePrefix(rel, toRel);
          ++i;
        } else {
          emit(WatchEvent::Type::kDelete, rel, ev.isDirectory);
        }
      } else if (ev.movedTo) {
        emit(WatchEvent::Type::kCreate, rel, ev.isDirectory);
        if (ev.isDirectory && recursive) watchNew(rel);
      }
    }
    return std::nullopt;
  }

  void watchNew(const std::string& rel) {
    auto fd = platform::openBeneath(ws->root.get(), "workspace", joinRel(rootRel, rel), O_PATH | O_DIRECTORY,
                                    platform::Symlinks::kRefuse);
    if (auto* ok = std::get_if<UniqueFd>(&fd)) add(ok->get(), rel, /*announce=*/true);
  }

  const Workspace::Impl* ws = nullptr;
  std::shared_ptr<const Workspace::Impl> keep;  // the workspace outlives the watch
};

std::string_view watchEventTypeName(WatchEvent::Type type) noexcept {
  switch (type) {
    case WatchEvent::Type::kCreate: return "create";
    case WatchEvent::Type::kModify: return "modify";
    case WatchEvent::Type::kDelete: return "delete";
    case WatchEvent::Type::kRename: return "rename";
    case WatchEvent::Type::kOverflow: return "overflow";
  }
  return "unknown";
}

Watch::Watch(std::unique_ptr<State> state) : state_(std::move(state)) {}
Watch::Watch(Watch&&) noexcept = default;
Watch& Watch::operator=(Watch&&) noexcept = default;
Watch::~Watch() = default;
int Watch::fd() const noexcept { return state_->inotify.fd(); }

WorkspaceResult<std::vector<WatchEvent>> Watch::next(std::chrono::milliseconds timeout) {
  State& s = *state_;
  if (s.queue.empty() && !s.gone) {
    pollfd p{s.inotify.fd(), POLLIN, 0};
    int ms = static_cast<int>(std::min<std::int64_t>(timeout.count(), 1 << 30));
    int r;
    do r = ::poll(&p, 1, ms);
    while (r < 0 && errno == EINTR);
    if (r > 0)
      if (auto e = s.drain()) return std::move(*e);
  } else if (!s.gone) {
    if (auto e = s.drain()) return std::move(*e);
  }
  if (s.queue.empty() && s.gone)
    return makeError(WorkspaceErrorCode::kUnavailable,
                     "watch of " + quoteValue(s.sandboxPath("")) + ": the directory is gone");
  std::vector<WatchEvent> out(std::make_move_iterator(s.queue.begin()), std::make_move_iterator(s.queue.end()));
  s.queue.clear();
  s.overflowed = false;
  return out;
}

WorkspaceResult<Watch> Workspace::watch(std::string_view pathText, bool recursive) {
  if (auto e = fence(*impl_)) return std::move(*e);
  auto parsed = parseSandboxPath(pathText);
  if (auto* e = std::get_if<WorkspaceError>(&parsed)) return std::move(*e);
  const SandboxPath& path = std::get<SandboxPath>(parsed);
  AccessRules rules = accessRules(*impl_);
  auto r = readableDirectory(*impl_, rules, path, "watched");
  if (auto* e = std::get_if<WorkspaceError>(&r)) return std::move(*e);
  Resolved& obj = std::get<Resolved>(r);
  auto inotify = platform::Inotify::create();
  if (auto* e = std::get_if<SysError>(&inotify)) return ioError(*e, "watch of " + quoteValue(path.text()));
  auto state = std::make_unique<Watch::State>(std::move(rules), std::get<platform::Inotify>(std::move(inotify)));
  state->rootRel = path.rel;
  state->rootReal = obj.real;
  state->recursive = recursive;
  state->maxEvents = std::max<std::size_t>(impl_->options.maxWatchEvents, 2);
  state->maxDirectories = std::max<std::size_t>(impl_->options.maxWatchDirectories, 1);
  state->keep = impl_;
  state->ws = impl_.get();
  auto wd = state->inotify.watchDirectory(obj.fd.get());
  if (auto* e = std::get_if<SysError>(&wd)) return ioError(*e, "watch of " + quoteValue(path.text()));
  state->rootWd = std::get<int>(wd);
  state->dirs[state->rootWd] = "";
  if (recursive) {
    // The subdirectories (add() watches the root again: the same wd).
    state->add(obj.fd.get(), "", /*announce=*/false);
  }
  return Watch(std::move(state));
}

}  // namespace stockade
