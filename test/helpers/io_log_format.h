/* The log io_recorder.c writes and powercut_model.cpp reads (the record layout is described in
 * io_recorder.c). C, so that both sides include the one definition. */
#ifndef WARREN_TEST_IO_LOG_FORMAT_H
#define WARREN_TEST_IO_LOG_FORMAT_H

#include <stdint.h>

enum io_log_op {
  op_root = 1,
  op_create = 2,
  op_mkdir = 3,
  op_write = 4,
  op_truncate = 5,
  op_rename = 6,
  op_unlink = 7,
  op_rmdir = 8,
  op_sync = 9
};

enum { io_log_durable_write = 1 }; /* flags bit: a write on an O_DSYNC/O_SYNC fd */

/* In front of every record; 32 bytes, little-endian as the machine's. */
struct io_log_header {
  uint32_t size; /* the whole record */
  uint8_t op;
  uint8_t flags;
  uint16_t zero;
  uint32_t path_len;
  uint32_t path2_len;
  uint64_t ino;
  uint64_t offset;
};

#endif
