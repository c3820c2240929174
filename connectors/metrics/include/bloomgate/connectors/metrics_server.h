// File: metrics_server.h
//
// The service's operational HTTP endpoint: Prometheus metrics and health probes, served by civetweb
// (its C API) from a registry of prometheus-cpp core metrics.
//
//   GET /metrics  200, text exposition format 0.0.4 of everything in the registry
//   GET /healthz  200 "ok\n" while the process can answer at all (liveness)
//   GET /readyz   200 "ready\n" or 503 "not ready\n", as `ready()` says (readiness)
//   anything else 404; another method on those paths 405
//
// Why not prometheus-cpp's pull Exposer: it serves /metrics only, and readiness must be able to answer
// 503. So this class owns the HTTP server and uses prometheus-cpp for the registry and the text format.
//
// Ownership: owns the civetweb context (a listener thread and kWorkerThreads worker threads) and shares
// the registry. The constructor listens at once, so a port conflict fails start-up rather than the first
// scrape; the destructor stops civetweb and waits for its threads, so no handler (and no `ready` or
// `before_scrape` call) runs after it returns. It takes milliseconds, up to kRequestTimeout while a client
// holds a connection open without finishing its request, and as long as a running `before_scrape` takes.
//
// Slow clients: a worker serves one connection at a time, and one that connects and sends nothing, or
// half a request, holds its worker for kRequestTimeout. Connections are served in the order they were
// accepted, so a probe behind C such connections answers after about C / kWorkerThreads *
// kRequestTimeout: 0.7 s behind 4 x kWorkerThreads of them (tests/connectors/metrics_server_test.cc,
// SlowClients). A response write that stalls longer than kRequestTimeout (a client that stops reading)
// is cut off.
//
// Thread-safety: handlers run on civetweb's worker threads, up to kWorkerThreads at a time. `ready` must be
// thread-safe (read an atomic); `before_scrape` calls are serialised by this class, with each other only.
// port() and address() are immutable after construction. Process-wide side effect of civetweb: mg_start
// sets SIGPIPE to ignored (a write to a closed socket then fails with EPIPE instead of killing us).
//
// Errors: no exception reaches civetweb's C frames. A throwing `ready` or `before_scrape` (or a failed
// render) answers 500 and is reported on stderr; the server keeps serving.
#pragma once

#include <prometheus/registry.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

struct mg_context;
struct mg_connection;

namespace bloomgate::connectors {

struct MetricsServerOptions {
  // "HOST:PORT": a numeric IPv4 address or a host name civetweb resolves ("0.0.0.0:9464" for every
  // interface), or "[IPv6]:PORT" when civetweb was built with IPv6 (Debian's 1.15 is not: such an address
  // throws). Port 0 takes an ephemeral port, for tests; port() tells which.
  std::string listen = "127.0.0.1:9464";
  // /readyz answers 200 when it returns true, 503 otherwise. Empty: always ready.
  std::function<bool()> ready;
  // Called on a server thread before each /metrics render, so gauges that are cheaper to sample than to
  // keep current (queue depths, filter fill ratios) are fresh in that very scrape. Optional.
  std::function<void()> before_scrape;
};

class MetricsServer {
 public:
  // Connections served at once.
  static constexpr int kWorkerThreads = 8;
  // How long a worker waits for a whole request header, and for each write of a response to progress.
  static constexpr std::chrono::milliseconds kRequestTimeout{200};

  // Starts listening. Throws std::invalid_argument for a malformed `listen`, and std::runtime_error naming
  // the address (and civetweb's reason) if it cannot listen there.
  MetricsServer(std::shared_ptr<prometheus::Registry> registry, MetricsServerOptions options);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  // civetweb holds `this` as its user data.
  MetricsServer(MetricsServer&&) = delete;
  MetricsServer& operator=(MetricsServer&&) = delete;

  // The bound port (the ephemeral one when `listen` asked for port 0).
  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  // "HOST:PORT" with the bound port, e.g. "127.0.0.1:40123"; an IPv6 host keeps its brackets.
  [[nodiscard]] std::string address() const;

 private:
  struct ContextDeleter {
    void operator()(mg_context* context) const noexcept;
  };
  struct Response;

  static int on_request(mg_connection* connection) noexcept;
  static int on_log_message(const mg_connection* connection, const char* message) noexcept;

  Response route(std::string_view method, std::string_view path);
  Response render_metrics();

  std::shared_ptr<prometheus::Registry> registry_;
  MetricsServerOptions options_;
  std::string host_;  // as given in `listen`, IPv6 brackets included
  std::uint16_t port_ = 0;
  std::mutex scrape_mutex_;  // serialises before_scrape
  // civetweb's start-up complaints ("cannot bind ...: Address already in use"), for the exception; once
  // started, its log lines go to stderr instead.
  std::mutex log_mutex_;
  bool started_ = false;
  std::string start_log_;
  // Last: destroyed first, so civetweb's threads are gone before anything they use.
  std::unique_ptr<mg_context, ContextDeleter> context_;
};

// Registers the gauge `bloomgate_build_info{allocator="...",version="..."} 1`, the usual way to expose a
// build's version (join on it in queries), with the malloc serving the process (app/build_info.h). Calling
// it again is harmless on a registry that merges families (the default, InsertBehavior::Merge); another
// version adds a second series.
void register_build_info(prometheus::Registry& registry, std::string_view version, std::string_view allocator);

}  // namespace bloomgate::connectors
