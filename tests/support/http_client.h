// File: http_client.h
//
// A minimal blocking HTTP/1.1 client over loopback TCP for tests that scrape the service's endpoints
// (/metrics, /healthz, /readyz) as Prometheus or a kubelet would. Every call times out after 5 s, so a
// test never hangs on a server that does not answer.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

namespace bloomgate::testing {

// Closes the descriptor on every path out of a test helper.
class Socket {
 public:
  Socket() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  [[nodiscard]] int fd() const { return fd_; }

  // Connects to 127.0.0.1:port with 5 s send/receive timeouts; false if refused.
  bool connect_to(std::uint16_t port) const {
    if (fd_ < 0) return false;
    timeval timeout{};
    timeout.tv_sec = 5;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return ::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
  }

 private:
  int fd_;
};

struct HttpResponse {
  std::string error;  // empty when a whole response arrived
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

inline HttpResponse http_request(std::uint16_t port, std::string_view path, std::string_view method = "GET") {
  HttpResponse response;
  Socket socket;
  if (!socket.connect_to(port)) {
    response.error = "cannot connect to 127.0.0.1:" + std::to_string(port);
    return response;
  }
  const std::string request = std::string(method) + " " + std::string(path) +
                              " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (::send(socket.fd(), request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    response.error = "cannot send the request";
    return response;
  }
  std::string raw;
  char buffer[4096];
  for (;;) {
    const ssize_t received = ::recv(socket.fd(), buffer, sizeof buffer, 0);
    if (received == 0) break;
    if (received < 0) {
      response.error = "receive failed or timed out after " + std::to_string(raw.size()) + " bytes";
      return response;
    }
    raw.append(buffer, static_cast<std::size_t>(received));
  }
  const std::size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos || raw.rfind("HTTP/1.", 0) != 0) {
    response.error = "malformed response: " + raw;
    return response;
  }
  response.status = std::atoi(raw.c_str() + raw.find(' ') + 1);
  std::size_t line_start = raw.find("\r\n") + 2;
  while (line_start < head_end) {
    const std::size_t line_end = raw.find("\r\n", line_start);
    const std::string line = raw.substr(line_start, line_end - line_start);
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      const std::size_t value_start = line.find_first_not_of(' ', colon + 1);
      response.headers[name] = value_start == std::string::npos ? "" : line.substr(value_start);
    }
    line_start = line_end + 2;
  }
  response.body = raw.substr(head_end + 4);
  if (const auto length = response.headers.find("content-length"); length != response.headers.end()) {
    if (std::stoul(length->second) != response.body.size()) {
      response.error = "Content-Length " + length->second + " but " + std::to_string(response.body.size()) +
                       " body bytes";
    }
  }
  return response;
}

}  // namespace bloomgate::testing
