// SPDX-License-Identifier: Apache-2.0
// The host rank transport (rank_transport.h): a star of Unix-domain stream sockets around
// rank 0, every wait bounded by poll() against the caller's deadline.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "io/fd.h"
#include "replicas/rank_transport.h"

namespace wharf {
namespace {

constexpr char kMagic[8] = {'W', 'H', 'A', 'R', 'F', 'H', 'S', '1'};
constexpr uint32_t kFrameMagic = 0x57524b31;  // "WRK1"
constexpr uint64_t kChunk = 4ull << 20;       // DATA frames: one poll per 4 MiB
constexpr uint64_t kMaxText = 4096;           // longest message a frame carries

enum Kind : uint32_t { kHello = 1, kWelcome = 2, kData = 3, kAbort = 4, kVote = 5, kResult = 6 };

// Every message starts with one: HELLO (a = rank, b = size, v = fingerprint), WELCOME
// (a = rank at fault, b = status code, v = text bytes that follow), DATA (v = payload bytes
// that follow), ABORT (a = failed rank, v = text bytes), VOTE (a = rank, v = value), RESULT
// (v = the minimum).
struct Frame {
  uint32_t magic = kFrameMagic;
  uint32_t kind = 0;
  uint32_t a = 0;
  uint32_t b = 0;
  uint64_t v = 0;
};

std::string rank_name(uint32_t r) { return "rank " + std::to_string(r); }

// Rounded up, so a wait lasts the whole timeout (poll counts whole milliseconds).
int ms_left(RankClock::time_point deadline) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(deadline - RankClock::now()).count();
  return us <= 0 ? 0 : int(std::min<int64_t>((us + 999) / 1000, 1 << 30));
}

// Waits for `events` on fd until `deadline`: OK, or IO_ERROR for a timeout / hang-up.
Status wait_fd(int fd, short events, RankClock::time_point deadline, const std::string& who, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int ms = ms_left(deadline);
    const int n = ::poll(&p, 1, ms);
    if (n > 0) return Status::Ok();  // readable, writable, or closed: the call that follows says which
    if (n == 0 && RankClock::now() < deadline) continue;  // woke early
    if (n == 0) return IoError(who + " did not " + what + " within the timeout (the replica group's timeout_ms)");
    if (errno != EINTR) return IoError(who + ": poll failed: " + std::strerror(errno));
  }
}

Status send_all(int fd, const void* data, uint64_t bytes, RankClock::time_point deadline, const std::string& who) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    WHARF_RETURN_IF_ERROR(wait_fd(fd, POLLOUT, deadline, who, "take the bytes sent to it"));
    const ssize_t n = ::send(fd, p, size_t(std::min<uint64_t>(bytes, 1u << 30)), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return IoError(who + " closed its connection (the process ended or aborted the group): " + std::strerror(errno));
    }
    p += n;
    bytes -= uint64_t(n);
  }
  return Status::Ok();
}

// Receives `bytes` into `data` (null: discarded).
Status recv_all(int fd, void* data, uint64_t bytes, RankClock::time_point deadline, const std::string& who) {
  char* p = static_cast<char*>(data);
  char sink[65536];
  while (bytes > 0) {
    WHARF_RETURN_IF_ERROR(wait_fd(fd, POLLIN, deadline, who, "send its part"));
    char* into = p ? p : sink;
    const uint64_t cap = p ? std::min<uint64_t>(bytes, 1u << 30) : std::min<uint64_t>(bytes, sizeof sink);
    const ssize_t n = ::recv(fd, into, size_t(cap), MSG_DONTWAIT);
    if (n == 0) return IoError(who + " closed its connection (the process ended or aborted the group)");
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return IoError(who + ": receive failed: " + std::strerror(errno));
    }
    if (p) p += n;
    bytes -= uint64_t(n);
  }
  return Status::Ok();
}

Status send_frame(int fd, const Frame& f, const std::string& text, RankClock::time_point deadline,
                  const std::string& who) {
  WHARF_RETURN_IF_ERROR(send_all(fd, &f, sizeof f, deadline, who));
  return text.empty() ? Status::Ok() : send_all(fd, text.data(), text.size(), deadline, who);
}

Status recv_frame(int fd, Frame* f, RankClock::time_point deadline, const std::string& who) {
  WHARF_RETURN_IF_ERROR(recv_all(fd, f, sizeof *f, deadline, who));
  if (f->magic != kFrameMagic)
    return IoError(who + " sent a frame without the replica group's magic (not a Wharf peer, or out of step)");
  return Status::Ok();
}

Status recv_text(int fd, uint64_t bytes, RankClock::time_point deadline, const std::string& who, std::string* out) {
  if (bytes > kMaxText) return IoError(who + " sent a message of " + std::to_string(bytes) + " bytes (at most 4096)");
  out->assign(size_t(bytes), '\0');
  return recv_all(fd, &(*out)[0], bytes, deadline, who);
}

using io::Fd;

Status socket_address(const RankId& id, sockaddr_un* addr, socklen_t* len) {
  if (!is_host_rank_id(id))
    return InvalidArgument("replica group id: not made by wharf_replica_group_get_unique_id on a host runtime");
  const char* name = reinterpret_cast<const char*>(id.bytes) + sizeof kMagic;
  const size_t n = strnlen(name, kRankIdNcclOffset - sizeof kMagic);
  if (n == 0 || n == kRankIdNcclOffset - sizeof kMagic || n + 1 > sizeof addr->sun_path)
    return InvalidArgument("replica group id: its socket name is empty or not terminated (a corrupted id)");
  std::memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  std::memcpy(addr->sun_path + 1, name, n);  // abstract namespace: sun_path[0] == '\0'
  *len = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + n);
  return Status::Ok();
}

class HostRankTransport final : public RankTransport {
 public:
  HostRankTransport(uint32_t rank, uint32_t size, std::vector<Fd> fds)
      : rank_(rank), size_(size), fds_(std::move(fds)) {}
  ~HostRankTransport() override { abort(rank_, "the group was freed"); }

  uint32_t rank() const override { return rank_; }
  uint32_t size() const override { return size_; }
  std::string aborted() const override { return aborted_; }

  Status broadcast(void* data, uint64_t bytes, RankClock::time_point deadline) override {
    WHARF_RETURN_IF_ERROR(check_open());
    if (rank_ == 0) {
      std::vector<char> zeros;
      if (!data) zeros.assign(size_t(std::min(bytes, kChunk)), 0);
      for (uint64_t off = 0; off < bytes || (bytes == 0 && off == 0); off += kChunk) {
        const uint64_t n = std::min(kChunk, bytes - off);
        Frame f;
        f.kind = kData;
        f.v = n;
        const char* p = data ? static_cast<const char*>(data) + off : zeros.data();
        for (uint32_t r = 1; r < size_; ++r) {
          Status st = send_frame(fds_[r].fd, f, {}, deadline, rank_name(r));
          if (st.ok()) st = send_all(fds_[r].fd, p, n, deadline, rank_name(r));
          if (!st.ok()) return fail(r, st);
        }
        if (bytes == 0) break;
      }
      return Status::Ok();
    }
    char* p = static_cast<char*>(data);
    uint64_t got = 0;
    do {
      Frame f;
      WHARF_RETURN_IF_ERROR(recv_from_root(&f, deadline));
      if (f.kind != kData || f.v > bytes - got)
        return fail(0, IoError(rank_name(0) + " sent an unexpected frame (kind " + std::to_string(f.kind) + ", " +
                               std::to_string(f.v) + " bytes) where " + std::to_string(bytes - got) +
                               " bytes of a broadcast were due: the ranks are out of step"));
      Status st = recv_all(fds_[0].fd, p ? p + got : nullptr, f.v, deadline, rank_name(0));
      if (!st.ok()) return fail(0, st);
      got += f.v;
    } while (got < bytes);
    return Status::Ok();
  }

  Status vote(uint64_t mine, RankClock::time_point deadline, uint64_t* out) override {
    WHARF_RETURN_IF_ERROR(check_open());
    if (rank_ == 0) {
      uint64_t min = mine;
      for (uint32_t r = 1; r < size_; ++r) {
        Frame f;
        Status st = recv_frame(fds_[r].fd, &f, deadline, rank_name(r));
        if (st.ok() && (f.kind != kVote || f.a != r))
          st = IoError(rank_name(r) + " sent an unexpected frame where its vote was due: the ranks are out of step");
        if (!st.ok()) return fail(r, st);
        min = std::min(min, f.v);
      }
      Frame res;
      res.kind = kResult;
      res.v = min;
      for (uint32_t r = 1; r < size_; ++r) {
        Status st = send_frame(fds_[r].fd, res, {}, deadline, rank_name(r));
        if (!st.ok()) return fail(r, st);
      }
      *out = min;
      return Status::Ok();
    }
    Frame f;
    f.kind = kVote;
    f.a = rank_;
    f.v = mine;
    Status st = send_frame(fds_[0].fd, f, {}, deadline, rank_name(0));
    if (!st.ok()) return fail(0, st);
    Frame res;
    WHARF_RETURN_IF_ERROR(recv_from_root(&res, deadline));
    if (res.kind != kResult)
      return fail(0, IoError(rank_name(0) + " sent an unexpected frame where the vote's result was due"));
    *out = res.v;
    return Status::Ok();
  }

  void abort(uint32_t failed_rank, const std::string& why) override {
    if (!aborted_.empty()) return;
    aborted_ = why.empty() ? "aborted" : why;
    if (rank_ == 0) {
      // Tell every other peer which rank failed, briefly: a peer that does not read within
      // the bound is failing too and learns it from the closed socket.
      const auto bound = RankClock::now() + std::chrono::milliseconds(200);
      const std::string text = why.substr(0, kMaxText);
      Frame f;
      f.kind = kAbort;
      f.a = failed_rank;
      f.v = text.size();
      for (uint32_t r = 1; r < size_; ++r)
        if (r != failed_rank && fds_[r].fd >= 0) (void)send_frame(fds_[r].fd, f, text, bound, rank_name(r));
    }
    for (Fd& fd : fds_) fd.reset();
  }

 private:
  Status check_open() const {
    if (!aborted_.empty())
      return FailedPrecondition("replica group: the transport was aborted (" + aborted_ +
                                "); free the group and form a new one");
    return Status::Ok();
  }

  // Records the failure of `peer` (the rank whose connection failed), aborts, returns `st`.
  Status fail(uint32_t peer, const Status& st) {
    abort(peer, st.message());
    return st;
  }

  // A frame from rank 0, turning its abort frame into an error that names the failed rank.
  Status recv_from_root(Frame* f, RankClock::time_point deadline) {
    Status st = recv_frame(fds_[0].fd, f, deadline, rank_name(0));
    if (!st.ok()) return fail(0, st);
    if (f->kind != kAbort) return Status::Ok();
    std::string text;
    (void)recv_text(fds_[0].fd, f->v, deadline, rank_name(0), &text);
    const uint32_t failed = f->a;
    Status err = IoError(rank_name(failed) + " failed (as rank 0 saw it: " + text + ")");
    abort(failed, err.message());
    return err;
  }

  uint32_t rank_, size_;
  std::vector<Fd> fds_;  // rank 0: fds_[r] is rank r's connection (fds_[0] unused); others: fds_[0]
  std::string aborted_;
};

Status form_root(const sockaddr_un& addr, socklen_t len, uint32_t size, uint64_t fingerprint,
                 RankClock::time_point deadline, std::vector<Fd>* fds) {
  Fd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (listener.fd < 0) return IoError(std::string("replica group: socket failed: ") + std::strerror(errno));
  if (::bind(listener.fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    if (errno == EADDRINUSE)
      return AlreadyExists("replica group id: already in use by another group's rank 0 (each id forms one group)");
    return IoError(std::string("replica group: bind failed: ") + std::strerror(errno));
  }
  if (::listen(listener.fd, int(size)) != 0)
    return IoError(std::string("replica group: listen failed: ") + std::strerror(errno));
  fds->clear();
  fds->resize(size);
  // On any refusal every connected peer hears the verdict, so each rank fails naming the rank.
  auto refuse = [&](uint32_t at_fault, const Status& st) {
    Frame w;
    w.kind = kWelcome;
    w.a = at_fault;
    w.b = uint32_t(st.code());
    const std::string text = st.message().substr(0, kMaxText);
    w.v = text.size();
    const auto bound = std::min(deadline, RankClock::now() + std::chrono::milliseconds(200));
    for (uint32_t r = 1; r < size; ++r)
      if ((*fds)[r].fd >= 0) (void)send_frame((*fds)[r].fd, w, text, bound, rank_name(r));
    fds->clear();
    return st;
  };
  // A refused peer (sizes, declarations) does not end the wait: every rank still joining
  // must hear the verdict too, or it would retry until its own timeout.
  Status bad;
  uint32_t bad_rank = size;
  for (uint32_t joined = 1; joined < size;) {
    Status st = wait_fd(listener.fd, POLLIN, deadline, "", "");
    if (!st.ok()) {
      if (!bad.ok()) break;  // a rank given twice never fills its slot: report the refusal
      std::string missing;
      for (uint32_t r = 1; r < size; ++r)
        if ((*fds)[r].fd < 0) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      return refuse(size, IoError("replica group: rank(s) " + missing + " of " + std::to_string(size) +
                                  " did not join within the timeout"));
    }
    Fd peer(::accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (peer.fd < 0) continue;  // EAGAIN (the peer went away), EINTR: wait again
    Frame h;
    if (!recv_frame(peer.fd, &h, deadline, "a joining rank").ok() || h.kind != kHello)
      continue;  // not a Wharf peer, or one that died while joining: not a rank yet
    const uint32_t r = h.a;
    Status problem;
    const bool slot_free = r > 0 && r < size && (*fds)[r].fd < 0;
    if (h.b != size)
      problem = InvalidArgument("replica group: rank " + std::to_string(r) + " was created with size " +
                                std::to_string(h.b) + ", rank 0 with size " + std::to_string(size));
    else if (r == 0 || r >= size)
      problem = InvalidArgument("replica group: a peer joined as rank " + std::to_string(r) + " of a group of " +
                                std::to_string(size));
    else if (!slot_free)
      problem = InvalidArgument("replica group: rank " + std::to_string(r) + " joined twice (each rank is given once)");
    else if (h.v != fingerprint)
      problem = InvalidArgument("replica group: rank " + std::to_string(r) +
                                "'s container is declared unlike rank 0's (constants or states differ in name, "
                                "order, dtype, shape, placement or flags); the replicas of a group must be declared "
                                "alike");
    if (!problem.ok() && bad.ok()) {
      bad = problem;
      bad_rank = r;
    }
    if (!slot_free) {  // no slot to keep it in: it hears its verdict now
      Frame w;
      w.kind = kWelcome;
      w.a = r;
      w.b = uint32_t(problem.code());
      const std::string text = problem.message().substr(0, kMaxText);
      w.v = text.size();
      (void)send_frame(peer.fd, w, text, std::min(deadline, RankClock::now() + std::chrono::milliseconds(200)),
                       "a joining rank");
      continue;
    }
    (*fds)[r] = std::move(peer);
    ++joined;
  }
  if (!bad.ok()) return refuse(bad_rank, bad);
  Frame ok;
  ok.kind = kWelcome;
  for (uint32_t r = 1; r < size; ++r) {
    Status st = send_frame((*fds)[r].fd, ok, {}, deadline, rank_name(r));
    if (!st.ok()) return refuse(r, st);
  }
  return Status::Ok();  // the listener closes here: the id's socket name is free again
}

Status form_peer(const sockaddr_un& addr, socklen_t len, uint32_t rank, uint32_t size, uint64_t fingerprint,
                 RankClock::time_point deadline, std::vector<Fd>* fds) {
  Fd s;
  auto backoff = std::chrono::milliseconds(1);
  for (;;) {
    s = Fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (s.fd < 0) return IoError(std::string("replica group: socket failed: ") + std::strerror(errno));
    if (::connect(s.fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0) break;
    if (errno != ECONNREFUSED && errno != ENOENT && errno != EAGAIN && errno != EINTR)
      return IoError(std::string("replica group: connecting to rank 0 failed: ") + std::strerror(errno));
    // Rank 0 is not listening yet: retry until the deadline (the ranks start in any order).
    if (RankClock::now() + backoff >= deadline)
      return IoError(
          "replica group: rank 0 was not reachable within the timeout (it has not created its rank of "
          "the group, or it failed)");
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(50));
  }
  const int flags = ::fcntl(s.fd, F_GETFL);
  if (flags < 0 || ::fcntl(s.fd, F_SETFL, flags | O_NONBLOCK) != 0)
    return IoError(std::string("replica group: fcntl failed: ") + std::strerror(errno));
  Frame h;
  h.kind = kHello;
  h.a = rank;
  h.b = size;
  h.v = fingerprint;
  WHARF_RETURN_IF_ERROR(send_frame(s.fd, h, {}, deadline, rank_name(0)));
  Frame w;
  WHARF_RETURN_IF_ERROR(recv_frame(s.fd, &w, deadline, rank_name(0)));
  if (w.kind != kWelcome) return IoError("replica group: rank 0 answered the join with an unexpected frame");
  if (w.b != 0) {
    std::string text;
    (void)recv_text(s.fd, w.v, deadline, rank_name(0), &text);
    return Status(Code(w.b), text + " (as rank 0 saw it)");
  }
  fds->clear();
  fds->push_back(std::move(s));
  return Status::Ok();
}

}  // namespace

bool is_host_rank_id(const RankId& id) { return std::memcmp(id.bytes, kMagic, sizeof kMagic) == 0; }

Status make_host_rank_id(RankId* out) {
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  const uint64_t nonce = (uint64_t(rd()) << 32) ^ uint64_t(rd());
  char name[96];
  std::snprintf(name, sizeof name, "wharf-replica-group-%ld-%llu-%016llx", long(::getpid()),
                static_cast<unsigned long long>(counter.fetch_add(1)), static_cast<unsigned long long>(nonce));
  std::memset(out->bytes, 0, sizeof out->bytes);
  std::memcpy(out->bytes, kMagic, sizeof kMagic);
  std::memcpy(out->bytes + sizeof kMagic, name, std::strlen(name));
  return Status::Ok();
}

Status make_host_rank_transport(const RankId& id, uint32_t rank, uint32_t size, uint64_t fingerprint,
                                RankClock::time_point deadline, std::unique_ptr<RankTransport>* out) {
  sockaddr_un addr;
  socklen_t len = 0;
  WHARF_RETURN_IF_ERROR(socket_address(id, &addr, &len));
  std::vector<Fd> fds;
  if (size > 1) {
    if (rank == 0)
      WHARF_RETURN_IF_ERROR(form_root(addr, len, size, fingerprint, deadline, &fds));
    else
      WHARF_RETURN_IF_ERROR(form_peer(addr, len, rank, size, fingerprint, deadline, &fds));
  }
  *out = std::make_unique<HostRankTransport>(rank, size, std::move(fds));
  return Status::Ok();
}

}  // namespace wharf
