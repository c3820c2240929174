// A stand-in for Confluent's Schema Registry: no registry server is packaged for Debian, so the tests serve
// the registry's documented REST answers themselves, over HTTP/1.1 on 127.0.0.1 (an ephemeral port):
//   GET /schemas/ids/{id}                      200 {"schema": ..., "schemaType": ..., "references": [...]}
//                                              404 {"error_code": 40403, "message": "Schema 7 not found"}
//   GET /subjects/{subject}/versions/{version} 200 {"subject", "version", "id", "schema", "schemaType", ...}
// go_down() closes the listening socket (clients get connection refused) and come_back() listens again on
// the same port. One connection at a time, each answered and closed (Connection: close).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace bloomgate::test_support {

class FakeSchemaRegistry {
 public:
  FakeSchemaRegistry() {
    listen_on(0);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeSchemaRegistry() {
    stop_ = true;
    thread_.join();
    close_listener();
  }
  FakeSchemaRegistry(const FakeSchemaRegistry&) = delete;
  FakeSchemaRegistry& operator=(const FakeSchemaRegistry&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // A JSON string literal of `text`, for the bodies below.
  static std::string json_string(const std::string& text) {
    std::string out = "\"";
    for (const char c : text) {
      if (c == '"' || c == '\\') out += {'\\', c};
      else if (c == '\n') out += "\\n";
      else out.push_back(c);
    }
    return out + "\"";
  }

  // GET /schemas/ids/{id} answers the schema; `type` is the registry's schemaType (AVRO, PROTOBUF, JSON) and
  // `references` the JSON array of {name, subject, version}.
  void add_schema(std::uint32_t id, const std::string& type, const std::string& text, const std::string& references = "[]") {
    answer("/schemas/ids/" + std::to_string(id), 200,
           "{\"schema\": " + json_string(text) + ", \"schemaType\": \"" + type + "\", \"references\": " + references + "}");
  }
  void add_subject_version(const std::string& subject, int version, std::uint32_t id, const std::string& type,
                           const std::string& text) {
    answer("/subjects/" + subject + "/versions/" + std::to_string(version), 200,
           "{\"subject\": \"" + subject + "\", \"version\": " + std::to_string(version) + ", \"id\": " + std::to_string(id) +
               ", \"schemaType\": \"" + type + "\", \"schema\": " + json_string(text) + "}");
  }
  void answer(const std::string& path, int status, const std::string& body) {
    std::lock_guard lock(mutex_);
    answers_[path] = {status, body};
  }

  // Requests for `path` so far.
  int requests(const std::string& path) const {
    std::lock_guard lock(mutex_);
    const auto it = requests_.find(path);
    return it == requests_.end() ? 0 : it->second;
  }
  std::string last_authorization() const {
    std::lock_guard lock(mutex_);
    return authorization_;
  }

  void go_down() {
    std::lock_guard lock(mutex_);
    close_listener();
  }
  void come_back() {
    std::lock_guard lock(mutex_);
    listen_on(port_);
  }

 private:
  struct Answer {
    int status;
    std::string body;
  };

  void listen_on(std::uint16_t port) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    const int yes = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listener_, 16) != 0) {
      throw std::runtime_error("fake schema registry: cannot listen on 127.0.0.1");
    }
    socklen_t length = sizeof address;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
  }
  void close_listener() {
    if (listener_ >= 0) ::close(listener_);
    listener_ = -1;
  }

  void serve() {
    while (!stop_) {
      int listener = -1;
      {
        std::lock_guard lock(mutex_);
        listener = listener_;
      }
      pollfd ready{listener, POLLIN, 0};
      if (listener < 0 || ::poll(&ready, 1, 20) <= 0) {
        if (listener < 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // down: nothing to wait on
        continue;
      }
      const int connection = ::accept(listener, nullptr, nullptr);
      if (connection >= 0) respond(connection);
    }
  }

  void respond(int connection) {
    std::string request;
    char buffer[4096];
    while (request.find("\r\n\r\n") == std::string::npos) {
      const ssize_t got = ::recv(connection, buffer, sizeof buffer, 0);
      if (got <= 0) break;
      request.append(buffer, static_cast<std::size_t>(got));
    }
    const std::size_t path_start = request.find(' ') + 1;
    const std::string path = request.substr(path_start, request.find(' ', path_start) - path_start);
    Answer answer{404, "{\"error_code\": 40403, \"message\": \"Schema not found\"}"};
    {
      std::lock_guard lock(mutex_);
      ++requests_[path];
      const std::size_t auth = request.find("Authorization: ");
      if (auth != std::string::npos) authorization_ = request.substr(auth + 15, request.find("\r\n", auth) - auth - 15);
      if (const auto it = answers_.find(path); it != answers_.end()) answer = it->second;
    }
    const std::string response = "HTTP/1.1 " + std::to_string(answer.status) + (answer.status == 200 ? " OK" : " Error") +
                                 "\r\nContent-Type: application/vnd.schemaregistry.v1+json\r\nContent-Length: " +
                                 std::to_string(answer.body.size()) + "\r\nConnection: close\r\n\r\n" + answer.body;
    ::send(connection, response.data(), response.size(), MSG_NOSIGNAL);
    ::close(connection);
  }

  mutable std::mutex mutex_;
  std::map<std::string, Answer> answers_;
  std::map<std::string, int> requests_;
  std::string authorization_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace bloomgate::test_support
