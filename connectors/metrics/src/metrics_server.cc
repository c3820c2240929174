// File: metrics_server.cc
#include "bloomgate/connectors/metrics_server.h"

#include <civetweb.h>
#include <prometheus/gauge.h>
#include <prometheus/text_serializer.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <memory>
#include <exception>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

namespace bloomgate::connectors {
namespace {

constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";
constexpr const char* kTextContentType = "text/plain; charset=utf-8";

// mg_init_library is not thread-safe and mg_start would otherwise call it lazily, racing a second server
// started on another thread; once per process, never undone (servers may come and go until exit). Its
// result is not checked: it returns the requested features it initialised, so asking for none returns 0,
// the same value it uses for failure.
void init_civetweb_once() {
  [[maybe_unused]] static const unsigned features = mg_init_library(MG_FEATURES_DEFAULT);
}

void write_to_stderr(std::string_view message) noexcept {
  std::fprintf(stderr, "bloomgate metrics server: %.*s\n", static_cast<int>(message.size()), message.data());
}

struct ListenAddress {
  std::string host;  // IPv6 keeps its brackets: civetweb wants "[::1]:9464" too
  std::uint16_t port = 0;
  bool ipv6 = false;
};

// Strict on purpose: civetweb's port spec also means "s" (TLS), "r" (redirect) and "," (several
// listeners), none of which a config value should be able to switch on by accident.
ListenAddress parse_listen(const std::string& listen) {
  const auto invalid = [&listen](std::string_view why) {
    return std::invalid_argument("metrics server: listen address \"" + listen + "\" " + std::string(why) +
                                 " (expected HOST:PORT or [IPv6]:PORT)");
  };
  ListenAddress address;
  std::string_view port_text;
  if (!listen.empty() && listen.front() == '[') {
    const std::size_t close = listen.find(']');
    if (close == std::string::npos || close == 1) throw invalid("has an unterminated or empty IPv6 address");
    if (close + 1 >= listen.size() || listen[close + 1] != ':') throw invalid("has no port");
    if (listen.find_first_not_of("0123456789abcdefABCDEF:.", 1) != close) throw invalid("has an invalid IPv6 address");
    address.host = listen.substr(0, close + 1);
    address.ipv6 = true;
    port_text = std::string_view(listen).substr(close + 2);
  } else {
    const std::size_t colon = listen.rfind(':');
    if (colon == std::string::npos) throw invalid("has no port");
    if (colon == 0) throw invalid("has no host");
    address.host = listen.substr(0, colon);
    if (address.host.find(':') != std::string::npos) throw invalid("has an IPv6 address without brackets");
    if (address.host.find_first_of(", \t[]") != std::string::npos) throw invalid("has an invalid host");
    // Digits and dots are an IPv4 address, which civetweb would read modulo 256 ("999.1.1.1" binds 231.1.1.1).
    in_addr ipv4{};
    if (address.host.find_first_not_of("0123456789.") == std::string::npos &&
        ::inet_pton(AF_INET, address.host.c_str(), &ipv4) != 1) {
      throw invalid("has an invalid IPv4 address");
    }
    port_text = std::string_view(listen).substr(colon + 1);
  }
  unsigned port = 0;
  const char* const end = port_text.data() + port_text.size();
  const auto [parsed_end, error] = std::from_chars(port_text.data(), end, port);
  if (port_text.empty() || error != std::errc{} || parsed_end != end || port > 65535U) {
    throw invalid("has an invalid port");
  }
  address.port = static_cast<std::uint16_t>(port);
  return address;
}

// civetweb 1.15's listener thread polls its sockets in 2 s slices (SOCKET_TIMEOUT_QUANTUM) and notices
// mg_stop only between them, so mg_stop alone takes up to 2 s. A connection wakes the poll at once: this
// connects to our own listener every few milliseconds until `stopped`. Best effort, on a thread of its
// own: should it fail, mg_stop still returns within those 2 s. A wake-up that lands before mg_stop has set
// civetweb's stop flag is accepted as an empty connection and closed, and no handler runs for it.
void wake_listener_until(const std::string& host, std::uint16_t port, const std::atomic<bool>& stopped) noexcept {
  try {
    std::string target = host;
    if (target.size() >= 2 && target.front() == '[') target = target.substr(1, target.size() - 2);
    if (target == "0.0.0.0") target = "127.0.0.1";
    if (target == "::") target = "::1";
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    if (::getaddrinfo(target.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return;
    const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, &::freeaddrinfo);
    while (!stopped.load(std::memory_order_acquire)) {
      // Every address a host name resolves to: "localhost" may give ::1 first, civetweb bound 127.0.0.1.
      for (const addrinfo* address = found; address != nullptr; address = address->ai_next) {
        const int fd = ::socket(address->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        // Bounds connect() should the listener's backlog be full.
        timeval timeout{};
        timeout.tv_usec = 100'000;
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
        ::connect(fd, address->ai_addr, address->ai_addrlen);
        ::close(fd);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  } catch (...) {  // resolving allocates; without the wake-up mg_stop is only slower
  }
}

MetricsServer* server_of(const mg_connection* connection) noexcept {
  if (connection == nullptr) return nullptr;
  const mg_context* context = mg_get_context(connection);
  return context != nullptr ? static_cast<MetricsServer*>(mg_get_user_data(context)) : nullptr;
}

}  // namespace

struct MetricsServer::Response {
  int status = 500;
  const char* content_type = kTextContentType;
  std::string body;  // short literals fit the small-string buffer: building the 500 answer does not allocate
  const char* allow = nullptr;
};

void MetricsServer::ContextDeleter::operator()(mg_context* context) const noexcept { mg_stop(context); }

MetricsServer::MetricsServer(std::shared_ptr<prometheus::Registry> registry, MetricsServerOptions options)
    : registry_(std::move(registry)), options_(std::move(options)) {
  if (registry_ == nullptr) throw std::invalid_argument("metrics server: no registry");
  const ListenAddress listen = parse_listen(options_.listen);
  host_ = listen.host;
  init_civetweb_once();
  if (listen.ipv6 && mg_check_feature(MG_FEATURES_IPV6) == 0) {
    throw std::runtime_error("metrics server: cannot listen on " + options_.listen +
                             ": this civetweb library was built without IPv6 support");
  }

  mg_callbacks callbacks{};
  // begin_request sees every request before civetweb's own routing, so no URI ever reaches its file
  // server, and there is no window between mg_start and a mg_set_request_handler call.
  callbacks.begin_request = &MetricsServer::on_request;
  callbacks.log_message = &MetricsServer::on_log_message;
  const std::string ports = listen.host + ":" + std::to_string(listen.port);
  const std::string threads = std::to_string(kWorkerThreads);
  const std::string timeout = std::to_string(kRequestTimeout.count());
  std::array<const char*, 9> civetweb_options{
      "listening_ports", ports.c_str(),
      // civetweb hands each accepted connection to a worker, which then waits for its request: a client
      // that connects and sends nothing (or half a request) pins that worker until the request timeout.
      "num_threads", threads.c_str(),
      // So the timeout is short: an honest client's request arrives with, or right after, the handshake
      // that let it be accepted. It also bounds each stall of a response write (civetweb uses it for both).
      "request_timeout_ms", timeout.c_str(),
      // Every idle keep-alive connection would pin a worker; scrapes and probes are seconds apart.
      "enable_keep_alive", "no",
      nullptr};
  context_.reset(mg_start(&callbacks, this, civetweb_options.data()));
  {
    const std::lock_guard lock(log_mutex_);
    started_ = true;
    if (context_ == nullptr) {
      throw std::runtime_error("metrics server: cannot listen on " + options_.listen +
                               (start_log_.empty() ? std::string() : ": " + start_log_));
    }
    if (!start_log_.empty()) write_to_stderr(start_log_);
    start_log_.clear();
  }

  std::array<mg_server_port, 1> bound{};
  if (mg_get_server_ports(context_.get(), static_cast<int>(bound.size()), bound.data()) < 1 ||
      bound[0].port <= 0 || bound[0].port > 65535) {
    throw std::runtime_error("metrics server: listening on " + options_.listen + " but cannot read the port back");
  }
  port_ = static_cast<std::uint16_t>(bound[0].port);
}

MetricsServer::~MetricsServer() {
  std::atomic<bool> stopped{false};
  std::thread waker;
  try {
    waker = std::thread([this, &stopped] { wake_listener_until(host_, port_, stopped); });
  } catch (...) {  // no thread: mg_stop takes its 2 s
  }
  context_.reset();  // explicit: mg_stop joins the worker threads before any member they use is destroyed
  stopped.store(true, std::memory_order_release);
  if (waker.joinable()) waker.join();
}

std::string MetricsServer::address() const { return host_ + ":" + std::to_string(port_); }

int MetricsServer::on_request(mg_connection* connection) noexcept {
  const mg_request_info* info = mg_get_request_info(connection);
  auto* server = info != nullptr ? static_cast<MetricsServer*>(info->user_data) : nullptr;
  if (server == nullptr) return 0;
  const std::string_view method = info->request_method != nullptr ? info->request_method : "";
  const std::string_view path = info->local_uri != nullptr ? info->local_uri : "";

  Response response;
  response.body = "internal error\n";
  try {
    response = server->route(method, path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bloomgate metrics server: %.*s %.*s failed, answered 500: %s\n",
                 static_cast<int>(method.size()), method.data(), static_cast<int>(path.size()), path.data(),
                 e.what());
  } catch (...) {
    std::fprintf(stderr, "bloomgate metrics server: %.*s %.*s failed, answered 500: an exception not derived "
                 "from std::exception\n",
                 static_cast<int>(method.size()), method.data(), static_cast<int>(path.size()), path.data());
  }

  // to_chars, not to_string: nothing from here on may throw.
  std::array<char, 24> length{};
  const auto [length_end, length_error] =
      std::to_chars(length.data(), length.data() + length.size() - 1, response.body.size());
  if (length_error == std::errc{}) *length_end = '\0';
  mg_response_header_start(connection, response.status);
  mg_response_header_add(connection, "Content-Type", response.content_type, -1);
  mg_response_header_add(connection, "Content-Length", length.data(), -1);
  mg_response_header_add(connection, "Cache-Control", "no-store", -1);
  if (response.allow != nullptr) mg_response_header_add(connection, "Allow", response.allow, -1);
  mg_response_header_send(connection);
  if (method != "HEAD") mg_write(connection, response.body.data(), response.body.size());
  return response.status;
}

int MetricsServer::on_log_message(const mg_connection* connection, const char* message) noexcept {
  const std::string_view text = message != nullptr ? message : "";
  MetricsServer* server = server_of(connection);
  if (server == nullptr) {
    write_to_stderr(text);
    return 1;
  }
  try {
    const std::lock_guard lock(server->log_mutex_);
    if (!server->started_) {
      // mg_start runs on the constructing thread and reports bind failures here before returning NULL.
      if (!server->start_log_.empty()) server->start_log_ += "; ";
      server->start_log_ += text;
      return 1;
    }
  } catch (...) {  // the append allocates
  }
  write_to_stderr(text);
  return 1;  // non-zero: civetweb logs nothing itself
}

MetricsServer::Response MetricsServer::route(std::string_view method, std::string_view path) {
  const bool known = path == "/metrics" || path == "/healthz" || path == "/readyz";
  if (!known) return Response{404, kTextContentType, "not found\n", nullptr};
  if (method != "GET" && method != "HEAD") {
    return Response{405, kTextContentType, "method not allowed\n", "GET, HEAD"};
  }
  if (path == "/metrics") return render_metrics();
  if (path == "/healthz") return Response{200, kTextContentType, "ok\n", nullptr};
  const bool ready = !options_.ready || options_.ready();
  return ready ? Response{200, kTextContentType, "ready\n", nullptr}
               : Response{503, kTextContentType, "not ready\n", nullptr};
}

MetricsServer::Response MetricsServer::render_metrics() {
  if (options_.before_scrape) {
    const std::lock_guard lock(scrape_mutex_);
    options_.before_scrape();
  }
  // Collect after before_scrape returned, so what it set is in this scrape.
  return Response{200, kMetricsContentType, prometheus::TextSerializer().Serialize(registry_->Collect()), nullptr};
}

void register_build_info(prometheus::Registry& registry, std::string_view version, std::string_view allocator) {
  prometheus::BuildGauge()
      .Name("bloomgate_build_info")
      .Help("Build of the running bloomgate: always 1, the version and the malloc in use are the labels")
      .Register(registry)
      .Add({{"version", std::string(version)}, {"allocator", std::string(allocator)}})
      .Set(1);
}

}  // namespace bloomgate::connectors
