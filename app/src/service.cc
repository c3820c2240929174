#include "bloomgate/app/service.h"

#include <memory>
#include <utility>

#include "bloomgate/app/schema_catalog.h"
#include "service_loop.h"

namespace bloomgate::app {

// The service: its state directory, opened before anything touches Kafka and closed after the loop closed
// its clients (their close() may checkpoint revoked partitions), and one loop. The workers of a process
// share one directory, opened and closed by ServiceWorkers (ServiceOptions::state_directory).
class Service::Impl {
 public:
  Impl(config::Config config, ServiceOptions options) : config_(std::move(config)), options_(std::move(options)) {
    if (!options_.schemas) options_.schemas = make_schema_catalog(config_);
    for (const auto& pipeline : config_.pipelines) {
      filter_options_for(pipeline);  // throws on settings the filters reject, before any Kafka work
    }
  }

  RunResult run() noexcept {
    if (own_directory_) {
      try {
        own_directory_->open();
      } catch (const std::exception& e) {
        return loop_.fail_before_start(e.what());
      }
    }
    const RunResult result = loop_.run();
    if (own_directory_) own_directory_->close();
    return result;
  }

  ServiceSnapshot snapshot() const { return loop_.snapshot(); }

 private:
  config::Config config_;
  ServiceOptions options_;
  std::unique_ptr<StateDirectory> own_directory_ =
      options_.state_directory ? nullptr : std::make_unique<StateDirectory>(config_, options_.state_environment);
  ServiceLoop loop_{config_, options_, options_.state_directory ? *options_.state_directory : *own_directory_};
};

Service::Service(config::Config config, ServiceOptions options)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(options))) {}
Service::~Service() = default;
RunResult Service::run() { return impl_->run(); }
ServiceSnapshot Service::snapshot() const { return impl_->snapshot(); }

}  // namespace bloomgate::app
