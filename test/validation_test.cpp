// Validation at the boundary: names, keys, message ids, queue arguments, reply codes.
#include <boost/test/unit_test.hpp>

#include "actors/common/broker_error.hpp"
#include "actors/node/permissions.hpp"
#include "actors/node/users.hpp"
#include "actors/queue/queue_arguments.hpp"
#include "actors/vhost/equivalence.hpp"
#include "core/message_id.hpp"
#include "core/names.hpp"

#include <set>

using namespace warren;

BOOST_AUTO_TEST_SUITE(names)

BOOST_AUTO_TEST_CASE(ordinary_names_pass) {
  BOOST_TEST(check_name("queue name", "orders").empty());
  BOOST_TEST(check_name("queue name", "a.b-c_d/é日本").empty());
  BOOST_TEST(check_name("queue name", std::string(255, 'x')).empty());
}

BOOST_AUTO_TEST_CASE(empty_names_are_refused) {
  BOOST_TEST(check_name("queue name", "") == "queue name is empty");
}

BOOST_AUTO_TEST_CASE(long_names_are_refused_with_their_length) {
  auto problem = check_name("exchange name", std::string(256, 'x'));
  BOOST_TEST(problem.find("256 bytes") != std::string::npos);
  BOOST_TEST(problem.find("255") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(control_characters_are_refused_and_shown_escaped) {
  auto problem = check_name("queue name", std::string("bad\nname"));
  BOOST_TEST(problem.find("control character") != std::string::npos);
  BOOST_TEST(problem.find("\\x0a") != std::string::npos);
  BOOST_TEST(!check_name("queue name", std::string("nul\0x", 5)).empty());
  BOOST_TEST(!check_name("queue name", "del\x7f").empty());
}

BOOST_AUTO_TEST_CASE(invalid_utf8_is_refused) {
  BOOST_TEST(!check_name("queue name", "\xff\xfe").empty());
  BOOST_TEST(!check_name("queue name", "trunc\xe6\x97").empty());
  BOOST_TEST(!check_key("routing key", "\xc3").empty());
}

BOOST_AUTO_TEST_CASE(keys_may_be_empty_but_not_long) {
  BOOST_TEST(check_key("routing key", "").empty());
  BOOST_TEST(check_key("routing key", std::string(255, 'k')).empty());
  BOOST_TEST(!check_key("routing key", std::string(256, 'k')).empty());
}

BOOST_AUTO_TEST_CASE(amq_prefix_is_reserved) {
  BOOST_TEST(is_reserved_name("amq.direct"));
  BOOST_TEST(is_reserved_name("amq.gen-x"));
  BOOST_TEST(!is_reserved_name("amqp"));
  BOOST_TEST(!is_reserved_name("amq"));
}

BOOST_AUTO_TEST_CASE(generated_names_carry_their_prefix_and_differ) {
  auto a = generated_name("amq.gen-"), b = generated_name("amq.gen-");
  BOOST_TEST(a.rfind("amq.gen-", 0) == 0u);
  BOOST_TEST(a.size() == 30u);
  BOOST_TEST(a != b);
  BOOST_TEST(check_name("queue name", a).empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(message_ids)

BOOST_AUTO_TEST_CASE(ids_are_unique_and_sequenced) {
  std::set<std::string> seen;
  uint64_t last_seq = 0;
  for (int i = 0; i < 10000; ++i) {
    auto id = next_message_id();
    BOOST_TEST(seen.insert(to_string(id)).second);
    uint64_t seq = 0;
    for (int k = 8; k < 16; ++k) seq = seq << 8 | id.bytes[k];
    BOOST_TEST(seq > last_seq);
    last_seq = seq;
  }
}

BOOST_AUTO_TEST_CASE(text_form_is_grouped_8_4_4_16_and_round_trips) {
  auto id = next_message_id();
  auto text = to_string(id);
  BOOST_TEST(text.size() == 35u);
  BOOST_TEST(text[8] == '-');
  BOOST_TEST(text[13] == '-');
  BOOST_TEST(text[18] == '-');
  message_id back;
  BOOST_TEST(parse_message_id(text, back));
  BOOST_TEST((back == id));
}

BOOST_AUTO_TEST_CASE(plain_hex_is_accepted_and_garbage_is_not) {
  message_id id;
  BOOST_TEST(parse_message_id("000102030405060708090a0b0c0d0e0f", id));
  BOOST_TEST(id.bytes[15] == 0x0f);
  BOOST_TEST(!parse_message_id("xyz", id));
  BOOST_TEST(!parse_message_id("000102030405060708090a0b0c0d0e0g", id));
  BOOST_TEST(!parse_message_id("0001-02030405060708090a0b0c0d0e0f", id));
  BOOST_TEST(!message_id_from_bytes("short", id));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(queue_arguments)

BOOST_AUTO_TEST_CASE(known_arguments_are_parsed) {
  queue_limits limits;
  field_table args{{"x-message-ttl", field_value::of_int(1000)},
                   {"x-max-length", field_value::of_int(5)},
                   {"x-overflow", field_value::of_text("reject-publish")},
                   {"x-dead-letter-exchange", field_value::of_text("dlx")},
                   {"x-dead-letter-routing-key", field_value::of_text("dead")},
                   {"x-queue-type", field_value::of_text("classic")},
                   {"x-custom", field_value::of_text("kept")}};
  BOOST_TEST(parse_queue_arguments(args, limits).empty());
  BOOST_TEST(*limits.message_ttl_ms == 1000);
  BOOST_TEST(*limits.max_length == 5);
  BOOST_TEST((limits.overflow == overflow_policy::reject_publish));
  BOOST_TEST(*limits.dead_letter_exchange == "dlx");
  BOOST_TEST(*limits.dead_letter_routing_key == "dead");
}

BOOST_AUTO_TEST_CASE(priority_length_bytes_overflow_and_single_active_consumer_are_parsed) {
  queue_limits limits;
  field_table args{{"x-max-priority", field_value::of_int(10)},
                   {"x-max-length-bytes", field_value::of_int(4096)},
                   {"x-overflow", field_value::of_text("reject-publish-dlx")},
                   {"x-single-active-consumer", field_value::of_bool(true)}};
  BOOST_TEST(parse_queue_arguments(args, limits).empty());
  BOOST_TEST(limits.max_priority == 10);
  BOOST_TEST(*limits.max_length_bytes == 4096);
  BOOST_TEST((limits.overflow == overflow_policy::reject_publish_dlx));
  BOOST_TEST(limits.single_active_consumer);
  for (int64_t bad : {0, 256, -1}) {
    auto problem = parse_queue_arguments({{"x-max-priority", field_value::of_int(bad)}}, limits);
    BOOST_TEST(problem.find("x-max-priority") != std::string::npos, problem);
  }
}

BOOST_AUTO_TEST_CASE(arguments_known_but_not_honoured_are_refused_by_name) {
  queue_limits limits;
  auto problem = parse_queue_arguments({{"x-queue-type", field_value::of_text("quorum")}}, limits);
  BOOST_TEST(problem.find("'x-queue-type'") != std::string::npos, problem);
  // What the node does not know at all is kept and listed, as RabbitMQ does.
  BOOST_TEST(
      parse_queue_arguments({{"x-app-owner", field_value::of_text("billing")}}, limits).empty());
}

BOOST_AUTO_TEST_CASE(consumer_priority_must_be_a_32_bit_integer) {
  int32_t priority = -1;
  BOOST_TEST(parse_consumer_arguments({{"x-priority", field_value::of_int(7)}}, priority).empty());
  BOOST_TEST(priority == 7);
  BOOST_TEST(
      !parse_consumer_arguments({{"x-priority", field_value::of_text("7")}}, priority).empty());
  BOOST_TEST(
      !parse_consumer_arguments({{"x-priority", field_value::of_int(int64_t{1} << 40)}}, priority)
           .empty());
}

BOOST_AUTO_TEST_CASE(wrong_types_name_the_argument) {
  queue_limits limits;
  auto problem = parse_queue_arguments({{"x-max-length", field_value::of_text("ten")}}, limits);
  BOOST_TEST(problem.find("x-max-length") != std::string::npos);
  BOOST_TEST(!parse_queue_arguments({{"x-message-ttl", field_value::of_int(-1)}}, limits).empty());
  BOOST_TEST(!parse_queue_arguments({{"x-expires", field_value::of_int(0)}}, limits).empty());
  BOOST_TEST(
      !parse_queue_arguments({{"x-overflow", field_value::of_text("explode")}}, limits).empty());
  BOOST_TEST(
      !parse_queue_arguments({{"x-dead-letter-exchange", field_value::of_int(3)}}, limits).empty());
}

BOOST_AUTO_TEST_CASE(unsupported_queue_types_are_refused) {
  queue_limits limits;
  auto problem = parse_queue_arguments({{"x-queue-type", field_value::of_text("quorum")}}, limits);
  BOOST_TEST(problem.find("quorum") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(stream_arguments_parse_as_rabbitmq_writes_them) {
  queue_limits limits;
  BOOST_TEST(
      parse_queue_arguments({{"x-queue-type", field_value::of_text("stream")},
                             {"x-max-age", field_value::of_text("7D")},
                             {"x-stream-max-segment-size-bytes", field_value::of_int(1 << 20)}},
                            limits)
          .empty());
  BOOST_TEST(limits.stream);
  BOOST_TEST(*limits.max_age_ms == 7 * 86400000LL);
  BOOST_TEST(*limits.stream_segment_bytes == 1 << 20);
  int64_t ms = 0;
  BOOST_TEST(parse_max_age("12h", ms).empty());
  BOOST_TEST(ms == 12 * 3600000LL);
  BOOST_TEST(parse_max_age("30m", ms).empty());
  BOOST_TEST(ms == 30 * 60000LL);
  for (const char* bad : {"", "7", "D", "0s", "-1h", "7days", "1.5h", "99999999999999999Y"})
    BOOST_TEST(!parse_max_age(bad, ms).empty(), bad);
}

BOOST_AUTO_TEST_CASE(streams_and_classic_queues_refuse_each_others_arguments) {
  queue_limits stream;
  stream.stream = true;
  BOOST_TEST(check_queue_kind(stream, {}, true, false, false).empty());
  BOOST_TEST(!check_queue_kind(stream, {}, false, false, false).empty());
  BOOST_TEST(!check_queue_kind(stream, {}, true, true, false).empty());
  BOOST_TEST(!check_queue_kind(stream, {}, true, false, true).empty());
  auto ttl =
      check_queue_kind(stream, {{"x-message-ttl", field_value::of_int(1)}}, true, false, false);
  BOOST_TEST(ttl.find("'x-message-ttl'") != std::string::npos, ttl);
  auto age = check_queue_kind({}, {{"x-max-age", field_value::of_text("1D")}}, true, false, false);
  BOOST_TEST(age.find("'x-max-age'") != std::string::npos, age);
}

BOOST_AUTO_TEST_CASE(stream_offsets_are_named_numbered_or_timestamped) {
  stream_offset_spec o;
  std::string group;
  BOOST_TEST(parse_stream_arguments({{"x-stream-offset", field_value::of_text("last")}}, o, group)
                 .empty());
  BOOST_TEST(o.kind == stream_offset_spec::last);
  BOOST_TEST(parse_stream_arguments({{"x-stream-offset", field_value::of_int(42)},
                                     {"x-stream-group", field_value::of_text("billing")}},
                                    o, group)
                 .empty());
  BOOST_TEST(o.kind == stream_offset_spec::offset);
  BOOST_TEST(o.value == 42);
  BOOST_TEST(group == "billing");
  auto stamp = field_value::of_int(1700000000);
  stamp.amqp_type = 'T';
  BOOST_TEST(parse_stream_arguments({{"x-stream-offset", stamp}}, o, group).empty());
  BOOST_TEST(o.kind == stream_offset_spec::timestamp);
  BOOST_TEST(o.value == 1700000000000LL);  // seconds on the wire, ms inside
  for (const auto& bad :
       {field_value::of_text("middle"), field_value::of_int(-1), field_value::of_bool(true)}) {
    auto problem = parse_stream_arguments({{"x-stream-offset", bad}}, o, group);
    BOOST_TEST(problem.find("x-stream-offset") != std::string::npos, problem);
  }
  BOOST_TEST(
      !parse_stream_arguments({{"x-stream-group", field_value::of_text("")}}, o, group).empty());
}

BOOST_AUTO_TEST_CASE(per_message_expiration_is_decimal_milliseconds) {
  std::optional<int64_t> ttl;
  BOOST_TEST(parse_expiration("", ttl).empty());
  BOOST_TEST(!ttl.has_value());
  BOOST_TEST(parse_expiration("1500", ttl).empty());
  BOOST_TEST(*ttl == 1500);
  BOOST_TEST(!parse_expiration("1.5", ttl).empty());
  BOOST_TEST(!parse_expiration("-3", ttl).empty());
  BOOST_TEST(!parse_expiration("soon", ttl).empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(errors)

BOOST_AUTO_TEST_CASE(broker_errors_keep_code_and_text_through_caf) {
  auto err = make_broker_error(reply_code::not_found, "no queue 'q' in vhost '/'");
  auto back = describe(err);
  BOOST_TEST((back.code == reply_code::not_found));
  BOOST_TEST(to_string(back) == "NOT_FOUND: no queue 'q' in vhost '/'");
}

BOOST_AUTO_TEST_CASE(reply_code_names_round_trip) {
  for (auto code : {reply_code::access_refused, reply_code::resource_locked,
                    reply_code::precondition_failed, reply_code::channel_error}) {
    reply_code back;
    BOOST_TEST(parse_reply_code_name(reply_code_name(code), back));
    BOOST_TEST((back == code));
  }
  reply_code unused;
  BOOST_TEST(!parse_reply_code_name("NOT_A_CODE", unused));
}

BOOST_AUTO_TEST_CASE(channel_and_connection_errors_are_told_apart) {
  BOOST_TEST(is_channel_error(reply_code::not_found));
  BOOST_TEST(is_channel_error(reply_code::precondition_failed));
  BOOST_TEST(!is_channel_error(reply_code::connection_forced));
  BOOST_TEST(!is_channel_error(reply_code::frame_error));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(passwords)

// The example of RabbitMQ's "Credentials and passwords" guide: salt 908DC60A, password test12.
BOOST_AUTO_TEST_CASE(hashes_are_rabbitmq_s_salted_sha256) {
  auto hash = warren::hash_password("test12", std::string("\x90\x8d\xc6\x0a", 4));
  BOOST_TEST(hash == "kI3GCqW5JLMJa4iX1lo7X4D6XbYqlLgxIs30+P6tENUV2POR");
  BOOST_TEST(warren::password_matches(hash, "test12"));
  BOOST_TEST(!warren::password_matches(hash, "test13"));
  BOOST_TEST(!warren::password_matches("not base64!", "test12"));
  BOOST_TEST(!warren::password_matches("", ""));
}

BOOST_AUTO_TEST_CASE(fresh_hashes_are_salted_differently) {
  auto a = warren::hash_password("same"), b = warren::hash_password("same");
  BOOST_TEST(a != b);
  BOOST_TEST(warren::password_matches(a, "same"));
  BOOST_TEST(warren::password_matches(b, "same"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(equivalence)

BOOST_AUTO_TEST_CASE(the_same_declaration_is_equivalent) {
  queue_spec q{"q", true, false, false, {{"x-message-ttl", field_value::of_int(1000)}}, {}};
  BOOST_TEST(queue_mismatch("/", q, q).empty());
  exchange_spec e{"e", exchange_type::topic, true, false, false, {}};
  BOOST_TEST(exchange_mismatch("/", e, e).empty());
}

BOOST_AUTO_TEST_CASE(the_first_differing_property_is_named_as_rabbitmq_does) {
  queue_spec current{"q", true, false, false, {}, {}};
  auto asked = current;
  asked.durable = false;
  asked.auto_delete = true;  // also differs, but durable comes first
  BOOST_TEST(queue_mismatch("/", current, asked) ==
             "inequivalent arg 'durable' for queue 'q' in vhost '/': received 'false' but "
             "current is 'true'");
  exchange_spec e{"e", exchange_type::topic, true, false, false, {}};
  auto other = e;
  other.type = exchange_type::fanout;
  BOOST_TEST(exchange_mismatch("v", e, other) ==
             "inequivalent arg 'type' for exchange 'e' in vhost 'v': received 'fanout' but "
             "current is 'topic'");
  other = e;
  other.internal = true;
  BOOST_TEST(exchange_mismatch("v", e, other).find("'internal'") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(arguments_are_compared_as_tables_naming_the_first_key_that_differs) {
  queue_spec current{
      "q",
      true,
      false,
      false,
      {{"x-max-length", field_value::of_int(10)}, {"x-message-ttl", field_value::of_int(1000)}},
      {}};
  auto reordered = current;
  std::swap(reordered.arguments[0], reordered.arguments[1]);
  BOOST_TEST(queue_mismatch("/", current, reordered).empty());
  auto asked = current;
  asked.arguments[1].value = field_value::of_int(2000);
  BOOST_TEST(queue_mismatch("/", current, asked) ==
             "inequivalent arg 'x-message-ttl' for queue 'q' in vhost '/': received '2000' but "
             "current is '1000'");
  asked.arguments.pop_back();
  BOOST_TEST(queue_mismatch("/", current, asked).find("received 'none' but current is '1000'") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(arguments_that_differ_only_in_kind_are_not_equivalent) {
  queue_spec current{"q", true, false, false, {{"x-message-ttl", field_value::of_int(1000)}}, {}};
  auto asked = current;
  asked.arguments[0].value = field_value::of_double(1000);  // may print as the integer does
  BOOST_TEST(queue_mismatch("/", current, asked).find("'x-message-ttl'") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

// Permission patterns are RE2: linear in the name and never recursive on it, so a name of any
// length is matched without touching the stack; what RE2 cannot run is refused when set.
BOOST_AUTO_TEST_SUITE(permission_patterns)

BOOST_AUTO_TEST_CASE(rabbitmq_style_patterns_match_as_before) {
  access_rights rights({"u", "/", "^amq\\.gen", ".*", ""});
  BOOST_TEST(rights.check(access_kind::configure, "queue", "amq.gen-x").empty());
  BOOST_TEST(!rights.check(access_kind::configure, "queue", "orders").empty());
  BOOST_TEST(rights.check(access_kind::write, "exchange", "").empty());     // amq.default
  BOOST_TEST(!rights.check(access_kind::read, "queue", "orders").empty());  // empty: nothing
  auto refused = rights.check(access_kind::read, "queue", "orders");
  BOOST_TEST(refused == "read access to queue 'orders' in vhost '/' refused for user 'u'");
}

BOOST_AUTO_TEST_CASE(a_huge_name_is_matched_without_recursion) {
  std::string huge(1 << 20, 'q');
  access_rights rights({"u", "/", "(q|x)*y", "^(q+)+$", ".*"});
  BOOST_TEST(!rights.check(access_kind::configure, "queue", huge).empty());
  BOOST_TEST(rights.check(access_kind::write, "queue", huge).empty());
  BOOST_TEST(rights.check(access_kind::read, "queue", huge).empty());
}

BOOST_AUTO_TEST_CASE(patterns_re2_cannot_run_are_refused_naming_why) {
  BOOST_TEST(check_permission_pattern("^(a)\\1$").find("not a valid regular expression") !=
             std::string::npos);
  BOOST_TEST(check_permission_pattern("(?=x)").find("not a valid") != std::string::npos);
  BOOST_TEST(check_permission_pattern("[").find("not a valid") != std::string::npos);
  BOOST_TEST(check_permission_pattern(std::string(5000, 'a')).find("5000 bytes") !=
             std::string::npos);
  BOOST_TEST(check_permission_pattern("^orders\\.(eu|us)$").empty());
}

BOOST_AUTO_TEST_SUITE_END()
