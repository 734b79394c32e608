// Certificates for tests, made with the openssl command in a temporary folder: a CA, a second CA
// that signed nothing here, and, signed by the first, a server certificate for localhost and
// 127.0.0.1 and a client certificate. Keys are RSA 2048, unencrypted; each file is
// path("NAME.pem") / path("NAME.key").
#pragma once

#include "subprocess.hpp"

#include <string>
#include <vector>

namespace warren::test {

/// Runs the openssl command with `args`; throws with its stderr when it fails.
void openssl(const std::vector<std::string>& args);

struct certificates {
  temp_dir dir;
  std::string path(const std::string& name) const { return dir.path() + "/" + name; }

  certificates();
  void make_ca(const std::string& name);
  /// NAME.pem / NAME.key with common name `cn`, signed by CA `ca`.
  void sign(const std::string& name, const std::string& cn, std::vector<std::string> extra,
            const std::string& ca = "ca");
};

/// One set for the whole test process: every node of a cluster test presents server.pem and
/// trusts ca.pem on its cluster link.
const certificates& shared_certificates();

}  // namespace warren::test
