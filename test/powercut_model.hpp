// powercut_model: the disk states a power cut could leave, rebuilt from the log that
// test/helpers/io_recorder.c writes while a node runs (in the spirit of SQLite's crash-test VFS
// and of the ALICE study). A cut at log position P keeps what the records before P made
// durable and lets fate decide the rest:
//
// - Files are inodes (their bytes) and folders are maps from names to inodes, so an unlink
//   that is lost brings the file back with its content, and a renamed folder carries its
//   entries.
// - Data: every write and truncate of a file before that file's last fsync/fdatasync (before
//   P) is kept, as is every write made on an O_DSYNC/O_SYNC fd. Each later one is, on its own,
//   dropped, kept, or torn: only some of its 512-byte sectors (counted from the start of the
//   file) reach the disk. A dropped or torn write leaves zeros where a later kept write lies
//   beyond it. Truncates are kept or dropped.
// - Names (create, mkdir, rename, unlink, rmdir): under entry_rule::posix (the default), an
//   entry change is kept when its folder was fsynced after it (a rename: either folder), and
//   otherwise kept or dropped on its own. A rename is all or nothing. A kept rename or unlink
//   whose source name was dropped still puts the inode at its new name or removes nothing.
//   entry_rule::journaled models ext4's (and XFS's) journal instead: entry changes reach the
//   disk in order, and any successful sync commits all of them so far; after the last sync, a
//   random prefix of the later ones survives.
//
// Against ext4 (data=ordered), the posix rule is stricter: ext4 commits a file's creation, and
// every entry change before it, with the file's first fsync, and never reorders entry changes;
// the journaled rule is close to that. Both rules are looser than ext4 in two ways: unsynced
// writes to one file reach the disk in any order (ext4 writes back whole 4 KiB pages, tearing
// only at page boundaries, where this tears at every 512-byte sector), and an fdatasync is taken
// to cover the file's size as fsync does (Linux does so whenever the size changed).
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace warren::test::powercut {

enum class op : uint8_t { root = 1, create, mkdir, write, truncate, rename, unlink, rmdir, sync };

/// One recorded change (io_recorder.c describes the log format).
struct record {
  op kind = op::root;
  bool durable = false;     // a write on an O_DSYNC fd
  uint64_t ino = 0;         // root, create, mkdir, write, truncate, sync: the inode number
  uint64_t offset = 0;      // write: where in the file; truncate: the new size
  std::string path, path2;  // relative to the recorded folder (rename: from, to)
  std::string data;         // write: the bytes written
  uint64_t end = 0;         // log position just past this record: a cut there includes it
};

/// Reads a whole log. A torn last record (the process died while writing it) is left out;
/// anything else malformed throws std::runtime_error.
std::vector<record> read_log(const std::string& file);

enum class entry_rule : uint8_t { posix, journaled };

struct cut_options {
  entry_rule entries = entry_rule::posix;
  /// The record at this index is dropped even when it was synced: lets a test prove that a
  /// checker notices a state no real disk would have left.
  std::optional<size_t> sabotage;
};

/// What one state kept and lost, for reports.
struct cut_summary {
  size_t records = 0;   // records before the cut
  size_t unsynced = 0;  // of them, changes whose fate was drawn
  size_t dropped = 0;
  size_t torn = 0;
  size_t unresolved = 0;  // records naming a file or folder the log never made: a recorder gap
};

/// Writes into `out_dir` (an existing empty folder) one state that a power cut at log position
/// `cut` could have left behind, drawing every fate from `random`.
cut_summary build_state(const std::vector<record>& log, uint64_t cut, std::mt19937_64& random,
                        const std::string& out_dir, const cut_options& options = {});

}  // namespace warren::test::powercut
