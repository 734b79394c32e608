// The AMQP 0-9-1 codec: primitives, field tables of every type, frames, method payloads and
// content headers. Byte strings written out by hand come from the 0-9-1 specification's layouts.
#include <boost/test/unit_test.hpp>

#include "core/message.hpp"
#include "net/amqp/frame.hpp"
#include "net/amqp/method_args.hpp"
#include "net/amqp/methods.hpp"
#include "net/amqp/sasl.hpp"

using namespace warren::amqp;
using warren::reply_code;
using namespace std::string_literals;

namespace {

// The name of the error code of what `f` throws; fails the test if it throws nothing.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const protocol_error& e) {
    return warren::reply_code_name(e.code);
  }
  BOOST_FAIL("expected a protocol_error");
  return {};
}

const std::string syntax_error = "SYNTAX_ERROR";
const std::string frame_error = "FRAME_ERROR";

value typed(char type, int64_t i) {
  value v;
  v.type = type;
  v.integer = i;
  return v;
}

table every_type() {
  value f;
  f.type = 'f';
  f.floating = 1.5;
  value d;
  d.type = 'd';
  d.floating = -2.25;
  value dec;
  dec.type = 'D';
  dec.scale = 2;
  dec.integer = 12345;
  value bytes;
  bytes.type = 'x';
  bytes.bytes = "\x00\x01\xff"s;
  value arr;
  arr.type = 'A';
  arr.nested_array = std::make_shared<array>(array{value::of_int(1), value::of_string("two")});
  return {{"bool", value::of_bool(true)},
          {"int8", typed('b', -5)},
          {"uint8", typed('B', 250)},
          {"int16", typed('s', -30000)},
          {"uint16", typed('u', 60000)},
          {"int32", typed('I', -2000000000)},
          {"uint32", typed('i', 4000000000)},
          {"int64", typed('l', -9000000000000000000)},
          {"int64 as py-amqp sends it", typed('L', -5000000000)},
          {"float", f},
          {"double", d},
          {"decimal", dec},
          {"string", value::of_string("héllo")},
          {"bytes", bytes},
          {"array", arr},
          {"timestamp", typed('T', 1764460800)},
          {"table", value::of_table({{"inner", value::of_long(7)}})},
          {"void", value{}}};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(primitives)

BOOST_AUTO_TEST_CASE(integers_are_big_endian) {
  writer w;
  w.short_uint(0x0102);
  w.long_uint(0x03040506);
  w.longlong_uint(0x0708090a0b0c0d0eull);
  BOOST_TEST(w.bytes() == "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e"s);
  reader r(w.bytes());
  BOOST_TEST(r.short_uint() == 0x0102);
  BOOST_TEST(r.long_uint() == 0x03040506u);
  BOOST_TEST(r.longlong_uint() == 0x0708090a0b0c0d0eull);
  BOOST_TEST(r.done());
}

BOOST_AUTO_TEST_CASE(strings_carry_their_length) {
  writer w;
  w.short_string("abc");
  w.long_string("de");
  BOOST_TEST(w.bytes() ==
             "\x03"
             "abc\x00\x00\x00\x02"
             "de"s);
  reader r(w.bytes());
  BOOST_TEST(r.short_string() == "abc");
  BOOST_TEST(r.long_string() == "de");
}

BOOST_AUTO_TEST_CASE(a_short_string_over_255_bytes_cannot_be_written) {
  writer w;
  BOOST_TEST(error_of([&] { w.short_string(std::string(256, 'x')); }) == syntax_error);
}

BOOST_AUTO_TEST_CASE(bits_pack_into_octets_lowest_first) {
  writer w;
  w.bits({true, false, true, true, false, false, false, false, true});
  BOOST_TEST(w.bytes() == "\x0d\x01"s);
  reader r(w.bytes());
  auto back = r.bits(9);
  BOOST_TEST(
      (back == std::vector<bool>{true, false, true, true, false, false, false, false, true}));
}

BOOST_AUTO_TEST_CASE(reading_past_the_end_is_a_syntax_error_not_a_crash) {
  BOOST_TEST(error_of([] { reader("\x01"s).short_uint(); }) == syntax_error);
  BOOST_TEST(error_of([] {
               reader(
                   "\x05"
                   "ab"s)
                   .short_string();
             }) == syntax_error);
  BOOST_TEST(error_of([] { reader("\xff\xff\xff\xff"s).long_string(); }) == syntax_error);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(field_tables)

BOOST_AUTO_TEST_CASE(every_field_type_round_trips_with_its_type) {
  writer w;
  w.field_table(every_type());
  reader r(w.bytes());
  auto back = r.field_table();
  BOOST_TEST(r.done());
  BOOST_REQUIRE(back.size() == every_type().size());
  auto expected = every_type();
  for (size_t i = 0; i < back.size(); ++i) {
    BOOST_TEST(back[i].first == expected[i].first);
    BOOST_TEST(back[i].second.type == expected[i].second.type, "type of " << back[i].first);
    BOOST_TEST((back[i].second == expected[i].second), "value of " << back[i].first);
  }
}

BOOST_AUTO_TEST_CASE(a_table_is_encoded_as_the_spec_lays_it_out) {
  writer w;
  w.field_table({{"a", value::of_bool(true)}, {"n", value::of_int(258)}});
  // length 11: "a" 't' 1, then "n" 'I' 00 00 01 02
  BOOST_TEST(w.bytes() ==
             "\x00\x00\x00\x0b\x01"
             "at\x01\x01"
             "nI\x00\x00\x01\x02"s);
}

BOOST_AUTO_TEST_CASE(an_unknown_field_type_is_named_in_the_error) {
  std::string bytes = "\x00\x00\x00\x04\x01k?\x00"s;
  try {
    reader(bytes).field_table();
    BOOST_FAIL("expected an error");
  } catch (const protocol_error& e) {
    BOOST_TEST(warren::reply_code_name(e.code) == syntax_error);
    BOOST_TEST(std::string(e.what()).find("'?'") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(a_value_longer_than_its_table_is_a_syntax_error) {
  // The table claims 6 bytes but its long string says 100.
  std::string bytes = "\x00\x00\x00\x06\x01kS\x00\x00\x00\x64"s;
  BOOST_TEST(error_of([&] { reader(bytes).field_table(); }) == syntax_error);
}

BOOST_AUTO_TEST_CASE(hostile_nesting_is_refused_before_the_stack_suffers) {
  value v = value::of_long(1);
  for (int i = 0; i < 100; ++i) v = value::of_table({{"t", v}});
  writer w;
  w.field_table({{"deep", v}});
  BOOST_TEST(error_of([&] { reader(w.bytes()).field_table(); }) == syntax_error);
}

// The cap is the one every door shares, so what AMQP takes can be stored and read back.
BOOST_AUTO_TEST_CASE(tables_nest_up_to_the_shared_cap_and_no_deeper) {
  auto nest = [](int levels) {
    value v = value::of_long(1);
    for (int i = 0; i < levels; ++i) v = value::of_table({{"t", v}});
    writer w;
    w.field_table({{"deep", v}});
    return w.bytes();
  };
  auto at_cap = nest(warren::max_field_depth);
  BOOST_TEST(reader(at_cap).field_table().size() == 1u);
  auto beyond = nest(warren::max_field_depth + 1);
  BOOST_TEST(error_of([&] { reader(beyond).field_table(); }) == syntax_error);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(frames)

BOOST_AUTO_TEST_CASE(a_heartbeat_frame_is_eight_bytes) {
  std::string out;
  write_frame(out, frame_type::heartbeat, 0, {});
  BOOST_TEST(out == "\x08\x00\x00\x00\x00\x00\x00\xce"s);
  size_t used = 0;
  auto f = parse_frame(out, frame_min_size, used);
  BOOST_REQUIRE(f.has_value());
  BOOST_TEST(used == 8u);
  BOOST_TEST((f->type == frame_type::heartbeat));
}

BOOST_AUTO_TEST_CASE(an_incomplete_frame_asks_for_more_at_every_cut) {
  std::string out;
  write_frame(out, frame_type::method, 3, "payload");
  for (size_t cut = 0; cut < out.size(); ++cut) {
    size_t used = 0;
    BOOST_TEST(!parse_frame(std::string_view(out).substr(0, cut), 0, used).has_value());
  }
  size_t used = 0;
  auto f = parse_frame(out + "next", 0, used);
  BOOST_REQUIRE(f.has_value());
  BOOST_TEST(used == out.size());
  BOOST_TEST(f->channel == 3);
  BOOST_TEST(f->payload == "payload");
}

BOOST_AUTO_TEST_CASE(framing_mistakes_are_frame_errors) {
  size_t used = 0;
  // unknown type 9
  BOOST_TEST(error_of([&] { parse_frame("\x09\x00\x00\x00\x00\x00\x00\xce"s, 0, used); }) ==
             frame_error);
  // a wrong frame-end octet
  BOOST_TEST(error_of([&] { parse_frame("\x01\x00\x01\x00\x00\x00\x01x\x00"s, 0, used); }) ==
             frame_error);
  // a heartbeat on channel 1
  BOOST_TEST(error_of([&] { parse_frame("\x08\x00\x01\x00\x00\x00\x00\xce"s, 0, used); }) ==
             frame_error);
}

BOOST_AUTO_TEST_CASE(a_frame_over_frame_max_is_refused_from_its_header_alone) {
  // Claims 2 GiB: refused before any of it arrives.
  size_t used = 0;
  BOOST_TEST(error_of([&] { parse_frame("\x03\x00\x01\x80\x00\x00\x00"s, 131072, used); }) ==
             frame_error);
}

BOOST_AUTO_TEST_CASE(method_names_cover_the_protocol) {
  BOOST_TEST(method_name({60, 40}) == "basic.publish");
  BOOST_TEST(method_name({10, 11}) == "connection.start-ok");
  BOOST_TEST(method_name({85, 10}) == "confirm.select");
  BOOST_TEST(method_name({77, 1}) == "77.1");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(content)

BOOST_AUTO_TEST_CASE(content_headers_round_trip_every_property) {
  content_header h;
  h.body_size = 123456789;
  auto& p = h.properties;
  p.content_type = "application/json";
  p.content_encoding = "gzip";
  p.headers = table{{"x-retry", value::of_int(3)}};
  p.delivery_mode = 2;
  p.priority = 7;
  p.correlation_id = "c-1";
  p.reply_to = "amq.rabbitmq.reply-to";
  p.expiration = "60000";
  p.message_id = "m-1";
  p.timestamp = 1764460800;
  p.type = "order";
  p.user_id = "guest";
  p.app_id = "shop";
  p.cluster_id = "c";
  auto back = parse_content_header(content_header_payload(h));
  BOOST_TEST(back.class_id == 60);
  BOOST_TEST(back.body_size == 123456789u);
  BOOST_TEST((back.properties == p));
}

BOOST_AUTO_TEST_CASE(absent_properties_stay_absent) {
  content_header h;
  h.body_size = 5;
  h.properties.delivery_mode = 1;
  auto payload = content_header_payload(h);
  // class 60, weight 0, size 5, flags 0x1000 (delivery-mode only), mode 1
  BOOST_TEST(payload == "\x00\x3c\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05\x10\x00\x01"s);
  auto back = parse_content_header(payload);
  BOOST_TEST(!back.properties.content_type.has_value());
  BOOST_TEST(!back.properties.headers.has_value());
  BOOST_TEST((back.properties.delivery_mode == std::optional<uint8_t>(1)));
}

BOOST_AUTO_TEST_CASE(reserved_property_flags_and_stray_bytes_are_syntax_errors) {
  BOOST_TEST(error_of([] {
               parse_content_header("\x00\x3c\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05\x00\x01"s);
             }) == syntax_error);
  BOOST_TEST(error_of([] {
               parse_content_header("\x00\x3c\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00zz"s);
             }) == syntax_error);
}

BOOST_AUTO_TEST_CASE(bodies_are_cut_to_fit_frame_max) {
  std::string out;
  std::string body(10000, 'b');
  content_header h;
  h.body_size = body.size();
  auto method = method_payload({60, 60});
  method.short_string("ctag");
  write_content(out, 1, method.bytes(), h, body, frame_min_size);
  std::string_view rest = out;
  std::vector<frame> frames;
  size_t used = 0;
  while (auto f = parse_frame(rest, frame_min_size, used)) {
    frames.push_back(*f);
    rest.remove_prefix(used);
  }
  BOOST_TEST(rest.empty());
  BOOST_REQUIRE(frames.size() == 5u);  // method, header, then 4088 + 4088 + 1824 bytes of body
  BOOST_TEST((frames[0].type == frame_type::method));
  BOOST_TEST((frames[1].type == frame_type::header));
  std::string joined;
  for (size_t i = 2; i < frames.size(); ++i) {
    BOOST_TEST((frames[i].type == frame_type::body));
    BOOST_TEST(frames[i].payload.size() + frame_overhead <= frame_min_size);
    joined += frames[i].payload;
  }
  BOOST_TEST(joined == body);
  BOOST_TEST(parse_content_header(frames[1].payload).body_size == 10000u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(method_arguments)

BOOST_AUTO_TEST_CASE(queue_unbind_has_no_no_wait_and_exchange_unbind_has_one) {
  auto unbind = method_payload({50, 50});
  unbind.short_uint(0);
  unbind.short_string("q");
  unbind.short_string("x");
  unbind.short_string("k");
  unbind.field_table({{"a", value::of_string("b")}});
  reader r(std::string_view(unbind.bytes()).substr(4));
  auto b = args::read_binding(methods::queue_unbind, r);
  BOOST_TEST(b.destination == "q");
  BOOST_TEST(b.source == "x");
  BOOST_TEST(b.key == "k");
  BOOST_TEST(!b.no_wait);
  BOOST_TEST(b.arguments.size() == 1u);
  BOOST_TEST(r.done());

  auto ebind = method_payload({40, 40});
  ebind.short_uint(0);
  ebind.short_string("dst");
  ebind.short_string("src");
  ebind.short_string("");
  ebind.bits({true});
  ebind.field_table({});
  reader e(std::string_view(ebind.bytes()).substr(4));
  auto eb = args::read_binding(methods::exchange_unbind, e);
  BOOST_TEST(eb.destination == "dst");
  BOOST_TEST(eb.no_wait);
  BOOST_TEST(e.done());
}

BOOST_AUTO_TEST_CASE(flags_land_in_their_fields) {
  auto del = method_payload({50, 40});
  del.short_uint(0);
  del.short_string("q");
  del.bits({false, true, true});  // if-unused if-empty no-wait
  reader r(std::string_view(del.bytes()).substr(4));
  auto d = args::read_queue_delete(r);
  BOOST_TEST(!d.if_unused);
  BOOST_TEST(d.if_empty);
  BOOST_TEST(d.no_wait);

  auto nack = method_payload({60, 120});
  nack.longlong_uint(7);
  nack.bits({true, false});  // multiple, requeue
  reader n(std::string_view(nack.bytes()).substr(4));
  auto s = args::read_nack(n);
  BOOST_TEST(s.tag == 7u);
  BOOST_TEST(s.multiple);
  BOOST_TEST(!s.requeue);
}

BOOST_AUTO_TEST_CASE(a_short_payload_is_a_protocol_error) {
  auto consume = method_payload({60, 20});
  consume.short_uint(0);
  consume.short_string("q");  // and nothing more
  reader r(std::string_view(consume.bytes()).substr(4));
  BOOST_CHECK_THROW(args::read_consume(r), protocol_error);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sasl)

BOOST_AUTO_TEST_CASE(plain_and_amqplain_responses_give_user_and_password) {
  sasl_credentials c;
  BOOST_TEST(read_sasl_response("PLAIN", "\0alice\0secret"s, c).empty());
  BOOST_TEST(c.user == "alice");
  BOOST_TEST(c.password == "secret");
  writer w;
  w.field_table({{"LOGIN", value::of_string("bob")}, {"PASSWORD", value::of_string("pw")}});
  BOOST_TEST(read_sasl_response("AMQPLAIN", w.bytes().substr(4), c).empty());
  BOOST_TEST(c.user == "bob");
  BOOST_TEST(c.password == "pw");
}

BOOST_AUTO_TEST_CASE(malformed_responses_and_unknown_mechanisms_are_named) {
  sasl_credentials c;
  BOOST_TEST(!read_sasl_response("PLAIN", "no-nuls", c).empty());
  BOOST_TEST(read_sasl_response("AMQPLAIN", "\x05LOGIN", c).find("AMQPLAIN") != std::string::npos);
  BOOST_TEST(read_sasl_response("EXTERNAL", "", c).find("'EXTERNAL'") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
