// The metadata store against real LMDB files in a temporary directory: a map that fills up is
// grown and the batch written again, so that metadata is never refused for want of address
// space, and what was written reads back, also after reopening with a smaller map.
#include <boost/test/unit_test.hpp>

#include "persistence/lmdb_store.hpp"
#include "persistence/metadata_codec.hpp"
#include "subprocess.hpp"

#include <string>
#include <vector>

using warren::persistence::lmdb_store;
using warren::persistence::meta_mutation;
using warren::persistence::meta_table;

BOOST_AUTO_TEST_SUITE(lmdb_store_suite)

namespace {

constexpr size_t small_map = 256 * 1024;

// `count` users from `first` on, each with a 1 KiB password hash, in batches of 100.
void add_users(lmdb_store& store, int first, int count) {
  std::vector<meta_mutation> batch;
  for (int i = first; i < first + count; ++i) {
    warren::user_record u{"user-" + std::to_string(i), std::string(1024, 'h'), {}};
    batch.push_back({meta_table::users, warren::persistence::user_key(u.name),
                     warren::persistence::encode_user(u), false});
    if (batch.size() == 100) {
      store.apply(batch);
      batch.clear();
    }
  }
  store.apply(batch);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_full_map_is_grown_and_nothing_is_refused) {
  warren::test::temp_dir dir;
  {
    lmdb_store store(dir.path(), {}, small_map);
    add_users(store, 0, 2000);  // about 2 MiB: eight times the map
    BOOST_TEST(store.load().users.size() == 2000u);
  }
  // Reopened with the small map again: LMDB maps what the file holds, and it grows on.
  lmdb_store store(dir.path(), {}, small_map);
  BOOST_TEST(store.load().users.size() == 2000u);
  add_users(store, 2000, 1000);
  auto users = store.load().users;
  BOOST_REQUIRE(users.size() == 3000u);
  BOOST_TEST(users.front().password_hash == std::string(1024, 'h'));
}

BOOST_AUTO_TEST_SUITE_END()
