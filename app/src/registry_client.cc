#include "registry_client.h"

#include <curl/curl.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

namespace bloomgate::app {
namespace {

constexpr int kMaxReferenceDepth = 16;

std::size_t append_body(char* data, std::size_t size, std::size_t count, void* body) {
  static_cast<std::string*>(body)->append(data, size * count);
  return size * count;
}

struct CurlDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
struct HeaderListDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// A path segment with the characters a subject may hold that a URL may not escaped.
std::string escaped(const std::string& segment) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string out;
  for (const char c : segment) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[byte >> 4U]);
      out.push_back(kHex[byte & 15U]);
    }
  }
  return out;
}

}  // namespace

RegistryClient::RegistryClient(config::SchemaRegistrySettings settings) : settings_(std::move(settings)) { init_curl_once(); }

RegistryClient::Response RegistryClient::get(const std::string& path) const {
  Response response;
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) {
    response.error = "libcurl could not make a handle";
    return response;
  }
  std::unique_ptr<curl_slist, HeaderListDeleter> headers(
      curl_slist_append(nullptr, "Accept: application/vnd.schemaregistry.v1+json, application/json"));
  const std::string url = settings_.url + path;
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(settings_.timeout).count();
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout));
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &response.body);
  const std::string credentials = settings_.username + ":" + settings_.password;
  if (!settings_.username.empty()) {
    curl_easy_setopt(curl.get(), CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    curl_easy_setopt(curl.get(), CURLOPT_USERPWD, credentials.c_str());
  }
  if (!settings_.tls_ca_file.empty()) curl_easy_setopt(curl.get(), CURLOPT_CAINFO, settings_.tls_ca_file.c_str());
  if (!settings_.tls_cert_file.empty()) {
    curl_easy_setopt(curl.get(), CURLOPT_SSLCERT, settings_.tls_cert_file.c_str());
    curl_easy_setopt(curl.get(), CURLOPT_SSLKEY, settings_.tls_key_file.c_str());
  }
  const CURLcode code = curl_easy_perform(curl.get());
  if (code != CURLE_OK) {
    response.error = "GET " + url + ": " + curl_easy_strerror(code);
    return response;
  }
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

bool RegistryClient::parse_schema(const std::string& body, FetchedSchema& out) const {
  simdjson::dom::parser parser;
  simdjson::dom::element document;
  std::string_view schema;
  if (parser.parse(body).get(document) || document["schema"].get_string().get(schema)) {
    out.problem = "the registry's answer has no \"schema\" string";
    return false;
  }
  out.text = std::string(schema);
  std::string_view type_name;
  if (document["schemaType"].get_string().get(type_name)) type_name = "";
  const std::optional<config::SchemaType> type = schema_type_named(type_name);
  if (!type) {
    out.problem = "the registry's schemaType " + std::string(type_name) + " is not AVRO, PROTOBUF or JSON";
    return false;
  }
  out.type = *type;
  return true;
}

// Each reference {name, subject, version} fetched from /subjects/{subject}/versions/{version}, its own
// references first.
bool RegistryClient::resolve_references(const std::string& body, FetchedSchema& out, int depth) const {
  simdjson::dom::parser parser;
  simdjson::dom::element document;
  simdjson::dom::array references;
  if (parser.parse(body).get(document) || document["references"].get_array().get(references)) return true;
  if (depth > kMaxReferenceDepth) {
    out.problem = "the schema's references nest deeper than " + std::to_string(kMaxReferenceDepth);
    return false;
  }
  for (simdjson::dom::element reference : references) {
    std::string_view name;
    std::string_view subject;
    std::int64_t version = 0;
    if (reference["name"].get_string().get(name) || reference["subject"].get_string().get(subject) ||
        reference["version"].get_int64().get(version)) {
      out.problem = "a reference is not {name, subject, version}";
      return false;
    }
    const auto seen = [&](const SchemaReference& r) { return r.name == name; };
    if (std::any_of(out.references.begin(), out.references.end(), seen)) continue;
    const Response answer = get("/subjects/" + escaped(std::string(subject)) + "/versions/" + std::to_string(version));
    if (answer.status != 200) {
      out.outcome = answer.status == 404 ? FetchedSchema::Outcome::kNotFound : FetchedSchema::Outcome::kUnreachable;
      out.problem = "reference " + std::string(name) + " (" + std::string(subject) + " version " +
                    std::to_string(version) + "): " + (answer.error.empty() ? "HTTP " + std::to_string(answer.status) : answer.error);
      return false;
    }
    FetchedSchema referenced;
    if (!resolve_references(answer.body, out, depth + 1) || !parse_schema(answer.body, referenced)) {
      if (out.problem.empty()) out.problem = referenced.problem;
      return false;
    }
    out.references.push_back({std::string(name), referenced.text});
  }
  return true;
}

FetchedSchema RegistryClient::fetch(std::uint32_t id) const {
  FetchedSchema out;
  const Response answer = get("/schemas/ids/" + std::to_string(id));
  if (answer.status == 404) {
    out.outcome = FetchedSchema::Outcome::kNotFound;
    out.problem = "the schema registry does not know schema id " + std::to_string(id);
    return out;
  }
  if (answer.status != 200) {
    out.problem = answer.error.empty() ? "GET /schemas/ids/" + std::to_string(id) + ": HTTP " + std::to_string(answer.status)
                                       : answer.error;
    return out;  // kUnreachable: asked again after a backoff
  }
  out.outcome = FetchedSchema::Outcome::kFound;
  if (!parse_schema(answer.body, out)) out.outcome = FetchedSchema::Outcome::kNotFound;
  else if (!resolve_references(answer.body, out, 0) && out.outcome == FetchedSchema::Outcome::kFound) {
    out.outcome = FetchedSchema::Outcome::kNotFound;
  }
  return out;
}

}  // namespace bloomgate::app
