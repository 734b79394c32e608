// Every registered message type survives CAF's binary serializer, as it must to cross nodes
// through the middleman: a caf::message holding it is written with the type's registered name
// and read back equal (compared by CAF's printout, which runs the same inspect overloads).
#include <boost/test/unit_test.hpp>

#include "actors/common/message_types.hpp"

#include <caf/actor_system.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/scoped_actor.hpp>

using namespace warren;

namespace {

struct fixture {
  caf::actor_system_config cfg;
  caf::actor_system system{(register_message_types(cfg), cfg)};

  caf::message round_trip(const caf::message& in) {
    std::vector<char> buf;
    caf::binary_serializer sink{system, buf};
    auto err = sink(const_cast<caf::message&>(in));
    BOOST_REQUIRE_MESSAGE(!err, "serializing " << caf::to_string(in) << ": " << system.render(err));
    caf::message out;
    caf::binary_deserializer source{system, buf};
    err = source(out);
    BOOST_REQUIRE_MESSAGE(!err,
                          "deserializing " << caf::to_string(in) << ": " << system.render(err));
    BOOST_CHECK_EQUAL(source.remaining(), 0u);
    return out;
  }
};

message_ptr sample_message(bool with_properties) {
  message m;
  m.id = next_message_id();
  m.exchange = "amq.topic";
  m.routing_key = "a.b.c";
  m.body = std::string("body\0with a zero", 16);
  m.mandatory = true;
  if (with_properties) {
    message_properties p;
    p.persistent = true;
    p.content_type = "text/plain";
    p.priority = 7;
    p.timestamp = 1700000000;
    p.headers = {{"x-count", field_value::of_int(-3)},
                 {"nested", field_value::of_table({{"pi", field_value::of_double(3.25)}})},
                 {"dec", decimal_value(12345, 2)}};
    m.set_properties(std::move(p));
  }
  return std::make_shared<const message>(std::move(m));
}

}  // namespace

BOOST_FIXTURE_TEST_CASE(every_registered_type_round_trips_with_its_name, fixture) {
  size_t count = 0;
  for_each_message_type([&](auto tag, const char* name) {
    using type = typename decltype(tag)::type;
    auto in = caf::make_message(type{});
    auto out = round_trip(in);
    BOOST_CHECK_MESSAGE(out.template match_element<type>(0), name << " came back as another type");
    BOOST_CHECK_EQUAL(caf::to_string(out), caf::to_string(in));
    ++count;
  });
  BOOST_TEST_MESSAGE(count << " message types");
  BOOST_CHECK_GT(count, 30u);
}

BOOST_FIXTURE_TEST_CASE(a_message_crosses_by_value_with_its_properties, fixture) {
  auto original = sample_message(true);
  auto out = round_trip(caf::make_message(original));
  auto copy = out.get_as<message_ptr>(0);
  BOOST_REQUIRE(copy);
  BOOST_CHECK(copy != original);  // a new message, not the sender's pointer
  BOOST_CHECK(copy->id == original->id);
  BOOST_CHECK_EQUAL(copy->body, original->body);
  BOOST_CHECK_EQUAL(copy->routing_key, "a.b.c");
  BOOST_CHECK(copy->mandatory);
  BOOST_CHECK(copy->persistent());
  BOOST_CHECK_EQUAL(copy->properties().content_type, "text/plain");
  BOOST_CHECK_EQUAL(copy->properties().priority, 7);
  BOOST_CHECK(same_table(copy->properties().headers, original->properties().headers));
  BOOST_CHECK_EQUAL(to_string(*find_field(copy->properties().headers, "dec")), "123.45");
}

BOOST_FIXTURE_TEST_CASE(a_message_without_properties_stays_without, fixture) {
  auto original = sample_message(false);
  auto copy = round_trip(caf::make_message(original)).get_as<message_ptr>(0);
  BOOST_REQUIRE(copy);
  BOOST_CHECK(!copy->persistent());
  BOOST_CHECK(only_delivery_mode(copy->properties()));
  BOOST_CHECK_EQUAL(copy->body, original->body);
}

BOOST_FIXTURE_TEST_CASE(properties_set_to_their_defaults_cross_as_set, fixture) {
  message m;
  message_properties p;
  p.set_to_default = property_flag::delivery_mode;  // a transient message: delivery mode 1
  m.set_properties(p);
  auto mode_only = round_trip(caf::make_message(std::make_shared<const message>(m)));
  BOOST_CHECK_EQUAL(mode_only.get_as<message_ptr>(0)->properties().set_to_default,
                    property_flag::delivery_mode);

  p.set_to_default = property_flag::priority | property_flag::timestamp;  // priority 0, time 0
  p.app_id = "app";
  m.set_properties(p);
  auto copy = round_trip(caf::make_message(std::make_shared<const message>(m)));
  const auto& props = copy.get_as<message_ptr>(0)->properties();
  BOOST_CHECK_EQUAL(props.set_to_default, property_flag::priority | property_flag::timestamp);
  BOOST_CHECK_EQUAL(present_properties(props),
                    property_flag::priority | property_flag::timestamp | property_flag::app_id);
}

// amqplib sends empty headers with every message: properties that carry nothing but flags are
// one shared object, charged to no queue.
BOOST_AUTO_TEST_CASE(properties_set_only_to_defaults_are_shared_not_allocated) {
  message a, b;
  message_properties p;
  p.set_to_default = property_flag::headers | property_flag::priority;
  a.set_properties(p);
  b.set_properties(p);
  BOOST_CHECK_EQUAL(a.heap_bytes(), 0u);
  BOOST_CHECK(&a.properties() == &b.properties());
  BOOST_CHECK_EQUAL(a.properties().set_to_default, p.set_to_default);
  p.persistent = true;
  b.set_properties(p);
  BOOST_CHECK(&a.properties() != &b.properties());
  BOOST_CHECK(b.persistent() && b.properties().persistent);
}

BOOST_FIXTURE_TEST_CASE(a_null_message_stays_null, fixture) {
  get_reply empty;  // found = false carries no message
  auto copy = round_trip(caf::make_message(empty)).get_as<get_reply>(0);
  BOOST_CHECK(!copy.found);
  BOOST_CHECK(copy.delivery.msg == nullptr);
}

BOOST_FIXTURE_TEST_CASE(a_publish_batch_keeps_its_origin_and_items, fixture) {
  caf::scoped_actor origin{system};
  publish_batch batch{
      caf::actor{origin}, 3, {{sample_message(true), 41}, {sample_message(false), 42}}};
  auto copy = round_trip(caf::make_message(batch)).get_as<publish_batch>(0);
  BOOST_CHECK(copy.origin == caf::actor{origin});
  BOOST_CHECK_EQUAL(copy.channel, 3);
  BOOST_REQUIRE_EQUAL(copy.items.size(), 2u);
  BOOST_CHECK_EQUAL(copy.items[1].seq, 42u);
  BOOST_CHECK(copy.items[0].msg->id == batch.items[0].msg->id);
  BOOST_CHECK(copy.items[0].msg->persistent());
}

BOOST_FIXTURE_TEST_CASE(deliveries_and_outcomes_round_trip, fixture) {
  std::vector<delivery> batch{{7, true, sample_message(true), 0},
                              {8, false, sample_message(false), 2}};
  auto copy = round_trip(caf::make_message(batch)).get_as<std::vector<delivery>>(0);
  BOOST_REQUIRE_EQUAL(copy.size(), 2u);
  BOOST_CHECK_EQUAL(copy[0].tag, 7u);
  BOOST_CHECK(copy[0].redelivered);
  BOOST_CHECK_EQUAL(copy[1].message_count, 2u);
  BOOST_CHECK_EQUAL(copy[1].msg->body, batch[1].msg->body);

  std::vector<publish_outcome> outcomes{publish_outcome::routed, publish_outcome::returned,
                                        publish_outcome::rejected};
  auto back = round_trip(caf::make_message(outcomes)).get_as<std::vector<publish_outcome>>(0);
  BOOST_CHECK(back == outcomes);
}

BOOST_FIXTURE_TEST_CASE(a_join_reply_carries_every_member, fixture) {
  join_reply reply{{"warren@a:25680", "127.0.0.1:25680"},
                   "0a1b",
                   {{"warren@b:25681", "127.0.0.1:25681"}, {"warren@c:25682", "10.0.0.3:25682"}}};
  auto back = round_trip(caf::make_message(reply)).get_as<join_reply>(0);
  BOOST_CHECK_EQUAL(back.member.name, "warren@a:25680");
  BOOST_CHECK_EQUAL(back.proof, "0a1b");
  BOOST_REQUIRE_EQUAL(back.members.size(), 2u);
  BOOST_CHECK_EQUAL(back.members[1].address, "10.0.0.3:25682");
}
