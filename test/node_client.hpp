// Test helpers for talking to a node_process through the C++ client: connecting, persistent
// messages, draining a queue, and reading files byte for byte.
#pragma once

#include "subprocess.hpp"
#include "warren/channel.hpp"
#include "warren/connection.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace warren::test {

extern const client::queue_options durable;

std::unique_ptr<client::connection> connect_to(const node_process& node);

/// A persistent message for the default exchange, routed to `queue`.
client::outbound_message persistent(const std::string& queue, const std::string& body);

/// Everything ready in `queue`, in order, consumed without acks (so it is removed).
std::vector<client::delivery> drain(client::connection& conn, const std::string& queue);

/// Publishes `n` confirmed persistent messages "<prefix><i>" to `queue`; each must be routed.
void publish_confirmed(client::channel& ch, const std::string& queue, int n,
                       const std::string& prefix = "m");

/// Starts a node on `data_dir`, declares the durable queue "q", publishes `n` confirmed
/// messages "m0".."m<n-1>" and stops the node. Returns the queue's folder.
std::string make_queue(const std::string& data_dir, int n);

std::string read_bytes(const std::filesystem::path& file);

/// The .seg files of every queue folder of a data dir, in path order.
std::vector<std::filesystem::path> segments_of(const std::string& data_dir);

}  // namespace warren::test
