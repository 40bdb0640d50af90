// Socket memory no memory cgroup charges: netlink's.
//
// NETLINK_ROUTE is in the socket allow-list (seccomp_table.cc): libc reads
// the sandbox's interfaces and addresses through it (getifaddrs(),
// getaddrinfo() with AI_ADDRCONFIG, if_nameindex()). The kernel answers a
// refused request with an error that echoes the request whole, and the
// answers wait in the socket's receive queue until read. Netlink keeps no
// protocol memory account, so the memory cgroup (v1 or v2) charges those
// queues to nobody: unread answers held 254 MiB in 32 sockets under
// limits.memoryBytes 64 MiB. Two bounds together hold them:
//  - the COUNT: socket(AF_NETLINK) goes to the supervisor, which lets it go
//    on only while the sandbox's network namespace holds fewer than
//    kNetlinkSocketsPerSandbox netlink sockets, and fails it with ENOBUFS
//    beyond (audited). The count is the kernel's own for the namespace
//    (/proc/<pid>/net/protocols: every netlink socket created there and not
//    yet released, bound or not, in a descriptor table or in flight over a
//    unix socket), plus the calls let go on whose socket may not exist yet:
//    continuing a call lets the kernel create it after the answer, so a
//    thread stays counted until it is seen out of socket(2) (its next
//    trapped call, or /proc/<tid>/syscall naming another call) -- never
//    fewer than there are;
//  - each socket's BUFFERS: setsockopt(SOL_SOCKET, SO_RCVBUF or SO_SNDBUF)
//    goes to the supervisor too, which performs it itself on the caller's
//    socket (pidfd_getfd), so that no descriptor swapped in meanwhile gets
//    it; on a netlink socket the size asked for is capped at what a socket
//    starts with (net.core.rmem_default, wmem_default: the kernel doubles the
//    request). SO_RCVBUFFORCE and SO_SNDBUFFORCE fail with EPERM, as they do
//    natively for a program without CAP_NET_ADMIN.
// A socket then holds at most its receive buffer and one answer, the size of
// a request its send buffer allows: about 0.5 MiB with the kernel's defaults
// (212,992 bytes), so a sandbox's netlink sockets hold at most about 8 MiB,
// beside limits.memoryBytes (README, Known limits).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stockade::platform {

inline constexpr long kNetlinkSocketsPerSandbox = 16;

// Pure. The NETLINK row's "sockets" column of /proc/<pid>/net/protocols'
// text; nullopt when there is no such row or it does not parse.
std::optional<long> netlinkSocketsIn(std::string_view protocols) noexcept;

// Pure. Whether a thread may still be inside the socket(2) call it was let
// go on with, from its /proc/<tid>/syscall text: "running" (it could be
// creating the socket now) or blocked in socket(2) itself -- yes; blocked in
// any other call, or not in one ("-1 ..."), or gone (empty) -- no.
bool mayStillBeInSocket(std::string_view syscallText) noexcept;

// Pure. The SO_RCVBUF/SO_SNDBUF value a netlink socket gets for `requested`
// (the int the caller passed; the kernel reads it as unsigned): at most half
// of `start`, the size a socket starts with, which the kernel doubles.
int netlinkBufferRequest(int requested, long start) noexcept;

// One sandbox's netlink sockets. Thread-safe.
class NetlinkSocketGate {
 public:
  struct Verdict {
    enum class Kind { kContinue, kRefused, kGone } kind = Kind::kGone;
    long sockets = 0;  // counted, when refused
  };
  // socket(AF_NETLINK, ...) by thread `tid` (as the supervisor sees it).
  // `stillPending`: whether its notification is still the one waiting, asked
  // after /proc/<tid> was read (a tid reused meanwhile names another task).
  Verdict admit(pid_t tid, const std::function<bool()>& stillPending);
  // Any trapped call of `tid`: the socket(2) call it was let go on with, if
  // any, is over (a thread makes one call at a time).
  void seen(pid_t tid);

 private:
  std::mutex lock_;
  std::vector<pid_t> pending_;  // let go on; their socket may not be counted yet
  std::atomic<bool> anyPending_{false};  // seen() of every trapped call takes no lock while none is
};

// setsockopt(fd, SOL_SOCKET, SO_RCVBUF / SO_SNDBUF / *FORCE, optval, optlen)
// of thread `tid`, performed here (see above). `stillPending` as for admit(),
// asked after each read of the caller's memory or descriptors.
struct SocketBufferAnswer {
  enum class Kind { kContinue, kDone, kGone } kind = Kind::kGone;
  int error = 0;  // kDone: 0, or the errno the call fails with
};
SocketBufferAnswer performSocketBufferOption(pid_t tid, const std::uint64_t* args,
                                             const std::function<bool()>& stillPending);

}  // namespace stockade::platform
