// Class and method ids of the AMQP 0-9-1 methods the listener reads and writes, by name.
#pragma once

#include "net/amqp/frame.hpp"

namespace warren::amqp::methods {

constexpr method_id connection_start{10, 10}, connection_start_ok{10, 11},
    connection_secure_ok{10, 21}, connection_tune{10, 30}, connection_tune_ok{10, 31},
    connection_open{10, 40}, connection_open_ok{10, 41}, connection_close{10, 50},
    connection_close_ok{10, 51}, connection_blocked{10, 60}, connection_unblocked{10, 61},
    connection_update_secret{10, 70}, connection_update_secret_ok{10, 71};
constexpr method_id channel_open{20, 10}, channel_open_ok{20, 11}, channel_flow{20, 20},
    channel_flow_ok{20, 21}, channel_close{20, 40}, channel_close_ok{20, 41};
constexpr method_id exchange_declare{40, 10}, exchange_declare_ok{40, 11}, exchange_delete{40, 20},
    exchange_delete_ok{40, 21}, exchange_bind{40, 30}, exchange_bind_ok{40, 31},
    exchange_unbind{40, 40}, exchange_unbind_ok{40, 51};
constexpr method_id queue_declare{50, 10}, queue_declare_ok{50, 11}, queue_bind{50, 20},
    queue_bind_ok{50, 21}, queue_purge{50, 30}, queue_purge_ok{50, 31}, queue_delete{50, 40},
    queue_delete_ok{50, 41}, queue_unbind{50, 50}, queue_unbind_ok{50, 51};
constexpr method_id basic_qos{60, 10}, basic_qos_ok{60, 11}, basic_consume{60, 20},
    basic_consume_ok{60, 21}, basic_cancel{60, 30}, basic_cancel_ok{60, 31}, basic_publish{60, 40},
    basic_return{60, 50}, basic_deliver{60, 60}, basic_get{60, 70}, basic_get_ok{60, 71},
    basic_get_empty{60, 72}, basic_ack{60, 80}, basic_reject{60, 90}, basic_recover_async{60, 100},
    basic_recover{60, 110}, basic_recover_ok{60, 111}, basic_nack{60, 120};
constexpr method_id tx_select{90, 10}, tx_select_ok{90, 11}, tx_commit{90, 20},
    tx_commit_ok{90, 21}, tx_rollback{90, 30}, tx_rollback_ok{90, 31};
constexpr method_id confirm_select{85, 10}, confirm_select_ok{85, 11};

}  // namespace warren::amqp::methods
