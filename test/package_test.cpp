// The C++ client as a package: installed to a temporary prefix, found there by a separate CMake
// project with find_package(Warren), and the program it builds (examples/hello, which the README
// shows) run against a real node.
#include <boost/test/unit_test.hpp>

#include "subprocess.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>

using warren::test::node_process;
using warren::test::run_command;
using warren::test::temp_dir;
namespace fs = std::filesystem;

namespace {

void require_ok(const warren::test::command_result& r, const std::string& what) {
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, what << " failed:\n" << r.out << r.err);
}

}  // namespace

BOOST_AUTO_TEST_CASE(an_installed_client_builds_and_runs_a_program) {
  temp_dir scratch;
  auto prefix = scratch.path() + "/prefix";
  auto build = scratch.path() + "/hello-build";
  require_ok(run_command({CMAKE_PATH, "--install", WARREN_BUILD_DIR, "--prefix", prefix}),
             "cmake --install");

  // Only the public headers are installed, the private ones stay behind.
  BOOST_CHECK(fs::exists(prefix + "/include/warren/connection.hpp"));
  BOOST_CHECK(fs::exists(prefix + "/include/warren/core/message.hpp"));
  BOOST_CHECK(!fs::exists(prefix + "/include/warren/client_runtime.hpp"));
  BOOST_CHECK(fs::exists(prefix + "/bin/warren-node"));

  require_ok(
      run_command({CMAKE_PATH, "-S", WARREN_SOURCE_DIR "/examples/hello", "-B", build,
                   "-DCMAKE_PREFIX_PATH=" + prefix, "-DCMAKE_CXX_FLAGS=" WARREN_SANITIZE_FLAGS,
                   "-DCMAKE_EXE_LINKER_FLAGS=" WARREN_SANITIZE_FLAGS}),
      "configuring examples/hello");
  require_ok(run_command({CMAKE_PATH, "--build", build}), "building examples/hello");

  node_process node;
  auto hello = run_command({build + "/hello", std::to_string(node.port())});
  BOOST_TEST_MESSAGE(hello.out);
  require_ok(hello, "hello");
  for (const char* line : {"confirmed 100\n", "handled 100\n", "refused: PRECONDITION_FAILED\n"})
    BOOST_CHECK_MESSAGE(hello.out.find(line) != std::string::npos, "hello printed no '"
                                                                       << line << "':\n"
                                                                       << hello.out << hello.err);
}

// The README's guide to the C++ client is examples/hello whole, so what it shows is what this
// test builds and runs.
BOOST_AUTO_TEST_CASE(the_readme_shows_the_example_as_it_is_built) {
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    BOOST_REQUIRE_MESSAGE(in, "cannot read " << path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  auto example = read(WARREN_SOURCE_DIR "/examples/hello/hello.cpp");
  auto readme = read(WARREN_SOURCE_DIR "/README.md");
  BOOST_TEST(readme.find("```cpp\n" + example + "```\n") != std::string::npos,
             "README.md does not show examples/hello/hello.cpp as it is");
}
