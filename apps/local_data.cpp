#include "apps/local_data.hpp"

#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace warren::node {

namespace fs = std::filesystem;

namespace {

// Bytes of the files under DATA_DIR/queues (segments, marks, indexes): the messages' weight.
uint64_t queue_file_bytes(const std::string& data_dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(fs::path(data_dir) / "queues", ec), end;
       !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  return total;
}

std::string count(size_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

std::string bytes_text(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

void add(std::string& out, const std::string& part) {
  out += out.empty() ? part : ", " + part;
}

}  // namespace

std::string describe_local_data(const persistence::metadata_contents& contents,
                                const std::string& data_dir) {
  std::string out;
  std::string vhost_names;
  size_t vhosts = 0;
  for (const auto& v : contents.vhosts) {
    if (v == "/") continue;
    if (++vhosts <= 3) vhost_names += (vhost_names.empty() ? "" : ", ") + v;
  }
  if (vhosts)
    add(out, count(vhosts, "vhost") + " (" + vhost_names + (vhosts > 3 ? ", ..." : "") + ")");
  auto bytes = queue_file_bytes(data_dir);
  if (!contents.queues.empty() || bytes > 0)
    add(out, count(contents.queues.size(), "durable queue") + " with " + bytes_text(bytes) +
                 " of message files");
  if (!contents.exchanges.empty()) add(out, count(contents.exchanges.size(), "exchange"));
  if (!contents.bindings.empty()) add(out, count(contents.bindings.size(), "binding"));
  size_t users = 0;
  for (const auto& u : contents.users) users += u.name != "guest";
  if (users) add(out, count(users, "user") + " besides guest");
  if (!contents.grants.empty()) add(out, count(contents.grants.size(), "grant"));
  return out;
}

std::string move_aside_before_join(const std::string& from_path) {
  auto from = fs::absolute(fs::path(from_path)).lexically_normal();
  if (!from.has_filename()) from = from.parent_path();
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
  auto base = from.string() + ".before-join-" + stamp;
  fs::path to = base;
  for (int n = 2; fs::exists(to); ++n) to = base + "-" + std::to_string(n);
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec)
    throw std::runtime_error("could not move " + from.string() + " aside to " + to.string() + ": " +
                             ec.message());
  return to.string();
}

std::string move_data_dir_aside(const std::string& data_dir) {
  return move_aside_before_join(data_dir);
}

}  // namespace warren::node
