// Routing as a specification: topic wildcards, direct / fanout / headers tables.
#include <boost/test/unit_test.hpp>

#include "actors/routing/headers_match.hpp"
#include "actors/routing/routing_table.hpp"
#include "actors/routing/topic_trie.hpp"

#include <algorithm>

using namespace warren;

namespace {

bool topic_matches(const std::string& binding, const std::string& key) {
  topic_trie trie;
  trie.insert(binding, 1);
  std::vector<uint64_t> out;
  trie.match(key, out);
  return out.size() == 1;
}

message msg(const std::string& key, field_table headers = {}) {
  message m;
  m.routing_key = key;
  message_properties p;
  p.headers = std::move(headers);
  m.set_properties(std::move(p));
  return m;
}

std::vector<uint64_t> route(const routing_table& t, const message& m) {
  std::vector<uint64_t> out;
  t.route(m, out);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(topic)

BOOST_AUTO_TEST_CASE(literal_words_match_exactly) {
  BOOST_TEST(topic_matches("a.b.c", "a.b.c"));
  BOOST_TEST(!topic_matches("a.b.c", "a.b"));
  BOOST_TEST(!topic_matches("a.b", "a.b.c"));
  BOOST_TEST(!topic_matches("a.b.c", "a.b.x"));
}

BOOST_AUTO_TEST_CASE(star_matches_exactly_one_word) {
  BOOST_TEST(topic_matches("a.*.c", "a.b.c"));
  BOOST_TEST(!topic_matches("a.*.c", "a.c"));
  BOOST_TEST(!topic_matches("a.*.c", "a.b.b.c"));
  BOOST_TEST(topic_matches("*", "word"));
  BOOST_TEST(!topic_matches("*", "two.words"));
}

BOOST_AUTO_TEST_CASE(star_matches_an_empty_word) {
  BOOST_TEST(topic_matches("a.*.c", "a..c"));
  BOOST_TEST(topic_matches("*", ""));
  BOOST_TEST(topic_matches("*.*", "."));
  BOOST_TEST(!topic_matches("*.*", ""));
}

BOOST_AUTO_TEST_CASE(hash_alone_matches_everything) {
  BOOST_TEST(topic_matches("#", ""));
  BOOST_TEST(topic_matches("#", "a"));
  BOOST_TEST(topic_matches("#", "a.b.c.d"));
  BOOST_TEST(topic_matches("#", ".."));
}

BOOST_AUTO_TEST_CASE(hash_at_the_end_matches_zero_or_more_words) {
  BOOST_TEST(topic_matches("a.#", "a"));
  BOOST_TEST(topic_matches("a.#", "a.b"));
  BOOST_TEST(topic_matches("a.#", "a.b.c"));
  BOOST_TEST(!topic_matches("a.#", "b.a"));
  BOOST_TEST(!topic_matches("a.#", "ab"));
}

BOOST_AUTO_TEST_CASE(hash_at_the_start_matches_zero_or_more_words) {
  BOOST_TEST(topic_matches("#.z", "z"));
  BOOST_TEST(topic_matches("#.z", "a.b.z"));
  BOOST_TEST(!topic_matches("#.z", "z.a"));
}

BOOST_AUTO_TEST_CASE(hash_in_the_middle) {
  BOOST_TEST(topic_matches("a.#.z", "a.z"));
  BOOST_TEST(topic_matches("a.#.z", "a.b.c.z"));
  BOOST_TEST(!topic_matches("a.#.z", "a.b.c"));
  BOOST_TEST(topic_matches("a.#.b.#.c", "a.b.c"));
  BOOST_TEST(topic_matches("a.#.b.#.c", "a.x.b.y.y.c"));
  BOOST_TEST(!topic_matches("a.#.b.#.c", "a.x.y.c"));
}

BOOST_AUTO_TEST_CASE(repeated_hashes_behave_like_one) {
  BOOST_TEST(topic_matches("#.#", ""));
  BOOST_TEST(topic_matches("#.#", "a"));
  BOOST_TEST(topic_matches("#.#", "a.b.c"));
  BOOST_TEST(topic_matches("a.#.#", "a"));
  BOOST_TEST(topic_matches("#.#.a", "a"));
}

BOOST_AUTO_TEST_CASE(star_and_hash_combined) {
  BOOST_TEST(topic_matches("*.#", "a"));
  BOOST_TEST(topic_matches("*.#", ""));  // "" is one empty word: * takes it, # takes none
  BOOST_TEST(topic_matches("#.*", "a.b"));
  BOOST_TEST(topic_matches("*.#.*", "a.b"));
  BOOST_TEST(!topic_matches("*.#.*", "a"));
}

BOOST_AUTO_TEST_CASE(wildcards_in_routing_keys_are_literal) {
  BOOST_TEST(topic_matches("a.*", "a.#"));
  BOOST_TEST(!topic_matches("a.b", "a.*"));
}

BOOST_AUTO_TEST_CASE(long_keys_with_many_wildcards_stay_correct) {
  std::string key, binding;
  for (int i = 0; i < 100; ++i) {
    key += (i ? "." : "") + std::string("w") + std::to_string(i);
    binding += (i ? "." : "") + std::string(i % 2 ? "#" : "*");
  }
  BOOST_TEST(topic_matches(binding, key));
  BOOST_TEST(topic_matches("#.w99", key));
  BOOST_TEST(!topic_matches("#.w98", key));
}

BOOST_AUTO_TEST_CASE(each_destination_is_reported_once) {
  topic_trie trie;
  trie.insert("a.*", 7);
  trie.insert("#", 7);
  trie.insert("a.b", 7);
  trie.insert("#", 8);
  std::vector<uint64_t> out;
  trie.match("a.b", out);
  std::sort(out.begin(), out.end());
  BOOST_TEST(out == (std::vector<uint64_t>{7, 8}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(erase_removes_only_that_binding) {
  topic_trie trie;
  trie.insert("a.#", 1);
  trie.insert("a.b", 2);
  BOOST_TEST(trie.erase("a.#", 1));
  BOOST_TEST(!trie.erase("a.#", 1));
  std::vector<uint64_t> out;
  trie.match("a.b", out);
  BOOST_TEST(out == (std::vector<uint64_t>{2}), boost::test_tools::per_element());
  BOOST_TEST(trie.erase("a.b", 2));
  BOOST_TEST(trie.empty());
}

BOOST_AUTO_TEST_CASE(many_bindings_route_to_exactly_the_matching_ones) {
  topic_trie trie;
  for (uint64_t i = 0; i < 10000; ++i) trie.insert("stock." + std::to_string(i) + ".*", i);
  trie.insert("stock.#", 99999);
  std::vector<uint64_t> out;
  trie.match("stock.4242.nyse", out);
  std::sort(out.begin(), out.end());
  BOOST_TEST(out == (std::vector<uint64_t>{4242, 99999}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(wildcards_must_be_whole_words) {
  BOOST_TEST(check_topic_binding_key("a.*.b").empty());
  BOOST_TEST(check_topic_binding_key("#").empty());
  BOOST_TEST(check_topic_binding_key("a..b").empty());
  BOOST_TEST(!check_topic_binding_key("a*.b").empty());
  BOOST_TEST(!check_topic_binding_key("a.b#").empty());
  BOOST_TEST(!check_topic_binding_key("**").empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(tables)

BOOST_AUTO_TEST_CASE(direct_routes_on_equal_keys) {
  routing_table t(exchange_type::direct);
  t.add(1, "red", {});
  t.add(2, "blue", {});
  t.add(3, "red", {});
  BOOST_TEST(route(t, msg("red")) == (std::vector<uint64_t>{1, 3}),
             boost::test_tools::per_element());
  BOOST_TEST(route(t, msg("green")).empty());
}

BOOST_AUTO_TEST_CASE(binding_twice_is_a_no_op) {
  routing_table t(exchange_type::direct);
  BOOST_TEST(t.add(1, "k", {}));
  BOOST_TEST(!t.add(1, "k", {}));
  BOOST_TEST(t.binding_count() == 1u);
}

BOOST_AUTO_TEST_CASE(fanout_delivers_once_per_queue) {
  routing_table t(exchange_type::fanout);
  t.add(1, "x", {});
  t.add(1, "y", {});
  t.add(2, "", {});
  BOOST_TEST(route(t, msg("anything")) == (std::vector<uint64_t>{1, 2}),
             boost::test_tools::per_element());
  BOOST_TEST(t.remove(1, "x", {}));
  BOOST_TEST(route(t, msg("")).size() == 2u);  // 1 is still bound by "y"
  t.remove_queue(1);
  BOOST_TEST(route(t, msg("")) == (std::vector<uint64_t>{2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(topic_table_keeps_a_key_bound_with_two_argument_sets) {
  routing_table t(exchange_type::topic);
  t.add(1, "a.*", {});
  t.add(1, "a.*", {{"x", field_value::of_int(1)}});
  t.remove(1, "a.*", {});
  BOOST_TEST(route(t, msg("a.b")) == (std::vector<uint64_t>{1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(headers_all_needs_every_argument) {
  field_table args{{"x-match", field_value::of_text("all")},
                   {"format", field_value::of_text("pdf")},
                   {"type", field_value::of_text("report")}};
  BOOST_TEST(headers_match(args, {{"format", field_value::of_text("pdf")},
                                  {"type", field_value::of_text("report")},
                                  {"extra", field_value::of_int(1)}}));
  BOOST_TEST(!headers_match(args, {{"format", field_value::of_text("pdf")}}));
  BOOST_TEST(!headers_match(
      args, {{"format", field_value::of_text("pdf")}, {"type", field_value::of_text("log")}}));
}

BOOST_AUTO_TEST_CASE(headers_default_is_all) {
  field_table args{{"a", field_value::of_int(1)}, {"b", field_value::of_int(2)}};
  BOOST_TEST(!headers_match(args, {{"a", field_value::of_int(1)}}));
  BOOST_TEST(headers_match(args, {{"a", field_value::of_int(1)}, {"b", field_value::of_int(2)}}));
}

BOOST_AUTO_TEST_CASE(headers_any_needs_one_argument) {
  field_table args{{"x-match", field_value::of_text("any")},
                   {"a", field_value::of_int(1)},
                   {"b", field_value::of_int(2)}};
  BOOST_TEST(headers_match(args, {{"b", field_value::of_int(2)}}));
  BOOST_TEST(!headers_match(args, {{"b", field_value::of_int(3)}}));
  BOOST_TEST(!headers_match(args, {}));
}

BOOST_AUTO_TEST_CASE(headers_compare_types_and_values) {
  field_table args{{"n", field_value::of_int(1)}};
  BOOST_TEST(!headers_match(args, {{"n", field_value::of_text("1")}}));
  BOOST_TEST(!headers_match(args, {{"n", field_value::of_double(1.0)}}));
}

BOOST_AUTO_TEST_CASE(headers_none_value_matches_on_presence) {
  field_table args{{"trace", field_value{}}};
  BOOST_TEST(headers_match(args, {{"trace", field_value::of_text("anything")}}));
  BOOST_TEST(!headers_match(args, {}));
}

BOOST_AUTO_TEST_CASE(headers_x_arguments_count_only_with_x_modes) {
  field_table plain{{"x-match", field_value::of_text("all")}, {"x-tag", field_value::of_int(1)}};
  BOOST_TEST(headers_match(plain, {}));
  field_table with_x{{"x-match", field_value::of_text("all-with-x")},
                     {"x-tag", field_value::of_int(1)}};
  BOOST_TEST(!headers_match(with_x, {}));
  BOOST_TEST(headers_match(with_x, {{"x-tag", field_value::of_int(1)}}));
}

BOOST_AUTO_TEST_CASE(headers_bad_x_match_is_refused) {
  BOOST_TEST(!check_headers_binding({{"x-match", field_value::of_text("some")}}).empty());
  BOOST_TEST(!check_headers_binding({{"x-match", field_value::of_int(1)}}).empty());
  BOOST_TEST(check_headers_binding({{"x-match", field_value::of_text("any")}}).empty());
}

BOOST_AUTO_TEST_SUITE_END()
