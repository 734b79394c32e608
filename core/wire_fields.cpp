#include "core/wire_fields.hpp"

namespace warren::wire {

namespace {

field_value read_untyped(rpc::Value::Reader v);

// The value with the AMQP type it was published with, if it carries one.
field_value read_value(rpc::Value::Reader v) {
  auto out = read_untyped(v);
  out.amqp_type = v.getAmqpType();
  if (out.amqp_type == 'D' && v.which() == rpc::Value::INT) {
    out.scale = v.getScale();
    out = decimal_value(v.getInt(), out.scale);
  }
  return out;
}

field_value read_untyped(rpc::Value::Reader v) {
  switch (v.which()) {
    case rpc::Value::NONE:
      return {};
    case rpc::Value::BOOL:
      return field_value::of_bool(v.getBool());
    case rpc::Value::INT:
      return field_value::of_int(v.getInt());
    case rpc::Value::FLOAT:
      return field_value::of_double(v.getFloat());
    case rpc::Value::TEXT:
      return field_value::of_text(text(v.getText()));
    case rpc::Value::BYTES: {
      auto d = v.getBytes();
      return field_value::of_bytes(std::string(reinterpret_cast<const char*>(d.begin()), d.size()));
    }
    case rpc::Value::TABLE:
      return field_value::of_table(read_table(v.getTable()));
    case rpc::Value::ARRAY: {
      std::vector<field_value> values;
      for (auto item : v.getArray()) values.push_back(read_value(item));
      return field_value::of_array(std::move(values));
    }
  }
  return {};
}

void write_value(const field_value& x, rpc::Value::Builder v) {
  v.setAmqpType(x.amqp_type);
  if (x.amqp_type == 'D' && x.kind == field_value::floating) {
    v.setInt(x.i);  // a decimal travels as its digits and places, exactly
    v.setScale(x.scale);
    return;
  }
  switch (x.kind) {
    case field_value::none:
      v.setNone();
      break;
    case field_value::boolean:
      v.setBool(x.b);
      break;
    case field_value::integer:
      v.setInt(x.i);
      break;
    case field_value::floating:
      v.setFloat(x.d);
      break;
    case field_value::text:
      v.setText(x.s);
      break;
    case field_value::bytes:
      v.setBytes(bytes_of(x.s));
      break;
    case field_value::table:
      write_table(x.items, v.initTable(static_cast<unsigned>(x.items.size())));
      break;
    case field_value::array: {
      auto list = v.initArray(static_cast<unsigned>(x.items.size()));
      for (unsigned i = 0; i < x.items.size(); ++i) write_value(x.items[i].value, list[i]);
      break;
    }
  }
}

}  // namespace

field_table read_table(capnp::List<rpc::Field>::Reader list) {
  field_table out;
  out.reserve(list.size());
  for (auto f : list) out.push_back({text(f.getKey()), read_value(f.getValue())});
  return out;
}

void write_table(const field_table& table, capnp::List<rpc::Field>::Builder list) {
  for (unsigned i = 0; i < table.size(); ++i) {
    list[i].setKey(table[i].key);
    write_value(table[i].value, list[i].initValue());
  }
}

message_properties read_properties(rpc::Properties::Reader in) {
  message_properties p;
  p.persistent = in.getPersistent();
  p.content_type = text(in.getContentType());
  p.content_encoding = text(in.getContentEncoding());
  p.headers = read_table(in.getHeaders());
  p.priority = in.getPriority();
  p.correlation_id = text(in.getCorrelationId());
  p.reply_to = text(in.getReplyTo());
  p.expiration = text(in.getExpiration());
  p.message_id = text(in.getMessageId());
  p.timestamp = in.getTimestamp();
  p.type = text(in.getType());
  p.user_id = text(in.getUserId());
  p.app_id = text(in.getAppId());
  p.set_to_default = in.getSetToDefault() & property_flag::all;
  return p;
}

void write_properties(const message_properties& p, rpc::Properties::Builder out) {
  out.setPersistent(p.persistent);
  if (!p.content_type.empty()) out.setContentType(p.content_type);
  if (!p.content_encoding.empty()) out.setContentEncoding(p.content_encoding);
  if (!p.headers.empty())
    write_table(p.headers, out.initHeaders(static_cast<unsigned>(p.headers.size())));
  out.setPriority(p.priority);
  if (!p.correlation_id.empty()) out.setCorrelationId(p.correlation_id);
  if (!p.reply_to.empty()) out.setReplyTo(p.reply_to);
  if (!p.expiration.empty()) out.setExpiration(p.expiration);
  if (!p.message_id.empty()) out.setMessageId(p.message_id);
  out.setTimestamp(p.timestamp);
  if (!p.type.empty()) out.setType(p.type);
  if (!p.user_id.empty()) out.setUserId(p.user_id);
  if (!p.app_id.empty()) out.setAppId(p.app_id);
  out.setSetToDefault(p.set_to_default);
}

}  // namespace warren::wire
