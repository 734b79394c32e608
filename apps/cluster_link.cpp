#include "apps/cluster_link.hpp"

#include "actors/cluster/cluster_auth.hpp"

#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/middleman_actor.hpp>
#include <caf/openssl/publish.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

namespace warren::node {

namespace fs = std::filesystem;

namespace {

constexpr size_t max_secret_bytes = 4096;

std::string openssl_errors() {
  std::string text;
  while (auto code = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof buf);
    text += text.empty() ? buf : std::string("; ") + buf;
  }
  return text.empty() ? "unknown OpenSSL error" : text;
}

// Encrypted keys would make OpenSSL ask on the terminal; they are refused instead.
int no_passphrase(char*, int, int, void*) {
  return 0;
}

// Loads the files the way CAF's OpenSSL session does, so that a bad one stops the node here,
// named, rather than throwing inside CAF's network thread at the first connection.
std::string check_tls_files(const cluster_link_options& opt) {
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_method()), SSL_CTX_free);
  if (!ctx) return "cannot create an OpenSSL context: " + openssl_errors();
  ERR_clear_error();
  SSL_CTX_set_default_passwd_cb(ctx.get(), no_passphrase);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), opt.tls_cert.c_str()) != 1)
    return "--cluster-tls-cert " + opt.tls_cert + ": " + openssl_errors();
  // OpenSSL checks here too that the key belongs to the certificate.
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), opt.tls_key.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx.get()) != 1)
    return "--cluster-tls-key " + opt.tls_key +
           " is not the key of --cluster-tls-cert, or not an unencrypted PEM key: " +
           openssl_errors();
  if (SSL_CTX_load_verify_locations(ctx.get(), opt.tls_ca.c_str(), nullptr) != 1)
    return "--cluster-tls-ca " + opt.tls_ca + ": " + openssl_errors();
  return {};
}

std::string read_secret_file(const std::string& path, std::string& secret) {
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (ec) return "--cluster-secret-file " + path + ": " + ec.message();
  if (!fs::is_regular_file(status)) return "--cluster-secret-file " + path + ": not a file";
  auto others = fs::perms::group_all | fs::perms::others_all;
  if ((status.permissions() & others) != fs::perms::none)
    return "--cluster-secret-file " + path + ": readable by others than its owner; chmod 600 it";
  std::ifstream in(path, std::ios::binary);
  if (!in) return "--cluster-secret-file " + path + ": cannot be read";
  std::string text(max_secret_bytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > max_secret_bytes)
    return "--cluster-secret-file " + path + ": longer than " + std::to_string(max_secret_bytes) +
           " bytes";
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) return "--cluster-secret-file " + path + ": empty";
  secret = std::move(text);
  return {};
}

// Copies `from` to `to` (mode 0600) through a temporary file and a rename.
std::string copy_privately(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  if (!in) return from + ": cannot be read";
  std::ostringstream bytes;
  bytes << in.rdbuf();
  auto temporary = to + ".new";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    fs::permissions(temporary, fs::perms::owner_read | fs::perms::owner_write);
    out << bytes.str();
    if (!out.flush()) return "cannot write " + temporary;
  }
  std::error_code ec;
  fs::rename(temporary, to, ec);
  if (ec) return "cannot write " + to + ": " + ec.message();
  return {};
}

}  // namespace

std::string settle_cluster_link(cluster_link_options& opt, const std::vector<std::string>& join) {
  if (!opt.secret_file.empty()) {
    if (!opt.secret.empty())
      return "--cluster-secret-file and --cluster-secret (or WARREN_CLUSTER_SECRET) both give "
             "the secret; keep one";
    if (auto err = read_secret_file(opt.secret_file, opt.secret); !err.empty()) return err;
  }
  bool any_tls = !opt.tls_cert.empty() || !opt.tls_key.empty() || !opt.tls_ca.empty();
  if (any_tls && (opt.tls_cert.empty() || opt.tls_key.empty() || opt.tls_ca.empty()))
    return "cluster TLS needs --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca "
           "together: every node proves itself with a certificate the CA signed";
  if (opt.tls()) return {};
  for (const auto& address : join) {
    std::string host, error;
    uint16_t port = 0;
    if (split_address(address, host, port, error) && !is_loopback_host(host))
      return "--join " + address +
             " is not a loopback address: without TLS the cluster link is cleartext and "
             "unauthenticated, so nodes are reached on loopback only. Give --cluster-tls-cert, "
             "--cluster-tls-key and --cluster-tls-ca";
  }
  if (!is_loopback_host(opt.bind))
    return "--cluster-bind " + opt.bind +
           " is not a loopback address: without TLS anyone who reaches the cluster port could "
           "send to every actor of this node. Give --cluster-tls-cert, --cluster-tls-key and "
           "--cluster-tls-ca, or bind the cluster port to 127.0.0.1";
  return {};
}

std::string adopt_cluster_tls_files(cluster_link_options& opt, const std::string& data_dir) {
  if (!opt.tls()) return {};
  auto folder = fs::path(data_dir) / "cluster-tls";
  std::error_code ec;
  fs::create_directories(folder, ec);
  fs::permissions(folder, fs::perms::owner_all, ec);
  if (ec) return "cannot make " + folder.string() + ": " + ec.message();
  std::pair<std::string*, const char*> files[] = {
      {&opt.tls_cert, "cert.pem"}, {&opt.tls_key, "key.pem"}, {&opt.tls_ca, "ca.pem"}};
  for (auto& [path, name] : files) {
    auto copy = folder / name;
    if (auto err = copy_privately(*path, copy.string()); !err.empty()) return err;
    *path = copy.string();
  }
  return check_tls_files(opt);
}

void configure_cluster_link(caf::actor_system_config& cfg, const cluster_link_options& opt) {
  if (!opt.tls()) return;
  cfg.load<caf::openssl::manager>();
  cfg.openssl_certificate = opt.tls_cert;
  cfg.openssl_key = opt.tls_key;
  cfg.openssl_cafile = opt.tls_ca;
}

caf::expected<uint16_t> publish_cluster_actor(caf::actor_system& system, const caf::actor& cluster,
                                              uint16_t port, const cluster_link_options& opt) {
  // SO_REUSEADDR, so that a node restarted after a crash can listen again at once, while its old
  // connections linger in TIME_WAIT.
  if (opt.tls()) return caf::openssl::publish(cluster, port, opt.bind.c_str(), true);
  return system.middleman().publish(cluster, port, opt.bind.c_str(), true);
}

std::function<caf::io::middleman_actor()> cluster_connectors(caf::actor_system& system,
                                                             const cluster_link_options& opt) {
  // Taken here, on the main thread: the middleman's broker registry is not thread-safe.
  auto basp = system.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  bool tls = opt.tls();
  return [&system, basp, tls] {
    return tls ? caf::openssl::make_middleman_actor(system, basp)
               : caf::io::make_middleman_actor(system, basp);
  };
}

}  // namespace warren::node
