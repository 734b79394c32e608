#include "certificates.hpp"

#include <fstream>
#include <stdexcept>

namespace warren::test {

void openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv{OPENSSL_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run_command(argv);
  if (r.exit_code != 0) throw std::runtime_error("openssl failed: " + r.err);
}

certificates::certificates() {
  make_ca("ca");
  make_ca("other-ca");
  std::ofstream(path("server.ext")) << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
  sign("server", "localhost", {"-extfile", path("server.ext")});
  sign("client", "warren-test-client", {});
}

void certificates::make_ca(const std::string& name) {
  openssl({"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=" + name,
           "-keyout", path(name + ".key"), "-out", path(name + ".pem")});
}

void certificates::sign(const std::string& name, const std::string& cn,
                        std::vector<std::string> extra, const std::string& ca) {
  openssl({"req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + cn, "-keyout",
           path(name + ".key"), "-out", path(name + ".csr")});
  std::vector<std::string> args{"x509",
                                "-req",
                                "-days",
                                "2",
                                "-in",
                                path(name + ".csr"),
                                "-CA",
                                path(ca + ".pem"),
                                "-CAkey",
                                path(ca + ".key"),
                                "-CAcreateserial",
                                "-out",
                                path(name + ".pem")};
  args.insert(args.end(), extra.begin(), extra.end());
  openssl(args);
}

const certificates& shared_certificates() {
  static const certificates shared;
  return shared;
}

}  // namespace warren::test
