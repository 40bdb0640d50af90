// Parent side only (host_pins.h): a mutex and allocations, never between
// clone and exec.
#include "platform/linux/host_pins.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>

#include <map>
#include <mutex>
#include <utility>

#include "platform/unique_fd.h"

namespace stockade::platform {

namespace {

using Identity = std::pair<dev_t, ino_t>;

// The shared descriptors by identity. A weak entry: the descriptor closes with
// its last holder, who then erases the entry (unless a newer pin of the same
// identity replaced it meanwhile).
struct PinTable {
  std::mutex mu;
  std::map<Identity, std::weak_ptr<const HostPin::Held>> byIdentity;
};

// Shared by every Held, so that the table outlives the last pin even when a
// pin is dropped during static destruction (a singleton's spare sandbox).
const std::shared_ptr<PinTable>& pinTable() {
  static const std::shared_ptr<PinTable> table = std::make_shared<PinTable>();
  return table;
}

}  // namespace

struct HostPin::Held {
  Held(UniqueFd object, Identity id, std::shared_ptr<PinTable> pins)
      : fd(std::move(object)), identity(id), table(std::move(pins)) {}
  ~Held() {
    std::lock_guard lock(table->mu);
    auto it = table->byIdentity.find(identity);
    if (it != table->byIdentity.end() && it->second.expired()) table->byIdentity.erase(it);
  }
  Held(const Held&) = delete;
  Held& operator=(const Held&) = delete;

  UniqueFd fd;  // O_PATH
  Identity identity;
  std::shared_ptr<PinTable> table;
};

HostPin HostPin::open(const char* path) {
  // Opened and identified through a descriptor of its own first: the identity
  // is that of the object at `path` now. A shared descriptor of the same
  // identity is then the same object (it keeps that inode alive, so no other
  // object can have its number), and this one is closed.
  UniqueFd fd(::open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC));
  struct stat st;
  if (!fd || ::fstat(fd.get(), &st) != 0) return {};
  HostPin pin;
  pin.device_ = st.st_dev;
  pin.inode_ = st.st_ino;
  pin.links_ = st.st_nlink;
  pin.mode_ = st.st_mode;
  const Identity identity{st.st_dev, st.st_ino};
  const auto& table = pinTable();
  std::lock_guard lock(table->mu);
  auto& slot = table->byIdentity[identity];
  pin.held_ = slot.lock();
  if (!pin.held_) {
    pin.held_ = std::make_shared<const Held>(std::move(fd), identity, table);
    slot = pin.held_;
  }
  return pin;
}

int HostPin::fd() const noexcept { return held_ ? held_->fd.get() : -1; }

std::optional<std::uint64_t> MountTableWatch::generation() {
  struct Watch {
    std::mutex mu;
    UniqueFd table{::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC)};
    std::uint64_t changes = 0;
  };
  static Watch watch;
  std::lock_guard lock(watch.mu);
  if (!watch.table) return std::nullopt;
  // poll() reports a change once per descriptor (and forgets it): count it
  // here, where every watcher sees it. A failing poll counts as a change.
  pollfd p = {watch.table.get(), POLLPRI, 0};
  if (::poll(&p, 1, 0) != 0) ++watch.changes;
  return watch.changes;
}

}  // namespace stockade::platform
