// The one main() of every Boost.Test suite, compiled once. Each suite's executable links it
// and names its master test suite after itself (broker_topology_test -> "broker_topology"), as a
// BOOST_TEST_MODULE in each file did; the files then share one precompiled Boost.Test header.
#include <boost/test/unit_test.hpp>

#include <string>

namespace {

bool name_master_suite() {
  auto& master = boost::unit_test::framework::master_test_suite();
  std::string name = master.argc > 0 ? master.argv[0] : "warren";
  name = name.substr(name.find_last_of('/') + 1);
  const std::string suffix = "_test";
  if (name.size() > suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    name.resize(name.size() - suffix.size());
  master.p_name.value = name;
  return true;
}

}  // namespace

int main(int argc, char* argv[]) {
  return boost::unit_test::unit_test_main(&name_master_suite, argc, argv);
}
