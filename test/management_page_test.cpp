// The management web page in headless Chromium (Debian's package) driven by playwright-core
// (npm, installed once into the build tree; it uses the system's Chromium, downloads none),
// against a real node with traffic. What it checks is in test/http/page_check.js; it saves a
// screenshot to the build tree (the README's picture is one of these).
#include <boost/test/unit_test.hpp>

#include "subprocess.hpp"

#include <cstdlib>
#include <filesystem>

using warren::test::node_process;
using warren::test::run_command;

BOOST_AUTO_TEST_CASE(page_shows_live_figures_in_chromium) {
  std::string modules = std::string(WARREN_NPM_DIR) + "/node_modules";
  if (!std::filesystem::exists(modules + "/playwright-core/package.json")) {
    auto r = run_command({NPM_PATH, "install", "--no-audit", "--no-fund", "--prefix",
                          WARREN_NPM_DIR, "playwright-core@1.64"});
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, "npm install playwright-core failed:\n"
                                                << r.out << r.err);
  }
  node_process node;
  BOOST_REQUIRE(setenv("NODE_PATH", modules.c_str(), 1) == 0);
  std::string shot = std::string(WARREN_NPM_DIR) + "/management-page.png";
  auto r = run_command({NODE_PATH_BIN, std::string(WARREN_SOURCE_DIR) + "/test/http/page_check.js",
                        std::to_string(node.http_port()), shot});
  BOOST_TEST(r.exit_code == 0, "page_check.js exited " << r.exit_code << ":\n" << r.out << r.err);
  BOOST_TEST(std::filesystem::exists(shot));
  BOOST_TEST(node.alive());
}
